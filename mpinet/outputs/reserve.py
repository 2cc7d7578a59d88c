"""Reserve an output before the work, publish it exclusively, always clean up.

A :class:`Reservation` holds, from the plan to the end of the command:

* a **lock** ``.NAME.lock`` beside the output, taken with ``flock`` (released by the
  kernel if the process dies, so a killed run never blocks the next): a second command
  writing the same path is refused at its start, not after its work;
* a hidden **temporary** ``.NAME.tmp-TOKEN`` (created now on rank 0, or when the writer
  asks: :meth:`Reservation.create`), filled by the writer;
* the **publication**: the final name appears exclusively (``os.link``, which fails if
  the name exists), or, with ``--force``, replaces only the very file that was there when
  the command started.

:func:`abandon_all` discards every live reservation (temporaries removed, locks released):
the CLI calls it on SIGINT/SIGTERM/SIGHUP and before ``MPI_Abort``. Creation and
publication run under the reservation's lock, so a discard never races with them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from mpinet.engine.comm import resolve
from mpinet.outputs.kinds import Kind
from mpinet.outputs.target import Target, check_target, identity

_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.ENOSYS}
_NO_LOCKS = {errno.ENOLCK, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}
_LIVE: list[Any] = []
_LIVE_LOCK = threading.Lock()
#: seconds a discard waits for a creation or a publication in progress to finish
LOCK_TIMEOUT = 10.0
#: times a scratch directory's removal is tried while another thread may still write in it
RMTREE_TRIES = 5


class WriterLock:
    """``.NAME.lock`` beside ``path``, held with ``flock`` while one command writes it."""

    def __init__(self, path: str) -> None:
        folder, name = os.path.split(path)
        self.path = os.path.join(folder, f".{name}.lock")
        self.fd: int | None = None
        self.exclusive = False  # flock held (not a file system without locks)

    def acquire(self, noun: str, target: str, error: type[Exception]) -> None:
        """Take the lock, or raise ``error`` naming the command that holds it."""
        while self.fd is None:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as exc:
                raise error(
                    f"cannot write {noun} {target}: cannot create a file in "
                    f"{os.path.dirname(self.path)} ({exc.strerror}); choose another directory"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise error(
                    f"{noun} {target} is being written by another mpinet command ({holder}); "
                    "wait for it to finish or choose another path"
                ) from None
            except OSError as exc:
                if exc.errno not in _NO_LOCKS:
                    os.close(fd)
                    raise
                # no locks on this file system: exclusive publication still protects the name
            else:
                self.exclusive = True
            try:  # the file may have been removed by its previous holder meanwhile
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            with contextlib.suppress(OSError):  # who holds it, for the message (a full disk)
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)
            self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)  # while held: the next holder checks the name's inode
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


class Reservation:
    """The names of one output, the same on every rank.

    Parameters
    ----------
    target : Target
        :func:`~mpinet.outputs.target.check_target`'s result.
    token : str
        Eight hex digits, new for every write.
    """

    def __init__(self, target: Target, token: str) -> None:
        self.path: str = target.path
        self.replaces = target.replaces
        self.kind = target.kind
        self.token = token
        self.folder, self.name = os.path.split(self.path)
        self.tmp = os.path.join(self.folder, f".{self.name}.tmp-{token}")
        self.state = "reserved"  # -> committed | discarded
        self.lock = threading.RLock()
        self.writer_lock = WriterLock(self.path)
        with _LIVE_LOCK:
            _LIVE.append(self)

    @property
    def committed(self) -> bool:
        return self.state == "committed"

    def error(self, text: str) -> Exception:
        return self.kind.error(text)

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """Hold the lock around a file creation; refuse once the reservation is discarded."""
        with self.lock:
            if self.state == "discarded":
                raise self.error(f"writing {self.kind.noun} {self.path} was interrupted")
            yield

    def take(self) -> None:
        """Rank 0: hold the writer lock (refused if another command writes this path).

        Temporaries of this name left by a writer killed outright (SIGKILL: the launcher's
        proxy when ``mpiexec`` dies of SIGHUP, the OOM killer) are removed now: every
        writer holds the lock for as long as its temporary exists, so with the lock taken
        none of them is alive.
        """
        self.writer_lock.acquire(self.kind.noun, self.path, self.kind.error)
        if self.writer_lock.exclusive:
            remove_stale(self.folder, self.name)

    def create(self) -> None:
        """Create the temporary file (empty; the writer fills it)."""
        with self.guard():
            try:
                os.close(os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                pass
            except OSError as exc:
                raise self.error(
                    f"cannot write {self.kind.noun} {self.path}: cannot create a file in "
                    f"{self.folder} ({exc.strerror or type(exc).__name__}); choose another "
                    "directory"
                ) from None

    def check_alive(self) -> None:
        """Raise if the output's directory vanished during the work."""
        if not os.path.isdir(self.folder):
            raise self.error(
                f"cannot write {self.kind.noun} {self.path}: directory {self.folder} was "
                "removed during the run"
            )

    def publish(self) -> None:
        """Move the finished temporary file to the final name (exclusively)."""
        with self.guard():
            self._before_place()
            self._place()
            self.state = "committed"
        with contextlib.suppress(OSError):  # best effort from here: the output is in place
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._after_commit()
        self._forget()

    def _before_place(self) -> None:
        """Subclasses: what must be in place before the final name appears."""

    def _after_commit(self) -> None:
        """Subclasses: what to remove once the new output is in place."""

    def _place(self) -> None:
        now = identity(self.path) if os.path.lexists(self.path) else None
        noun = self.kind.noun
        if self.replaces is not None and now is not None:
            if now != self.replaces:
                raise self.error(
                    f"{noun} {self.path} changed while this command worked (another program "
                    "wrote it?); --force replaces only the file that was there when the "
                    "command started, so it was kept"
                )
            os.replace(self.tmp, self.path)
            return
        clash = self.error(
            f"{noun} {self.path} appeared while this command worked (another program "
            f"wrote it?); it was kept, this {noun} was not written"
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
        """Remove the temporaries (idempotent); returns whether the output was committed."""
        locked = self.lock.acquire(timeout=LOCK_TIMEOUT)
        try:
            if self.state == "reserved":
                with contextlib.suppress(OSError):
                    os.remove(self.tmp)
                self._discard_more(final_parts)
                self.state = "discarded"
            return self.state == "committed"
        finally:
            if locked:
                self.lock.release()
            self._forget()

    def _discard_more(self, final_parts: bool) -> None:
        """Subclasses: further temporaries to remove on discard."""

    def _forget(self) -> None:
        self.writer_lock.release()
        with _LIVE_LOCK:
            if self in _LIVE:
                _LIVE.remove(self)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.discard(final_parts=True)


class ScratchDir:
    """A temporary directory removed on every exit path (``mpinet bench``'s traces)."""

    def __init__(self, path: str) -> None:
        self.path = path
        register_live(self)

    def discard(self, final_parts: bool = False) -> bool:
        # a signal's discard runs beside the main thread, which may create a file in the
        # directory while rmtree empties it (rmdir then fails): empty it again
        for _ in range(RMTREE_TRIES):
            shutil.rmtree(self.path, ignore_errors=True)
            if not os.path.lexists(self.path):
                break
        unregister_live(self)
        return False

    def __enter__(self) -> ScratchDir:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.discard()


def register_live(obj: Any) -> None:
    """Add an object with ``discard`` and ``path`` to what :func:`abandon_all` cleans."""
    with _LIVE_LOCK:
        _LIVE.append(obj)


def unregister_live(obj: Any) -> None:
    with _LIVE_LOCK:
        if obj in _LIVE:
            _LIVE.remove(obj)


def remove_stale(folder: str, name: str) -> list[str]:
    """Remove ``.NAME.tmp-TOKEN`` files in ``folder`` (call only with NAME's lock held)."""
    stale = re.compile(rf"\.{re.escape(name)}\.tmp-[0-9a-f]{{8}}")
    gone = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder or "."):
            if stale.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    gone.append(entry.name)
    return gone


def live() -> list[Any]:
    """The reservations of this process not yet committed or discarded."""
    with _LIVE_LOCK:
        return list(_LIVE)


def abandon_all(final_parts: bool = False) -> list[str]:
    """Discard every live reservation of this process; return the paths already committed.

    Newest first, like nested ``with`` blocks: the files a command reserved inside its
    scratch directory go before the directory.
    """
    done = [r.path for r in reversed(live()) if r.discard(final_parts)]
    return done[::-1]  # in the order they were reserved


def reserve(
    path: Any,
    kind: Kind,
    comm: Any = None,
    *,
    force: bool = False,
    protect: Sequence[tuple[str, str]] = (),
    flag: str = "--out",
    create: bool = True,
    cls: type[Reservation] = Reservation,
) -> Reservation:
    """Check ``path``, lock it and create its temporary file on rank 0; collective.

    Every rank must call it (after agreeing that the command is valid): rank 0 decides and
    broadcasts the outcome, so all ranks return the same reservation or raise alike.
    ``comm=None`` is one process.

    Raises
    ------
    MpinetError
        Of ``kind.error``, on every rank: see :func:`~mpinet.outputs.target.check_target`;
        another command holds the path; or the temporary file could not be created.
    """
    comm = resolve(comm)
    mine: Reservation | None = None
    if comm.Get_rank() == 0:
        try:
            target = check_target(path, kind, force=force, protect=protect, flag=flag)
            mine = cls(target, secrets.token_hex(4))
            mine.take()
            if create:
                mine.create()
            msg: tuple = ("ok", target, mine.token)
        except kind.error as exc:
            if mine is not None:
                mine.discard(final_parts=True)
            msg = ("error", str(exc))
    else:
        msg = ()
    msg = comm.bcast(msg, root=0)
    if msg[0] == "error":
        raise kind.error(msg[1])
    return mine if mine is not None else cls(msg[1], msg[2])


def scratch_dir(comm: Any = None, prefix: str = "mpinet-") -> ScratchDir:
    """A temporary directory made by rank 0 and shared; removed by ``discard`` or a signal."""
    comm = resolve(comm)
    path = comm.bcast(tempfile.mkdtemp(prefix=prefix) if comm.Get_rank() == 0 else None, root=0)
    return ScratchDir(path) if comm.Get_rank() == 0 else _Remote(path)


class _Remote(ScratchDir):
    """Another rank's view of a scratch directory: rank 0 removes it."""

    def discard(self, final_parts: bool = False) -> bool:
        unregister_live(self)
        return False
