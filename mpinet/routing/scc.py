"""Routers for the scc family: paper 000's random, greedy and optimal routing.

Every router here moves a packet from ``<i_s, pi_s>`` to ``<i_d, pi_d>`` by
routing the relative permutation ``sigma = pi_d^-1 * pi_s`` to the identity
(:mod:`mpinet.routing.scc_cycles`): each lateral link is taken from the set
``B`` of links that lower the star distance, so a route has exactly
``lat = star_distance(sigma)`` lateral links and its local links are the
move-in links of eq. 8 plus move-between links. Between two lateral links a
packet goes round its ring the shorter way (up, ``local+``, on a tie); after
the last one it goes the shorter way to ``i_d``.

Routers
-------
``scc-random``
    Alg. 1: each lateral link is drawn uniformly from ``B`` with
    ``ctx.uniform()``. Distributed: the source and every node a packet reaches
    over a lateral link draw the next one; the header (1 word) carries it
    round the ring.
``scc-greedy``
    Alg. 2: go to the nearest symbol of ``B`` (ties: the first in the
    canonical cycle listing, which reproduces Table 2); a cycle avoiding
    symbol 1 is then executed completely. Distributed; the header (1 word)
    carries the chosen link and the links left of a cycle being executed.
``scc-nobacktrack``
    Alg. 3 without backtracking (section 6): every node takes the next
    lateral link that minimises Alg. 3's estimate ``M'`` of the child vertex.
    Distributed, memoryless, no header.
``scc-optimal``
    Alg. 3 (:mod:`mpinet.routing.scc_optimal`): source-based, the header
    carries the optimal sequence of lateral links.
"""

from __future__ import annotations

import numpy as np

from mpinet.routing import scc_cycles as sc
from mpinet.routing import scc_faults as sf
from mpinet.routing.base import DROP, HopContext, Router
from mpinet.routing.scc_optimal import SCCOptimal
from mpinet.topology.base import Topology

_FIELD = 8  # bits of one header field
_MASK = (1 << _FIELD) - 1
_NONE = np.iinfo(np.int64).max  # key of the positions that are not candidates


def _pick(sigma: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Per row, the position of least ``key``; ties go to the first in the canonical listing.

    The listing (:func:`~mpinet.routing.scc_cycles.canonical_priority`) is
    computed for the tied rows only.
    """
    best = key.min(axis=1)
    choice = np.argmin(key, axis=1)
    tied = np.flatnonzero((key == best[:, None]).sum(axis=1) > 1)
    if tied.size:
        sub = key[tied] == best[tied, None]
        pri = np.where(sub, sc.canonical_priority(sigma[tied]), _NONE)
        choice[tied] = np.argmin(pri, axis=1)
    return choice


class _SCCRouter(Router):
    """Shared set-up: ring size, distance table, relative permutations."""

    families = ("scc",)

    def __init__(self, topo: Topology) -> None:
        super().__init__(topo)
        self.n = int(topo.n)  # type: ignore[attr-defined]
        self.ring = self.n - 1
        self.dist = sc.ring_distances(self.n)

    def _positions(self, nodes: np.ndarray, dests: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ring positions (0-based permutation index, 1..n-1) of nodes and destinations."""
        here = np.asarray(nodes, dtype=np.int64) % self.ring + 1
        there = np.asarray(dests, dtype=np.int64) % self.ring + 1
        return here, there

    def _sigma(self, nodes: np.ndarray, dests: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Relative permutations of pairs and whether each is the identity."""
        sigma = sc.relative(self.topo, nodes, dests)[0]  # type: ignore[arg-type]
        return sigma, ~(sigma != np.arange(self.n)).any(axis=1)


class SCCRandom(_SCCRouter):
    """Alg. 1 of paper 000: lateral links drawn uniformly from ``B``.

    Distributed. Header (1 word): the lateral link chosen, as ring position
    + 1 (0 = none yet). A packet without one (at its source, or just arrived
    over a lateral link) draws the ``floor(u |B|)``-th symbol of ``B`` in
    increasing order, ``u = ctx.uniform()``, so routes depend only on the
    seed and the packet id, not on the number of ranks. The exact expected
    average to the identity (:func:`~mpinet.routing.scc_analysis.exhaustive_route_costs`,
    mode ``"mean"``) is Table 2's "random (simulation)" row: 5.514, 9.264,
    17.660, 22.332, 28.168 for n = 4, 5, 7, 8, 9; the paper's n = 3 (3.084
    for 3.0833) and n = 6 (12.858 for 12.8588) carry its sampling noise.

    With ``faults`` (section 6 of the paper offers the random router for
    adaptive routing around faults) the draw is among the symbols of ``B``
    whose lateral link is live and reachable round the ring over live local
    links, and the packet goes round the ring the shorter *live* way; a held
    link cut off by a dynamic fault is drawn again. No such symbol (or, at
    the last supernode, no live way to ``i_d``): :data:`DROP`. Routes stay
    minimal in lateral links; only the ring direction may be the longer one.
    """

    name = "scc-random"
    summary = (
        "paper 000 Alg. 1: lateral links drawn uniformly among the minimal ones (SCC); "
        "routes around faults"
    )
    distributed = True
    header_width = 1
    fault_tolerant = True

    def __init__(self, topo: Topology, faults: object = None) -> None:
        super().__init__(topo)
        # dynamic faults (step > 0) apply from set_faults on
        self.faults = faults if faults is not None and getattr(faults, "step", 0) == 0 else None

    def set_faults(self, faults: object) -> None:
        """Route around ``faults`` from now on (dynamic faults)."""
        self.faults = faults

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw a lateral link where none is held, then go round the ring to it."""
        if self.faults is not None:
            return self._around_faults(nodes, dests, headers, ctx)
        here, there = self._positions(nodes, dests)
        target = headers[:, 0] - 1
        need = np.flatnonzero(target < 0)
        if need.size:
            sigma, ident = self._sigma(np.asarray(nodes)[need], np.asarray(dests)[need])
            bm = sc.b_mask(sigma)
            count = bm.sum(axis=1)
            sub = HopContext(ctx.step, ctx.pids[need], ctx.hops[need], ctx.seed)
            pick = np.minimum((sub.uniform() * count).astype(np.int64), count - 1)
            choice = np.argmax(bm & (np.cumsum(bm, axis=1) == (pick + 1)[:, None]), axis=1)
            target[need] = np.where(ident, there[need], choice)
        ports = sc.ring_ports(self.n, here, target)
        out = np.where(here == target, 0, target + 1)
        return ports, out[:, None]

    def _around_faults(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`next_port` among live links only (class docstring); DROP where none."""
        nodes = np.asarray(nodes, dtype=np.int64)
        here, there = self._positions(nodes, dests)
        rows = np.arange(nodes.size)
        up, down, lateral = sf.ring_state(self.faults, self.n, nodes)
        reach = np.minimum(up, down) < sf.FAR  # (M, ring): ring index = position - 1
        sigma, ident = self._sigma(nodes, dests)
        usable = sc.b_mask(sigma)[:, 1:] & reach & lateral
        target = headers[:, 0] - 1
        j = np.maximum(target, 1) - 1
        keep = (target >= 0) & reach[rows, j] & (ident | lateral[rows, j])
        need = np.flatnonzero(~keep)
        if need.size:  # the draw of next_port, among the usable symbols
            bm = usable[need]
            count = bm.sum(axis=1)
            sub = HopContext(ctx.step, ctx.pids[need], ctx.hops[need], ctx.seed)
            pick = np.minimum((sub.uniform() * count).astype(np.int64), np.maximum(count - 1, 0))
            choice = np.argmax(bm & (np.cumsum(bm, axis=1) == (pick + 1)[:, None]), axis=1) + 1
            home = reach[need, there[need] - 1]
            target[need] = np.where(
                ident[need], np.where(home, there[need], -1), np.where(count > 0, choice, -1)
            )
        lost = target < 0
        j = np.maximum(target, 1) - 1
        at = here == target
        lat_port = 1 if self.n == 3 else 2
        ports = np.where(at, lat_port, sf.ring_port(self.n, up[rows, j], down[rows, j]))
        ports = np.where(lost, DROP, ports)
        out = np.where(at | lost, 0, target + 1)
        return ports.astype(np.int64), out[:, None]


class SCCGreedy(_SCCRouter):
    """Alg. 2 of paper 000: the nearest minimal lateral link, whole cycles at a time.

    Distributed. Header (1 word): bits 0-7 the lateral link chosen (ring
    position + 1, 0 = none), bits 8-15 the forced links left of a cycle
    being executed completely. A packet without a chosen link (at its source
    or just arrived over a lateral link) decides:

    - inside a cycle's execution, the link is forced: ``sigma[0]`` (the
      first symbol goes home);
    - otherwise it takes the symbol of ``B`` nearest to its ring position
      (Alg. 2 step 3, ``i_j`` = where the last lateral link arrived). On a
      tie (two symbols at the same distance, one each way) it takes the one
      listed first when the cycles are written in canonical form (smallest
      symbol first) and listed by their smallest symbol: so the symbol of
      the cycle through 1 wins, then the cycle with the smaller smallest
      symbol, then the earlier symbol in cycle order. This rule reproduces
      Table 2's greedy row (n = 3..9) when the printed values are read as
      truncated, not rounded, to three decimals (5.30556 -> 5.305, 8.8125 ->
      8.812, 26.57067 -> 26.570). Other rules miss: the lowest symbol
      (8.854 at n = 5), the cycle through 1 then the lowest symbol (right
      up to n = 8, 26.56999 at n = 9), either ring direction (5.333 at n = 4).
    - a symbol of a cycle avoiding 1 starts its complete execution (eq. 2:
      ``(a, sigma(a), ..., a)``), the next ``r`` links being forced.

    The nearest symbol stays the nearest while the packet walks to it, so a
    memoryless node would choose the same; the header only saves the work.
    """

    name = "scc-greedy"
    summary = "paper 000 Alg. 2: nearest minimal lateral link, cycles executed whole (SCC)"
    distributed = True
    header_width = 1

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """Decide where no link is held; follow the held link round the ring."""
        here, there = self._positions(nodes, dests)
        h = headers[:, 0]
        target = (h & _MASK) - 1
        forced = (h >> _FIELD) & _MASK
        need = np.flatnonzero(target < 0)
        if need.size:
            sigma, ident = self._sigma(np.asarray(nodes)[need], np.asarray(dests)[need])
            choice, left = self._decide(sigma, here[need], forced[need])
            target[need] = np.where(ident, there[need], choice)
            forced[need] = np.where(ident, 0, left)
        ports = sc.ring_ports(self.n, here, target)
        out = np.where(here == target, 0, target + 1) | (forced << _FIELD)
        return ports, out[:, None]

    def _decide(
        self, sigma: np.ndarray, here: np.ndarray, forced: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Next lateral link and forced links left after it (rows that are not the identity)."""
        in1 = sc.one_cycle_mask(sigma)
        bm = sc.b_mask(sigma, in1)
        choice = _pick(sigma, np.where(bm, self.dist[here], _NONE))
        rows = np.arange(sigma.shape[0])
        opening = ~in1[rows, choice]
        # length r of the opened cycle: its r links after the opening one are forced
        length = np.ones(sigma.shape[0], dtype=np.int64)
        x = sigma[rows, choice].astype(np.int64)
        for _ in range(self.n):
            live = x != choice
            if not live.any():
                break
            length += live
            x = np.where(live, sigma[rows, x], x)
        in_block = forced > 0
        choice = np.where(in_block, sigma[:, 0], choice)
        left = np.where(in_block, forced - 1, np.where(opening, length, 0))
        return choice, left


class SCCNoBacktrack(_SCCRouter):
    """Alg. 3 of paper 000 without backtracking, as a distributed rule (section 6).

    Distributed, no header: every node ``<i, sigma>`` (relative to the
    destination) picks, among the links ``b`` of ``B``, the one whose child
    vertex of Alg. 3's search tree has the smallest estimate ``M'`` (eq. 18
    without the common ``L``): ``d(i, b) + min d(b, B') + MI(sigma') +
    min d(F', i_d)``, ``sigma' = sigma * T_b`` (``d(i, b) + d(b, i_d)`` when
    ``sigma'`` is the identity). Ties go to the nearest ``b`` (the least
    local cost committed now, the rest being only estimated), then to the
    first in the canonical cycle listing (as :class:`SCCGreedy`). Nearest
    first gives averages between greedy and optimal, as section 6 expects
    (n = 5..7 to the identity: 8.808, 12.148, 16.595, against 8.842, 12.211,
    16.703 with the canonical order alone). The packet moves round the ring
    towards ``b`` and takes it; the choice is stable on the way (a step
    lowers the chosen ``M'`` and distance by one and no other by more), so
    no state is needed. Sub-optimal: one greedy descent of Alg. 3's tree,
    never revising a choice.
    """

    name = "scc-nobacktrack"
    summary = "paper 000 Alg. 3 without backtracking: greedy on the search estimate (SCC)"
    distributed = True
    header_width = 0

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """Port towards the lateral link of least estimate (towards ``i_d`` at the identity)."""
        here, there = self._positions(nodes, dests)
        sigma, ident = self._sigma(nodes, dests)
        target = there.copy()
        rows = np.flatnonzero(~ident)
        if rows.size:
            target[rows] = self.choose(sigma[rows], here[rows], there[rows])
        return sc.ring_ports(self.n, here, target), headers

    def choose(self, sigma: np.ndarray, here: np.ndarray, there: np.ndarray) -> np.ndarray:
        """Next lateral link for each row (``sigma`` not the identity)."""
        r, b, _, est = sc.expand(sigma, there, children=False)
        near = self.dist[here[r], b]
        key = np.full(sigma.shape, _NONE, dtype=np.int64)
        key[r, b] = (near + est) * self.n + near
        return _pick(sigma, key)


#: the router classes this module registers
ROUTERS_HERE: tuple[type[Router], ...] = (SCCRandom, SCCGreedy, SCCNoBacktrack, SCCOptimal)
