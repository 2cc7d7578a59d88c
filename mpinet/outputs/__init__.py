"""One discipline for every file a command writes.

Every command that writes (``run``'s trace, ``sweep --out`` and ``--plot``, ``export``,
``bench``'s scratch traces, ``analyze --plot``, the report scripts) goes through this
package, in the same order:

1. **plan** — :func:`check_target` refuses, before any work and without creating anything,
   every path that cannot end as the output: empty, ending in ``/`` (a directory), a
   directory, a dangling link, a missing or unwritable directory, a file the command reads
   (the job file, the traces it analyses), inside a trace's parts directory, an existing
   file without ``--force``, and with ``--force`` a file that is not of the command's own
   kind (:mod:`mpinet.outputs.kinds`: a trace replaces only a trace, an export only an
   export of the same format, a figure only a figure mpinet drew);
2. **reserve** — :func:`reserve` (collective) takes the path's writer lock, so a second
   command writing the same path is refused at its start, and creates the hidden
   temporary file;
3. **write** — into the temporary file only; HDF5 files through :class:`GuardedFile`, so a
   full disk is one line and never a crash (:func:`mpinet.outputs.hdf5.h5_file`, the module
   of the HDF5 kinds ``trace`` and ``sweep``, which imports h5py), other files through
   :func:`write_file`;
4. **publish** — the final name appears exclusively, or replaces only the file that was
   there at the start;
5. **clean** — :meth:`Reservation.discard` on every exit path, and :func:`abandon_all`
   on SIGINT/SIGTERM/SIGHUP and before ``MPI_Abort``. A command whose work is done prints
   its results before it reports a failed write (exit code 3).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import IO, Any

from mpinet.outputs.guarded import GuardedFile, os_error_text
from mpinet.outputs.kinds import (
    EXPORTS,
    FIGURE,
    KINDS,
    Kind,
    figure_metadata,
    report_kind,
)
from mpinet.outputs.reserve import (
    Reservation,
    ScratchDir,
    abandon_all,
    live,
    reserve,
    scratch_dir,
)
from mpinet.outputs.target import PARTS_DIR, Target, check_target, identity

__all__ = [
    "EXPORTS",
    "FIGURE",
    "KINDS",
    "PARTS_DIR",
    "GuardedFile",
    "Kind",
    "Reservation",
    "ScratchDir",
    "Target",
    "abandon_all",
    "check_target",
    "figure_metadata",
    "identity",
    "live",
    "os_error_text",
    "report_kind",
    "reserve",
    "scratch_dir",
    "write_file",
]


def write_file(res: Reservation, write: Callable[[IO[Any]], None], *, binary: bool = False) -> str:
    """Fill the reservation's temporary file with ``write(fh)``, sync it and publish it.

    Any ``OSError`` (a full disk, a read-only file system) becomes one line of the kind's
    error; the temporary file is removed whatever happens.

    Returns
    -------
    str
        The final path.
    """
    try:
        res.check_alive()
        with res.guard():
            fh = open(res.tmp, "wb" if binary else "w", encoding=None if binary else "utf-8")  # noqa: SIM115
        with fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        res.publish()
    except OSError as exc:
        raise res.error(
            f"cannot write {res.kind.noun} {res.path}: {os_error_text(exc, res.tmp)}"
        ) from None
    finally:
        res.discard(final_parts=True)
    return res.path
