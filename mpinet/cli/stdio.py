"""Standard output and error as outputs: a failed write is one line and exit code 3, never
a traceback; a reader that went away (EPIPE, ``| head``) is a quiet exit.

:func:`guard` replaces ``sys.stdout`` (and ``sys.stderr``) with :class:`GuardedStream`
while a command runs: the first ``OSError`` of a write or a flush becomes a
:class:`StreamError` (an :class:`~mpinet.errors.OutputError`, so the commands' own
handlers of ``OSError``, e.g. ``analyze``'s "damaged data", never take it for the input's
fault) and the descriptor is pointed at ``/dev/null``, so that what is still buffered, and
Python's own flush at exit, can no longer fail ("Exception ignored ... BrokenPipeError").

Under an MPI launcher rank 0's stdout is a pipe to the launcher, which writes to the real
file: a full device fails in ``mpiexec`` (MPICH's hydra, measured: exit 255 and six lines
of its own per write) and never in the rank. Rank 0 therefore checks the launcher's
standard output itself (``/proc/PID/fd/1``, Linux) before the bytes leave:
``/dev/full`` and a file system with less room than the pending bytes are refused as
ENOSPC, like a direct write (:func:`launcher_room`). A device that fills while hydra
writes is still hydra's to report.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from mpinet.errors import OutputError

#: bytes written between two checks of the launcher's output (one ``statvfs`` each)
CHECK_EVERY = 1 << 16
#: ``/dev/full``: every write fails with ENOSPC
DEV_FULL = os.makedev(1, 7)


#: bytes of an error message at most (the line's prefix aside): a message that echoes a
#: file or an argument is cut in the middle, its end (the way out) kept
MESSAGE_BYTES = 400


def one_line(text: str, limit: int = MESSAGE_BYTES) -> str:
    """``text`` as one printable line of at most ``limit`` bytes (UTF-8).

    Control characters, NULs and other unprintable code points are escaped (``\\x00``,
    ``\\n``, ``\\u202e``; a byte kept by ``surrogateescape`` as ``\\xNN``); a longer text
    keeps its start and its end around ``[... N bytes cut ...]`` (N of the original).
    """
    size = len(text.encode("utf-8", "surrogateescape"))
    if len(text) <= 3 * limit:
        head_src = tail_src = text
    else:  # a message of megabytes: only its ends can be shown
        head_src, tail_src = text[: 2 * limit], text[-limit:]
    line = "".join(_printable(c) for c in head_src)
    if head_src is tail_src and len(line.encode("utf-8", "surrogateescape")) <= limit:
        return line
    tail, tail_bytes = _take(reversed(tail_src), limit // 4)
    head, head_bytes = _take(head_src, limit - len("".join(tail).encode()) - 40)
    cut = size - head_bytes - tail_bytes
    return f"{''.join(head)} [... {cut:,} bytes cut ...] {''.join(reversed(tail))}"


def _take(chars: Any, budget: int) -> tuple[list[str], int]:
    """Printable pieces of ``chars`` within ``budget`` bytes, and the original bytes taken."""
    pieces, used, orig = [], 0, 0
    for c in chars:
        piece = _printable(c)
        used += len(piece.encode("utf-8"))
        if used > budget:
            break
        pieces.append(piece)
        orig += len(c.encode("utf-8", "surrogateescape"))
    return pieces, orig


def _printable(c: str) -> str:
    if c.isprintable():
        return c
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:  # a byte os.fsdecode could not decode
        return f"\\x{n - 0xDC00:02x}"
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (
        f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"
    )


#: how an error line starts: ``mpinet: error: ``, ``mpinet: error on rank 1: ``
_ERROR_PREFIX = re.compile(r"mpinet: [\w ]{1,40}: ")


def capped(text: str) -> str:
    """An error line written to stderr (``mpinet: ...: MESSAGE[\\n]``) with its message
    capped by :func:`one_line`; any other text unchanged."""
    m = _ERROR_PREFIX.match(text)
    if m is None:
        return text
    body = text[m.end() :]
    end = "\n" if body.endswith("\n") else ""
    return m.group(0) + one_line(body[: len(body) - len(end)]) + end


class StreamError(OutputError):
    """A write to standard output or error failed (``quiet``: the reader went away)."""

    def __init__(self, name: str, exc: OSError) -> None:
        why = exc.strerror or str(exc) or type(exc).__name__
        super().__init__(f"cannot write the results to {name}: {why}")
        self.errno = exc.errno
        self.quiet = exc.errno == errno.EPIPE


def launcher_room(pid: int, fd: int = 1) -> int | None:
    """Bytes the launcher ``pid`` can still write on its descriptor ``fd`` (0: ``/dev/full``);
    None when unbounded or unknown (a terminal, a pipe, a process we cannot inspect)."""
    path = f"/proc/{pid}/fd/{fd}"
    try:
        st = os.stat(path)
        if stat.S_ISCHR(st.st_mode):
            return 0 if st.st_rdev == DEV_FULL else None
        if not stat.S_ISREG(st.st_mode):
            return None
        vfs = os.statvfs(path)
    except OSError:
        return None
    return vfs.f_bavail * vfs.f_frsize


def _fileno(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError):  # a StringIO, pytest's capture
        return None


class GuardedStream:
    """A text stream whose write errors raise :class:`StreamError` once, then go nowhere.

    Parameters
    ----------
    stream : text stream
        ``sys.stdout`` or ``sys.stderr`` as the command found it.
    name : str
        "standard output" or "standard error", for the message.
    launcher : int or None
        The pid of the MPI launcher whose stdout this rank's output ends in (rank 0 under
        ``mpiexec``): its room is checked before the bytes leave.
    errors : bool
        The stream of the error lines (stderr): every ``mpinet: ...: MESSAGE`` written is
        capped (:func:`capped`, whoever prints it), and a failed write is only recorded:
        the error lines and the progress have nowhere else to go, and the command's exit
        code stands. Otherwise (stdout) the first failure raises.
    """

    def __init__(
        self, stream: TextIO, name: str, launcher: int | None = None, errors: bool = False
    ) -> None:
        self._stream, self._name, self._launcher = stream, name, launcher
        self._errors = errors
        # stdout is written with os.write: Python's buffered writer took a short write on a
        # full file system (65,536 of 600,000 bytes on a 64 KiB tmpfs) and then raised nothing
        self._fd = None if errors else _fileno(stream)
        self._pending = 0  # bytes written since the launcher's room was last checked
        self._checked = False  # the first write is checked (the stream may flush each line)
        self.failed: StreamError | None = None

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._stream, attr)

    def _fail(self, exc: OSError) -> StreamError:
        self.failed = StreamError(self._name, exc)
        with contextlib.suppress(OSError, ValueError, AttributeError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())  # the buffered rest and the exit flush
            os.close(null)
        return self.failed

    def _check(self, force: bool) -> None:
        first = not self._checked
        if self._launcher is None or not (first or force or self._pending >= CHECK_EVERY):
            return
        self._checked = True
        room, pending = launcher_room(self._launcher, 2 if self._errors else 1), self._pending
        self._pending = 0
        if room is not None and room < pending:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def write(self, text: str) -> int:
        if self.failed is not None:
            return len(text)
        if self._errors:
            text = capped(text)
        try:
            self._pending += len(text)
            self._check(force=False)
            if self._fd is None:
                return self._stream.write(text)
            self._stream.flush()  # anything written before the guard
            data = memoryview(text.encode(self._stream.encoding or "utf-8", "backslashreplace"))
            while data:
                data = data[os.write(self._fd, data) :]
            return len(text)
        except OSError as exc:
            return self._failed(exc) or len(text)

    def _failed(self, exc: OSError) -> None:
        err = self._fail(exc)
        if not self._errors:
            raise err from None

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.failed is not None:
            return
        try:
            self._check(force=self._pending > 0)
            self._stream.flush()
        except OSError as exc:
            self._failed(exc)


@contextlib.contextmanager
def guard(launcher: int | None = None) -> Iterator[tuple[GuardedStream, GuardedStream]]:
    """``sys.stdout`` and ``sys.stderr`` guarded while the block runs; restored after.

    ``launcher``: the pid of the launcher whose stdout and stderr rank 0's output ends in.
    """
    old_out, old_err = sys.stdout, sys.stderr
    out = GuardedStream(old_out, "standard output", launcher)
    # hydra exits 255 with lines of its own when it cannot write a rank's stderr either
    err = GuardedStream(old_err, "standard error", launcher, errors=True)
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        sys.stdout, sys.stderr = old_out, old_err
