"""Networks read from a file (``file:PATH``): any undirected graph, ports in the file's order.

Pure: the readers (:mod:`mpinet.netfile`, beside the engine) parse the file and
hand over arrays; :func:`links_from_pairs` turns the file's lines into directed
links, checking self loops, duplicates and one-way links, and
:class:`FileGraph` holds the neighbour and reverse-port tables.

Ports: port ``p`` of node ``v`` is the ``p``-th link of ``v`` in the file
(lines in order; a line ``u v`` is a link of ``u`` and of ``v``), or, where the
file names its ports, the ``p``-th port name in order of first appearance. A
port's reverse may differ from node to node (:meth:`FileGraph.reverse_ports`);
where it does not, :attr:`FileGraph.reverse_port` holds it as for the families.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mpinet.errors import TopologyError
from mpinet.topology.base import DEGREE_WHY, MAX_DEGREE, Topology

#: the most characters of a file's content a message quotes
QUOTE_CHARS = 60
#: the most characters of a message about a file (whatever it quotes)
MESSAGE_CHARS = 500


def shown(text: str | bytes, most: int = QUOTE_CHARS, size: int | None = None) -> str:
    """File content as a message quotes it: printable, escaped, at most ``most`` characters.

    ``repr`` escapes control characters; a longer text is cut and says how long it was
    (``size``: its length where ``text`` is already a cut of it).
    """
    unit = "bytes" if isinstance(text, bytes) else "characters"
    if isinstance(text, bytes):
        size = len(text) if size is None else size
        text = text[: 4 * most].decode("utf-8", "replace")
    size = len(text) if size is None else size
    if size <= most and len(text) <= most:
        return repr(text)
    return f"{text[:most]!r}... ({size:,} {unit})"


class FileError(TopologyError):
    """A network file that cannot be read: the message names the file, the line and the fault.

    The message is one line of at most :data:`MESSAGE_CHARS` printable characters, whatever
    a reader put in it (a file's content is quoted with :func:`shown`; this is the net).
    """

    def __init__(self, message: str) -> None:
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message))
        if len(text) > MESSAGE_CHARS:
            text = text[: MESSAGE_CHARS - 4] + " ..."
        super().__init__(text)


def links_from_pairs(
    u: np.ndarray,
    v: np.ndarray,
    where: np.ndarray,
    n: int,
    source: str,
    unit: str = "line",
    labels: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """The directed links of a file's pairs, each undirected link from both ends.

    A file lists each link once (``u v``: both directions), or each direction
    on its own (our exports, BookSim's anynet): it is the second kind when any
    pair's reverse is listed too, and then every pair's must be.

    Parameters
    ----------
    u, v : (M,) int64 node indices of the pairs, in file order
    where : (M,) int64 line (or element) number of each pair, for messages
    n : number of nodes
    source : the file's name, for messages
    unit : what ``where`` counts (``"line"``, ``"edge element"``)
    labels : (N,) the file's node names, for messages (default: the indices)

    Returns
    -------
    src, dst, at : (L,) int64 directed links and the pair each came from (index
        into ``u``), in file order per end
    directed : whether the file listed each direction
    """
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    if u.size == 0:
        raise FileError(f"{source}: no links (an empty network)")
    loop = np.flatnonzero(u == v)
    if loop.size:
        i = loop[0]
        raise FileError(f"{source} {unit} {where[i]}: self loop at node {_name(labels, u[i])}")
    start, adj, pair = _csr(u, v, n)
    dup = np.full(2, -1, np.int64)
    has_rev = _pairs_check(start, adj, pair, u, v, dup)
    directed = bool(has_rev.any())
    if dup[0] >= 0:
        first, again = int(dup[0]), int(dup[1])
        raise FileError(
            f"{source} {unit} {where[again]}: duplicate link "
            f"{_name(labels, u[again])} {_name(labels, v[again])} "
            f"(first at {unit} {where[first]})"
        )
    if directed:
        one = np.flatnonzero(~has_rev)
        if one.size:
            i, j = one[0], np.flatnonzero(has_rev)[0]
            raise FileError(
                f"{source} {unit} {where[i]}: link {_name(labels, u[i])} {_name(labels, v[i])} "
                "is listed in one direction "
                f"only, but {unit} {where[j]} lists a link in both directions (list every "
                "link once, or every link from both ends)"
            )
        return u, v, np.arange(u.size, dtype=np.int64), True
    # undirected listing: the same undirected link twice (u v, then v u) was caught above
    at = np.arange(u.size, dtype=np.int64)
    src = np.empty(2 * u.size, dtype=np.int64)
    dst = np.empty_like(src)
    src[0::2], src[1::2] = u, v
    dst[0::2], dst[1::2] = v, u
    return src, dst, np.repeat(at, 2), False


def _name(labels: np.ndarray | None, i: int) -> str:
    if labels is None:
        return str(i)
    text = str(labels[i])
    return text if len(text) <= QUOTE_CHARS and text.isprintable() else shown(text)


def port_tables(
    src: np.ndarray,
    dst: np.ndarray,
    n: int,
    source: str,
    port: np.ndarray | None = None,
    where: np.ndarray | None = None,
    unit: str = "line",
    labels: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Neighbour and reverse-port tables of directed links (each with its reverse).

    Parameters
    ----------
    src, dst : (L,) int64 directed links in file order
    n : number of nodes
    source : the file's name, for messages
    port : (L,) int64, optional
        The port of each link at ``src`` (named ports); default: the order of the
        links of ``src`` in the file.
    where : (L,) int64, optional
        The line of each link, for messages about named ports.
    unit, labels : as for :func:`links_from_pairs`

    Returns
    -------
    nb : (N, degree) int32 (int64 from 2**31 nodes), ``-1`` = no port
    rev : (N, degree) uint8, the port of ``nb[v, p]`` that leads back (255 = no port)
    """
    if port is None:
        order = np.argsort(src, kind="stable")
        start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=start[1:])
        port = np.empty(src.size, dtype=np.int64)
        port[order] = np.arange(src.size) - start[src[order]]
    port = np.asarray(port, dtype=np.int64)
    degree = int(port.max()) + 1
    if degree > MAX_DEGREE:
        worst = _name(labels, int(src[np.argmax(port)]))
        raise FileError(
            f"{source}: node {worst} has {degree} ports, over the limit of {MAX_DEGREE} "
            f"({DEGREE_WHY})"
        )
    dt = np.int32 if n < 2**31 else np.int64
    nbt = np.full((n, degree), -1, dtype=dt)
    cell = src * degree + port
    clash = np.flatnonzero(np.bincount(cell, minlength=n * degree) > 1)
    if clash.size:
        c = int(clash[0])
        i = np.flatnonzero(cell == c)
        at = f" ({unit}s {where[i[0]]} and {where[i[1]]})" if where is not None else ""
        raise FileError(
            f"{source}: node {_name(labels, c // degree)} has port {c % degree} twice{at}"
        )
    nbt.reshape(-1)[cell] = dst
    rev = np.full((n, degree), 255, dtype=np.uint8)
    _reverse(nbt, rev)
    return nbt, rev


@nb.njit(cache=True, nogil=True)
def _csr(u, v, n):
    """Pairs grouped by their first node (a counting sort): segment starts, second nodes, pairs."""
    start = np.zeros(n + 1, np.int64)
    for x in u:
        start[x + 1] += 1
    for i in range(n):
        start[i + 1] += start[i]
    fill = start[:-1].copy()
    adj = np.empty(u.size, np.int64)
    pair = np.empty(u.size, np.int64)
    for i in range(u.size):
        k = fill[u[i]]
        adj[k] = v[i]
        pair[k] = i
        fill[u[i]] = k + 1
    # sort each segment by (second node, pair): duplicates become neighbours
    for x in range(n):
        a, b = start[x], start[x + 1]
        if b - a > 1:
            o = np.argsort(adj[a:b] * u.size + pair[a:b])
            adj[a:b] = adj[a:b][o]
            pair[a:b] = pair[a:b][o]
    return start, adj, pair


@nb.njit(cache=True, nogil=True)
def _pairs_check(start, adj, pair, u, v, dup):
    """Whether each pair's reverse is listed; ``dup`` = the first duplicate (earliest second)."""
    has = np.zeros(u.size, np.bool_)
    best = -1
    for x in range(start.size - 1):
        for k in range(start[x] + 1, start[x + 1]):
            if adj[k] == adj[k - 1] and (best < 0 or pair[k] < best):
                best = pair[k]
                dup[0], dup[1] = pair[k - 1], pair[k]
    for i in range(u.size):
        a, b = start[v[i]], start[v[i] + 1]
        while a < b:  # binary search of u[i] among v[i]'s second nodes
            m = (a + b) // 2
            if adj[m] < u[i]:
                a = m + 1
            else:
                b = m
        has[i] = a < start[v[i] + 1] and adj[a] == u[i]
    return has


@nb.njit(cache=True, nogil=True)
def _reverse(nbt, rev):
    """``rev[x, p]`` = the port of ``nbt[x, p]`` that leads back to ``x``."""
    n, deg = nbt.shape
    for x in range(n):
        for p in range(deg):
            y = nbt[x, p]
            if y >= 0:
                for q in range(deg):
                    if nbt[y, q] == x:
                        rev[x, p] = q
                        break


@nb.njit(cache=True, nogil=True)
def _components(nbt):
    """Component index of every node (numbered in order of their lowest node), and the count."""
    n, deg = nbt.shape
    comp = np.full(n, -1, np.int64)
    stack = np.empty(n, np.int64)
    count = 0
    for s in range(n):
        if comp[s] >= 0:
            continue
        comp[s] = count
        top = 0
        stack[top] = s
        top += 1
        while top:
            top -= 1
            x = stack[top]
            for p in range(deg):
                y = nbt[x, p]
                if y >= 0 and comp[y] < 0:
                    comp[y] = count
                    stack[top] = y
                    top += 1
        count += 1
    return comp, count


class FileGraph(Topology):
    """An undirected network read from a file (``file:PATH``): not vertex-transitive.

    Parameters
    ----------
    spec : str
        ``file:PATH`` as given.
    nbt, rev : (N, degree) tables from :func:`port_tables`
    labels : (N,) array of labels (the file's node names), or None for ``0..N-1``
    ports, port_classes : names and classes of the ports (default ``p1..pD``, ``link``)
    info : dict
        What to report about the file (``format``, ``path``, ``sha256``, ...).
    allow_disconnected : bool
        Accept a network of several components (only ``mpinet info`` can use it).
    """

    family = "file"
    spec_form = "file:PATH"
    vertex_transitive = False

    def __init__(
        self,
        spec: str,
        nbt: np.ndarray,
        rev: np.ndarray,
        labels: np.ndarray | None = None,
        ports: tuple[str, ...] | None = None,
        port_classes: tuple[str, ...] | None = None,
        info: dict | None = None,
        allow_disconnected: bool = False,
    ) -> None:
        self.spec = spec
        self._nb, self._rev = nbt, rev
        self.num_nodes, deg = nbt.shape
        self.ports = tuple(ports) if ports else tuple(f"p{i + 1}" for i in range(deg))
        self.port_classes = tuple(port_classes) if port_classes else ("link",) * deg
        if len(self.ports) != deg or len(self.port_classes) != deg:
            raise TopologyError(f"{spec}: {deg} ports need {deg} names and classes")
        self._labels = labels
        self._index: dict[str, int] | None = None
        self.file_info = dict(info or {})
        has = nbt >= 0
        self.degrees = has.sum(axis=1)
        self.regular = bool(has.all())
        self.edges = int(self.degrees.sum()) // 2
        comp, count = _components(nbt)
        self.component, self.num_components = comp, int(count)
        if count > 1 and not allow_disconnected:
            sizes = np.bincount(comp)
            far = _name(labels, int(np.flatnonzero(comp == 1)[0]))
            raise TopologyError(
                f"{spec} is disconnected: {count} components (largest {sizes.max():,} of "
                f"{self.num_nodes:,} nodes; node {far} "
                "is not reachable from the first node); only `mpinet info --allow-disconnected` "
                "reads such a network"
            )
        cols = [np.unique(rev[has[:, p], p]) for p in range(deg)]
        uniform = all(c.size == 1 for c in cols)
        self.uniform_reverse = uniform
        self._rev_tuple = tuple(int(c[0]) for c in cols) if uniform else None

    @property
    def reverse_port(self) -> tuple[int, ...]:  # type: ignore[override]
        """The reverse of each port, where it is the same at every node (else an error)."""
        if self._rev_tuple is None:
            raise TopologyError(
                f"{self.spec}: a port's reverse differs from node to node in this file; "
                "this computation needs one reverse per port (use reverse_ports)"
            )
        return self._rev_tuple

    def reverse_ports(self, ids: object) -> np.ndarray:
        """The port of each neighbour that leads back: ``(len(ids), degree)`` int64, -1 = none."""
        a = self.check_ids(ids)
        r = self._rev[a].astype(np.int64)
        r[r == 255] = -1
        return r

    def reverse_of(self, nodes: np.ndarray, ports: np.ndarray) -> np.ndarray:
        """The reverse port of each link ``(nodes[i], ports[i])`` (unchecked ids, int64)."""
        return self._rev[np.asarray(nodes, np.intp), np.asarray(ports, np.intp)].astype(np.int64)

    def describe(self) -> dict:
        d = super().describe()
        d.update(
            {
                "edges": self.edges,
                "min_degree": int(self.degrees.min()),
                "components": self.num_components,
                "file": self.file_info,
            }
        )
        return d

    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        return self._nb[ids].astype(np.int64)

    def _label(self, node: int) -> str:
        return str(node) if self._labels is None else str(self._labels[node])

    def _parse_label(self, text: str) -> int:
        if self._index is None:
            labels = self._labels if self._labels is not None else range(self.num_nodes)
            self._index = {str(x): i for i, x in enumerate(labels)}
        node = self._index.get(text)
        if node is None:
            raise TopologyError(
                f"{self.spec} has no node labelled {text!r} (labels are the file's node names; "
                f"'#ID' gives an id in [0, {self.num_nodes - 1}])"
            )
        return node
