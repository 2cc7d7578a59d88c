"""Networks from files: ``file:PATH`` specs, read beside the engine (file I/O lives here).

:func:`load_topology` is :func:`mpinet.topology.from_spec` plus ``file:PATH``:
the commands call it for every spec. Three formats, told apart by the file's
suffix or, failing that, by its first token:

``edgelist``
    ``u v [port [class]]`` per line, ``#`` comments (:mod:`.edgelist`).
``graphml``
    GraphML nodes and edges, optional ``label`` and ``port`` attributes
    (:mod:`.graphml`); networkx's writer and ``mpinet export`` round trip.
``anynet``
    BookSim2's anynet file: routers and their nodes and links, one virtual node
    per router (:mod:`.anynet`).

Every rank reads the whole file: the topology is a table of all nodes, as a
built-in family's ``neighbors`` is. Reading is planned first: a file whose
tables would not fit is refused before any array is allocated.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from mpinet.errors import ResourceError, SpecError
from mpinet.netfile import anynet, edgelist, graphml, source
from mpinet.topology import from_spec
from mpinet.topology.base import Topology
from mpinet.topology.file_spec import FORMATS, split_file_spec
from mpinet.topology.filegraph import FileError, FileGraph

_SUFFIX = {
    ".graphml": "graphml",
    ".xml": "graphml",
    ".anynet": "anynet",
    ".edges": "edgelist",
    ".edgelist": "edgelist",
    ".el": "edgelist",
}

__all__ = [
    "FORMATS",
    "FileError",
    "detect_format",
    "estimate_read_bytes",
    "files_read",
    "load_topology",
    "read_network",
]


def load_topology(
    spec: str, allow_disconnected: bool = False, memory: int | None = None, ranks_here: int = 1
) -> Topology:
    """A topology from its spec: a built-in family, or ``file:PATH`` read from disk.

    Parameters
    ----------
    spec : str
        ``FAMILY:PARAMS`` or ``file:PATH`` (``file:FORMAT:PATH`` names the format).
    allow_disconnected : bool
        Accept a file network of several components.
    memory : int, optional
        Bytes this machine can give; a file whose reading needs more (times
        ``ranks_here``, the ranks reading it on this machine) is refused.

    Raises
    ------
    FileError
        The file cannot be read (the message names the file, the line, the fault).
    ResourceError
        Reading would not fit in ``memory``.
    """
    if not isinstance(spec, str) or not spec.strip().lower().startswith("file:"):
        return from_spec(spec)
    fmt, path = _split(spec.strip())
    head, sep, _ = path.partition(":")
    if fmt is None and sep and head.isalpha() and not os.path.exists(path):
        raise SpecError(
            f"unknown network file format {head!r} in {spec.strip()!r}; formats: "
            f"{', '.join(FORMATS)} (file:FORMAT:PATH), or file:PATH to tell by the suffix"
        )
    return read_network(path, fmt, allow_disconnected, memory, ranks_here, spec=spec.strip())


def _split(spec: str) -> tuple[str | None, str]:
    fmt, path = split_file_spec(spec[5:])
    return (fmt[:-1].lower() or None), path


def detect_format(path: str, head: bytes) -> str:
    """The format of a file from its suffix, else from its first bytes."""
    fmt = _SUFFIX.get(os.path.splitext(path)[1].lower())
    if fmt:
        return fmt
    text = head.lstrip()
    if text.startswith(b"<"):
        return "graphml"
    if text.split(b" ", 1)[0].strip() == b"router":
        return "anynet"
    return "edgelist"


#: peak bytes of reading, per byte of the file, by format (beside the file's own bytes):
#: GraphML and anynet keep a Python object per node id and per line or element, so their
#: densest files (short ids; GraphML's edges before its nodes) peaked at 10.6 and 11 bytes
#: a byte above the file (docs/networks.md, "The read plan"); 1.2x that. An edge list's
#: scan arrays are per line (:data:`edgelist.BYTES_PER_LINE`).
PER_BYTE = {"edgelist": 0, "graphml": 14, "anynet": 13}
#: bytes of any read beside those (the readers' fixed buffers: expat's chunk, small tables)
FIXED_BYTES = 4 << 20


def estimate_read_bytes(size: int, lines: int, fmt: str = "edgelist") -> int:
    """Peak bytes of reading a file of ``size`` bytes and ``lines`` lines as ``fmt``.

    The file's bytes, plus per format what its parse holds at its peak: an edge list's
    scan arrays and tables are sized by its lines (a line is at most one link); GraphML
    and anynet build Python objects per element or token, bounded by the bytes (a
    one-line 24 MB GraphML file is 24 MB of elements, not one line).
    """
    body = lines * edgelist.BYTES_PER_LINE if fmt == "edgelist" else size * PER_BYTE[fmt]
    return size + body + FIXED_BYTES


def _refuse(path: str, fmt: str | None, size: int, need: int, ranks_here: int, memory: int) -> None:
    kind = f" as {fmt}" if fmt else ""
    raise ResourceError(
        f"reading {path} ({size:,} bytes){kind} could need up to {_mib(need)} on this "
        f"machine ({ranks_here} rank(s) each read it), over the {_mib(memory)} available; "
        "use fewer ranks per machine, or a machine with more memory"
    )


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.1f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:,.1f} MiB"


#: (path, identity) of every network file this process has read, the identity being
#: (device, inode, size, mtime) as :func:`mpinet.outputs.target.identity` gives it: an output
#: must never be one of them (:func:`~mpinet.outputs.target.check_target` refuses it)
READ: list[tuple[str, tuple]] = []


def files_read() -> tuple[tuple[str, tuple], ...]:
    """The network files read so far by this process: (absolute path, identity)."""
    return tuple(READ)


def read_network(
    path: str,
    fmt: str | None = None,
    allow_disconnected: bool = False,
    memory: int | None = None,
    ranks_here: int = 1,
    spec: str | None = None,
) -> FileGraph:
    """Read a network file (see the module docstring for the formats).

    The path is checked for what it is (:mod:`.source`: a FIFO, a device, a directory,
    a loop of links, an unreadable file: one line each); its stated size is planned
    against ``memory`` before a byte is read, its bytes (the ones read, never more than
    stated) again before any parse array exists; binary content is refused before any
    reader quotes it.
    """
    spec = spec or f"file:{path}"
    if not path:
        raise SpecError("file:PATH needs a path, e.g. file:jobs/networks/ring.edges")
    st = source.check_path(path)
    ranks = max(1, ranks_here)
    known = fmt or _SUFFIX.get(os.path.splitext(path)[1].lower())
    # GraphML's and anynet's plans need only the size; an edge list's lines come later
    first = estimate_read_bytes(st.st_size, 0, known) if known else st.st_size
    if memory is not None and first * ranks > memory:
        _refuse(path, known, st.st_size, first * ranks, ranks_here, memory)
    buf = source.read_bytes(path, st)
    size = int(buf.size)
    digest = hashlib.sha256(buf).hexdigest()  # of the bytes as they are on disk
    source.check_binary(buf, path)
    buf = source.normalize(buf)
    fmt = fmt or detect_format(path, bytes(buf[:4096]))
    if fmt not in FORMATS:
        raise SpecError(f"network file format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    if memory is not None:  # bytes and lines counted, before any parse array exists
        lines = int(np.count_nonzero(buf == 10)) + 1 if fmt == "edgelist" else 0
        need = estimate_read_bytes(size, lines, fmt)
        if need * ranks > memory:
            _refuse(path, fmt, size, need * ranks, ranks_here, memory)
    parse = {"edgelist": edgelist.parse, "graphml": graphml.parse}.get(fmt, anynet.parse)
    got = parse(buf, path)
    del buf
    full = os.path.abspath(path)
    READ.append((full, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)))
    info = {"path": path, "format": fmt, "sha256": digest, "links_listed": got.pop("links")}
    return FileGraph(spec, **got, info=info, allow_disconnected=allow_disconnected)
