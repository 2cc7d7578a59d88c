"""Check an output path before any work: every refusal, and nothing created."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mpinet.netfile import files_read
from mpinet.outputs.kinds import Kind

#: names of a split trace's parts directory and of its temporary form
PARTS_DIR = re.compile(r"\.?.+\.parts-[0-9a-f]{8}(\.tmp)?")
#: the longest suffix a temporary or lock name adds to a file name
LONGEST_SUFFIX = ".parts-00000000.tmp"


@dataclass(frozen=True)
class Target:
    """A checked output path.

    Attributes
    ----------
    path : str
        Absolute final name.
    replaces : tuple or None
        Identity (device, inode, size, mtime) of the file ``force`` replaces, or None.
    kind : Kind
    """

    path: str
    replaces: tuple | None
    kind: Kind


def identity(path: str) -> tuple | None:
    """What identifies the file at ``path`` (following links), or None if there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _not_an_input(full: str, err: type, noun: str) -> None:
    """Refuse an output that is a network file this process read (a link or a hard link to
    it too): ``export file:x.edges --out x.edges --force`` would replace its own input."""
    mine = identity(full)
    if mine is None:
        return
    for path, ident in files_read():
        if ident == mine:
            via = "" if path == full else f" ({path}, by another name)"
            raise err(
                f"{noun} path {full} is the network file{via} this command reads; an output "
                f"never replaces its input: choose another path for the {noun}"
            )


def check_target(
    path: Any,
    kind: Kind,
    *,
    force: bool = False,
    protect: Sequence[tuple[str, str]] = (),
    flag: str = "--out",
) -> Target:
    """Refuse an output path that cannot be written; create nothing.

    Parameters
    ----------
    path : str or os.PathLike
        The output's final name.
    kind : Kind
        What is written (:mod:`mpinet.outputs.kinds`): its words and what ``force`` may
        replace.
    force : bool
        Allow replacing an existing file of the same kind.
    protect : sequence of (path, what)
        Files the output must never be, with or without ``force`` (the job file, the
        traces a command reads), each with the words that name it (``"the job file"``).
    flag : str
        The option that gave the path, for the messages.

    Returns
    -------
    Target

    Raises
    ------
    MpinetError
        Of ``kind.error``: one line naming the path and the way out.
    """
    err, noun = kind.error, kind.noun
    if not isinstance(path, (str, os.PathLike)):
        raise err(f"a {noun} path must be a string, got {path!r:.60}")
    text = os.fspath(path)
    if not text.strip():
        raise err(f"the {noun} path is empty; give a file name such as {flag} {kind.example}")
    if "\0" in text:
        raise err(f"{noun} path {text!r:.80} contains a NUL byte; give a file name")
    if text.endswith(("/", os.sep)):
        raise err(
            f"{noun} path {text!r} ends in '/', so it names a directory; "
            f"give a file name such as {os.path.join(text, kind.example)}"
        )
    full = os.path.abspath(text)
    folder, name = os.path.split(full)
    if os.path.islink(full) and not os.path.exists(full):
        raise err(
            f"{noun} path {full} is a dangling symbolic link (to {os.readlink(full)}); "
            "remove the link or choose another path"
        )
    if os.path.isdir(full):
        raise err(
            f"{noun} path {full} is a directory; give a file name such as "
            f"{os.path.join(full, kind.example)}"
        )
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.lexists(folder) else "does not exist"
        raise err(
            f"cannot write {noun} {full}: directory {folder} {what}; create it first "
            "or choose another path"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise err(
            f"cannot write {noun} {full}: directory {folder} is not writable; "
            "choose another directory"
        )
    for part in os.path.realpath(folder).split(os.sep):
        if PARTS_DIR.fullmatch(part):
            raise err(
                f"{noun} path {full} is inside {part}, the parts directory of another trace; "
                "choose a path outside it"
            )
    for other, what in protect:
        if other and os.path.exists(full) and _same(other, full):
            raise err(f"{noun} path {full} is {what} itself; choose another path for the {noun}")
    _not_an_input(full, err, noun)
    with contextlib.suppress(OSError, ValueError):
        limit = os.pathconf(folder, "PC_NAME_MAX")
        if len(f".{name}{LONGEST_SUFFIX}".encode()) > limit:
            raise err(
                f"{noun} file name {name!r} is too long: its temporary names would exceed "
                f"{limit} bytes; choose a shorter name"
            )
    replaces = None
    if os.path.lexists(full):
        if not force:
            raise err(f"{noun} {full} exists; use {kind.force_hint} to replace it")
        if not os.path.isfile(full) or not kind.recognise(full):
            raise err(
                f"{full} exists and is not an mpinet {noun}; --force replaces only mpinet "
                f"{kind.plural}: remove it yourself or choose another path"
            )
        replaces = identity(full)
    return Target(full, replaces, kind)
