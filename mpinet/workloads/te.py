"""Total exchange (TE): every node sends a personal packet to every other node (paper 004 sec. 4).

``N (N - 1)`` real packets move hop by hop on the unicast
:class:`~mpinet.engine.core.Engine`, two ways:

* ``schedule`` (Cayley graphs of permutations: star, MS): every node follows
  the same schedule of the identity (:mod:`mpinet.routing.cayley_te`); a
  packet is injected the step before its first hop, so only the packets of
  the offsets under way are in the engine (about ``N`` under ``sdc``), which
  is what lets the 25-million-packet TE of a 7! network run on a laptop.
  Under ``sdc`` and ``one-port`` it takes exactly the lower bound.
* ``routed`` (any topology): all packets injected at step 0 and forwarded by a
  router (default ``shortest``), the engine arbitrating the links.

Lower bound (:func:`te_lower_bound`, exact and valid for any algorithm): give
each port class a weight ``c``; every packet from ``x`` to ``y`` spends at
least the ``c``-weighted distance ``dist_c(x, y)`` on the links it crosses,
and in one step a node can spend at most the sum of its ``K`` largest
``c * capacity`` over its ports (``K = 1`` under sdc and one-port, ``k``
under k-port, the degree under all-port). So ``T >= sum_xy dist_c(x, y) /
sum_x top_K(c * cap)`` for every ``c``; the bound is the best over a small
grid of weights (with all weights 1 it is ``(N - 1) * average distance``
divided by ``K``), and at least the diameter.
"""

from __future__ import annotations

import itertools
import math
import resource
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpinet import perm
from mpinet.engine.comm import resolve, sum_op
from mpinet.engine.core import Engine
from mpinet.engine.models import Model, parse_model
from mpinet.errors import MpinetError
from mpinet.routing import make_router
from mpinet.routing.cayley_te import TEScheduleRouter, te_schedule
from mpinet.routing.tables import neighbor_table
from mpinet.topology.base import Topology
from mpinet.topology.permgraph import PermCayley
from mpinet.workloads.checks import Check
from mpinet.workloads.te_algorithm import default_algorithm

ALGORITHMS = ("schedule", "routed")
_BOUND_ELEMENTS = 1 << 22  # sources x nodes x degree of one weighted-distance sweep


class TEError(MpinetError, ValueError):
    """A total exchange that cannot be built as asked."""


def ports_per_step(topo: Topology, model: Model) -> int:
    """Generators a node may use in one step: 1 (sdc, one-port), k, or the degree."""
    if model.kind in ("sdc", "one-port"):
        return 1
    if model.kind == "k-port":
        return min(model.k, topo.degree)
    return topo.degree


class AllPairs:
    """Routed TE workload: one packet from every node to every other, injected at step 0.

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


class ScheduledAllPairs:
    """Scheduled TE workload: the packets of offset ``h`` (``x -> x * h``) are injected
    at every node the step before the first letter of ``h``'s word."""

    def __init__(self, topo: PermCayley, router: TEScheduleRouter) -> None:
        self.topo, self.router = topo, router
        n = topo.num_nodes
        self.pid_space = n * n
        start = router.schedule.start
        self.order = np.argsort(start, kind="stable")[1:]  # offset 0 is the identity
        self.when = start[self.order] - 1
        self.last_injection_step = int(self.when.max()) if self.when.size else 0
        self._perms: tuple[int, int, np.ndarray] | None = None

    def injections(self, lo: int, hi: int, step: int):
        a, b = np.searchsorted(self.when, [step, step + 1])
        if a == b or hi <= lo:
            e = np.empty(0, dtype=np.int64)
            return e, e, e
        if self._perms is None or self._perms[:2] != (lo, hi):
            self._perms = (lo, hi, self.topo.perms(np.arange(lo, hi, dtype=np.int64)))
        x = self._perms[2]
        hs = self.topo.perms(self.order[a:b])
        # x * h for every node x of the block and offset h of this step
        dst = perm.rank(
            np.take_along_axis(x[:, None, :], hs[None, :, :].astype(np.intp), 2).reshape(
                -1, self.topo.k
            )
        )
        src = np.repeat(np.arange(lo, hi, dtype=np.int64), b - a)
        n = self.topo.num_nodes
        return src * n + dst, src, dst


def weighted_sums(topo: Topology, weights: np.ndarray) -> tuple[np.ndarray, int]:
    """``sum_xy dist_c(x, y)`` for each row ``c`` of ``weights`` (per port), and the diameter."""
    nb = neighbor_table(topo).astype(np.int64)
    n = topo.num_nodes
    targets = topo.translation_targets
    # vertex-transitive families: the sources of translation_targets have orbits of equal size
    sources = np.arange(n) if targets is None else np.asarray(targets, dtype=np.int64)
    scale = n / sources.size
    has = nb >= 0
    safe = np.where(has, nb, 0)
    sums, diameter = np.zeros(len(weights)), 0
    chunk = max(1, _BOUND_ELEMENTS // (n * topo.degree))
    for lo in range(0, sources.size, chunk):
        src = sources[lo : lo + chunk]
        for j, c in enumerate(weights):
            cost = np.where(has, c[None, :], np.inf)
            d = np.full((src.size, n), np.inf)
            d[np.arange(src.size), src] = 0.0
            while True:  # Bellman-Ford sweeps: undirected links, so dist to = dist from
                new = np.minimum(d, (d[:, safe] + cost[None, :, :]).min(axis=2))
                if np.array_equal(new, d):
                    break
                d = new
            if not np.isfinite(d).all():
                raise TEError(f"{topo.spec} is not connected: no total exchange")
            sums[j] += d.sum() * scale
            if j == 0:
                diameter = max(diameter, int(d.max()))
    return sums, diameter


def te_lower_bound(topo: Topology, model: Model | str) -> int:
    """Exact lower bound on TE steps under ``model`` (see the module docstring)."""
    if isinstance(model, str):
        model = parse_model(model)
    classes = list(dict.fromkeys(topo.port_classes))
    cls = np.array([classes.index(c) for c in topo.port_classes])
    grid = [np.ones(len(classes))]
    if len(classes) > 1:
        grid += [
            np.array(w, float)
            for w in itertools.product(range(4), repeat=len(classes))
            if any(w) and len(set(w)) > 1
        ]
    weights = np.array([g[cls] for g in grid])
    sums, diameter = weighted_sums(topo, weights)
    caps = np.asarray(model.port_capacities(topo), dtype=float)
    nb = neighbor_table(topo)
    k = ports_per_step(topo, model)
    best = diameter
    for w, total in zip(weights, sums, strict=True):
        per_port = np.where(nb >= 0, (w * caps)[None, :], 0.0)
        per_node = -np.sort(-per_port, axis=1)[:, :k].sum()
        if per_node > 0:
            best = max(best, math.ceil(round(total / per_node, 9)))
    return int(best)


@dataclass
class TEResult:
    """Global outcome of a TE run (identical on every rank)."""

    steps: int
    complete: bool
    delivered: int
    expected: int
    transmissions: int
    min_transmissions: int  # sum of distances over all pairs: what minimal routes need
    seconds: float
    max_rss_mib: float  # largest peak resident memory of a rank
    algorithm: str = "routed"

    def as_dict(self) -> dict:
        return {
            "algorithm": self.algorithm,
            "steps": self.steps,
            "complete": self.complete,
            "delivered": self.delivered,
            "expected": self.expected,
            "transmissions": self.transmissions,
            "min_transmissions": self.min_transmissions,
            "seconds": round(self.seconds, 4),
            "max_rss_mib": round(self.max_rss_mib, 1),
        }


def build_te(topo: Topology, model: Model, algorithm: str | None = None, router: Any = None):
    """(router, workload) of a TE; ``router`` is used by ``routed`` (default ``shortest``)."""
    algorithm = algorithm or default_algorithm(topo)
    if algorithm not in ALGORITHMS:
        raise TEError(f"TE algorithm must be one of {', '.join(ALGORITHMS)}; got {algorithm!r}")
    if algorithm == "schedule":
        rt = TEScheduleRouter(topo, te_schedule(topo, ports_per_step(topo, model)))
        return rt, ScheduledAllPairs(topo, rt)
    return (router or make_router("shortest", topo)), AllPairs(topo)


def run_te(
    topo: Topology,
    model: Any,
    comm: Any = None,
    *,
    algorithm: str | None = None,
    router: str = "shortest",
    tie: str = "first",
    seed: int = 0,
    max_steps: int = 10_000_000,
) -> TEResult:
    """Run the total exchange on the unicast engine; a :class:`Check` runner."""
    t0 = time.perf_counter()
    comm = resolve(comm)
    if isinstance(model, str):
        model = parse_model(model)
    algorithm = algorithm or default_algorithm(topo)
    rt = None
    if algorithm == "routed":
        rt = make_router(router, topo, **({"tie": tie} if router == "shortest" else {}))
    rt, workload = build_te(topo, model, algorithm, rt)
    eng = Engine(topo, rt, model, comm, seed=seed, max_steps=max_steps)
    rec = eng.run(workload)
    n = topo.num_nodes
    delivered = comm.allreduce(int((rec.packets[:, 4] >= 0).sum()), op=sum_op())
    transmissions = int(rec.counters[:, 0].sum())  # the counters are global already
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    rss = max(comm.allgather(rss))
    hops = round(weighted_sums(topo, np.ones((1, topo.degree)))[0][0])
    return TEResult(
        steps=rec.steps,
        complete=delivered == n * (n - 1),
        delivered=delivered,
        expected=n * (n - 1),
        transmissions=transmissions,
        min_transmissions=hops,
        seconds=time.perf_counter() - t0,
        max_rss_mib=rss,
        algorithm=algorithm,
    )


# -- the catalogue -------------------------------------------------------------------------------

_TE_SRC = {
    "sdc": "paper 004 sec. 4.1: (k+1)! + o((k+1)!) on the k-star under SDC; "
    "Cor. 4.1: Theta(N log N / log log N) on MS (asymptotic)",
    "one-port": "paper 004 Cor. 4.1: Theta(N log N / log log N), optimal for single-port",
    "all-port": "paper 004 sec. 4.2: Theta(k!) on the k-star (Fragopoulou-Akl); "
    "Cor. 4.7: Theta(N sqrt(log N / log log N)) on MS with l = Theta(n) (asymptotic)",
}
_MODELS = ("sdc", "one-port", "all-port")


def _checks():
    out = []
    scheduled = [("star:4", True), ("star:5", True), ("ms:2,2", True), ("star:6", False)]
    scheduled += [("ms:3,2", False), ("ms:2,3", False), ("star:7", False)]
    for spec, quick in scheduled:
        for model in _MODELS:
            out.append(
                Check(
                    spec,
                    "total exchange (schedule)",
                    model,
                    lambda t: None,
                    lambda t, m=model: te_lower_bound(t, m),
                    paper_source=_TE_SRC[model],
                    quick=quick,
                    run=lambda topo, mdl, comm: run_te(topo, mdl, comm, algorithm="schedule"),
                )
            )
    routed = [("star:4", True), ("ms:2,2", True), ("scc:4", True), ("hypercube:5", True)]
    routed += [("ccc:4", True), ("fccn:2", True), ("borel:47,2,1,7", False), ("star:6", False)]
    routed += [("scc:5", False)]
    for spec, quick in routed:
        for model in _MODELS:
            out.append(
                Check(
                    spec,
                    "total exchange (routed, shortest)",
                    model,
                    lambda t: None,
                    lambda t, m=model: te_lower_bound(t, m),
                    paper_source=_TE_SRC[model] if spec.startswith(("star", "ms")) else "",
                    quick=quick,
                    run=lambda topo, mdl, comm: run_te(topo, mdl, comm, algorithm="routed"),
                )
            )
    return out


CHECKS = _checks()
