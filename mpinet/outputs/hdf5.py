"""The HDF5 outputs: traces and sweep files, recognised by their root attributes, and
:func:`h5_file`, the guarded ``h5py.File`` every HDF5 output is written through.

Apart from :mod:`mpinet.outputs.kinds` because it uses h5py: the commands that write
or read HDF5 load it when they run; ``mpinet --help`` and the other commands do not, and
h5py itself is imported at the first file opened (a run that only reserves a new path, or
``mpinet booksim``, never loads it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from mpinet.errors import TraceError
from mpinet.outputs.guarded import GuardedFile
from mpinet.outputs.kinds import Kind, file_head, register
from mpinet.outputs.reserve import Reservation

#: the first bytes of every HDF5 file (no user block)
SIGNATURE = b"\x89HDF\r\n\x1a\n"


def h5_attrs(path: str, *keys: str) -> dict | None:
    """The root attributes ``keys`` of an HDF5 file, or None if it is not one."""
    if not os.path.isfile(path) or not file_head(path).startswith(SIGNATURE):
        return None
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return {k: f.attrs[k] for k in keys if k in f.attrs}
    except Exception:  # unreadable or damaged: not something --force may replace
        return None


def is_mpinet_trace(path: str) -> bool:
    """True if ``path`` is an HDF5 file whose root attributes name an mpinet trace."""
    a = h5_attrs(path, "layout_version", "mpinet_version", "kind")
    return (
        a is not None
        and {"layout_version", "mpinet_version"} <= a.keys()
        and (a.get("kind") != "sweep")
    )


def is_sweep_file(path: str) -> bool:
    """True if ``path`` is a file of ``mpinet sweep --out``."""
    a = h5_attrs(path, "kind", "mpinet_version")
    return a is not None and a.get("kind") == "sweep" and "mpinet_version" in a


TRACE = register(
    Kind("trace", "trace", "run.h5", is_mpinet_trace, TraceError, force_hint="--force (force=True)")
)
SWEEP = register(Kind("sweep", "sweep file", "sweep.h5", is_sweep_file))


@contextlib.contextmanager
def h5_file(res: Reservation, name: str | None = None, **kw: Any) -> Iterator[Any]:
    """An ``h5py.File`` writing ``name`` (default: the reservation's temporary file).

    The file is created under the reservation's lock and written through a
    :class:`GuardedFile`; a failed write (a full disk) raises the reservation's error in
    one line after HDF5 closed the file normally, and the partial file is left for the
    caller's discard.
    """
    import h5py

    res.check_alive()
    with res.guard():
        guard = GuardedFile(name or res.tmp)
    try:
        with h5py.File(guard, "w", **kw) as f:
            yield f
            if guard.error is None:
                f.flush()
        guard.sync()
    finally:
        guard.close()
    guard.check(f"{res.kind.noun} {res.path}", res.kind.error)
