"""BookSim2's traffic patterns as unicast destination patterns.

Written from a reading of BookSim2's src/traffic.cpp, not copied. Each maps
``(packet id, source)`` to a destination, the same on any number of ranks (the
random ones draw from :mod:`mpinet.rng` keyed by seed and packet id, or, for
``randperm``, from the seed alone). Unlike mpinet's own patterns a destination
may be the source itself, as in BookSim (such a packet is delivered at once).
Names BookSim shares with an mpinet pattern of another meaning carry a
``booksim-`` prefix.

``booksim-uniform``   uniformly random among all N nodes, the source included.
``booksim-transpose`` the halves of the node id's bits swapped (N = 2^(2s); on
                      ``mesh:K,2`` / ``torus:K,2`` with K = 2^s: (x, y) -> (y, x)).
``bitcomp``           the id's bits complemented (N a power of two).
``bitrev``            the id's bits reversed (N a power of two).
``shuffle``           the id's bits rotated left by one (N a power of two).
``tornado``           every coordinate moved by ``ceil(K/2) - 1`` (mod K); k-ary n-cubes.
``neighbor``          every coordinate moved by 1 (mod K); k-ary n-cubes.
``randperm``          one random permutation of the nodes, drawn from the seed
                      (BookSim's ``perm_seed``; fixed points allowed, as there).
``booksim-hotspot``   every node to ``workload.target`` (the identity by default),
                      the target itself included: BookSim's ``hotspot({t})``; or, with
                      ``workload.hotspot_nodes`` (and ``hotspot_rates``), to one of
                      several hotspots drawn in proportion to their integer rates:
                      BookSim's ``hotspot({{h0,h1,...},{r0,r1,...}})`` (:class:`Hotspots`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from mpinet import rng
from mpinet.errors import WorkloadError
from mpinet.topology.base import Topology

NAMES = (
    "booksim-uniform",
    "booksim-transpose",
    "bitcomp",
    "bitrev",
    "shuffle",
    "tornado",
    "neighbor",
    "randperm",
    "booksim-hotspot",
)
#: patterns BookSim defines on bit strings (its BitPermutationTrafficPattern)
BIT_PATTERNS = ("booksim-transpose", "bitcomp", "bitrev", "shuffle")
#: patterns BookSim defines on the digits of a k-ary n-cube (k, n of the network)
DIGIT_PATTERNS = ("tornado", "neighbor")


def check(topo: Topology, name: str) -> None:
    """Raise WorkloadError when BookSim would refuse pattern ``name`` on ``topo``."""
    n = topo.num_nodes
    bits = n.bit_length() - 1
    if name in BIT_PATTERNS and n & (n - 1):
        raise WorkloadError(
            f"workload pattern {name!r} needs a power-of-two number of nodes (BookSim's bit "
            f"permutations); {topo.spec} has {n:,}"
        )
    if name == "booksim-transpose" and bits % 2:
        raise WorkloadError(
            f"workload pattern 'booksim-transpose' needs an even power of two nodes (4, 16, "
            f"64, ...: the id's two halves of bits swap); {topo.spec} has {n:,} = 2^{bits}"
        )
    if name in DIGIT_PATTERNS and topo.family not in ("mesh", "torus"):
        raise WorkloadError(
            f"workload pattern {name!r} moves the coordinates of a k-ary n-cube: it needs "
            f"mesh:K,N or torus:K,N, not {topo.spec}"
        )


#: streams of the hotspot draws (mpinet.rng: ints mpinet does not use itself)
STREAM_HOTSPOT, STREAM_HOTSPOT_NODE = 23, 24


class Hotspots:
    """BookSim's hotspot list with its rates (src/traffic.cpp, ``HotSpotTrafficPattern``).

    A packet goes to hotspot ``i`` with probability ``rates[i] / sum(rates)`` (BookSim
    draws ``RandomInt(sum - 1)`` and walks the cumulative rates); one hotspot takes every
    packet without a draw. As BookSim reads the lists: a negative node is a node drawn at
    random (here from the seed), a rate list shorter than the nodes repeats its last
    value, and no rates means 1 each. Draws are keyed by (seed, packet id): the same on
    any rank count.

    Raises
    ------
    WorkloadError
        No nodes, more rates than nodes, a rate below 1 (BookSim asserts ``rate > 0``), or
        a node past the last (the message names the entry and the range).
    """

    def __init__(self, topo: Topology, nodes: list[int], rates: list[int] | None, seed: int):
        n = topo.num_nodes
        if not nodes:
            raise WorkloadError("workload.hotspot_nodes must list at least one node")
        rates = [1] if not rates else list(rates)
        if len(rates) > len(nodes):
            raise WorkloadError(
                f"workload.hotspot_rates has {len(rates)} entries for {len(nodes)} hotspot "
                "node(s): give at most one rate per node (a shorter list repeats its last rate)"
            )
        for i, r in enumerate(rates):
            if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 1 <= r < 1 << 31:
                raise WorkloadError(
                    f"workload.hotspot_rates[{i}] must be an integer in [1, {(1 << 31) - 1:,}] "
                    f"(a relative weight, as BookSim's), got {r!r}"
                )
        rates += [rates[-1]] * (len(nodes) - len(rates))
        ids = []
        for i, v in enumerate(nodes):
            if v >= n:
                raise WorkloadError(
                    f"workload.hotspot_nodes[{i}] must be a node id in [0, {n - 1}] (or negative: "
                    f"a node drawn at random, as BookSim's -1) for {topo.spec}, got {v}"
                )
            ids.append(v if v >= 0 else int(rng.integers(seed, i, n, 0, STREAM_HOTSPOT_NODE)))
        self.nodes = np.asarray(ids, dtype=np.int64)
        self.rates = np.asarray(rates, dtype=np.int64)
        self._cum = np.cumsum(self.rates)

    def dest(self, seed: int, pid: np.ndarray) -> np.ndarray:
        """The hotspot each packet ``pid`` goes to."""
        pid = np.asarray(pid, dtype=np.int64)
        if self.nodes.size == 1:
            return np.full(pid.size, self.nodes[0], dtype=np.int64)
        pct = rng.integers(seed, pid, int(self._cum[-1]), 0, STREAM_HOTSPOT)
        return self.nodes[np.searchsorted(self._cum, pct, side="right")]


def destinations(
    topo: Topology,
    name: str,
    seed: int,
    pid: np.ndarray,
    src: np.ndarray,
    target: int | Hotspots,
) -> np.ndarray:
    """Destinations of packets ``pid`` injected at ``src`` under BookSim pattern ``name``
    (``target``: booksim-hotspot's node, or its :class:`Hotspots`)."""
    src = np.asarray(src, dtype=np.int64)
    n = topo.num_nodes
    bits = n.bit_length() - 1
    if name == "booksim-uniform":
        return rng.integers(seed, np.asarray(pid, dtype=np.int64), n, stream=rng.STREAM_DEST)
    if name == "booksim-hotspot":
        if isinstance(target, Hotspots):
            return target.dest(seed, pid)
        return np.full(src.size, target, dtype=np.int64)
    if name == "randperm":
        return _perm(n, seed)[src]
    if name == "bitcomp":
        return ~src & (n - 1)
    if name == "booksim-transpose":
        h = bits // 2
        lo = (1 << h) - 1
        return ((src >> h) & lo) | ((src << h) & (lo << h))
    if name == "bitrev":
        out = np.zeros_like(src)
        for b in range(bits):
            out |= ((src >> b) & 1) << (bits - 1 - b)
        return out
    if name == "shuffle":
        return ((src << 1) & (n - 1)) | ((src >> (bits - 1)) & 1 if bits else 0)
    k = topo.k  # tornado, neighbor: every digit moved
    shift = (k + 1) // 2 - 1 if name == "tornado" else 1
    c = topo.coords(src)
    return ((c + shift) % k) @ topo.strides


@lru_cache(maxsize=8)
def _perm(n: int, seed: int) -> np.ndarray:
    """The permutation of ``randperm``: node ``v`` sends to ``out[v]``."""
    return np.random.default_rng([seed, 0x5EED]).permutation(n).astype(np.int64)


#: streams of the on/off process's draws (mpinet.rng: any int mpinet does not use itself)
STREAM_ONOFF, STREAM_ONOFF_START = 21, 22


class OnOff:
    """BookSim's ``on_off`` injection process (src/injection.cpp), per node.

    A two-state Markov chain: an off node turns on with probability ``alpha`` at a
    step, an on node turns off with probability ``beta``; then an on node injects a
    packet with probability ``r1``. Exactly one of the three is negative and derived
    from ``rate``, the mean injection rate ``r1 * alpha / (alpha + beta)``, as BookSim
    derives it (its defaults: ``alpha = beta = 0.5``, ``r1`` derived, ``2 * rate``).
    Each node's state before the first step is ``initial[node]`` (1 on, 0 off; a list
    shorter than the nodes repeats its last entry, as BookSim resizes its ``initial``
    list), or without a list on or off with probability 1/2 (BookSim's ``RandomInt(1)``
    per node). Draws are keyed by (seed, node, step), so a rank that owns a node follows
    its chain alone: the same on any ranks.

    Raises
    ------
    WorkloadError
        Not exactly one key negative, a given key above 1, or a derived one outside its
        range (the message names it and the formula).
    """

    def __init__(
        self,
        rate: float,
        alpha: float,
        beta: float,
        r1: float,
        initial: list[int] | int | None = None,
    ) -> None:
        self.initial = _initial(initial)
        given = {"burst_alpha": alpha, "burst_beta": beta, "burst_r1": r1}
        neg = [k for k, v in given.items() if v < 0]
        if len(neg) != 1:
            raise WorkloadError(
                "workload.injection = 'on_off' needs exactly one of burst_alpha, burst_beta, "
                "burst_r1 negative (derived from rate), the others in [0, 1], as BookSim; got "
                + ", ".join(f"{k} = {v:g}" for k, v in given.items())
            )
        for k, v in given.items():
            if v > 1:
                raise WorkloadError(f"workload.{k} must be at most 1 (a probability), got {v:g}")
        if alpha < 0:
            why, alpha = "beta * rate / (r1 - rate)", beta * rate / (r1 - rate) if r1 > rate else -1
        elif beta < 0:
            why, beta = "alpha * (r1 - rate) / rate", alpha * (r1 - rate) / rate
        else:
            why, r1 = "rate * (alpha + beta) / alpha", rate * (alpha + beta) / alpha if alpha else 2
        got = {"burst_alpha": alpha, "burst_beta": beta, "burst_r1": r1}[neg[0]]
        if not 0 <= got <= 1 or (neg[0] == "burst_r1" and got == 0):
            raise WorkloadError(
                f"workload.{neg[0]} derived as {why} = {got:g} with rate = {rate:g} is not a "
                "probability: lower the rate or change the other burst keys"
            )
        self.rate, self.alpha, self.beta, self.r1 = rate, float(alpha), float(beta), float(r1)

    def start(self, seed: int, nodes: np.ndarray) -> np.ndarray:
        """Each node's state before step 0 (True: on): ``initial``, or a fair coin."""
        if self.initial is not None:
            a = self.initial
            return a[np.minimum(np.asarray(nodes, dtype=np.int64), a.size - 1)]
        return rng.uniform(seed, nodes, 0, STREAM_ONOFF_START) < 0.5

    def step(self, seed: int, nodes: np.ndarray, t: int, on: np.ndarray, n: int) -> tuple:
        """The states after step ``t``'s transition and the ids of the packets injected
        (``t * n + node``, as Bernoulli's)."""
        u = rng.uniform(seed, nodes, t, STREAM_ONOFF)
        on = np.where(on, u >= self.beta, u < self.alpha)
        pid = t * n + nodes
        fire = on & (rng.uniform(seed, pid, 0, rng.STREAM_INJECT) < self.r1)
        return on, pid[fire]


def _initial(initial: list[int] | int | None) -> np.ndarray | None:
    """``workload.burst_initial`` as booleans (one entry: every node), or None."""
    if initial is None:
        return None
    vals = [initial] if not isinstance(initial, (list, tuple)) else list(initial)
    if not vals:
        raise WorkloadError("workload.burst_initial must be 0, 1 or a non-empty list of them")
    for i, v in enumerate(vals):
        if isinstance(v, bool) or v not in (0, 1):
            raise WorkloadError(f"workload.burst_initial[{i}] must be 0 (off) or 1 (on), got {v!r}")
    return np.asarray(vals, dtype=bool)
