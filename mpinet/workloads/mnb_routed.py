"""Multinode broadcast through a router, on any topology (copy semantics).

Every node broadcasts its own message. The tree of source ``s`` is the union
of the router's routes *to* ``s``, reversed: node ``v`` forwards ``s``'s message
to its neighbour ``w`` exactly when the router, at ``w``, would send a packet
for ``s`` to ``v`` first. So each node decides from its own id, the router and
what it just received -- the rule is distributed -- and with a loop-free
router whose first hop gets closer to ``s`` (every ``shortest``-type router)
each node receives each message once. Each node keeps one FIFO queue of
(port, message) to send; in a step it sends the oldest item of every link
(all-port), of its best link (one-port: the link whose head waited longest),
of its ``k`` best links (k-port), or, under sdc, of the step's dimension
(dimensions in turn: ``(t - 1) mod degree``).

Lower bound (:func:`routed_mnb_lower_bound`): ``N - 1`` under sdc and one-port
(``N (N - 1)`` receptions, at most ``N`` transmissions per step); under
all-port ``ceil((N - 1) / min degree)`` (a node receives on at most its
degree links per step) and at least the diameter.
"""

from __future__ import annotations

import math

import numpy as np

from mpinet.engine.collective import Holdings
from mpinet.engine.models import Model, parse_model
from mpinet.routing import make_router
from mpinet.routing.base import HopContext, Router
from mpinet.routing.tables import neighbor_table
from mpinet.topology.base import Topology
from mpinet.workloads.checks import Check
from mpinet.workloads.te import weighted_sums


class RoutedMNB:
    """MNB along the reversed routes of ``router`` (see the module docstring)."""

    def __init__(self, topo: Topology, router: Router, model: Model) -> None:
        self.topo, self.router, self.model = topo, router, model
        self.name = f"multinode broadcast (router {router.name})"
        self.messages = topo.num_nodes
        self.nb = neighbor_table(topo).astype(np.int64)
        self.k = {"one-port": 1, "sdc": 1, "k-port": model.k}.get(model.kind, topo.degree)
        e = np.empty(0, dtype=np.int64)
        self.qv, self.qp, self.qm = e, e, e  # the rank's queue, oldest first

    def start(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        v = np.arange(lo, hi, dtype=np.int64)
        return v, v

    def _children(self, v: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        """(node, port, message) of each neighbour of ``v`` whose route to ``b`` starts at ``v``."""
        deg = self.topo.degree
        vv, pp = np.repeat(v, deg), np.tile(np.arange(deg), v.size)
        bb = np.repeat(b, deg)
        w = self.nb[vv, pp]
        ok = (w >= 0) & (w != bb)
        vv, pp, bb, w = vv[ok], pp[ok], bb[ok], w[ok]
        if w.size == 0:
            return vv, pp, bb
        ctx = HopContext(step=0, pids=bb * self.messages + w, hops=np.zeros_like(w))
        first, _ = self.router.next_port(w, bb, self.router.init_headers(w, bb), ctx)
        first = np.asarray(first, dtype=np.int64)
        # a router around faults may have no route (DROP, negative): no child there
        child = (first >= 0) & (self.nb[w, np.maximum(first, 0)] == vv)
        return vv[child], pp[child], bb[child]

    def transmissions(self, step: int, held: Holdings):
        v, b = held.received_at(step - 1)
        cv, cp, cm = self._children(v, b)
        self.qv = np.concatenate([self.qv, cv])
        self.qp = np.concatenate([self.qp, cp])
        self.qm = np.concatenate([self.qm, cm])
        deg = self.topo.degree
        link = self.qv * deg + self.qp
        if self.model.kind == "sdc":
            pick = np.flatnonzero(self.qp == (step - 1) % deg)
            heads = pick[np.unique(link[pick], return_index=True)[1]]
        else:
            heads = np.unique(link, return_index=True)[1]  # oldest item of every link
            if self.k < deg:
                heads = np.sort(heads)  # oldest heads first: each node's best links
                node = self.qv[heads]
                order = np.argsort(node, kind="stable")
                first = np.r_[0, np.flatnonzero(np.diff(node[order])) + 1]
                rank = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
                heads = heads[order[rank < self.k]]
        out = (self.qv[heads], self.qp[heads], self.qm[heads])
        keep = np.ones(self.qv.size, dtype=bool)
        keep[heads] = False
        self.qv, self.qp, self.qm = self.qv[keep], self.qp[keep], self.qm[keep]
        return out

    def busy(self) -> bool:
        """Something is still queued here (under sdc a step may send nothing)."""
        return bool(self.qv.size)

    def wanted(self, lo: int, hi: int) -> np.ndarray:
        return np.ones((hi - lo, self.messages), dtype=bool)


def routed_mnb_lower_bound(topo: Topology, model: Model | str) -> int:
    """``N - 1`` (sdc, one-port); else ``ceil((N - 1) / min degree)``, ``ceil((N - 1) / k)``
    under k-port, and the diameter."""
    if isinstance(model, str):
        model = parse_model(model)
    n = topo.num_nodes
    if model.kind in ("sdc", "one-port"):
        return n - 1
    nb = neighbor_table(topo)
    mindeg = int((nb >= 0).sum(axis=1).min())
    diameter = weighted_sums(topo, np.ones((1, topo.degree)))[1]
    k = model.k if model.kind == "k-port" else mindeg  # k-port: N(N-1) sends, N k per step
    return max(math.ceil((n - 1) / mindeg), math.ceil((n - 1) / k), diameter)


def _checks():
    def prog(model):
        return lambda t: RoutedMNB(t, make_router("shortest", t), parse_model(model))

    out = []
    specs = [("scc:4", True), ("hypercube:5", True), ("ccc:4", True), ("fccn:2", True)]
    specs += [("scc:5", False), ("ccc:5", False), ("hypercube:7", False)]
    for spec, quick in specs:
        for model in ("sdc", "one-port", "all-port"):
            out.append(
                Check(
                    spec,
                    "multinode broadcast (routed, shortest)",
                    model,
                    prog(model),
                    lambda t, m=model: routed_mnb_lower_bound(t, m),
                    quick=quick,
                )
            )
    return out


CHECKS = _checks()
