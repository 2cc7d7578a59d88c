"""Routers for the fccn family: the paper's S-Route and a table-free shortest-path router.

Node ids are the octal labels (``beta_1`` = the lowest three bits), so every
decision below is digit arithmetic on int64 arrays, with no table indexed by
node or destination (paper 002, Chang & Wang).

``fccn-sroute`` is Algorithm 3.2 (S-Route), distributed. With
``k = Max_level_differ(node, dest)``: if ``k = 1``, cubic routing; else if
``alpha_1 = beta_k`` take the intercubic link (B.2); else cubic routing
towards ``alpha_1 = beta_k`` (B.3). Cubic routing flips the *lowest*
differing bit of ``beta_1`` first, as :func:`mpinet.topology.fccn.sroute_path`
does, so both give the same node sequence. The header is the paper's level
pointer ``k`` (one int64), set once by the source. A node decrements it after
a (B.2) hop only when its own intercubic link is at level ``k`` (the link of
node ``(.. kappa nu^{t})`` is at level ``t + 1``); the paper's "decrement
whenever (B.2) holds" is wrong, since (B.2) also fires on lower-level links
(e.g. ``(273) -> (237)`` on the way from (272) to (350), where the pointer must
stay 3). The pointer is always an upper bound of ``Max_level_differ``, because
a hop never changes a digit above it; a node whose digit at the pointer equals
the destination's (a *stale* pointer) recomputes it. ``pointer=False``
recomputes at every hop instead; both follow the same routes.

``fccn-shortest`` realises Theorem 4.1: at the highest differing level ``k``
a shortest path either is the S-Route (length ``D``, eq. 3.2) or crosses one
intermediate ``(k-1)``-FCCN ``gamma`` (``D_gamma``, eq. 4.1), whichever is
shorter. The source evaluates the criterion once (eight candidates, O(m)
digit operations each) and, when some ``D_gamma < D``, writes the waypoint
``w = (alpha_{m..k+1} gamma beta_k^{k-1})`` into the one-word header; the
packet then follows S-Route to ``w``, clears the header there and follows
S-Route to the destination. Below level ``k`` the same criterion always
keeps the S-Route: every remaining segment starts or ends at a gateway
``(.. v^{j})``, a UGN of its sub-FCCN, where S-Route is shortest (Lemma 4.3), so
no further choice is needed. The route lengths equal the BFS distances
(tested exhaustively for m <= 3, on sampled sources for m = 4, 5). The
intermediate is chosen by the source; the hops are decided by the nodes.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mpinet.routing.base import CompiledHop, HopContext, Router
from mpinet.topology.base import Topology
from mpinet.topology.fccn import repunit, sroute_distance

#: port leaving on the lowest set bit of a 3-bit difference; 0 -> 3 = ``inter`` (B.2)
_LOW = np.array([3, 0, 1, 0, 2, 0, 1, 0], dtype=np.int64)
_LOW8 = _LOW.astype(np.uint8)  # the compiled hop's table (mpinet.routing.compiled)
_OCT = np.arange(8, dtype=np.int64)
_POP = np.bitwise_count(_OCT).astype(np.int64)
#: ``_HAM[u, g] = |u XOR g|``, ``_PLUS[u, g] = [|u XOR g|]^+`` (0 if equal, else |.| + 1)
_HAM = _POP[_OCT[:, None] ^ _OCT[None, :]].astype(np.int16)
_PLUS = np.where(_HAM > 0, _HAM + 1, 0).astype(np.int16)
_BIG = np.int32(1 << 30)
INTER = 3
#: the code of ``fccn-shortest``'s compiled hop (:mod:`mpinet.routing.compiled`)
HOP_CODE = 2


def max_level_differ(x: np.ndarray) -> np.ndarray:
    """``Max_level_differ`` from ``x = node XOR dest``: highest nonzero octal digit, 1-based.

    0 where ``x == 0``. Uses the float exponent (exact below 2**53).
    """
    bits = np.frexp(np.asarray(x, dtype=np.int64).astype(np.float64))[1].astype(np.int64)
    return (bits + 2) // 3


def digit(v: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Octal digit ``v_k`` (1-based level ``k >= 1``) of each id."""
    return (v >> (3 * (k - 1))) & 7


def link_level(nodes: np.ndarray, m: int) -> np.ndarray:
    """Level of each node's intercubic link (0 at the UGNs ``(v^m)``).

    The link of ``(prefix kappa nu^t)``, ``kappa != nu``, joins two
    ``t``-FCCNs of one ``(t+1)``-FCCN: level ``t + 1``.
    """
    x = nodes ^ ((nodes & 7) * repunit(m))
    run = np.bitwise_count((x & -x) - 1).astype(np.int64) // 3
    return np.where(x == 0, 0, run + 1)


def sroute_step(nodes: np.ndarray, target: np.ndarray, k: np.ndarray) -> np.ndarray:
    """S-Route port from ``nodes`` towards ``target`` given ``k = Max_level_differ >= 1``.

    ``beta_k`` is the digit to reach in ``alpha_1``: (B.1)/(B.3) flip its
    lowest differing bit, (B.2) (already equal, only for ``k > 1``) leaves on
    ``inter``.
    """
    return _LOW[(nodes & 7) ^ digit(target, k)]


def gate_costs(v: np.ndarray, k: np.ndarray, m: int) -> np.ndarray:
    """S-Route lengths from ``v`` to the eight gateways ``(v_{m..k} gamma^{k-1})``.

    ``out[r, gamma] = |v_1 XOR gamma| + sum_{j=2}^{k-1} 2^{j-2} [|v_j XOR gamma|]^+``,
    the (A.1) term of eq. 3.2 (and, read backwards, the (A.3) term).

    Parameters
    ----------
    v : (M,) int64 node ids
    k : (M,) int64 levels >= 1 (digits ``1..k-1`` count)
    m : int
        Levels of the network.

    Returns
    -------
    (M, 8) int16
    """
    out = _HAM[v & 7]
    out[k <= 1] = 0
    for j in range(2, m):
        w = np.where(j < k, np.int16(1 << (j - 2)), np.int16(0))
        out += w[:, None] * _PLUS[(v >> (3 * (j - 1))) & 7]
    return out


def theorem41(src: object, dst: object, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact distances and waypoints by Theorem 4.1 (no BFS, no tables).

    With ``k = Max_level_differ``: ``D = A(a)[b_k] + 1 + A(b)[a_k]`` (eq. 3.2) and
    ``D_gamma = A(a)[gamma] + A(b)[gamma] + 1 + 2^{k-2}(|a_k XOR b_k| + 1)``
    (eq. 4.1), ``A`` = :func:`gate_costs`; the distance is
    ``min(D, min_gamma D_gamma)`` (``|a_1 XOR b_1|`` for ``k = 1``).

    Parameters
    ----------
    src, dst : array_like of int
        Node ids of an m-FCCN (broadcast against each other).
    m : int

    Returns
    -------
    dist : (M,) int64
    waypoint : (M,) int64
        ``(alpha_{m..k+1} gamma beta_k^{k-1})`` for the first ``gamma`` with the
        smallest ``D_gamma < D``, else -1 (the S-Route is shortest).
    """
    a, b = np.broadcast_arrays(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64))
    a, b = a.ravel(), b.ravel()
    k = max_level_differ(a ^ b)
    kk = np.maximum(k, 1)
    ak, bk = digit(a, kk), digit(b, kk)
    ca, cb = gate_costs(a, kk, m), gate_costs(b, kk, m)
    rows = np.arange(a.size)
    direct = ca[rows, bk] + 1 + cb[rows, ak].astype(np.int64)
    cross = np.left_shift(np.int64(1), np.maximum(kk - 2, 0)) * (_POP[ak ^ bk] + 1)
    via = ca.astype(np.int32)
    via += cb
    via += (1 + cross).astype(np.int32)[:, None]
    via[rows, ak] = _BIG
    via[rows, bk] = _BIG
    gamma = np.argmin(via, axis=1)
    best = via[rows, gamma].astype(np.int64)
    use = (k > 1) & (best < direct)
    dist = np.where(k > 1, np.minimum(direct, best), _POP[(a ^ b) & 7])
    high = (a >> (3 * kk)) << (3 * kk)
    way = high | (gamma << (3 * (kk - 1))) | (bk * repunit(kk - 1))
    return dist, np.where(use, way, -1)


class FccnSRoute(Router):
    """The paper's S-Route (Algorithm 3.2) with the level pointer in the header.

    Parameters
    ----------
    topo : FCCN
    pointer : bool
        Carry ``Max_level_differ`` in the header (default, as the paper
        suggests); ``False`` recomputes it at every hop (same routes).

    Notes
    -----
    Header: one int64, the level pointer ``k`` in ``1..m`` (an upper bound of
    ``Max_level_differ(node, dest)``; exact after the stale check).
    """

    name = "fccn-sroute"
    summary = "S-Route (Alg. 3.2) with the level pointer in the header (fccn)"
    families = ("fccn",)
    distributed = True
    header_width = 1

    def __init__(self, topo: Topology, pointer: bool = True) -> None:
        super().__init__(topo, pointer=pointer)
        self.m = int(topo.m)  # type: ignore[attr-defined]
        self.pointer = bool(pointer)

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The source's ``Max_level_differ(src, dst)`` (0 when equal), shape (M, 1)."""
        s, d = np.broadcast_arrays(np.asarray(src, dtype=np.int64), np.asarray(dst, np.int64))
        return max_level_differ(s.ravel() ^ d.ravel())[:, None]

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """S-Route port; the pointer after the hop (decremented after a level-k crossing)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        dests = np.asarray(dests, dtype=np.int64)
        x = nodes ^ dests
        if self.pointer:
            k = np.clip(headers[:, 0], 1, self.m)
            stale = digit(x, k) == 0
            if stale.any():
                k[stale] = max_level_differ(x[stale])
        else:
            k = max_level_differ(x)
        port = sroute_step(nodes, dests, k)
        crossed = np.flatnonzero(port == INTER)
        if crossed.size:
            k[crossed] -= link_level(nodes[crossed], self.m) == k[crossed]
        return port, k[:, None]

    def route_length(self, src: object, dst: object) -> np.ndarray:
        """Lengths of this router's routes: Cor. 3.1 (:func:`sroute_distance`)."""
        return sroute_distance(src, dst, self.m)

    def distance(self, src: object, dst: object) -> np.ndarray:
        """Exact shortest distances (Theorem 4.1, :func:`theorem41`), int64."""
        return theorem41(src, dst, self.m)[0]


class FccnShortest(Router):
    """Shortest paths by Theorem 4.1: S-Route, possibly via one intermediate sub-FCCN.

    Parameters
    ----------
    topo : FCCN

    Notes
    -----
    Header: one int64, the waypoint ``(alpha_{m..k+1} gamma beta_k^{k-1})`` chosen
    by the source, or -1 (none, or already passed). State per packet O(1),
    per node none; the source's choice costs O(8 m) digit operations.
    """

    name = "fccn-shortest"
    summary = "exact shortest paths by Thm 4.1, one waypoint in the header, no tables (fccn)"
    families = ("fccn",)
    distributed = False
    header_width = 1

    def __init__(self, topo: Topology) -> None:
        super().__init__(topo)
        self.m = int(topo.m)  # type: ignore[attr-defined]

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The waypoint of each packet (-1 when the S-Route is already shortest), (M, 1)."""
        return theorem41(src, dst, self.m)[1][:, None]

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """S-Route towards the waypoint, or the destination once it is passed."""
        nodes = np.asarray(nodes, dtype=np.int64)
        port = np.empty(nodes.size, dtype=np.int64)
        way = np.empty((nodes.size, 1), dtype=np.int64)
        _shortest_hop(nodes, np.asarray(dests, dtype=np.int64), headers[:, 0], _LOW8, port, way)
        return port, way

    def compiled_hop(self) -> CompiledHop:
        """:func:`shortest_hop_one` on the lowest-bit port table."""
        return CompiledHop(HOP_CODE, np.zeros(3, np.int64), _LOW8, np.zeros(1, np.int32))

    def route_length(self, src: object, dst: object) -> np.ndarray:
        """Lengths of this router's routes (= :meth:`distance`)."""
        return self.distance(src, dst)

    def distance(self, src: object, dst: object) -> np.ndarray:
        """Exact shortest distances (Theorem 4.1, :func:`theorem41`), int64."""
        return theorem41(src, dst, self.m)[0]


#: the router classes this module registers
ROUTERS_HERE: tuple[type[Router], ...] = (FccnSRoute, FccnShortest)


@nb.njit(cache=True, nogil=True, inline="always")
def shortest_hop_one(v, dst, w, low):
    """``(port, waypoint after the hop)`` of one packet at ``v`` for ``dst`` (waypoint ``w``).

    Same values as ``sroute_step(v, target, max_level_differ(v ^ target))`` with
    the waypoint dropped once reached (tested). Also the engine's compiled hop
    (:mod:`mpinet.routing.compiled`).
    """
    if w == v:
        w = -1
    tgt = w if w >= 0 else dst
    x = v ^ tgt
    k = 0  # Max_level_differ: the number of octal digits of x
    while x > 0:
        x >>= 3
        k += 1
    return np.int64(low[(v & 7) ^ ((tgt >> (3 * (k - 1))) & 7)]), w


@nb.njit(cache=True, nogil=True)
def _shortest_hop(nodes, dests, way_in, low, port, way):
    """:meth:`FccnShortest.next_port` in one compiled pass.

    Why: the numpy form is a dozen calls per step; fccn:6 runs 49,972 steps of
    about 2,900 moves, where their fixed cost was 30 us a step (16 ns per hop).
    """
    for i in range(nodes.size):
        port[i], way[i, 0] = shortest_hop_one(nodes[i], dests[i], way_in[i], low)
