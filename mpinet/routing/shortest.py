"""Router ``shortest``: minimal routing on every topology, by table look-ups.

A distributed table router; the header is the packet's position relative to
its destination, updated every hop. On a vertex-transitive topology
(:meth:`Topology.translate`) a port-preserving automorphism moves the
destination to one of a few targets (the identity; ``<i, identity>`` for SCC),
so one BFS per target gives every pair's tables: ``D[key, x]`` (distance from
``x`` to target ``key``) and ``P[key, x]`` (first port that lowers it), plus
the neighbour table ``NB``. The header, one word ``key * N + rel``, is set at
injection and a hop is two gathers: ``port = P[key, rel]``, ``rel = NB[rel,
port]``. The decision uses only the node's tables and the packet (destination,
header). One word, not the pair: the engine keeps one-word headers inside the
packet's record, so a hop reads no second scattered array (measured on scc:8,
8 packets per node: a two-word header cost about 50 ns per move in ``select``
alone, a cache miss on the header array).

Without translations (FCCN, networks read from files) the tables are per
destination: ``(N, N)`` next ports and distances from a bit-parallel BFS,
allowed up to N*N = 2**26 pairs (N <= 8,192); the header is empty, and with
tie ``first`` a hop is one gather ``P[node * N + dest]``, compiled as
``anynet-min``'s (:func:`~mpinet.routing.anynet_min.table_hop_one`).

With ``faults`` (a :class:`~mpinet.topology.faults.FaultSet`) the tables are
per destination on the surviving graph (the faults break the symmetry), up to
N*N = 2**26 pairs; a packet whose destination cannot be reached gets
:data:`~mpinet.routing.base.DROP`.

``tie="random"`` replaces the port table by a table of best-port bit masks
(every port on a shortest path) and picks the r-th set bit, r uniform from
``ctx.uniform()``, through two small look-up tables (popcount, r-th bit).
Tables are built lazily, once per router (:meth:`ShortestRouter.prepare`),
and every MPI rank holds a full copy.
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np

from mpinet.errors import ResourceError, RoutingError
from mpinet.routing import anynet_min, tables
from mpinet.routing.base import DROP, CompiledHop, HopContext, Router
from mpinet.topology.base import Topology
from mpinet.topology.faults import SurvivingGraph

#: the code of the translated-tables hop (:mod:`mpinet.routing.compiled`)
HOP_CODE = 1
#: largest N*N of per-destination tables (topologies without translations): 64 MiB of ports
MAX_PAIRS = 2**26
#: the same with faults (any family: the surviving graph has no symmetry to use)
MAX_PAIRS_FAULTS = 2**26
TIES = ("first", "random")


class ShortestRouter(Router):
    """Minimal routing by distributed tables (header = position relative to the destination).

    Parameters
    ----------
    topo : Topology
    tie : {"first", "random"}
        Among the ports on a shortest path take the lowest (default) or a
        uniformly random one (``ctx.uniform()``, reproducible on any rank count).
    max_table_bytes : int
        Refuse (:class:`ResourceError`) tables larger than this (default 2 GiB).
    faults : FaultSet, optional
        Route on the surviving graph (per-destination tables, N <= 8,192).
    """

    name = "shortest"
    summary = "minimal routing by distributed BFS tables (every topology)"
    families = ()
    distributed = True
    fault_tolerant = True

    def __init__(
        self,
        topo: Topology,
        tie: str = "first",
        max_table_bytes: int = tables.MAX_TABLE_BYTES,
        faults: object = None,
    ) -> None:
        super().__init__(topo, tie=tie, max_table_bytes=max_table_bytes)
        if tie not in TIES:
            raise RoutingError(f"tie of router 'shortest' must be one of {TIES}, got {tie!r}")
        self.tie = tie
        n = topo.num_nodes
        if faults is not None:  # any table built later must fit the surviving graph's
            limit = MAX_PAIRS_FAULTS
            if n * n > limit:
                raise ResourceError(
                    f"router 'shortest' on {topo.spec} ({n:,} nodes) with faults needs "
                    f"per-destination tables of N*N = {n * n:,} entries, over the limit of "
                    f"{limit:,} (N <= {int(limit**0.5):,}); use fewer nodes or no faults"
                )
        # dynamic faults (step > 0): route on the whole network until set_faults
        active = faults if faults is not None and getattr(faults, "step", 0) == 0 else None
        self.faults = active
        targets = None if active is not None else topo.translation_targets
        self.translated = targets is not None
        self.header_width = 1 if self.translated else 0
        if self.translated:
            self.targets = np.asarray(targets, dtype=np.int64)
            mask_bytes = tables.mask_dtype(topo.degree).itemsize
            per_entry = 2 + (1 if tie == "first" else mask_bytes)  # distance + port or mask
            transient = n * (mask_bytes + 8)  # one target's masks, BFS frontier
            need = tables.neighbor_table_bytes(topo) + per_entry * self.targets.size * n
            need += transient
        else:
            if n * n > MAX_PAIRS and active is None:
                raise ResourceError(
                    f"router 'shortest' on {topo.spec} ({n:,} nodes, not vertex-transitive) needs "
                    f"per-destination tables of N*N = {n * n:,} entries, over the limit of "
                    f"2**26 = {MAX_PAIRS:,} (N <= 8,192)"
                )
            need = tables.neighbor_table_bytes(topo) + tables.all_pairs_tables_bytes(n, topo.degree)
        self.table_bytes = int(need)
        tables.check_table_bytes(topo, need, "router 'shortest' tables", max_table_bytes)
        self.build_seconds: float | None = None
        self._nb: np.ndarray | None = None

    # ------------------------------------------------------------ tables
    def prepare(self) -> None:
        """Build the tables now (otherwise done on first use); sets :attr:`build_seconds`."""
        if self._nb is not None:
            return
        t0 = time.perf_counter()
        topo = self.topo
        mask_dt = tables.mask_dtype(topo.degree)
        if self.faults is not None:
            nb = tables.neighbor_table(SurvivingGraph(self.faults))
        else:
            nb = tables.neighbor_table(topo)
        if self.translated:
            k, n = self.targets.size, topo.num_nodes
            dist = np.empty((k, n), dtype=np.int16)
            table = np.empty((k, n), dtype=np.uint8 if self.tie == "first" else mask_dt)
            for key, target in enumerate(self.targets):
                dist[key] = tables.distances_from(topo, int(target), nb)
                masks = tables.best_port_masks(nb, dist[key])
                table[key] = tables.lowest_ports(masks) if self.tie == "first" else masks
        else:
            masks, dist = tables.all_pairs_tables(nb)
            table = tables.lowest_ports(masks) if self.tie == "first" else masks
            del masks
        self._dist = dist.ravel()
        if self.tie == "first":
            self._port = table.ravel()
        else:
            self._masks = table.ravel()
            self._count, self._select = _select_tables(topo.degree)
        self._nb_flat = nb.ravel()
        self._nb = nb
        self.build_seconds = time.perf_counter() - t0

    def distance(self, src: object, dst: object) -> np.ndarray:
        """Exact shortest distances of pairs (arrays broadcast), int64."""
        self.prepare()
        if self.translated:
            rel, key = self.topo.translate(src, dst)
            return self._dist[key * self.topo.num_nodes + rel].astype(np.int64)
        s, d = np.broadcast_arrays(np.asarray(src), np.asarray(dst))
        s, d = self.topo.check_ids(s, "src"), self.topo.check_ids(d, "dst")
        return self._dist[s * self.topo.num_nodes + d].astype(np.int64)

    # ------------------------------------------------------------- hops
    def set_faults(self, faults: object) -> None:
        """Route on the surviving graph from now on (dynamic faults; headers keep their width)."""
        self.faults = faults
        self.translated = False
        self._nb = None
        self.prepare()

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """``key * N + rel`` of each packet (translated topologies), else an empty header."""
        if not self.translated:
            return super().init_headers(src, dst)  # zeros of header_width
        rel, key = self.topo.translate(src, dst)
        n = self.topo.num_nodes
        return (np.asarray(key, dtype=np.int64) * n + np.asarray(rel, dtype=np.int64))[:, None]

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """Two gathers per packet: the port from the table, the next ``rel`` from NB."""
        self.prepare()
        n, deg = self.topo.num_nodes, self.topo.degree
        if self.translated:
            idx = headers[:, 0]  # key * n + rel: the row of the flat tables
            rel = idx % n if self.targets.size > 1 else idx
        else:
            idx = np.asarray(nodes, dtype=np.int64) * n + np.asarray(dests, dtype=np.int64)
        if self.translated and self.tie == "first":
            port = np.empty(idx.size, dtype=np.int64)
            out = np.empty_like(headers)
            _hop(idx, n, deg, self.targets.size > 1, self._port, self._nb_flat, port, out)
            return port, out
        port = self._port[idx] if self.tie == "first" else self._random_ports(idx, ctx)
        port = port.astype(np.int64)
        if not self.translated:
            if self.faults is not None:  # no shortest port: unreachable on the surviving graph
                port = np.where(port >= self.topo.degree, DROP, port)
            return port, headers
        out = np.empty_like(headers)
        out[:, 0] = idx + (self._nb_flat[rel * deg + port] - rel)  # same key, next rel
        return port, out

    def compiled_hop(self) -> CompiledHop | None:
        """Tie ``first`` without faults: :func:`translated_hop_one` on translated tables, else
        the per-destination table's gather (``anynet-min``'s rule); None otherwise."""
        if not (self.tie == "first" and self.faults is None):
            return None
        self.prepare()
        if not self.translated:
            prm = np.array([self.topo.num_nodes, 0, 0], dtype=np.int64)
            return CompiledHop(anynet_min.HOP_CODE, prm, self._port, np.zeros(1, np.int32))
        n, many = self.topo.num_nodes, int(self.targets.size > 1)
        prm = np.array([n, self.topo.degree, many], dtype=np.int64)
        return CompiledHop(HOP_CODE, prm, self._port, self._nb_flat)

    def uniform_flows(self, dests: np.ndarray) -> tuple[np.ndarray, float] | None:
        """Expected link loads of one packet from every other node to each of ``dests``.

        Per-destination tables only (None otherwise): every node's packet flows down the
        destination's shortest-path DAG, split evenly over the shortest ports with tie
        ``random`` (the expectation of the random choice), on the lowest with ``first``.
        Exact, and O(N * degree) per destination instead of walking N routes.

        Returns
        -------
        load : (N, degree) float64 sums over ``dests``; hops : the routes' total length
        """
        if self.translated or self.faults is not None:
            return None
        self.prepare()
        n, deg = self.topo.num_nodes, self.topo.degree
        table = self._port if self.tie == "first" else self._masks.astype(np.uint64)
        load = np.zeros(n * deg)
        hops = _flows(np.asarray(dests, np.int64), n, deg, self.tie == "first", table,
                      self._dist, self._nb_flat.astype(np.int64), load)  # fmt: skip
        return load.reshape(n, deg), float(hops)

    def _random_ports(self, idx: np.ndarray, ctx: HopContext) -> np.ndarray:
        """A uniformly random port among the shortest ones: the pick-th bit of the mask."""
        m = self._masks[idx]
        u = ctx.uniform()
        if self._select is not None:
            m = m.astype(np.intp)
            count = self._count[m]
            pick = np.minimum((u * count).astype(np.intp), np.maximum(count.astype(np.intp) - 1, 0))
            return self._select[m * self.topo.degree + pick]
        m = m.astype(np.uint64)
        count = np.bitwise_count(m).astype(np.int64)
        pick = np.minimum((u * count).astype(np.int64), count - 1)
        for r in range(int(pick.max(initial=0))):
            m = np.where(pick > r, m & (m - np.uint64(1)), m)
        return tables.lowest_ports(m)


def _select_tables(degree: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Popcount and "r-th set bit" look-up tables over all port masks (degree <= 12)."""
    if degree > 12:
        return None, None
    m = np.arange(1 << degree, dtype=np.uint64)
    count = np.bitwise_count(m).astype(np.uint8)
    select = np.empty((m.size, degree), dtype=np.uint8)
    for r in range(degree):
        select[:, r] = tables.lowest_ports(m)
        m &= m - np.uint64(1)
    return count, select.ravel()


@nb.njit(cache=True, nogil=True)
def _flows(dests, n, deg, first, table, dist, nbf, load):
    """:meth:`ShortestRouter.uniform_flows`: nodes by decreasing distance, flows pushed down."""
    flow = np.empty(n)
    order = np.empty(n, np.int64)
    hops = 0.0
    for d in dests:
        top = 0
        for v in range(n):
            top = max(top, np.int64(dist[v * n + d]))
        count = np.zeros(top + 2, np.int64)
        for v in range(n):  # counting sort by distance to d, farthest first
            count[top - np.int64(dist[v * n + d]) + 1] += 1
        for i in range(top + 1):
            count[i + 1] += count[i]
        for v in range(n):
            k = top - np.int64(dist[v * n + d])
            order[count[k]] = v
            count[k] += 1
            flow[v] = 1.0
            hops += dist[v * n + d]
        for i in range(n):
            v = order[i]
            if v == d:
                continue
            if first:
                p = np.int64(table[v * n + d])
                load[v * deg + p] += flow[v]
                flow[nbf[v * deg + p]] += flow[v]
            else:
                m = np.uint64(table[v * n + d])
                c = 0
                for p in range(deg):
                    c += (m >> np.uint64(p)) & np.uint64(1)
                share = flow[v] / c
                for p in range(deg):
                    if (m >> np.uint64(p)) & np.uint64(1):
                        load[v * deg + p] += share
                        flow[nbf[v * deg + p]] += share
    return hops


@nb.njit(cache=True, nogil=True, inline="always")
def translated_hop_one(x, n, deg, many, port_tab, nb_flat):
    """``(port, next header)`` of one packet with header ``x = key * n + rel``.

    Same values as ``port = port_tab[x]``, ``x + nb_flat[rel * deg + port] - rel``.
    Also the engine's compiled hop (:mod:`mpinet.routing.compiled`).
    """
    rel = x % n if many else x
    p = np.int64(port_tab[x])
    return p, x + (np.int64(nb_flat[rel * deg + p]) - rel)


@nb.njit(cache=True, nogil=True)
def _hop(idx, n, deg, many, port_tab, nb_flat, port, out):
    """``next_port`` of translated tables, tie ``first``, in one pass.

    Why compiled: the numpy form makes six passes over the step's packets
    (``%``, two gathers, a cast, two arithmetic ops); on ms:3,3 (3.6 M nodes)
    that cost 54 ns per hop, a fifth of a run.
    """
    for i in range(idx.size):
        port[i], out[i, 0] = translated_hop_one(idx[i], n, deg, many, port_tab, nb_flat)
