"""Unicast traffic patterns, generated per rank and identical for any rank count.

Packet ids are a function of (source, index) or (step, source), and every
random choice is a counter-based draw keyed by the packet id
(:mod:`mpinet.rng`), so rank ``r`` generates exactly the packets whose source
it owns and the union over ranks never depends on how many there are.

Patterns: ``uniform`` (each node to uniformly random other nodes),
``permutation`` (node ``v`` to ``pi(v)``, a random cyclic permutation, so no
node sends to itself), ``hotspot`` (all to one target, by default the
identity), ``all-to-identity`` (one packet from every node to the identity,
the routing reports' pattern) and ``locality`` (FCCN, paper 002 section 5: the
destination stays in the source's (k-1)-FCCN with probability ``p_k``).
Injection: ``once`` (``packets`` per node at step 0), ``bernoulli`` (each
node injects one packet per step with probability ``rate`` during ``steps``
steps) or ``on_off`` (BookSim's bursty two-state process of mean rate ``rate``,
:class:`~mpinet.workloads.booksim_traffic.OnOff`). BookSim's patterns are in
:mod:`mpinet.workloads.booksim_traffic`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mpinet import rng
from mpinet.errors import WorkloadError
from mpinet.topology.base import Topology
from mpinet.values import check_int
from mpinet.workloads import booksim_traffic, patterns

PATTERNS = (
    "uniform",
    "permutation",
    "hotspot",
    "all-to-identity",
    "locality",
    *patterns.NAMES,
    *booksim_traffic.NAMES,
)
#: ``workload.injection`` values
INJECTIONS = ("once", "bernoulli", "on_off")
#: steps of a Bernoulli block drawn at once (at most 2**20 node-steps): the compiled flit
#: steps take up to 1,024 steps per call, and a draw's fixed cost (about 100 us of numpy
#: calls) per 64 steps was a quarter of a light run's Python (docs/performance.md)
BLOCK = 1024


class Unicast:
    """A unicast traffic source for :class:`mpinet.engine.core.Engine`.

    Parameters
    ----------
    topo : Topology
    pattern : one of :data:`PATTERNS`
    packets : packets per node with ``injection="once"``
    injection : ``"once"``, ``"bernoulli"`` or ``"on_off"``
    rate, steps : mean packets per node per step (Bernoulli: the probability), and
        injection steps
    burst : on_off's ``(alpha, beta, r1)``, one of them negative (derived from ``rate``)
    seed : key of every random draw
    target : node id of the hotspot (default: the identity)
    hotspots : booksim-hotspot's ``(nodes, rates)`` lists (BookSim's hotspot list;
        instead of ``target``)
    burst_initial : on_off's start states (1 on, 0 off; default a fair coin per node)
    locality : FCCN ``[p_2, ..., p_m]`` or one value for every level
    """

    def __init__(
        self,
        topo: Topology,
        pattern: str = "uniform",
        *,
        packets: int = 1,
        injection: str = "once",
        rate: float = 0.0,
        steps: int = 0,
        seed: int = 0,
        target: int | None = None,
        locality: float | Sequence[float] | None = None,
        burst: tuple[float, float, float] = (0.5, 0.5, -1.0),
        hotspots: tuple[list[int], list[int] | None] | None = None,
        burst_initial: list[int] | int | None = None,
    ) -> None:
        if pattern not in PATTERNS:
            raise WorkloadError(
                f"workload pattern must be one of {', '.join(PATTERNS)}; got {pattern!r}"
            )
        self.topo, self.pattern, self.seed = topo, pattern, int(seed)
        patterns.check(topo, pattern)
        booksim_traffic.check(topo, pattern)
        n = topo.num_nodes
        self.packets = check_int("workload packets", packets, 1, 1 << 20)
        if pattern == "all-to-identity" and self.packets != 1:
            # it used to send one anyway while the summary said "8 per node"
            raise WorkloadError(
                f"workload.packets = {self.packets}: all-to-identity sends exactly one packet "
                "from every node to the identity; use workload.kind = 'hotspot' for more"
            )
        if injection not in INJECTIONS:
            raise WorkloadError(
                f"workload injection must be one of {', '.join(INJECTIONS)}; got {injection!r}"
            )
        self.injection = injection
        self.onoff: booksim_traffic.OnOff | None = None
        self._oo: tuple | None = None  # on_off: (lo, hi, last step done, states)
        if injection in ("bernoulli", "on_off"):
            if not 0.0 < float(rate) <= 1.0:
                raise WorkloadError(
                    f"workload rate must be in (0, 1] for {injection} injection; got {rate}"
                )
            if injection == "on_off":
                self.onoff = booksim_traffic.OnOff(
                    float(rate), *map(float, burst), initial=burst_initial
                )
                if isinstance(burst_initial, list) and len(burst_initial) > n:
                    raise WorkloadError(
                        f"workload.burst_initial has {len(burst_initial):,} entries for "
                        f"{n:,} nodes: give at most one per node"
                    )
            self.rate = float(rate)
            self.steps = check_int("workload steps (bernoulli injection window)", steps, 1, 1 << 30)
            self.pid_space = self.steps * n
            self.last_injection_step = self.steps - 1
        else:
            self.rate, self.steps = 0.0, 0
            self.pid_space = n * self.packets
            self.last_injection_step = 0
        self.target = (
            topo.identity if target is None else int(topo.check_ids([target], "target")[0])
        )
        if hotspots is not None:  # BookSim's hotspot list: the pattern's destination
            if pattern != "booksim-hotspot":
                raise WorkloadError("hotspot lists apply to workload.kind = 'booksim-hotspot' only")
            if target is not None:
                raise WorkloadError(
                    "workload.target and workload.hotspot_nodes both name the hotspot: give one"
                )
            self.target = booksim_traffic.Hotspots(topo, hotspots[0], hotspots[1], self.seed)
        self._perm = None
        self._blk: tuple | None = None  # a block of Bernoulli injections (_block)
        if pattern == "permutation":
            sigma = np.random.default_rng(self.seed).permutation(n)
            self._perm = np.empty(n, dtype=np.int64)
            self._perm[sigma] = np.roll(sigma, -1)  # one n-cycle: no fixed point
        self._p = None
        if pattern == "locality":
            self._p = self._levels(locality)

    def _levels(self, locality: float | Sequence[float] | None) -> np.ndarray:
        if self.topo.family != "fccn":
            raise WorkloadError(
                f"workload pattern 'locality' needs an fccn topology, not {self.topo.spec}"
            )
        m = self.topo.m
        vals = [0.125] * (m - 1) if locality is None else locality
        if np.isscalar(vals):
            vals = [float(vals)] * (m - 1)
        try:
            p = np.asarray(vals, dtype=np.float64)
        except (TypeError, ValueError):
            p = np.full(0, np.nan)
        if p.shape != (m - 1,) or not ((p >= 0) & (p <= 1)).all():  # NaN fails both
            raise WorkloadError(
                f"workload.locality must be one probability or {m - 1} values "
                f"[p_2..p_{m}] in [0, 1] on {self.topo.spec}, got {locality!r}"
            )
        return p

    def injections(self, lo: int, hi: int, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Packets injected at ``step`` by the sources in ``[lo, hi)``: (ids, sources, dests)."""
        if self.injection == "once":
            if step != 0:
                return (np.empty(0, np.int64),) * 3
            nodes = np.arange(lo, hi, dtype=np.int64)
            src = np.repeat(nodes, self.packets)
            pid = src * self.packets + np.tile(np.arange(self.packets), nodes.size)
        else:
            if step >= self.steps:
                return (np.empty(0, np.int64),) * 3
            if self.onoff is not None:
                return self._on_off(lo, hi, step)
            return self._block(lo, hi, step)
        keep = self._sources_that_send(src)
        pid, src = pid[keep], src[keep]
        return pid, src, self._dest(pid, src)

    def _sources_that_send(self, src: np.ndarray) -> np.ndarray | slice:
        """All of them, but the target under hotspot and all-to-identity (mask or slice)."""
        if self.pattern in ("hotspot", "all-to-identity"):
            return src != self.target
        return slice(None)

    def _on_off(self, lo: int, hi: int, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """on_off injections of ``step``: each node's chain followed from its last step
        (from the start when asked for an earlier step)."""
        n, nodes = self.topo.num_nodes, np.arange(lo, hi, dtype=np.int64)
        oo = self._oo
        if oo is None or oo[:2] != (lo, hi) or oo[2] >= step:
            oo = (lo, hi, -1, self.onoff.start(self.seed, nodes))
        on, pid = oo[3], np.empty(0, np.int64)
        for t in range(oo[2] + 1, step + 1):
            on, pid = self.onoff.step(self.seed, nodes, t, on, n)
        self._oo = (lo, hi, step, on)
        src = pid - step * n
        keep = self._sources_that_send(src)
        pid, src = pid[keep], src[keep]
        return pid, src, self._dest(pid, src)

    def _block(self, lo: int, hi: int, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Bernoulli injections of ``step``, drawn with the following steps' in one block.

        Why: a draw per step costs about 100 us of numpy calls whatever the block's size,
        and floats for every (node, step) as much again (together a third of a light flit
        run's step); :func:`mpinet.rng.grid_below` draws the same keys, so the same packets.
        """
        blk = self._blk
        if blk is None or blk[:2] != (lo, hi) or not blk[2] <= step < blk[3]:
            n = self.topo.num_nodes
            nodes = np.arange(lo, hi, dtype=np.int64)
            end = min(self.steps, step + max(1, min(BLOCK, (1 << 20) // max(hi - lo, 1))))
            steps = np.arange(step, end, dtype=np.int64)
            row, col = rng.grid_below(self.seed, nodes, steps, self.rate, rng.STREAM_INJECT)
            src, pid = nodes[col], steps[row] * n + nodes[col]
            keep = self._sources_that_send(src)
            pid, src, row = pid[keep], src[keep], row[keep]
            off = np.searchsorted(row, np.arange(end - step + 1))
            blk = self._blk = (lo, hi, step, end, pid, src, self._dest(pid, src), off)
        a, b = blk[7][step - blk[2]], blk[7][step - blk[2] + 1]
        return blk[4][a:b], blk[5][a:b], blk[6][a:b]

    def injection_span(self, lo: int, hi: int, first: int, end: int,
                       partial: bool = False) -> tuple | None:  # fmt: skip
        """The injections of steps ``first .. end - 1`` at once, ``(ids, sources, dests,
        offsets)`` (step ``first + k``'s are ``offsets[k]:offsets[k + 1]``), when they lie
        in one Bernoulli block; None otherwise (the caller asks step by step). ``partial``:
        the steps from ``first`` that lie in one block (fewer than asked when it ends
        before ``end``: the caller asks again from there), so that every block is drawn
        once whatever the caller's spans."""
        if self.injection != "bernoulli" or first >= self.steps:
            return None
        stop = min(end, self.steps)  # no injections from self.steps on
        blk = self._blk
        if (blk is None or blk[:2] != (lo, hi) or not blk[2] <= first < blk[3]
                or (stop > blk[3] and blk[2] < first and not partial)):  # fmt: skip
            self._blk = None  # a block from `first` (the same keys: the same draws)
            self._block(lo, hi, first)
            blk = self._blk
        if stop > blk[3]:
            if not partial:
                return None
            stop = end = blk[3]
        off = blk[7][first - blk[2] : stop - blk[2] + 1]
        off = np.concatenate([off, np.full(end - stop, off[-1], off.dtype)])
        a, b = int(off[0]), int(off[-1])
        return blk[4][a:b], blk[5][a:b], blk[6][a:b], off - a

    def compiled_injection(self) -> tuple | None:
        """Bernoulli injection to uniform destinations as a compiled kernel draws it step by
        step (:mod:`mpinet.engine.flit.step_draws`): ``(injection stream key, destination
        stream key, threshold, nodes, last injection step)`` for :func:`mpinet.rng.hits_below`
        and :func:`mpinet.rng.integer_below`, the keys :meth:`_block` and :meth:`_dest` draw;
        None for any other injection or pattern (the caller draws through :meth:`injections`)."""
        if self.injection != "bernoulli" or self.pattern != "uniform":
            return None
        return (rng.stream_key(self.seed, rng.STREAM_INJECT),
                rng.stream_key(self.seed, rng.STREAM_DEST), rng.below_threshold(self.rate),
                self.topo.num_nodes, self.last_injection_step)  # fmt: skip

    def _dest(self, pid: np.ndarray, src: np.ndarray) -> np.ndarray:
        n = self.topo.num_nodes
        if self.pattern in booksim_traffic.NAMES:
            return booksim_traffic.destinations(
                self.topo, self.pattern, self.seed, pid, src, self.target
            )
        if self.pattern in patterns.NAMES:  # structure- and label-defined patterns
            return patterns.destinations(self.topo, self.pattern, self.seed, pid, src)
        if self.pattern == "uniform":
            d = rng.integers(self.seed, pid, n - 1, stream=rng.STREAM_DEST)
            return d + (d >= src)
        if self.pattern == "permutation":
            return self._perm[src]
        if self.pattern in ("hotspot", "all-to-identity"):
            return np.full(src.size, self.target, dtype=np.int64)
        return self._locality_dest(pid, src)

    def _locality_dest(self, pid: np.ndarray, src: np.ndarray) -> np.ndarray:
        m = self.topo.m
        shift = 3 * np.arange(m, dtype=np.int64)
        sdig = (src[:, None] >> shift) & 7  # column j = beta_{j+1}
        rand = np.stack(
            [rng.integers(self.seed, pid, 8, hop=j, stream=rng.STREAM_DEST) for j in range(m)], 1
        )
        # level at which the destination leaves the source's sub-network (1 = same cube)
        level = np.ones(src.size, dtype=np.int64)
        same = np.ones(src.size, dtype=bool)
        for k in range(m, 1, -1):
            u = rng.uniform(self.seed, pid, 100 + k, rng.STREAM_DEST)
            leave = same & (u >= self._p[k - 2])
            level[leave] = k
            same &= ~leave
        cols = np.arange(m)[None, :]
        ddig = np.where(cols >= level[:, None], sdig, rand)
        other = (
            sdig + 1 + rng.integers(self.seed, pid, 7, hop=99, stream=rng.STREAM_DEST)[:, None]
        ) % 8
        at = (cols == (level - 1)[:, None]) & (level[:, None] >= 2)
        ddig = np.where(at, other, ddig)
        return (ddig << shift).sum(axis=1)
