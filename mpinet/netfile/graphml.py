"""The GraphML reader: ``<node>`` and ``<edge>`` elements, optional ``label`` and port data.

One streaming pass of expat over the bytes (no tree of the file): nodes get ids
``0..N-1`` in the order of their ``<node>`` elements, labelled by their
``label`` data (a ``<key attr.name="label" for="node">``) or else their GraphML
id; labels must be unique (they name nodes on the command line). Edges name
nodes by GraphML id, declared before or after the edge; they are collected into
``array('q')`` buffers (two node indices, the line, the port index, the port
name's and class's number), so the only Python objects kept are the node ids
and labels.

``edgedefault="undirected"`` (networkx's ``write_graphml`` of a ``Graph``):
each edge is a link, listing one twice is a duplicate. ``directed`` (mpinet's
export; yEd writes it for any drawing): each link from both ends, or each once
(the rule of :func:`~mpinet.topology.filegraph.links_from_pairs`), a mix is
refused. Edge data ``port`` (the port at the edge's source, by name),
``port_index`` and ``port_class``, all three written by ``mpinet export
--format graphml``, name the ports: the port is ``port_index`` where given,
else the name's order of first appearance; naming ports needs every link
listed from both ends. Hyperedges, ``<port>`` elements and nested graphs are
refused.
"""

from __future__ import annotations

from array import array
from xml.parsers import expat

import numpy as np

from mpinet.topology.filegraph import (
    DEGREE_WHY,
    MAX_DEGREE,
    FileError,
    links_from_pairs,
    port_tables,
    shown,
)

#: bytes handed to expat at a time
CHUNK = 1 << 20
_EDGE_KEYS = ("port", "port_class", "port_index")
_UNSUPPORTED = {"hyperedge": "hyperedges", "port": "<port> elements", "endpoint": "hyperedges"}


class _Reader:
    """expat handlers: the state of one pass over a GraphML file."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.p = expat.ParserCreate(namespace_separator="}")
        self.p.buffer_text = True
        self.p.StartElementHandler = self.start
        self.p.EndElementHandler = self.end
        self.root = None
        self.tags: dict[str, str] = {}
        self.keys: dict[str, str] = {}  # key id -> "label" / "port" / ... (the ones we read)
        self.graphs = 0
        self.in_graph = False
        self.edgedefault = "directed"
        self.ids: dict[str, int] = {}
        self.labels: list[str] = []
        self.pending: dict[str, int] = {}  # ids named by edges before their <node>: -1, -2, ...
        self.pending_at: list[tuple[int, int]] = []  # (edge number, line) of first use
        self.node = -1  # the index of the open <node>, or -1
        self.label: str | None = None
        self.edge = 0  # edge elements read so far
        self.open_edge = False
        self.data: str | None = None  # the key of the open <data> we keep
        self.buf: list[str] = []
        self.u, self.v, self.line = array("q"), array("q"), array("q")
        self.pidx, self.pname, self.pcls = array("q"), array("q"), array("q")
        self.names: dict[str, int] = {}
        self.classes: dict[str, int] = {}
        self.attrs: dict[str, str] = {}

    def fail(self, what: str) -> None:
        raise FileError(f"{self.source} line {self.p.CurrentLineNumber}: {what}")

    def start(self, name: str, attrs: dict) -> None:
        tag = self.tags.get(name) or self.tag(name)
        if self.root is None:
            self.root = tag
            if tag != "graphml":
                self.fail(f"not GraphML (the root element is <{tag}>, not <graphml>)")
            return
        if tag == "data":  # the most frequent: an edge's or a node's attribute
            if self.node >= 0 or self.open_edge:
                key = self.keys.get(attrs.get("key", ""))
                if key == "label" and self.node >= 0 or key in _EDGE_KEYS and self.open_edge:
                    self.data, self.buf = key, []
                    self.p.CharacterDataHandler = self.buf.append
            return
        if tag == "edge":
            self.start_edge(attrs)
            return
        if tag in _UNSUPPORTED:
            self.fail(f"{_UNSUPPORTED[tag]} are not supported (only nodes and edges)")
        if tag == "key":
            name = attrs.get("attr.name")
            where = attrs.get("for", "all")
            if name == "label" and where in ("node", "all"):
                self.keys[attrs.get("id", "")] = "label"
            elif name in _EDGE_KEYS and where in ("edge", "all"):
                self.keys[attrs.get("id", "")] = name
        elif tag == "graph":
            if self.in_graph:
                self.fail("nested graphs are not supported")
            self.graphs += 1
            if self.graphs > 1:
                self.fail("a second <graph>: one graph per file")
            self.in_graph = True
            self.edgedefault = attrs.get("edgedefault", "directed")
            if self.edgedefault not in ("directed", "undirected"):
                self.fail(f"edgedefault {shown(self.edgedefault)} is not directed or undirected")
        elif tag == "node":
            self.start_node(attrs)

    def tag(self, name: str) -> str:
        """The local name of an element (namespaces dropped), remembered."""
        self.tags[name] = tag = name.rpartition("}")[2]
        return tag

    def start_node(self, attrs: dict) -> None:
        if not self.in_graph:
            self.fail("a <node> outside <graph>")
        nid = attrs.get("id")
        if nid is None:
            self.fail(f"node {len(self.labels) + 1} has no id attribute")
        if nid in self.ids:
            self.fail(f"node id {shown(nid)} declared twice")
        self.node = len(self.labels)
        self.ids[nid] = self.node
        self.labels.append(nid)
        self.label = None

    def start_edge(self, attrs: dict) -> None:
        if not self.in_graph:
            self.fail("an <edge> outside <graph>")
        self.edge += 1
        self.open_edge = True
        ends = []
        for end in ("source", "target"):
            nid = attrs.get(end)
            if nid is None:
                self.fail(f"edge {self.edge} has no {end} attribute")
            i = self.ids.get(nid)
            if i is None:
                i = self.pending.get(nid)
                if i is None:
                    i = self.pending[nid] = -1 - len(self.pending)
                    self.pending_at.append((self.edge, self.p.CurrentLineNumber))
            ends.append(i)
        self.u.append(ends[0])
        self.v.append(ends[1])
        self.line.append(self.p.CurrentLineNumber)
        d = attrs.get("directed")
        if d is not None and d != ("true" if self.edgedefault == "directed" else "false"):
            self.fail(
                f"edge {self.edge} has directed={shown(d)} in a graph of edgedefault="
                f"{shown(self.edgedefault)}; mixed graphs are not supported"
            )
        self.attrs = {}

    def end(self, name: str) -> None:
        tag = self.tags[name]
        if tag == "data":
            if self.data is None:
                return
            self.p.CharacterDataHandler = None
            text = "".join(self.buf).strip()
            if self.data == "label":
                self.label = text
            else:
                self.attrs[self.data] = text
            self.data = None
        elif tag == "node":
            if self.label is not None:
                self.labels[self.node] = self.label
            self.node = -1
        elif tag == "edge":
            self.end_edge()
        elif tag == "graph":
            self.in_graph = False

    def end_edge(self) -> None:
        self.open_edge = False
        a = self.attrs
        idx = a.get("port_index")
        if idx is not None:
            if not (idx.isascii() and idx.isdigit()):  # not '²' nor '٣': int() takes those
                self.fail(
                    f"edge {self.edge}: port_index {shown(idx)} is not a non-negative integer"
                )
            if len(idx) > 6 or int(idx) >= MAX_DEGREE:  # a 100-digit index never becomes an int
                self.fail(
                    f"edge {self.edge}: port_index {shown(idx)} is over {MAX_DEGREE - 1} (at most "
                    f"{MAX_DEGREE} ports: {DEGREE_WHY})"
                )
        self.pidx.append(-1 if idx is None else int(idx))
        name = a.get("port")
        self.pname.append(-1 if name is None else self.names.setdefault(name, len(self.names)))
        cls = a.get("port_class")
        self.pcls.append(-1 if cls is None else self.classes.setdefault(cls, len(self.classes)))


def parse(buf: np.ndarray, source: str) -> dict:
    """Parse a GraphML file held in ``buf`` (uint8 bytes of the whole file).

    Returns
    -------
    dict with ``nbt``, ``rev`` (tables), ``labels`` (the node labels or ids, or
    None when they are ``0..N-1`` in order), ``ports``, ``port_classes`` (None
    when the edges name no ports), ``links`` (edge elements read).
    """
    r = _Reader(source)
    try:
        for lo in range(0, max(buf.size, 1), CHUNK):
            r.p.Parse(buf[lo : lo + CHUNK].tobytes(), False)
        r.p.Parse(b"", True)
    except expat.ExpatError as e:
        what = expat.ErrorString(e.code)
        if r.root is None:
            raise FileError(f"{source} line {e.lineno}: not GraphML (not XML: {what})") from None
        raise FileError(f"{source} line {e.lineno}: malformed XML ({what})") from None
    n = len(r.labels)
    if r.graphs == 0 or n == 0:
        raise FileError(f"{source}: no nodes (an empty network)")
    u = np.frombuffer(r.u, dtype=np.int64).copy()
    v = np.frombuffer(r.v, dtype=np.int64).copy()
    line = np.frombuffer(r.line, dtype=np.int64)
    if r.pending:
        _resolve(r, u, v)
    labels = _labels(r.labels, source, r.ids)
    undirected = r.edgedefault == "undirected"
    if undirected:  # u v and v u are then the same link: make them equal pairs
        u, v = np.minimum(u, v), np.maximum(u, v)
    src, dst, at, both = links_from_pairs(u, v, line, n, source, labels=labels)
    port, ports, classes = _ports(r, line, source, undirected or not both)
    nbt, rev = port_tables(
        src, dst, n, source, port=None if port is None else port[at], where=line[at], labels=labels
    )
    return {"nbt": nbt, "rev": rev, "labels": labels, "ports": ports,
            "port_classes": classes, "links": int(u.size)}  # fmt: skip


def _resolve(r: _Reader, u: np.ndarray, v: np.ndarray) -> None:
    """Edges that named a node before its ``<node>``: the index, or an error."""
    fix = np.zeros(len(r.pending), dtype=np.int64)
    for (nid, k), (edge, line) in zip(r.pending.items(), r.pending_at, strict=True):
        i = r.ids.get(nid)
        if i is None:
            raise FileError(
                f"{r.source} line {line}: edge {edge} names node {shown(nid)}, not declared"
            )
        fix[-1 - k] = i
    for a in (u, v):
        neg = a < 0
        a[neg] = fix[-1 - a[neg]]


def _labels(labels: list[str], source: str, ids: dict) -> np.ndarray | None:
    if all(s == str(i) for i, s in enumerate(labels)):
        return None
    arr = np.array(labels)
    uniq, first, count = np.unique(arr, return_index=True, return_counts=True)
    if (count > 1).any():
        k = int(np.flatnonzero(count > 1)[0])
        again = [i for i, s in enumerate(labels) if s == uniq[k]][1]
        names = list(ids)
        raise FileError(
            f"{source}: node {shown(names[again])} has label {shown(str(uniq[k]))}, as node "
            f"{shown(names[first[k]])} does (labels name nodes, so they must differ; drop the "
            "label data to use the GraphML ids)"
        )
    return arr


def _ports(r: _Reader, line: np.ndarray, source: str, once: bool):
    """Each edge's port index, and the port names and classes (None when unnamed)."""
    idx = np.frombuffer(r.pidx, dtype=np.int64)
    name = np.frombuffer(r.pname, dtype=np.int64)
    cls = np.frombuffer(r.pcls, dtype=np.int64)
    given = (idx >= 0) | (name >= 0)
    if not given.any():
        if (cls >= 0).any():
            j = int(np.flatnonzero(cls >= 0)[0])
            raise FileError(f"{source} line {line[j]}: a port_class without a port or port_index")
        return None, None, None
    if not given.all():
        i, j = int(np.flatnonzero(~given)[0]), int(np.flatnonzero(given)[0])
        raise FileError(
            f"{source} line {line[i]}: edge without a port, but line {line[j]} names its port "
            "(name every edge's port or none)"
        )
    if once:
        raise FileError(
            f"{source} line {line[0]}: a port is the port at the edge's source, so naming ports "
            "needs a directed graph with every link listed from both ends (as `mpinet export "
            "--format graphml` writes)"
        )
    if (idx >= 0).any() and (idx < 0).any():
        i, j = int(np.flatnonzero(idx < 0)[0]), int(np.flatnonzero(idx >= 0)[0])
        raise FileError(
            f"{source} line {line[i]}: edge without a port_index, but line {line[j]} gives one "
            "(give every edge's or none)"
        )
    names = list(r.names)
    port = idx if idx[0] >= 0 else name
    deg = int(port.max()) + 1
    if deg > MAX_DEGREE:
        i = int(np.argmax(port))
        raise FileError(
            f"{source} line {line[i]}: {deg} port names, over the limit of {MAX_DEGREE} ports "
            f"({DEGREE_WHY})"
        )
    labels = names if idx[0] < 0 else [f"p{p + 1}" for p in range(deg)]
    if idx[0] >= 0 and (name >= 0).any():
        rows = _one_each(port, name)
        if rows:
            i, j = rows
            raise FileError(
                f"{source} line {line[i]}: port {port[i]} is named {shown(names[name[i]])}, but "
                f"{shown(names[name[j]])} at line {line[j]}"
            )
        rows = _one_each(name, port)
        if rows:
            i, j = rows
            raise FileError(
                f"{source} line {line[i]}: port {shown(names[name[i]])} has index {port[i]}, but "
                f"{port[j]} at line {line[j]}"
            )
        k = np.flatnonzero(name >= 0)
        _, first = np.unique(port[k], return_index=True)
        for e in k[first]:
            labels[port[e]] = names[name[e]]
    classes = list(r.classes)
    rows = _one_each(port, cls)
    if rows:
        i, j = rows
        raise FileError(
            f"{source} line {line[i]}: port {shown(labels[port[i]])} has class "
            f"{shown(classes[cls[i]])}, but {shown(classes[cls[j]])} at line {line[j]} "
            "(one class per port)"
        )
    out = ["link"] * deg
    k = np.flatnonzero(cls >= 0)
    _, first = np.unique(port[k], return_index=True)
    for e in k[first]:
        out[port[e]] = classes[cls[e]]
    return port, tuple(labels), tuple(out)


def _one_each(key: np.ndarray, val: np.ndarray) -> tuple[int, int] | None:
    """The first row whose value differs from its key's first (``-1`` = none given), and that."""
    rows = np.flatnonzero((key >= 0) & (val >= 0))
    if rows.size == 0:
        return None
    _, first, inv = np.unique(key[rows], return_index=True, return_inverse=True)
    head = rows[first[inv]]
    bad = np.flatnonzero(val[rows] != val[head])
    if bad.size == 0:
        return None
    return int(rows[bad[0]]), int(head[bad[0]])
