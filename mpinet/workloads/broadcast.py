"""Broadcasts on any topology, as node programs for :mod:`mpinet.engine.collective`.

* :class:`FloodingBroadcast` (all-port): a node informed in step t sends the
  message on every port but the one it came from in step t + 1. It finishes
  in exactly the source's eccentricity, the all-port lower bound.
* :class:`TreeBroadcast` (one-port): a BFS tree of the source; every node,
  once informed, sends to one child per step, children in decreasing order of
  the time their subtrees need (the optimal order for a fixed tree). Lower
  bounds for one-port: the eccentricity and ceil(log2 N).

The schedules use only a node's id, the step and what it holds (plus tables
every node can compute from the topology and the source); the engine checks
the model at every step and measures the steps.
"""

from __future__ import annotations

import numpy as np

from mpinet.engine.collective import Holdings
from mpinet.routing.tables import distances_from, neighbor_table
from mpinet.topology.base import Topology
from mpinet.workloads.checks import Check, log2_bound


class FloodingBroadcast:
    """All-port flooding of one message from ``source``."""

    name = "flooding broadcast"
    messages = 1

    def __init__(self, topo: Topology, source: int) -> None:
        self.topo, self.source = topo, int(topo.check_ids([source], "source")[0])
        self.exists = neighbor_table(topo) >= 0

    def start(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        if lo <= self.source < hi:
            return np.array([self.source]), np.array([0])
        return np.empty(0, np.int64), np.empty(0, np.int64)

    def transmissions(self, step: int, held: Holdings):
        v, b = held.received_at(step - 1)
        send = self.exists[v].copy()
        arrived = held.port[v - held.lo, b].astype(np.int64)
        has = arrived >= 0
        send[np.flatnonzero(has), arrived[has]] = False  # not back where it came from
        rows, ports = np.nonzero(send)
        return v[rows], ports.astype(np.int64), b[rows]

    def wanted(self, lo: int, hi: int) -> np.ndarray:
        return np.ones((hi - lo, 1), dtype=bool)


class TreeBroadcast:
    """One-port broadcast of one message along a BFS tree, optimal child order."""

    name = "one-port tree broadcast"
    messages = 1

    def __init__(self, topo: Topology, source: int) -> None:
        self.topo, self.source = topo, int(topo.check_ids([source], "source")[0])
        nb = neighbor_table(topo).astype(np.int64)
        dist = distances_from(topo, self.source, nb).astype(np.int64)
        n, deg = nb.shape
        # parent: the neighbour one level up on the lowest port
        up = (nb >= 0) & (dist[np.maximum(nb, 0)] == dist[:, None] - 1)
        up[self.source] = False
        pport = np.argmax(up, axis=1)
        parent = np.where(up.any(axis=1), nb[np.arange(n), pport], -1)
        down_port = topo.reverse_of(np.arange(n), pport)  # the parent's port to the child
        # subtree finishing times, deepest level first
        finish = np.zeros(n, dtype=np.int64)
        kids = np.flatnonzero(parent >= 0)
        for level in range(int(dist.max()), 0, -1):
            c = kids[dist[kids] == level]
            # children of each parent sorted by finish time (desc), then id
            c = c[np.lexsort((c, -finish[c], parent[c]))]
            p = parent[c]
            start = np.r_[0, np.flatnonzero(p[1:] != p[:-1]) + 1]
            rank_in = np.arange(c.size) - np.repeat(start, np.diff(np.r_[start, c.size]))
            np.maximum.at(finish, p, rank_in + 1 + finish[c])
        # final child order per parent, and each child's slot (step offset after the parent)
        c = np.flatnonzero(parent >= 0)
        c = c[np.lexsort((c, -finish[c], parent[c]))]
        p = parent[c]
        start = np.r_[0, np.flatnonzero(p[1:] != p[:-1]) + 1] if c.size else np.empty(0, int)
        slot = np.arange(c.size) - np.repeat(start, np.diff(np.r_[start, c.size]))
        self.first = np.full(n, -1, dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)
        if c.size:
            self.first[p[start]] = start
            self.count[p[start]] = np.diff(np.r_[start, c.size])
        self.child_port = down_port[c]
        self.slot = slot
        self.finish_time = int(finish[self.source])

    def start(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        if lo <= self.source < hi:
            return np.array([self.source]), np.array([0])
        return np.empty(0, np.int64), np.empty(0, np.int64)

    def transmissions(self, step: int, held: Holdings):
        v = np.flatnonzero(held.when[:, 0] >= 0) + held.lo
        i = step - held.when[v - held.lo, 0].astype(np.int64) - 1
        go = i < self.count[v]
        v, i = v[go], i[go]
        return v, self.child_port[self.first[v] + i], np.zeros(v.size, dtype=np.int64)

    def wanted(self, lo: int, hi: int) -> np.ndarray:
        return np.ones((hi - lo, 1), dtype=bool)


def _ecc(topo: Topology) -> int:
    return int(distances_from(topo, topo.identity).max())


def _checks():
    out = []
    for spec, quick in [
        ("scc:5", True),
        ("ms:2,3", True),
        ("fccn:3", True),
        ("borel:47,2,1,7", True),
        ("ccc:5", True),
        ("star:6", True),
        ("scc:7", False),
        ("ms:3,3", False),
    ]:
        out.append(
            Check(
                spec,
                "flooding broadcast",
                "all-port",
                lambda t: FloodingBroadcast(t, t.identity),
                _ecc,
                paper_source="",
                quick=quick,
            )
        )
        out.append(
            Check(
                spec,
                "tree broadcast",
                "one-port",
                lambda t: TreeBroadcast(t, t.identity),
                lambda t: max(_ecc(t), log2_bound(t)),
                quick=quick,
            )
        )
    return out


CHECKS = _checks()
