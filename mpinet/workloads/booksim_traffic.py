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
                      the target itself included: BookSim's ``hotspot({t})``.
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


def destinations(
    topo: Topology, name: str, seed: int, pid: np.ndarray, src: np.ndarray, target: int
) -> np.ndarray:
    """Destinations of packets ``pid`` injected at ``src`` under BookSim pattern ``name``."""
    src = np.asarray(src, dtype=np.int64)
    n = topo.num_nodes
    bits = n.bit_length() - 1
    if name == "booksim-uniform":
        return rng.integers(seed, np.asarray(pid, dtype=np.int64), n, stream=rng.STREAM_DEST)
    if name == "booksim-hotspot":
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
    Every node starts on or off with probability 1/2. Draws are keyed by (seed, node,
    step), so a rank that owns a node follows its chain alone: the same on any ranks.

    Raises
    ------
    WorkloadError
        Not exactly one key negative, a given key above 1, or a derived one outside its
        range (the message names it and the formula).
    """

    def __init__(self, rate: float, alpha: float, beta: float, r1: float) -> None:
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
        """Each node's state before step 0 (True: on), a fair coin as BookSim's."""
        return rng.uniform(seed, nodes, 0, STREAM_ONOFF_START) < 0.5

    def step(self, seed: int, nodes: np.ndarray, t: int, on: np.ndarray, n: int) -> tuple:
        """The states after step ``t``'s transition and the ids of the packets injected
        (``t * n + node``, as Bernoulli's)."""
        u = rng.uniform(seed, nodes, t, STREAM_ONOFF)
        on = np.where(on, u >= self.beta, u < self.alpha)
        pid = t * n + nodes
        fire = on & (rng.uniform(seed, pid, 0, rng.STREAM_INJECT) < self.r1)
        return on, pid[fire]
