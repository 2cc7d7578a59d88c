"""Total-exchange schedules on Cayley graphs of permutations (star, MS), and their router.

On a Cayley graph whose port ``g`` multiplies every node by the same generator
(``x -> x * g``), the packet from ``x`` to ``x * h`` can follow the same word
``g_1 ... g_d = h`` from every source ``x``. If every node sends, at the same
step, the packet of offset ``h`` that sits at it on the same generator, each
node sends exactly one packet per (offset, letter) and no two packets of one
offset ever meet. So a schedule for the identity -- for every offset ``h``
a shortest word and a step for each letter -- is a schedule for the whole total
exchange, and the only constraints are those of one node:

* each generator is used at most once per step (one packet per link), and
* at most ``K`` generators per step: ``K = 1`` under ``sdc`` (the whole network
  then uses one dimension per step, as the model demands) and ``one-port``,
  ``K`` under ``k-port:K``, the degree under ``all-port``.

:func:`build_te_schedule` packs the words greedily, longest first (list
scheduling): each letter goes to the earliest step after the previous letter
where its generator is free and the step has room, and among the generators
that keep the word shortest the one free earliest is taken. Every packet waits
in the engine between its letters, so with several ports per step, where later
letters can land far after the first, :func:`te_schedule` bounds that wait when
the engine work would be large (a word that does not fit starts later). With ``K = 1`` the
steps are exactly ``sum_h dist(h)``, the lower bound (every node sends one
packet per step and the packets need that many hops per node); with more
ports the result is measured against ``sum_h dist(h) / K``.

:class:`TEScheduleRouter` executes a schedule on the engine: the header holds
the packet's offset, and at each node the packet takes its next letter when
the step of that letter has come, and :data:`~mpinet.routing.base.WAIT` before.
The schedule is the same table on every node; nothing depends on the number
of ranks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mpinet import perm
from mpinet.errors import RoutingError
from mpinet.routing.base import WAIT, HopContext, Router
from mpinet.routing.tables import distances_from, neighbor_table
from mpinet.topology.base import Topology
from mpinet.topology.permgraph import PermCayley


@dataclass
class TESchedule:
    """A total-exchange schedule of the identity (see the module docstring).

    ``words[h, i]`` is the port of the ``i``-th hop of offset ``h`` (-1 past its
    length), ``slots[h, i]`` its step (1-based; -1 past the length), ``length[h]``
    the word length (the distance of ``h``).
    """

    spec: str
    ports_per_step: int
    words: np.ndarray
    slots: np.ndarray
    length: np.ndarray

    @property
    def steps(self) -> int:
        """Steps of the whole total exchange."""
        return int(self.slots.max()) if self.slots.size else 0

    @property
    def packet_steps(self) -> int:
        """Engine work of the schedule: every offset's N packets are held from the step
        before their first letter to their last (the workload injects them lazily)."""
        has = self.length > 0
        rows = np.flatnonzero(has)
        first = self.slots[rows, 0]
        last = self.slots[rows, self.length[rows] - 1]
        return int((last - first + 2).sum()) * int(self.words.shape[0])

    @property
    def start(self) -> np.ndarray:
        """Step of the first hop of every offset (0 for the identity)."""
        return np.where(self.length > 0, self.slots[:, 0], 0)


def _find(par: list[int], t: int) -> int:
    """Union-find root with path compression: the first free slot at or after ``t``."""
    root = t
    while par[root] != root:
        root = par[root]
    while par[t] != root:
        par[t], t = root, par[t]
    return root


def build_te_schedule(
    topo: Topology, ports_per_step: int, max_wait: int | None = None
) -> TESchedule:
    """Greedy total-exchange schedule with at most ``ports_per_step`` generators per step.

    Parameters
    ----------
    topo : a Cayley graph of permutations (``star``, ``ms``) small enough for
        its neighbour table (the schedule has one word per node)
    ports_per_step : 1 for ``sdc`` / ``one-port``, K for ``k-port:K``, the
        degree for ``all-port``
    max_wait : steps a packet may wait between two letters of its word (None:
        unbounded). A word that does not fit starts later. Bounding the wait keeps
        the packets of an offset in the engine for about its length only, at the
        cost of a few more steps (see :func:`te_schedule`).
    """
    if not isinstance(topo, PermCayley):
        raise RoutingError(
            f"the total-exchange schedule needs a Cayley graph of permutations (star, ms), "
            f"not {topo.spec}; use workload.algorithm = 'routed'"
        )
    deg = topo.degree
    if not 1 <= ports_per_step <= deg:
        raise RoutingError(
            f"ports_per_step must be in 1..{deg} for {topo.spec}, got {ports_per_step}"
        )
    if max_wait is not None and max_wait < 0:
        raise RoutingError(f"max_wait must be >= 0 or None, got {max_wait}")
    n = topo.num_nodes
    nb = neighbor_table(topo).astype(np.int64)
    dist = distances_from(topo, topo.identity).astype(np.int64)
    inv = perm.rank(perm.inverse(topo.perms(np.arange(n, dtype=np.int64))))
    depth = int(dist.max())
    # a sequential schedule fits in sum(dist) steps; a bounded wait at most stretches each word
    horizon = int(dist.sum()) * (1 + (max_wait or 0)) + depth + 2
    gen_free = [list(range(horizon + 1)) for _ in range(deg)]
    step_free = list(range(horizon + 1))
    used = [0] * (horizon + 1)
    words = np.full((n, max(depth, 1)), -1, dtype=np.int64)
    slots = np.full((n, max(depth, 1)), -1, dtype=np.int64)
    nbl, dl = nb.tolist(), dist.tolist()

    def free_slot(g: int, t: int) -> int:
        """First step >= t with generator g free and room left in the step."""
        while True:
            a = _find(gen_free[g], t)
            b = _find(step_free, a)
            if a == b:
                return a
            t = b

    for h in np.lexsort((np.arange(n), -dist)).tolist():
        start = 1
        while True:  # walk from h^-1 to the identity: the word spells h
            y, tau, plan = int(inv[h]), start - 1, []
            for i in range(dl[h]):
                best_t, best_g = horizon + 1, -1
                for g in range(deg):
                    if dl[nbl[y][g]] == dl[y] - 1:
                        a = free_slot(g, tau + 1)
                        if a < best_t:
                            best_t, best_g = a, g
                if i and max_wait is not None and best_t > tau + 1 + max_wait:
                    break
                plan.append((best_g, best_t))
                y, tau = nbl[y][best_g], best_t
            if len(plan) == dl[h]:
                break
            start = plan[0][1] + 1  # the word does not fit from there: start later
        for i, (g, s) in enumerate(plan):
            words[h, i], slots[h, i] = g, s
            gen_free[g][s] = s + 1
            used[s] += 1
            if used[s] == ports_per_step:
                step_free[s] = s + 1
    sched = TESchedule(topo.spec, ports_per_step, words, slots, dist)
    check_te_schedule(topo, sched)
    return sched


#: engine work (packets held x steps) above which :func:`te_schedule` bounds the wait: S_7
#: all-port (2.5 G, 5,069 steps in about a minute) stays greedy, MS(3,2) (64 G) does not
PACKET_STEP_BUDGET = 4_000_000_000
#: the bounded wait used then (measured on MS(3,2) all-port: 12,219 steps against 11,725
#: unbounded and the bound 10,147, and 0.30 G packet-steps against 64 G)
COMPACT_WAIT = 2


def te_schedule(topo: Topology, ports_per_step: int) -> TESchedule:
    """The schedule the ``te`` workload runs: the greedy one, or, when its packets would wait
    in the engine for more than :data:`PACKET_STEP_BUDGET` packet-steps, the one with waits
    bounded by :data:`COMPACT_WAIT`. Deterministic: the same on any number of ranks."""
    sched = build_te_schedule(topo, ports_per_step)
    if sched.packet_steps > PACKET_STEP_BUDGET:
        sched = build_te_schedule(topo, ports_per_step, max_wait=COMPACT_WAIT)
    return sched


def check_te_schedule(topo: Topology, sched: TESchedule) -> None:
    """Raise :class:`RoutingError` unless every word spells its offset in increasing
    steps, each generator is used once per step and each step has at most
    ``ports_per_step`` generators."""
    n, k = topo.num_nodes, topo.k
    p = perm.identity(k, n)
    for i in range(sched.words.shape[1]):
        on = sched.words[:, i] >= 0
        p[on] = p[on][np.arange(int(on.sum()))[:, None], topo.gens[sched.words[on, i]]]
    if not np.array_equal(perm.rank(p), np.arange(n)):
        raise RoutingError(f"{topo.spec}: a schedule word does not spell its offset")
    s = sched.slots
    valid = s >= 0
    if (np.diff(np.where(valid, s, np.iinfo(np.int64).max), axis=1)[valid[:, 1:]] <= 0).any():
        raise RoutingError(f"{topo.spec}: schedule letters not in increasing steps")
    t, g = s[valid], sched.words[valid]
    pairs = np.unique(t * topo.degree + g)
    if pairs.size != t.size:
        raise RoutingError(f"{topo.spec}: a generator used twice in one step")
    if t.size and np.bincount(pairs // topo.degree).max() > sched.ports_per_step:
        raise RoutingError(f"{topo.spec}: more than {sched.ports_per_step} generators in a step")


def offsets(topo: PermCayley, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Offsets ``h = src^-1 * dst`` (node ids) of packets from ``src`` to ``dst``."""
    return perm.rank(perm.compose(perm.inverse(topo.perms(src)), topo.perms(dst)))


class TEScheduleRouter(Router):
    """Executes a :class:`TESchedule`: header = the packet's offset ``src^-1 * dst``.

    Not in the router registry: it is built with its schedule by the ``te``
    workload (``workload.algorithm = "schedule"``).
    """

    name: ClassVar[str] = "te-schedule"
    summary: ClassVar[str] = "total exchange: every node follows one schedule of the identity"
    families: ClassVar[tuple[str, ...]] = ("star", "ms")
    distributed: ClassVar[bool] = False
    holds: ClassVar[bool] = True
    header_width = 1

    def __init__(self, topo: Topology, schedule: TESchedule, **options: Any) -> None:
        super().__init__(topo, **options)
        self.schedule = schedule

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        return offsets(self.topo, np.asarray(src), np.asarray(dst))[:, None]

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        h, i = headers[:, 0], ctx.hops
        port = self.schedule.words[h, i]
        return np.where(self.schedule.slots[h, i] <= ctx.step, port, WAIT), headers

    def ready_steps(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> np.ndarray:
        """The step of the packet's next letter in the schedule."""
        return self.schedule.slots[headers[:, 0], ctx.hops]
