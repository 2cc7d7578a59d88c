"""Two words to the MPI launcher itself, through its process-management interface (PMI).

MPICH's ``mpiexec`` (hydra) gives each rank a socket to its proxy in ``$PMI_FD`` and
speaks the PMI-1 wire protocol on it (``cmd=NAME key=value\\n`` lines). mpinet uses two
of its commands, measured with the MPICH wheel's hydra 5.0.2:

* ``finalize``: this rank leaves the job in order. Hydra kills every other rank (SIGKILL)
  as soon as a rank that has not finalized exits, and then reports a launcher-killed
  rank's status, so a job whose ranks all exit 130 on Ctrl-C ended with exit code 9 and
  a "BAD TERMINATION ... Killed" banner on 3-4 ranks (on 2 it depended on the order in
  which hydra reaped them). A rank that has said ``finalize`` first is never killed
  for it: the job's code is the ranks' own (hydra ORs their exit statuses).
* ``abort``: the launcher ends the job with the given code, without the line
  ``Abort(1) on node ...`` that ``MPI_Abort`` prints before saying the same.

Elsewhere (no ``$PMI_FD``: another launcher, or no launcher) both return False and the
caller falls back on MPI. No MPI here; the functions never raise.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import stat
import struct
import termios
import time


def _fd() -> int | None:
    """The PMI socket of this process, if the launcher gave one."""
    text = os.environ.get("PMI_FD", "")
    if not text.isdigit():
        return None
    try:
        return int(text) if stat.S_ISSOCK(os.fstat(int(text)).st_mode) else None
    except OSError:
        return None


def _say(fd: int, line: str) -> bool:
    try:
        os.write(fd, line.encode())
    except OSError:
        return False
    return True


def finalize(timeout: float = 2.0) -> bool:
    """Tell the launcher this rank leaves in order; True once it acknowledged.

    Called only by a process about to ``os._exit`` (MPI is never used again: the launcher
    closes the socket after its answer).
    """
    fd = _fd()
    if fd is None or not _say(fd, "cmd=finalize\n"):
        return False
    got, end = b"", time.monotonic() + timeout
    while b"finalize_ack" not in got and (left := end - time.monotonic()) > 0:
        try:
            if not select.select([fd], [], [], left)[0]:
                break
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    return b"finalize_ack" in got


def abort(code: int) -> bool:
    """Ask the launcher to end the whole job with exit code ``code`` (True: asked)."""
    fd = _fd()
    return fd is not None and _say(fd, f"cmd=abort exitcode={int(code)}\n")


def drain_stderr(timeout: float = 2.0) -> None:
    """Wait until the launcher has read what this process wrote on stderr (a pipe).

    The launcher stops reading a rank's output when it kills it, so a line written just
    before an abort could be lost (measured: MPICH's own abort line was, once in three).
    """
    with contextlib.suppress(OSError, ValueError):
        if not stat.S_ISFIFO(os.fstat(2).st_mode):
            return
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            waiting = struct.unpack("i", fcntl.ioctl(2, termios.FIONREAD, b"\0" * 4))[0]
            if waiting == 0:
                return
            time.sleep(0.01)
