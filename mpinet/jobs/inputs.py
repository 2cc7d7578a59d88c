"""Input files, read with a size limit and a time limit: one line instead of a machine filled.

Every file mpinet reads as text (a job file, a faults file given to ``info --faults-file``;
later a network file) goes through :func:`read_input`, whose ``limit`` is the most that
kind of file may hold. A path can be much more than a regular file: ``/dev/zero`` or a
block device never ends (``mpinet run /dev/zero`` read 19 GB in under a minute), a FIFO
or ``/dev/stdin`` may wait for a writer for ever, a ``/proc`` file states size 0, and a
file may grow while it is read. So:

* a regular file whose stated size is over the limit is refused before a byte is read;
* at most ``limit + 1`` bytes are ever read, whatever the file says: one byte more than
  the limit proves the file is too large (a ``/proc`` file, a device, a growing file);
* anything that is not a regular file (a FIFO, a pipe, a terminal, a character device)
  is read without blocking, and refused when it has given nothing for ``wait`` seconds
  (or has not ended within it);
* a socket, a directory, a missing or unreadable file: one line saying which.

Errors are :class:`~mpinet.errors.JobError` (exit code 2) naming the file, its kind and
the limit.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import time
from pathlib import Path

from mpinet.errors import JobError

#: the most a job file (or a faults file) may hold: the largest in jobs/ is 2 KiB, and a
#: [faults] list of 20,000 failed links is about 600 KiB
JOB_FILE_BYTES = 1 << 20
#: seconds a FIFO, pipe or terminal may take to give its whole content
WAIT_SECONDS = 10.0
_CHUNK = 1 << 16


def size_words(nbytes: int) -> str:
    """``1 MiB``, ``64 KiB`` or ``512 bytes`` (exact binary units where they divide)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            q = nbytes / scale
            return f"{q:,.0f} {unit}" if q == int(q) else f"{q:,.1f} {unit}"
    return f"{nbytes:,} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO or pipe"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_input(
    path: str | Path,
    what: str = "job file",
    limit: int = JOB_FILE_BYTES,
    *,
    wait: float = WAIT_SECONDS,
    hint: str = "a job file is a small TOML text",
) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them, or a one-line :class:`JobError`.

    Parameters
    ----------
    path : str or Path
        The file as the user gave it (named so in the message).
    what : str
        What the file is, for the message (``"job file"``).
    limit : int
        The most bytes the file may hold (:data:`JOB_FILE_BYTES` for a job file).
    wait : float
        Seconds a FIFO, pipe or terminal may take to give its whole content.
    hint : str
        Why the limit is what it is, for the message.

    Raises
    ------
    JobError
        Missing, a directory, unreadable, a socket, over ``limit`` bytes, or (not a
        regular file) still giving data or silent after ``wait`` seconds.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise JobError(f"{what} {path} does not exist") from None
    except OSError as exc:  # permission on a directory above, a loop of links, a bad name
        if exc.errno == errno.ELOOP:  # named as network files name it (mpinet/netfile/source.py)
            raise JobError(f"{what} {path} is a loop of symbolic links") from None
        raise JobError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise JobError(f"{what} {path} is a directory; give a .toml file (e.g. jobs/)")
    if stat.S_ISSOCK(st.st_mode):
        raise JobError(f"{what} {path} is a socket, not a file")
    regular = stat.S_ISREG(st.st_mode)
    if regular and st.st_size > limit:
        raise JobError(
            f"{what} {path} holds {st.st_size:,} bytes, over the limit of {size_words(limit)} "
            f"({hint}); give the right file"
        )
    flags = os.O_RDONLY | getattr(os, "O_NOCTTY", 0)
    if not regular:  # a FIFO with no writer would block the open itself
        flags |= os.O_NONBLOCK
    try:
        fd = os.open(path, flags)
    except OSError as exc:  # permission, I/O error, a FIFO gone away...
        raise JobError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    try:
        if regular:
            data = _read_regular(fd, limit + 1)
        else:
            data = _read_stream(fd, limit + 1, wait, f"{what} {path} ({_kind(st.st_mode)})")
    except OSError as exc:
        raise JobError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # a device, a /proc file or a file that grew while read
        how = "grew past" if regular else f"({_kind(st.st_mode)}) gave more than"
        raise JobError(
            f"{what} {path} {how} {size_words(limit)}, the limit ({hint}); give the right file"
        )
    return data


def _read_regular(fd: int, most: int) -> bytes:
    """Up to ``most`` bytes of a regular file (which may grow while it is read)."""
    parts, got = [], 0
    while got < most:
        b = os.read(fd, min(_CHUNK, most - got))
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _read_stream(fd: int, most: int, wait: float, name: str) -> bytes:
    """Up to ``most`` bytes of a non-blocking descriptor, within ``wait`` seconds in all."""
    parts, got = [], 0
    end = time.monotonic() + wait
    poll = select.poll()  # not select.select: it cannot watch descriptors above 1023
    poll.register(fd, select.POLLIN)
    while got < most:
        left = end - time.monotonic()
        if left <= 0:
            raise JobError(
                f"{name} gave {got:,} bytes and had not ended after {wait:g} s; "
                "give a regular file (or a pipe that ends)"
            )
        if not poll.poll(int(1000 * min(left, 0.5)) + 1):
            continue
        try:
            b = os.read(fd, min(_CHUNK, most - got))
        except BlockingIOError:
            continue
        if not b:  # the writer closed (a FIFO without one never polls as ready)
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)
