"""A trace's names: :mod:`mpinet.outputs`' discipline, plus a split trace's parts directory.

:func:`check_target` and :func:`reserve` are :func:`mpinet.outputs.check_target` and
:func:`mpinet.outputs.reserve` for the kind ``trace`` (the job file protected), returning a
:class:`Reservation` that also names the parts directory of a split trace
(``NAME.parts-TOKEN``, written as ``.NAME.parts-TOKEN.tmp`` and renamed before the file is
published) and removes the parts directory of the trace ``--force`` replaced.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from typing import Any

from mpinet.outputs import (
    PARTS_DIR,
    Target,
    abandon_all,
    live,
)
from mpinet.outputs import (
    Reservation as _Reservation,
)
from mpinet.outputs import (
    check_target as _check_target,
)
from mpinet.outputs import (
    reserve as _reserve,
)
from mpinet.outputs.hdf5 import TRACE, is_mpinet_trace

__all__ = [
    "PARTS_DIR",
    "Reservation",
    "abandon_all",
    "check_target",
    "is_mpinet_trace",
    "live",
    "reserve",
]


def _old_parts_dir(full: str) -> str | None:
    """The parts directory of the split mpinet trace at ``full``, if it is one."""
    import h5py  # here: reserving a path reads no trace unless one is there

    try:
        with h5py.File(full, "r") as f:
            parts = f.attrs.get("parts_dir", "")
    except Exception:
        return None
    parts = parts.decode() if isinstance(parts, bytes) else str(parts)
    name = re.escape(os.path.basename(full))
    if re.fullmatch(rf"{name}\.parts-[0-9a-f]{{8}}", parts):
        return os.path.join(os.path.dirname(full), parts)
    return None


def _protect(job_file: str | None) -> list[tuple[str, str]]:
    return [(job_file, "the job file")] if job_file and os.path.isfile(job_file) else []


def check_target(path: Any, *, force: bool = False, job_file: str | None = None) -> dict:
    """Refuse a trace path that cannot be written; create nothing.

    Returns
    -------
    dict
        ``path`` (absolute), ``replaces`` (identity of the trace ``force`` replaces, or
        None) and ``old_parts`` (its parts directory, or None).

    Raises
    ------
    TraceError
        One line naming the path and the way out (:func:`mpinet.outputs.check_target`).
    """
    t = _check_target(path, TRACE, force=force, protect=_protect(job_file))
    old = _old_parts_dir(t.path) if t.replaces is not None else None
    return {"path": t.path, "replaces": t.replaces, "old_parts": old}


class Reservation(_Reservation):
    """The names of one trace write, the same on every rank (see the module docstring)."""

    def __init__(self, target: Target | dict, token: str) -> None:
        if isinstance(target, dict):
            target = Target(target["path"], target["replaces"], TRACE)
        super().__init__(target, token)
        self.old_parts = _old_parts_dir(self.path) if self.replaces is not None else None
        self.tmp_parts = os.path.join(self.folder, f".{self.name}.parts-{token}.tmp")
        self.parts_name = f"{self.name}.parts-{token}"
        self.parts = os.path.join(self.folder, self.parts_name)
        self.split = False

    def take(self) -> None:
        """Rank 0: hold the writer lock; also remove parts directories of this name left by a
        writer killed outright (``.NAME.parts-TOKEN.tmp``: SIGKILL, or ``mpiexec`` dying of
        SIGHUP): with the lock held, no writer of this name is alive."""
        super().take()
        if self.writer_lock.exclusive:
            stale = re.compile(rf"\.{re.escape(self.name)}\.parts-[0-9a-f]{{8}}\.tmp")
            with contextlib.suppress(OSError):
                for entry in os.scandir(self.folder or "."):
                    if stale.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)

    def publish(self, split: bool = False) -> None:
        """Move the finished parts (split) and then the file to their final names."""
        self.split = split
        super().publish()

    def _before_place(self) -> None:
        if self.split:
            os.rename(self.tmp_parts, self.parts)

    def _after_commit(self) -> None:
        for d in (self.tmp_parts, self.old_parts):
            if d and d != self.parts:
                shutil.rmtree(d, ignore_errors=True)

    def _discard_more(self, final_parts: bool) -> None:
        shutil.rmtree(self.tmp_parts, ignore_errors=True)
        if final_parts:  # rank 0 renames it, so knows whether the trace was committed
            shutil.rmtree(self.parts, ignore_errors=True)

    def discard(self, final_parts: bool = False) -> bool:
        committed = super().discard(final_parts)
        if committed and self.old_parts and self.old_parts != self.parts:
            shutil.rmtree(self.old_parts, ignore_errors=True)
        return committed


def reserve(
    path: Any, comm: Any, *, force: bool = False, job_file: str | None = None
) -> Reservation:
    """Check ``path``, lock it and create its temporary file on rank 0; collective.

    Raises
    ------
    TraceError
        On every rank: see :func:`check_target`, another command writes the path, or the
        file could not be created.
    """
    return _reserve(path, TRACE, comm, force=force, protect=_protect(job_file), cls=Reservation)
