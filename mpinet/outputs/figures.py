"""Figures into a directory (``--plot DIR``), under the same discipline as every output.

``DIR`` may exist (a directory) or not (it is created, with its missing parents, when the
figures are reserved, and removed again if nothing was written). Every figure a command
may draw is checked and locked before the work (:func:`plan_figures`,
:func:`reserve_figures`); each is drawn into a hidden temporary file and published under
its name exclusively, or, with ``--force``, replacing only a figure mpinet drew.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from typing import Any

from mpinet.errors import OutputError
from mpinet.outputs.guarded import os_error_text
from mpinet.outputs.kinds import FIGURE, figure_metadata
from mpinet.outputs.reserve import Reservation, register_live, unregister_live
from mpinet.outputs.target import check_target

EXTENSIONS = ("png", "svg")


def _dir_problem(outdir: str) -> str | None:
    """Why ``outdir`` cannot hold figures, or None."""
    full = os.path.abspath(outdir)
    if os.path.isdir(full):
        if not os.access(full, os.W_OK | os.X_OK):
            return f"plot directory {full} is not writable; choose another directory"
        return None
    if os.path.lexists(full):
        return f"plot directory {full} exists and is not a directory; give a directory name"
    parent = full
    while not os.path.isdir(parent):  # the nearest existing ancestor must take the new ones
        if os.path.lexists(parent):
            return f"cannot create plot directory {full}: {parent} is not a directory"
        parent = os.path.dirname(parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create plot directory {full}: {parent} is not writable"
    return None


def plan_figures(
    outdir: Any, names: Sequence[str], *, force: bool = False, flag: str = "--plot"
) -> list[str]:
    """Check ``outdir`` and every figure ``name`` (without extension) it would receive.

    Returns
    -------
    list of str
        The absolute figure paths (each name as ``.png`` and ``.svg``).

    Raises
    ------
    OutputError
        One line: the directory cannot be used, or a figure exists (without ``force``) or
        is not a figure mpinet drew.
    """
    if not isinstance(outdir, (str, os.PathLike)) or not os.fspath(outdir).strip():
        raise OutputError(f"{flag} needs a directory name, got {outdir!r}")
    why = _dir_problem(os.fspath(outdir))
    if why:
        raise OutputError(why)
    full = os.path.abspath(outdir)
    paths = [os.path.join(full, f"{n}.{ext}") for n in names for ext in EXTENSIONS]
    if os.path.isdir(full):
        for p in paths:
            check_target(p, FIGURE, force=force, flag=flag)
    return paths


class FigureSet:
    """The reserved figures of one command (rank 0, or a serial command).

    Parameters
    ----------
    outdir : str
    paths : list of str
        From :func:`plan_figures`.
    force : bool
    """

    def __init__(self, outdir: str, paths: Sequence[str], *, force: bool = False) -> None:
        self.outdir = self.path = os.path.abspath(outdir)
        self.made: list[str] = []  # directories this command created, deepest last
        d = self.outdir
        while not os.path.isdir(d):
            self.made.insert(0, d)
            d = os.path.dirname(d)
        self.res: dict[str, Reservation] = {}
        self.written: list[str] = []
        register_live(self)
        try:
            for d in self.made:
                try:
                    os.mkdir(d)
                except OSError as exc:
                    raise OutputError(f"cannot create plot directory {d}: {exc.strerror}") from None
            for p in paths:
                r = Reservation(check_target(p, FIGURE, force=force, flag="--plot"),
                                secrets.token_hex(4))  # fmt: skip
                self.res[p] = r
                r.take()
        except BaseException:
            self.discard()
            raise

    def save(self, fig: Any, name: str) -> list[str]:
        """Write ``fig`` as ``name.png`` and ``name.svg``; return the paths written."""
        out = []
        for ext in EXTENSIONS:
            p = os.path.join(self.outdir, f"{name}.{ext}")
            r = self.res.get(p)
            if r is None:
                raise OutputError(f"figure {p} was not planned (a bug: plan_figures lacks it)")
            r.create()
            try:
                fig.savefig(r.tmp, format=ext, dpi=120 if ext == "png" else None,
                            bbox_inches="tight", metadata=figure_metadata(ext))  # fmt: skip
                r.publish()
            except OSError as exc:
                raise OutputError(f"cannot write figure {p}: {os_error_text(exc, p)}") from None
            finally:
                r.discard()
            out.append(p)
            self.written.append(p)
        return out

    def discard(self, final_parts: bool = False) -> bool:
        """Release every reservation; remove the directories this command made, if empty."""
        for r in self.res.values():
            r.discard()
        for d in reversed(self.made):
            try:
                os.rmdir(d)
            except OSError:
                break
        unregister_live(self)
        return False

    def __enter__(self) -> FigureSet:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.discard()
