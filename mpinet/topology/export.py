"""Export a network for other simulators: BookSim2 ``anynet``, GraphML, an edge list.

Pure functions: :func:`chunks` yields the text in pieces of at most
``chunk_nodes`` nodes' worth (no N^2 and no per-link Python objects beyond one
chunk), :func:`write` streams them to a file object the caller opened, and
:func:`estimate_bytes` lets the caller refuse an output that would be too
large before writing anything.

Formats
-------
``anynet``
    BookSim2's ``anynet`` network file (``topology = anynet``,
    ``network_file = ...``), as its parser reads it (``src/networks/anynet.cpp``):
    one line per router, ``router <id> node <id> router <nbr> <latency> ...``,
    tokens separated by single spaces, ids sequential from 0. mpinet node ``v``
    is router ``v`` with terminal node ``v``; each neighbour is listed with
    latency 1 (latencies are per direction, so both ends list the link).
    BookSim numbers a router's ports itself (terminal first, then neighbours
    by increasing router id), so port names and classes are not carried, and
    the format has no comment syntax.
``graphml``
    A directed GraphML graph (what networkx ``read_graphml`` and SST's
    GraphML importers read): node ids ``n<id>`` with attribute ``label`` (the
    paper's label), one edge per directed link with ``port`` (name),
    ``port_class`` and ``port_index``; graph attributes ``spec`` and ``family``.
``edgelist``
    ``# comments``, then one line per directed link: ``source target port
    port_class`` (node ids), which ``networkx.read_edgelist(...,
    create_using=nx.DiGraph, nodetype=int, data=[("port", str),
    ("port_class", str)])`` reads.

Every undirected link appears twice in ``graphml`` and ``edgelist``, once from
each end with that end's port, and once per end in ``anynet``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO
from xml.sax.saxutils import escape

import numpy as np

from mpinet.errors import ResourceError, SpecError
from mpinet.topology.base import Topology

FORMATS = ("anynet", "graphml", "edgelist")
#: default limit of :func:`check_size`, bytes
MAX_BYTES = 2 * 2**30
#: nodes per chunk
CHUNK_NODES = 1 << 14
#: working memory per byte of one chunk's text, by format: numpy's 4-byte characters in
#: the intermediate arrays, the Python strings and the joined piece (measured peaks:
#: hypercube:18 anynet 231 MiB, edgelist 305 MiB, graphml 588 MiB; star:9 graphml 418 MiB)
CHUNK_MEMORY_FACTOR = {"anynet": 24, "edgelist": 24, "graphml": 16}
#: seconds per byte written (15-25 ns of CPU time measured for every format)
SECONDS_PER_BYTE = 25e-9


def _links(topo: Topology, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Directed links ``(u, v, port)`` of nodes ``[lo, hi)``, in (node, port) order."""
    nb = topo.neighbors(np.arange(lo, hi))
    u, p = np.nonzero(nb >= 0)
    return u + lo, nb[u, p], p


def _digits(n: int) -> int:
    return len(str(max(n - 1, 0)))


def estimate_bytes(topo: Topology, fmt: str) -> int:
    """An upper bound on the size of the export (bytes), computed without generating it."""
    check_format(fmt)
    n, deg = topo.num_nodes, topo.degree
    d = _digits(n)
    links = n * deg  # an upper bound (FCCN gateways lack a port)
    port = max(len(p) for p in topo.ports)
    cls = max(len(c) for c in topo.port_classes)
    if fmt == "anynet":
        return n * (2 * d + 14) + links * (d + 10)
    if fmt == "edgelist":
        return 200 + links * (2 * d + port + cls + 4)
    label = max(len(escape(topo.label(v))) for v in {0, n - 1})
    return 1200 + n * (d + label + 40) + links * (2 * d + port + cls + 110)


def estimate_memory(topo: Topology, fmt: str, chunk_nodes: int = CHUNK_NODES) -> int:
    """Working memory of one chunk of the export (bytes), from its estimated text size."""
    per_node = estimate_bytes(topo, fmt) / max(topo.num_nodes, 1)
    return int(min(chunk_nodes, topo.num_nodes) * per_node * CHUNK_MEMORY_FACTOR[fmt])


def estimate_seconds(topo: Topology, fmt: str) -> float:
    """The time the export should take on one core, from its estimated size."""
    return estimate_bytes(topo, fmt) * SECONDS_PER_BYTE


def check_format(fmt: str) -> None:
    """Raise :class:`SpecError` for an unknown format."""
    if fmt not in FORMATS:
        raise SpecError(f"export format must be one of {', '.join(FORMATS)}; got {fmt!r}")


def check_size(topo: Topology, fmt: str, limit: int = MAX_BYTES) -> int:
    """The estimated size; :class:`ResourceError` when it exceeds ``limit`` bytes.

    The estimate is an upper bound: 1.01-1.25 times the bytes written (measured on
    every family and format; the edge list's is the loosest, its port names vary).
    """
    size = estimate_bytes(topo, fmt)
    if size > limit:
        lines = topo.num_nodes if fmt == "anynet" else topo.num_nodes * topo.degree
        raise ResourceError(
            f"exporting {topo.spec} ({topo.num_nodes:,} nodes) as {fmt} would write about "
            f"{size / 2**30:,.1f} GiB ({lines:,} lines, about "
            f"{estimate_seconds(topo, fmt) / 60:,.0f} min), over the limit of "
            f"{limit / 2**30:,.1f} GiB; way out: a smaller network"
        )
    return size


def chunks(topo: Topology, fmt: str, chunk_nodes: int = CHUNK_NODES) -> Iterator[str]:
    """The export as text pieces, each covering at most ``chunk_nodes`` nodes."""
    check_format(fmt)
    body = {"anynet": _anynet, "graphml": _graphml_edges, "edgelist": _edgelist}[fmt]
    if fmt == "graphml":
        yield _graphml_head(topo)
        for lo in range(0, topo.num_nodes, chunk_nodes):
            yield _graphml_nodes(topo, lo, min(lo + chunk_nodes, topo.num_nodes))
    elif fmt == "edgelist":
        yield (
            f"# mpinet export {topo.spec}: {topo.num_nodes} nodes, degree {topo.degree}, "
            "one line per directed link\n# source target port port_class (node ids)\n"
        )
    for lo in range(0, topo.num_nodes, chunk_nodes):
        yield body(topo, lo, min(lo + chunk_nodes, topo.num_nodes))
    if fmt == "graphml":
        yield "  </graph>\n</graphml>\n"


def write(
    topo: Topology,
    fmt: str,
    fh: IO[str],
    chunk_nodes: int = CHUNK_NODES,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Stream the export to ``fh`` (opened by the caller); returns the characters written.

    ``progress(pieces, total)`` is called after each piece written (a chunk of nodes,
    their links, a header): GraphML writes the nodes, then the links.
    """
    check_format(fmt)
    blocks = -(-topo.num_nodes // chunk_nodes)
    count = {"anynet": blocks, "edgelist": blocks + 1, "graphml": 2 * blocks + 2}[fmt]
    total = 0
    for i, piece in enumerate(chunks(topo, fmt, chunk_nodes)):
        fh.write(piece)
        total += len(piece)
        if progress is not None:
            progress(i + 1, count)
    return total


def _anynet(topo: Topology, lo: int, hi: int) -> str:
    u, v, _ = _links(topo, lo, hi)
    nbr = np.char.add(np.char.add(" router ", v.astype(str)), " 1")
    starts = np.searchsorted(u, np.arange(lo, hi + 1))
    out = []
    for i, node in enumerate(range(lo, hi)):
        out.append(f"router {node} node {node}" + "".join(nbr[starts[i] : starts[i + 1]]) + "\n")
    return "".join(out)


def _edgelist(topo: Topology, lo: int, hi: int) -> str:
    u, v, p = _links(topo, lo, hi)
    names = np.array([f" {a} {b}\n" for a, b in zip(topo.ports, topo.port_classes, strict=True)])
    rows = np.char.add(np.char.add(np.char.add(u.astype(str), " "), v.astype(str)), names[p])
    return "".join(rows.tolist())


_KEYS = (
    ("g0", "graph", "spec", "string"),
    ("g1", "graph", "family", "string"),
    ("v0", "node", "label", "string"),
    ("e0", "edge", "port", "string"),
    ("e1", "edge", "port_class", "string"),
    ("e2", "edge", "port_index", "int"),
)


def _graphml_head(topo: Topology) -> str:
    keys = "".join(
        f'  <key id="{k}" for="{f}" attr.name="{name}" attr.type="{t}"/>\n'
        for k, f, name, t in _KEYS
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
        'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n'
        f"{keys}"
        '  <graph id="G" edgedefault="directed">\n'
        f'    <data key="g0">{escape(topo.spec)}</data>\n'
        f'    <data key="g1">{escape(topo.family)}</data>\n'
    )


def _graphml_nodes(topo: Topology, lo: int, hi: int) -> str:
    labels = topo.labels(np.arange(lo, hi))
    return "".join(
        f'    <node id="n{v}"><data key="v0">{escape(s)}</data></node>\n'
        for v, s in zip(range(lo, hi), labels, strict=True)
    )


def _graphml_edges(topo: Topology, lo: int, hi: int) -> str:
    u, v, p = _links(topo, lo, hi)
    attrs = np.array(
        [
            f'><data key="e0">{escape(a)}</data><data key="e1">{escape(b)}</data>'
            f'<data key="e2">{i}</data></edge>\n'
            for i, (a, b) in enumerate(zip(topo.ports, topo.port_classes, strict=True))
        ]
    )
    src = np.char.add('    <edge source="n', u.astype(str))
    rows = np.char.add(np.char.add(np.char.add(src, '" target="n'), v.astype(str)), '"')
    return "".join(np.char.add(rows, attrs[p]).tolist())


__all__ = [
    "FORMATS",
    "MAX_BYTES",
    "check_format",
    "check_size",
    "chunks",
    "estimate_bytes",
    "estimate_memory",
    "estimate_seconds",
    "write",
]
