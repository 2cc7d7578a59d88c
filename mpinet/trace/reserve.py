"""A trace's names, checked and reserved before a run, published exclusively, always cleaned.

:func:`check_target` refuses every path that cannot end as a trace (empty, ending in ``/``,
a directory, a dangling symbolic link, a missing or unwritable directory, the job file, a
path inside a trace's parts directory, an existing file without ``force`` or one that is
not an mpinet trace with it); every rank runs it alike, without creating anything.
:func:`reserve` (collective) then creates the hidden temporary file on rank 0 and shares
its token, so every rank knows every temporary name.

:meth:`Reservation.publish` makes the final name appear exclusively (``os.link``, which
fails if the name exists), so two runs writing the same path never overwrite each other
silently; with ``force`` it replaces only the very trace that was there when the run
started. :meth:`Reservation.discard` removes the temporaries; :func:`abandon_all` does it
for every live reservation (the CLI calls it on SIGINT/SIGTERM and before ``MPI_Abort``).
File creation and publication run under the reservation's lock, so a discard never races
with them: a name is created before the discard (and removed by it) or not at all.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import threading
from collections.abc import Iterator
from typing import Any

from mpinet.engine.comm import resolve
from mpinet.errors import TraceError

#: names of a split trace's parts directory and of its temporary form
PARTS_DIR = re.compile(r"\.?.+\.parts-[0-9a-f]{8}(\.tmp)?")
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.ENOSYS}
_LIVE: list[Reservation] = []
_LIVE_LOCK = threading.Lock()
#: seconds a discard waits for a creation or a publication in progress to finish
LOCK_TIMEOUT = 10.0


def is_mpinet_trace(path: str) -> bool:
    """True if ``path`` is an HDF5 file whose root attributes name an mpinet trace."""
    import h5py

    try:
        if not os.path.isfile(path) or not h5py.is_hdf5(path):
            return False
        with h5py.File(path, "r") as f:
            return "layout_version" in f.attrs and "mpinet_version" in f.attrs
    except Exception:  # unreadable or damaged: not something --force may replace
        return False


def _identity(path: str) -> tuple | None:
    """What identifies the file at ``path`` (following links), or None if there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _old_parts_dir(full: str) -> str | None:
    """The parts directory of the split mpinet trace at ``full``, if it is one."""
    import h5py

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


def check_target(path: Any, *, force: bool = False, job_file: str | None = None) -> dict:
    """Refuse a trace path that cannot be written; create nothing.

    Parameters
    ----------
    path : str or os.PathLike
        The trace's final name.
    force : bool
        Allow replacing an existing mpinet trace.
    job_file : str, optional
        The job file of the run, which the trace must not replace.

    Returns
    -------
    dict
        ``path`` (absolute), ``replaces`` (identity of the trace ``force`` replaces, or
        None) and ``old_parts`` (its parts directory, or None).

    Raises
    ------
    TraceError
        One line naming the path and the way out.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TraceError(f"a trace path must be a string, got {path!r:.60}")
    text = os.fspath(path)
    if not text.strip():
        raise TraceError("the trace path is empty; give a file name such as --out run.h5")
    if text.endswith(("/", os.sep)):
        raise TraceError(
            f"trace path {text!r} ends in '/', so it names a directory; "
            f"give a file name such as {os.path.join(text, 'run.h5')}"
        )
    full = os.path.abspath(text)
    folder, name = os.path.split(full)
    if os.path.islink(full) and not os.path.exists(full):
        raise TraceError(
            f"trace path {full} is a dangling symbolic link (to {os.readlink(full)}); "
            "remove the link or choose another path"
        )
    if os.path.isdir(full):
        raise TraceError(
            f"trace path {full} is a directory; give a file name such as "
            f"{os.path.join(full, 'run.h5')}"
        )
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.lexists(folder) else "does not exist"
        raise TraceError(
            f"cannot write trace {full}: directory {folder} {what}; create it first "
            "or choose another path"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise TraceError(
            f"cannot write trace {full}: directory {folder} is not writable; "
            "choose another directory"
        )
    for part in os.path.realpath(folder).split(os.sep):
        if PARTS_DIR.fullmatch(part):
            raise TraceError(
                f"trace path {full} is inside {part}, the parts directory of another trace; "
                "choose a path outside it"
            )
    job = job_file and os.path.isfile(job_file) and os.path.exists(full)
    if job and os.path.samefile(job_file, full):
        raise TraceError(
            f"trace path {full} is the job file itself; choose another path for the trace"
        )
    with contextlib.suppress(OSError, ValueError):
        limit = os.pathconf(folder, "PC_NAME_MAX")
        if len(f".{name}.parts-00000000.tmp".encode()) > limit:
            raise TraceError(
                f"trace file name {name!r} is too long: its temporary names would exceed "
                f"{limit} bytes; choose a shorter name"
            )
    replaces = old_parts = None
    if os.path.lexists(full):
        if not force:
            raise TraceError(f"trace {full} exists; use --force (force=True) to replace it")
        if not is_mpinet_trace(full):
            raise TraceError(
                f"{full} exists and is not an mpinet trace; --force replaces only mpinet "
                "traces: remove it yourself or choose another path"
            )
        replaces, old_parts = _identity(full), _old_parts_dir(full)
    return {"path": full, "replaces": replaces, "old_parts": old_parts}


class Reservation:
    """The names of one trace write, the same on every rank.

    Parameters
    ----------
    target : dict
        :func:`check_target`'s result.
    token : str
        Eight hex digits, new for every write.
    """

    def __init__(self, target: dict, token: str) -> None:
        self.path: str = target["path"]
        self.replaces = target["replaces"]
        self.old_parts: str | None = target["old_parts"]
        self.token = token
        self.folder, name = os.path.split(self.path)
        self.tmp = os.path.join(self.folder, f".{name}.tmp-{token}")
        self.tmp_parts = os.path.join(self.folder, f".{name}.parts-{token}.tmp")
        self.parts_name = f"{name}.parts-{token}"
        self.parts = os.path.join(self.folder, self.parts_name)
        self.state = "reserved"  # -> committed | discarded
        self.lock = threading.RLock()
        with _LIVE_LOCK:
            _LIVE.append(self)

    @property
    def committed(self) -> bool:
        return self.state == "committed"

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """Hold the lock around a file creation; refuse once the reservation is discarded."""
        with self.lock:
            if self.state == "discarded":
                raise TraceError(f"writing trace {self.path} was interrupted")
            yield

    def create(self) -> None:
        """Rank 0: create the temporary file (empty; the writer fills it)."""
        with self.guard():
            try:
                os.close(os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except OSError as exc:
                why = exc.strerror or type(exc).__name__
                raise TraceError(
                    f"cannot write trace {self.path}: cannot create a file in {self.folder} "
                    f"({why}); choose another directory"
                ) from None

    def check_alive(self) -> None:
        """Raise if the directory of the trace vanished during the run."""
        if not os.path.isdir(self.folder):
            raise TraceError(
                f"cannot write trace {self.path}: directory {self.folder} was removed "
                "during the run"
            )

    def publish(self, split: bool) -> None:
        """Rank 0: move the finished parts and then the file to their final names.

        The final name is created exclusively; with ``force`` only the trace that was at
        the path when the run started is replaced.
        """
        with self.guard():
            if split:
                os.rename(self.tmp_parts, self.parts)
            self._place()
            self.state = "committed"
        # best effort from here: the new trace is in place
        with contextlib.suppress(OSError):
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        for d in (self.tmp_parts, self.old_parts):
            if d and d != self.parts:
                shutil.rmtree(d, ignore_errors=True)
        self._forget()

    def _place(self) -> None:
        now = _identity(self.path) if os.path.lexists(self.path) else None
        if self.replaces is not None and now is not None:
            if now != self.replaces:
                raise TraceError(
                    f"trace {self.path} changed while this run worked (another run wrote "
                    "it?); --force replaces only the trace that was there when the run "
                    "started, so it was kept"
                )
            os.replace(self.tmp, self.path)
            return
        clash = TraceError(
            f"trace {self.path} appeared while this run worked (another run with the same "
            "output?); it was kept, this run's trace was not written"
        )
        try:
            os.link(self.tmp, self.path)  # fails if the name exists: exclusive creation
        except FileExistsError:
            raise clash from None
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            if os.path.lexists(self.path):  # no hard links here: check, then rename
                raise clash from None
            os.rename(self.tmp, self.path)
            return
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)

    def mark_committed(self) -> None:
        """Ranks other than 0: the write succeeded everywhere (told by the writer)."""
        with self.lock:
            self.state = "committed"
        self._forget()

    def discard(self, final_parts: bool = False) -> bool:
        """Remove the temporaries (idempotent); returns whether the trace was committed.

        ``final_parts`` (rank 0 only, which renames it and so knows whether the trace was
        committed) also removes the parts directory of an uncommitted trace.
        """
        locked = self.lock.acquire(timeout=LOCK_TIMEOUT)
        try:
            if self.state == "reserved":
                with contextlib.suppress(OSError):
                    os.remove(self.tmp)
                shutil.rmtree(self.tmp_parts, ignore_errors=True)
                if final_parts:
                    shutil.rmtree(self.parts, ignore_errors=True)
                self.state = "discarded"
            elif self.state == "committed" and self.old_parts and self.old_parts != self.parts:
                shutil.rmtree(self.old_parts, ignore_errors=True)
            return self.state == "committed"
        finally:
            if locked:
                self.lock.release()
            self._forget()

    def _forget(self) -> None:
        with _LIVE_LOCK:
            if self in _LIVE:
                _LIVE.remove(self)


def live() -> list[Reservation]:
    """The reservations of this process not yet committed or discarded."""
    with _LIVE_LOCK:
        return list(_LIVE)


def abandon_all(final_parts: bool = False) -> list[str]:
    """Discard every live reservation of this process; return the paths already committed."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    return [r.path for r in live if r.discard(final_parts)]


def reserve(
    path: Any, comm: Any, *, force: bool = False, job_file: str | None = None
) -> Reservation:
    """Check ``path`` and create its temporary file on rank 0; collective over ``comm``.

    Every rank must call it (after agreeing that the run is valid): rank 0 decides and
    broadcasts the outcome, so all ranks return the same reservation or raise alike.

    Raises
    ------
    TraceError
        On every rank: see :func:`check_target`, or the file could not be created.
    """
    comm = resolve(comm)
    mine: Reservation | None = None
    if comm.Get_rank() == 0:
        try:
            target = check_target(path, force=force, job_file=job_file)
            mine = Reservation(target, secrets.token_hex(4))
            mine.create()
            msg: tuple = ("ok", target, mine.token)
        except TraceError as exc:
            if mine is not None:
                mine.discard(final_parts=True)
            msg = ("error", str(exc))
    else:
        msg = ()
    msg = comm.bcast(msg, root=0)
    if msg[0] == "error":
        raise TraceError(msg[1])
    return mine if mine is not None else Reservation(msg[1], msg[2])
