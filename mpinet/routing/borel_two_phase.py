"""``borel-two-phase``: Two-Phase routing on Borel Cayley graphs (paper 003, Sec. 4.3-4.6).

Phase I crosses the k-node class graph by an O(k) table, Phase II reaches the
destination inside its class by an O(p) table of paths, in the GCR labelling (the node
ids). Registered with the other Borel routers by :mod:`mpinet.routing.borel`.
"""

from __future__ import annotations

import numpy as np

from mpinet.routing import tables
from mpinet.routing.base import HopContext, Router
from mpinet.topology.base import Topology


class BorelTwoPhaseRouter(Router):
    """Two-Phase routing (header = (Phase II row or -1, step); distributed Phase I).

    Phase I (different classes ``t = id mod k``): every port moves the class by
    ``c_1..c_4 = +T1, -T1, +T2, -T2`` (the Class-Congruence Property), so the
    k-node class graph is a circulant: a table of k first ports (the lowest
    port on a shortest class path, from a BFS of the class graph) indexed by
    ``(t_dest - t) mod k`` routes every packet to *some* node of the
    destination class. Phase II (same class): the first node of the class sets
    the header row to ``j' = <a^-t (y_dest - y)>_p`` (the paper's
    ``<a^(k-c1)(m2-m1)>_p``) and the packet follows row ``j'`` of a p x D2 port
    table: the shortest path (lowest ports first) from the identity to
    ``[[1, j'], [0, 1]]``, GCR node ``j' k``. Routes are at most D1 + D2 long
    (D1, D2: the two tables' depths), hence at most 2D.

    Tables: k ports and k distances (Phase I), p x D2 ports and p path
    lengths (Phase II); building them takes one BFS (N int16 distances).
    """

    name = "borel-two-phase"
    summary = "Two-Phase routing: class table O(k), then in-class paths O(p) (Borel, paper 003)"
    families = ("borel",)
    distributed = True
    header_width = 2

    def __init__(self, topo: Topology, max_table_bytes: int = tables.MAX_TABLE_BYTES) -> None:
        super().__init__(topo)
        tables.check_table_bytes(
            topo,
            2 * topo.num_nodes + 40 * topo.p,
            "router 'borel-two-phase' tables",
            max_table_bytes,
        )
        self._class_tables()
        self._path_tables()
        self.table_bytes = int(self.class_ports.nbytes + self.paths.nbytes)

    def _class_tables(self) -> None:
        """BFS of the class circulant: distances and lowest shortest first ports."""
        g = self.topo
        k = g.k
        self.class_steps = np.array([g.t1, -g.t1, g.t2, -g.t2], dtype=np.int64) % k
        dist = np.full(k, -1, dtype=np.int64)
        dist[0], front, lvl = 0, np.array([0]), 0
        while front.size:
            lvl += 1
            nxt = np.unique((front[:, None] + self.class_steps).ravel() % k)
            front = nxt[dist[nxt] < 0]
            dist[front] = lvl
        delta = np.arange(k)
        closer = dist[(delta[:, None] - self.class_steps) % k] == dist[:, None] - 1
        self.class_dist = dist
        self.class_ports = np.where(dist > 0, closer.argmax(axis=1), 0).astype(np.uint8)
        self.d1 = int(dist.max())

    def _path_tables(self) -> None:
        """Shortest paths from the identity to the translations ``j' k``, j' = 0..p-1."""
        g = self.topo
        dist0 = tables.distances_from(g, 0)
        target = g.k * np.arange(g.p, dtype=np.int64)
        rem = dist0[g.translate(0, target)[0]].astype(np.int64)
        self.path_len = rem.copy()
        self.d2 = int(rem.max())
        self.paths = np.zeros((g.p, self.d2), dtype=np.uint8)
        cur = np.zeros(g.p, dtype=np.int64)
        for step in range(self.d2):
            act = np.flatnonzero(rem > 0)
            nb = g.neighbors(cur[act])
            rel = g.translate(nb.ravel(), np.repeat(target[act], 4))[0]
            closer = dist0[rel].reshape(-1, 4) == (rem[act] - 1)[:, None]
            port = closer.argmax(axis=1)
            self.paths[act, step] = port
            cur[act] = nb[np.arange(act.size), port]
            rem[act] -= 1

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """``(-1, 0)``: Phase I, no Phase II row chosen yet."""
        h = np.zeros((np.broadcast(np.asarray(src), np.asarray(dst)).size, 2), dtype=np.int64)
        h[:, 0] = -1
        return h

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """Phase I port from the class table, or the next port of the Phase II row."""
        g = self.topo
        k, p = g.k, g.p
        nodes = np.asarray(nodes, dtype=np.int64)
        dests = np.asarray(dests, dtype=np.int64)
        t, td = nodes % k, dests % k
        row, step = headers[:, 0], headers[:, 1]
        start = (row < 0) & (t == td)
        row = np.where(start, g.pw[(-t) % k] * ((dests // k - nodes // k) % p) % p, row)
        step = np.where(start, 0, step)
        ph2 = row >= 0
        in_class = self.paths[np.maximum(row, 0), np.minimum(step, self.d2 - 1)]
        ports = np.where(ph2, in_class, self.class_ports[(td - t) % k]).astype(np.int64)
        out = np.empty_like(headers)
        out[:, 0], out[:, 1] = row, step + ph2
        return ports, out
