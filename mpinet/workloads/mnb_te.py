"""Multinode broadcast (MNB) and total exchange (TE) on Cayley graphs (paper 004, section 4).

**MNB** (every node broadcasts its own message; copy semantics, one message per
node, on :mod:`mpinet.engine.collective`). On a Cayley graph whose port ``g``
multiplies every node by the same generator, a spanning tree ``T`` of the
identity, translated to every source ``s`` (``s * T``), broadcasts all the
messages at once: if tree edge ``h -> h * g`` is scheduled at step ``t``, every
node ``x`` sends on port ``g`` the message of source ``x * h^-1`` (the one that
sits at tree position ``h`` of its source). A tree node is scheduled only
after its parent, and each step uses each generator for at most one tree
edge, so every link carries at most one message per step, and no node ever
receives a message twice (its source's tree reaches it once).

* ``sdc`` and ``one-port``: one tree edge per step (the BFS order of the
  identity's tree): every node sends one message and receives one new message
  in every step, so the MNB takes exactly ``N - 1`` steps -- the lower bound
  under both models (a node receives at most one message per step). This is
  the k! - 1 of Misic and Jovanovic for the star under SDC (paper 004, section
  4.1), and beats Cor. 4.3's ``N + o(N)`` for MS (obtained there by emulation).
* ``all-port``: a greedy tree (:func:`allport_tree`): each step, every
  generator adds one uninformed tree node when it can. Lower bound: every node
  receives ``N - 1`` messages on ``degree`` links, and at least the
  eccentricity: ``max(ceil((N - 1) / degree), diameter)``.

**TE** (every node sends a personal packet to every other node: ``N (N - 1)``
packets) on the unicast :class:`~mpinet.engine.core.Engine` with a router
(default ``shortest``, lowest-port ties, measured best): :class:`AllPairs` is the workload and
:func:`run_te` the runner of the checks. Lower bound: every packet needs its
distance in hops and a node sends at most one packet per step under ``sdc``
(one dimension, one link per node) and ``one-port``, so at least
``sum_x dist(x, identity) = (N - 1) * average distance`` steps; at most
``degree`` per step under ``all-port``.
"""

from __future__ import annotations

import math
import resource
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpinet.engine.collective import Holdings
from mpinet.engine.comm import resolve, sum_op
from mpinet.errors import MpinetError
from mpinet.routing.tables import distances_from, neighbor_table
from mpinet.topology.base import Topology


class MNBError(MpinetError, ValueError):
    """The MNB schedule does not apply to this topology."""


def _cayley_table(topo: Topology) -> np.ndarray:
    if topo.family not in ("star", "ms"):
        raise MNBError(
            f"the translated-tree MNB needs a Cayley graph whose ports are generators "
            f"(star, ms), not {topo.spec}"
        )
    return neighbor_table(topo).astype(np.int64)


def bfs_tree(nb: np.ndarray, root: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BFS order, parent and parent port of the tree of ``root`` (lowest port first)."""
    n = nb.shape[0]
    parent = np.full(n, -1, dtype=np.int64)
    pport = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    seen[root] = True
    order = [root]
    i = 0
    while i < len(order):
        h = order[i]
        i += 1
        for g, c in enumerate(nb[h]):
            if c >= 0 and not seen[c]:
                seen[c] = True
                parent[c], pport[c] = h, g
                order.append(int(c))
    return np.array(order, dtype=np.int64), parent, pport


def allport_tree(nb: np.ndarray, root: int = 0) -> list[np.ndarray]:
    """Greedy all-port schedule: per step, rows ``(parent, port)`` of the new tree edges.

    In each step every generator ``g`` adds the edge ``h -> h * g`` of the
    oldest informed ``h`` whose ``g``-neighbour is still uninformed (and not
    added by another generator in the same step); a node informed in step ``t``
    becomes a parent from step ``t + 1``.
    """
    n, deg = nb.shape
    informed = np.zeros(n, dtype=bool)
    informed[root] = True
    queue = [root]  # informed nodes in the order they were informed
    ptr = [0] * deg  # next candidate of each generator in ``queue``
    count, steps = 1, []
    while count < n:
        ready = len(queue)  # only nodes informed before this step send
        rows = []
        for g in range(deg):
            while ptr[g] < ready:
                h = queue[ptr[g]]
                ptr[g] += 1
                c = nb[h, g]
                if c >= 0 and not informed[c]:
                    informed[c] = True
                    rows.append((h, g))
                    queue.append(int(c))
                    break
        if not rows:
            raise MNBError("the graph is not connected: the MNB cannot finish")
        count += len(rows)
        steps.append(np.array(rows, dtype=np.int64))
    return steps


class TreeMNB:
    """MNB by a spanning tree of the identity translated to every source.

    Parameters
    ----------
    topo : a star or macro-star (Cayley graph, ports = generators)
    model : ``"sdc"`` / ``"one-port"`` (one tree edge per step, ``N - 1`` steps)
        or ``"all-port"`` (greedy tree, :func:`allport_tree`)
    """

    messages: int

    def __init__(self, topo: Topology, model: str = "sdc") -> None:
        nb = _cayley_table(topo)
        self.topo, self.nb = topo, nb
        self.messages = topo.num_nodes
        root = topo.identity
        if model in ("sdc", "one-port"):
            order, parent, pport = bfs_tree(nb, root)
            kids = order[1:]
            self.schedule = [np.array([[parent[c], pport[c]]]) for c in kids]
            self.name = f"tree MNB ({model}, BFS order)"
        elif model == "all-port":
            self.schedule = allport_tree(nb, root)
            self.name = "tree MNB (all-port, greedy)"
        else:
            raise MNBError(f"TreeMNB model must be sdc, one-port or all-port, got {model!r}")
        # each tree node's port path from the root, to translate messages back
        self.path: dict[int, list[int]] = {root: []}
        for rows in self.schedule:
            for h, g in rows:
                self.path[int(nb[h, g])] = self.path[int(h)] + [int(g)]
        self.rev = np.asarray(topo.reverse_port, dtype=np.int64)
        self.depth = max(len(p) for p in self.path.values())

    @property
    def planned_steps(self) -> int:
        return len(self.schedule)

    def start(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        v = np.arange(lo, hi, dtype=np.int64)
        return v, v

    def _source_at(self, x: np.ndarray, h: int) -> np.ndarray:
        """Source of the message at tree position ``h`` of its tree, for nodes ``x``."""
        for g in reversed(self.path[h]):  # x * h^-1: undo the path, last generator first
            x = self.nb[x, self.rev[g]]
        return x

    def transmissions(self, step: int, held: Holdings):
        if step > len(self.schedule):
            e = np.empty(0, dtype=np.int64)
            return e, e, e
        x = np.arange(held.lo, held.hi, dtype=np.int64)
        rows = self.schedule[step - 1]
        nodes = np.tile(x, rows.shape[0])
        ports = np.repeat(rows[:, 1], x.size)
        msgs = np.concatenate([self._source_at(x, int(h)) for h in rows[:, 0]])
        return nodes, ports, msgs

    def wanted(self, lo: int, hi: int) -> np.ndarray:
        return np.ones((hi - lo, self.messages), dtype=bool)


def mnb_lower_bound(topo: Topology, model: str) -> int:
    """Exact MNB lower bound: ``N - 1`` (sdc, one-port), else max(ceil((N-1)/deg), diameter)."""
    n = topo.num_nodes
    if model in ("sdc", "one-port"):
        return n - 1
    return max(math.ceil((n - 1) / topo.degree), int(distances_from(topo, topo.identity).max()))


# -- total exchange ------------------------------------------------------------------------------


class AllPairs:
    """TE workload: one packet from every node to every other node, injected at step 0.

    Packet ``src * N + dst`` (``dst != src``); ``N (N - 1)`` packets in all.
    """

    last_injection_step = 0

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.pid_space = topo.num_nodes**2

    def injections(self, lo: int, hi: int, step: int):
        n = self.topo.num_nodes
        if step != 0 or hi <= lo:
            e = np.empty(0, dtype=np.int64)
            return e, e, e
        src = np.repeat(np.arange(lo, hi, dtype=np.int64), n - 1)
        k = np.tile(np.arange(n - 1, dtype=np.int64), hi - lo)
        dst = k + (k >= src)
        return src * n + dst, src, dst


def te_lower_bound(topo: Topology, model: str) -> int:
    """Exact TE lower bound on a vertex-transitive network: the sum of the distances from
    a node (a node sends at most one packet per step under sdc and one-port), divided
    by the degree (rounded up) under all-port, and at least the diameter."""
    d = distances_from(topo, topo.identity).astype(np.int64)
    total = int(d.sum())
    if model == "all-port":
        return max(math.ceil(total / topo.degree), int(d.max()))
    return total


@dataclass
class TEResult:
    """Global outcome of a TE run (identical on every rank)."""

    steps: int
    complete: bool
    delivered: int
    expected: int
    transmissions: int
    min_transmissions: int  # N * sum of distances: what minimal routes need
    seconds: float
    max_rss_mib: float  # largest peak resident memory of a rank

    def as_dict(self) -> dict:
        return {
            "steps": self.steps,
            "complete": self.complete,
            "delivered": self.delivered,
            "expected": self.expected,
            "transmissions": self.transmissions,
            "min_transmissions": self.min_transmissions,
            "seconds": round(self.seconds, 4),
            "max_rss_mib": round(self.max_rss_mib, 1),
        }


def run_te(
    topo: Topology,
    model: Any,
    comm: Any = None,
    *,
    router: str = "shortest",
    tie: str = "first",
    seed: int = 0,
    max_steps: int = 10_000_000,
) -> TEResult:
    """Run the total exchange on the unicast engine; a :class:`Check` runner."""
    from mpinet.engine.core import Engine
    from mpinet.engine.models import parse_model
    from mpinet.routing import make_router

    t0 = time.perf_counter()
    comm = resolve(comm)
    if isinstance(model, str):
        model = parse_model(model)
    opts = {"tie": tie} if router == "shortest" else {}
    rt = make_router(router, topo, **opts)
    eng = Engine(topo, rt, model, comm, seed=seed, max_steps=max_steps)
    rec = eng.run(AllPairs(topo))
    n = topo.num_nodes
    delivered = comm.allreduce(int((rec.packets[:, 4] >= 0).sum()), op=sum_op())
    transmissions = int(rec.counters[:, 0].sum())  # the counters are global already
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    rss = max(comm.allgather(rss))
    dist = distances_from(topo, topo.identity).astype(np.int64)
    return TEResult(
        steps=rec.steps,
        complete=delivered == n * (n - 1),
        delivered=delivered,
        expected=n * (n - 1),
        transmissions=transmissions,
        min_transmissions=n * int(dist.sum()),
        seconds=time.perf_counter() - t0,
        max_rss_mib=rss,
    )


# -- the catalogue -------------------------------------------------------------------------------

_MNB_SRC = {
    "sdc": "paper 004 sec. 4.1: MNB in k!-1 on the k-star under SDC (Misic-Jovanovic); "
    "Cor. 4.3: N + o(N) on MS (asymptotic)",
    "one-port": "paper 004 sec. 4.1 SDC schedules are one-port; Cor. 4.3: N + o(N) on MS",
    "all-port": "paper 004 sec. 4.2: Theta((k-1)!) on the k-star (Fragopoulou-Akl); "
    "Cor. 4.6: Theta(N sqrt(log log N / log N)) on MS with l = Theta(n) (asymptotic)",
}
_TE_SRC = {
    "sdc": "paper 004 sec. 4.1: (k+1)! + o((k+1)!) on the k-star under SDC; "
    "Cor. 4.1: Theta(N log N / log log N) on MS (asymptotic)",
    "one-port": "paper 004 Cor. 4.1: Theta(N log N / log log N), optimal for single-port",
    "all-port": "paper 004 sec. 4.2: Theta(k!) on the k-star (Fragopoulou-Akl); "
    "Cor. 4.7: Theta(N sqrt(log N / log log N)) on MS with l = Theta(n) (asymptotic)",
}


def _checks():
    from mpinet.workloads.checks import Check

    out = []
    mnb = [("star:4", True), ("star:5", True), ("ms:2,2", True), ("star:6", False)]
    mnb += [("ms:3,2", False), ("ms:2,3", False), ("star:7", False)]
    for spec, quick in mnb:
        for model in ("sdc", "one-port", "all-port"):
            out.append(
                Check(
                    spec,
                    "multinode broadcast (tree)",
                    model,
                    lambda t, m=model: TreeMNB(t, m),
                    lambda t, m=model: mnb_lower_bound(t, m),
                    # k! - 1 on the k-star under SDC: a concrete formula of the paper
                    paper_steps=(
                        (lambda t: t.num_nodes - 1)
                        if model == "sdc" and spec.startswith("star")
                        else None
                    ),
                    paper_source=_MNB_SRC[model],
                    quick=quick,
                )
            )
    te = [("star:4", True), ("star:5", True), ("ms:2,2", True), ("star:6", False)]
    for spec, quick in te:
        for model in ("sdc", "one-port", "all-port"):
            out.append(
                Check(
                    spec,
                    "total exchange (shortest)",
                    model,
                    lambda t: None,
                    lambda t, m=model: te_lower_bound(t, m),
                    paper_source=_TE_SRC[model],
                    quick=quick,
                    run=lambda topo, mdl, comm: run_te(topo, mdl, comm),
                )
            )
    return out


CHECKS = _checks()
