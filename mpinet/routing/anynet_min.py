"""Router ``anynet-min``: BookSim2's ``min`` routing on an ``anynet`` network, re-implemented.

Written from a reading of BookSim2's ``AnyNet::route`` (``src/networks/anynet.cpp``;
docs/booksim.md), not copied. BookSim builds one routing table per router ``s``
by Dijkstra from ``s`` over link latencies (all 1 in ``mpinet export --format
anynet``, so hops): the unsettled router with the smallest distance is settled
next, ties to the lowest id, and a neighbour's predecessor is replaced only on
a strictly shorter distance. With unit weights a router ``v`` at distance
``d`` therefore gets as predecessor the *lowest-id* router ``u`` with a link
``u -> v`` at distance ``d - 1`` (all routers of one distance are settled in
ascending id before any of the next). The table entry of ``s`` for
destination ``v`` is the link to the tree ancestor of ``v`` at distance 1.
Each router uses its own tree, so a route is the chain of first hops of the
trees of the routers it visits: minimal, deterministic, and not the path of
the source's tree. A hop may take any VC (``min_anynet`` adds the range
``0..num_vcs-1``); that matters only to the flit engine.

Tables: ``P[s, d]`` (uint8, the lowest port of ``s`` to the chosen next
router; :data:`~mpinet.routing.tables.NO_PORT` at ``d = s``), ``N*N`` bytes,
built by one BFS per source in a compiled loop (ms:3,2: 25 MB, about a second).
Allowed up to ``N*N = 2**26`` (N <= 8,192); every MPI rank holds a copy. No
header: a hop is one gather ``P[node * N + dest]``. Parallel links (two ports
to one neighbour) are one link in BookSim; here the lowest port carries it.
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np

from mpinet.errors import ResourceError, RoutingError
from mpinet.routing import tables
from mpinet.routing.base import DROP, CompiledHop, HopContext, Router
from mpinet.topology.base import Topology

#: largest N*N of the per-source tables (N <= 8,192: 64 MiB of ports)
MAX_PAIRS = 2**26
#: this router's code among the compiled hops (:mod:`mpinet.routing.compiled`)
HOP_CODE = 3


class AnynetMinRouter(Router):
    """BookSim2's anynet ``min`` routing: per-router shortest-path trees, ties to the lowest id.

    Parameters
    ----------
    topo : Topology
    max_table_bytes : int
        Refuse (:class:`ResourceError`) tables larger than this (default 2 GiB).
    """

    name = "anynet-min"
    summary = "BookSim2's anynet min routing: per-router BFS trees, ties to the lowest id"
    families = ()
    distributed = True

    def __init__(self, topo: Topology, max_table_bytes: int = tables.MAX_TABLE_BYTES) -> None:
        super().__init__(topo, max_table_bytes=max_table_bytes)
        n = topo.num_nodes
        if n * n > MAX_PAIRS:
            raise ResourceError(
                f"router 'anynet-min' on {topo.spec} ({n:,} nodes) needs per-router tables of "
                f"N*N = {n * n:,} entries, over the limit of 2**26 = {MAX_PAIRS:,} (N <= 8,192)"
            )
        # ports + neighbour table + the BFS work arrays (5 of N int64) + in-neighbour CSR
        need = n * n + 2 * tables.neighbor_table_bytes(topo) + 48 * n
        self.table_bytes = int(need)
        tables.check_table_bytes(topo, need, "router 'anynet-min' tables", max_table_bytes)
        self.build_seconds: float | None = None
        self._port: np.ndarray | None = None
        self._reach: bool | None = None  # every destination reachable (compiled_hop)

    def prepare(self) -> None:
        """Build the tables now (otherwise done on first use); sets :attr:`build_seconds`."""
        if self._port is not None:
            return
        t0 = time.perf_counter()
        nbr = tables.neighbor_table(self.topo)
        n, deg = nbr.shape
        nbr64 = nbr.astype(np.int64)
        # in-neighbours (the predecessor needs a link u -> v), as CSR sorted by id
        src = np.repeat(np.arange(n, dtype=np.int64), deg)
        dst = nbr64.ravel()
        keep = dst >= 0
        src, dst = src[keep], dst[keep]
        order = np.lexsort((src, dst))
        in_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(dst, minlength=n), out=in_ptr[1:])
        in_src = src[order]
        port = np.empty((n, n), dtype=np.uint8)
        _build(nbr64, in_ptr, in_src, port)
        self._nb_flat = nbr64.ravel()
        self._port = port.ravel()
        self.build_seconds = time.perf_counter() - t0

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """One gather per packet: ``P[node, dest]`` (DROP where ``dest`` is unreachable)."""
        self.prepare()
        n = self.topo.num_nodes
        idx = np.asarray(nodes, dtype=np.int64) * n + np.asarray(dests, dtype=np.int64)
        port = self._port[idx].astype(np.int64)
        return np.where(port == tables.NO_PORT, DROP, port), headers

    def compiled_hop(self) -> CompiledHop | None:
        """``P[node, dest]`` as the engines' compiled hop (:func:`table_hop_one`); None where
        some destination is unreachable (the rule never drops)."""
        self.prepare()
        n = self.topo.num_nodes
        if self._reach is None:  # a scan of the N x N table: once (engines ask every run)
            self._reach = int(np.count_nonzero(self._port == tables.NO_PORT)) == n
        if not self._reach:  # a port missing off the diagonal
            return None
        prm = np.array([n, 0, 0], dtype=np.int64)
        return CompiledHop(HOP_CODE, prm, self._port, np.zeros(1, np.int32))

    def route_length(self, src: object, dst: object) -> np.ndarray:
        """Hops of this router's routes, by following the tables (arrays broadcast), int64."""
        self.prepare()
        s, d = np.broadcast_arrays(np.asarray(src), np.asarray(dst))
        cur = self.topo.check_ids(s, "src").astype(np.int64).ravel()
        d = self.topo.check_ids(d, "dst").astype(np.int64).ravel()
        n, deg = self.topo.num_nodes, self.topo.degree
        hops = np.zeros(cur.size, dtype=np.int64)
        live = np.flatnonzero(cur != d)
        for _ in range(n):
            if live.size == 0:
                break
            p = self._port[cur[live] * n + d[live]].astype(np.int64)
            if (p == tables.NO_PORT).any():
                raise RoutingError(
                    f"router 'anynet-min': a destination unreachable on {self.topo.spec}"
                )
            cur[live] = self._nb_flat[cur[live] * deg + p]
            hops[live] += 1
            live = live[cur[live] != d[live]]
        return hops.reshape(s.shape)

    def distance(self, src: object, dst: object) -> np.ndarray:
        """Exact shortest distances: the routes are minimal, so their lengths (int64)."""
        return self.route_length(src, dst)


@nb.njit(cache=True, nogil=True, inline="always")
def table_hop_one(cur, dst, n, port_tab):
    """The port of the hop at ``cur`` for ``dst``: ``port_tab[cur * n + dst]`` (:data:`DROP`
    where the table has none, as :meth:`AnynetMinRouter.next_port`)."""
    p = np.int64(port_tab[cur * n + dst])
    return np.int64(DROP) if p == tables.NO_PORT else p


@nb.njit(cache=True, nogil=True)
def _build(nbr, in_ptr, in_src, port):
    """``port[s, v]``: the lowest port of ``s`` to the depth-1 ancestor of ``v`` in ``s``'s tree.

    The tree: BFS from ``s`` along links; the parent of ``v`` is its lowest-id
    in-neighbour one level closer to ``s`` (BookSim's Dijkstra tie rule).
    """
    n, deg = nbr.shape
    dist = np.empty(n, np.int64)
    order = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    port_to = np.full(n, -1, np.int64)
    for s in range(n):
        dist[:] = -1
        dist[s] = 0
        order[0] = s
        head, tail = 0, 1
        while head < tail:
            u = order[head]
            head += 1
            for p in range(deg):
                v = nbr[u, p]
                if v >= 0 and dist[v] < 0:
                    dist[v] = dist[u] + 1
                    order[tail] = v
                    tail += 1
        for p in range(deg - 1, -1, -1):  # lowest port wins on parallel links
            if nbr[s, p] >= 0:
                port_to[nbr[s, p]] = p
        port[s, :] = 255
        first[s] = s
        for i in range(1, tail):  # BFS order: every parent is done before its children
            v = order[i]
            best = n
            for j in range(in_ptr[v], in_ptr[v + 1]):
                u = in_src[j]
                if dist[u] == dist[v] - 1 and u < best:
                    best = u
            first[v] = v if best == s else first[best]
            port[s, v] = port_to[first[v]]
        for p in range(deg):
            if nbr[s, p] >= 0:
                port_to[nbr[s, p]] = -1


#: the router classes this module registers
ROUTERS_HERE: tuple[type[Router], ...] = (AnynetMinRouter,)
