"""A network file's bytes: what the path is, read bounded, checked for binary content.

A path given as ``file:PATH`` may be much more than a regular file: a FIFO would
block the open for ever, ``/dev/zero`` never ends, a ``/proc`` file states size 0
and has content, a loop of symbolic links or an unreadable file raises an
``OSError``. Each is named as what it is, in one line. A regular file is read
whole, but never more than it stated (a file that grows while it is read is
refused); a file that states size 0 (``/proc``, ``/sys``) is read up to
:data:`UNSIZED_BYTES`.

The bytes are then checked: a NUL byte means a binary file (an ELF, an image, an
HDF5 trace given by mistake), refused naming its line and offset, before any
reader quotes it. A UTF-8 byte-order mark is skipped and lone carriage returns
(classic Mac line endings) end lines, as ``\\n`` does, so line numbers in
messages are those an editor shows.
"""

from __future__ import annotations

import errno
import os
import stat

import numpy as np

from mpinet.topology.filegraph import FileError

#: the most bytes read from a file that states size 0 (a ``/proc`` or ``/sys`` file)
UNSIZED_BYTES = 64 << 20
_CHUNK = 1 << 24
BOM = b"\xef\xbb\xbf"


def _kind(mode: int) -> str | None:
    """What a path that is not a regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "is a character device"
    if stat.S_ISBLK(mode):
        return "is a block device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is not a regular file"


def _os_words(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "does not exist"
    if exc.errno == errno.ELOOP:
        return "is a loop of symbolic links"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "cannot be read: permission denied"
    if exc.errno == errno.ENOTDIR:
        return "does not exist (a component of its path is not a directory)"
    if exc.errno == errno.ENAMETOOLONG:
        return "has a name too long for this system"
    return f"cannot be read: {exc.strerror or exc}"


def check_path(path: str) -> os.stat_result:
    """The file's status, or a one-line :class:`FileError` naming what the path is."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise FileError(f"network file {path!r:.200} {_os_words(exc)}") from None
    except ValueError:  # a NUL in the name
        raise FileError(f"network file path {path!r:.80} contains a NUL byte") from None
    kind = _kind(st.st_mode)
    if kind is not None:
        tail = " (a directory of files is not a network)" if stat.S_ISDIR(st.st_mode) else ""
        raise FileError(f"network file {path!r:.200} {kind}, not a regular file{tail}")
    return st


def read_bytes(path: str, st: os.stat_result) -> np.ndarray:
    """The bytes of the regular file ``path`` as uint8, never more than it stated.

    Raises
    ------
    FileError
        Unreadable, grown while read, or (stated size 0) over :data:`UNSIZED_BYTES`.
    """
    size = st.st_size
    most = size if size > 0 else UNSIZED_BYTES
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise FileError(f"network file {path!r:.200} {_os_words(exc)}") from None
    try:
        buf = np.empty(most + 1, dtype=np.uint8)
        view = memoryview(buf)
        got = 0
        while got <= most:
            n = os.readv(fd, [view[got : got + min(_CHUNK, most + 1 - got)]])
            if n == 0:
                break
            got += n
    except OSError as exc:
        raise FileError(f"network file {path!r:.200} {_os_words(exc)}") from None
    finally:
        os.close(fd)
    if got > most:
        if size > 0:
            raise FileError(
                f"network file {path!r:.200} grew while it was read (it stated {size:,} bytes); "
                "read it when its writer has finished"
            )
        raise FileError(
            f"network file {path!r:.200} states size 0 but gives over {UNSIZED_BYTES >> 20} MiB "
            "(a /proc or /sys file?); copy what you mean to a regular file"
        )
    return buf[:got]


def check_binary(buf: np.ndarray, path: str) -> None:
    """Refuse a file holding a NUL byte (binary content), naming its line and offset."""
    nul = np.flatnonzero(buf == 0)
    if nul.size:
        at = int(nul[0])
        line = int(np.count_nonzero(buf[:at] == 10)) + 1
        head = bytes(buf[:4])
        what = {b"\x7fELF": "an ELF executable", b"\x89HDF": "an HDF5 file (a trace?)"}.get(
            head, "binary content"
        )
        if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
            what = "UTF-16 text (save it as UTF-8)"
        raise FileError(
            f"{path} line {line}: a NUL byte at byte {at:,}: {what}, not a network file "
            "(network files are text)"
        )


def normalize(buf: np.ndarray) -> np.ndarray:
    """The bytes without a UTF-8 byte-order mark, lone carriage returns made line ends.

    ``\\r\\n`` stays as it is (the readers treat ``\\r`` as a space); a ``\\r`` not
    followed by ``\\n`` becomes ``\\n``. ``buf`` may be changed in place.
    """
    if buf.size >= 3 and bytes(buf[:3]) == BOM:
        buf = buf[3:]
    cr = np.flatnonzero(buf == 13)
    if cr.size:
        nxt = cr + 1
        lone = cr[(nxt >= buf.size) | (buf[np.minimum(nxt, buf.size - 1)] != 10)]
        buf[lone] = 10
    return buf
