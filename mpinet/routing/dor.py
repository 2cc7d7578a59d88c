"""Router ``dor``: BookSim2's dimension-order routing on ``mesh:K,N`` and ``torus:K,N``.

Written from a reading of BookSim2's ``dor_next_mesh`` and ``dor_next_torus``
(src/routefunc.cpp, used by ``dim_order_mesh`` / ``dim_order_torus``), not copied.
A packet corrects the lowest dimension whose coordinate differs from the
destination's. On the mesh it moves towards it (port ``2 i`` up, ``2 i + 1``
down). On the torus it takes the shorter way round: with ``d = (dest - cur) mod K``
up (``+``) when ``K - 2 d > 0``, down when ``< 0``; on a tie (K even, ``d = K / 2``)
BookSim draws a direction at random when the packet turns into the dimension,
and after that first hop the shorter way is the one it took, so no state is
needed. ``tie``: ``"random"`` (BookSim's; one uniform draw keyed by seed, packet
and hop: the same on any rank count), ``"plus"`` or ``"minus"`` (deterministic,
and then the router has a compiled hop; so it does where there are no ties:
every mesh, tori of odd K).

The routes are minimal; the VC classes BookSim gives the torus are the ``dateline``
VC policy's (:mod:`mpinet.routing.torus_rings`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mpinet.errors import RoutingError
from mpinet.routing.base import CompiledHop, HopContext, Router
from mpinet.topology.base import Topology

#: this router's code among the compiled hops (:mod:`mpinet.routing.compiled`)
HOP_CODE = 5
#: ``tie`` values; their codes in the compiled rule are 1, 2 (mesh: 0, random: 3)
TIES = ("random", "plus", "minus")
MESH, PLUS, MINUS, RANDOM = 0, 1, 2, 3


@nb.njit(cache=True, nogil=True, inline="always")
def dor_hop_one(cur, dst, k, n, mode):
    """The port of the hop at ``cur`` for ``dst != cur`` (``mode``: :data:`MESH`,
    :data:`PLUS`, :data:`MINUS`; :data:`RANDOM` returns ``-1 - 2 i`` on a tie in dimension i)."""
    i = 0
    a = cur % k
    b = dst % k
    while a == b and i < n - 1:
        cur //= k
        dst //= k
        i += 1
        a = cur % k
        b = dst % k
    if mode == MESH:
        return np.int64(2 * i if a < b else 2 * i + 1)
    d2 = k - 2 * ((b - a + k) % k)
    if d2 > 0 or (d2 == 0 and mode == PLUS):
        return np.int64(2 * i)
    if d2 == 0 and mode == RANDOM:
        return np.int64(-1 - 2 * i)
    return np.int64(2 * i + 1)


@nb.njit(cache=True, nogil=True)
def _ports(nodes, dests, k, n, mode, out):
    for j in range(nodes.shape[0]):
        out[j] = dor_hop_one(nodes[j], dests[j], k, n, mode)


class DimensionOrder(Router):
    """Dimension-order routing, lowest dimension first (BookSim's ``dim_order``).

    Parameters
    ----------
    topo : a mesh or torus
    tie : {"random", "plus", "minus"}
        The torus direction at distance K / 2 (BookSim: random).
    """

    name = "dor"
    summary = "dimension order, lowest dimension first; torus: shorter way, ties random (BookSim)"
    families = ("mesh", "torus")
    distributed = True

    def __init__(self, topo: Topology, tie: str = "random") -> None:
        super().__init__(topo, tie=tie)
        if tie not in TIES:
            raise RoutingError(f"tie of router 'dor' must be one of {', '.join(TIES)}, got {tie!r}")
        self.tie = tie
        self.k, self.n = int(topo.k), int(topo.n)
        ties = topo.family == "torus" and self.k % 2 == 0
        if topo.family == "mesh":
            self.mode = MESH
        else:  # an odd torus has no ties: any mode gives the same ports
            self.mode = {"random": RANDOM if ties else PLUS, "plus": PLUS, "minus": MINUS}[tie]

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """The dimension-order port of each packet; headers pass through (empty)."""
        nodes = np.ascontiguousarray(nodes, dtype=np.int64)
        out = np.empty(nodes.size, np.int64)
        _ports(nodes, np.ascontiguousarray(dests, dtype=np.int64), self.k, self.n, self.mode, out)
        tie = np.flatnonzero(out < 0)
        if tie.size:  # floor(2u): 0 up, 1 down (monotone in u, as route_enum follows)
            base = -1 - out[tie]
            out[tie] = base + (ctx.uniform()[tie] >= 0.5)
        return out, headers

    def compiled_hop(self) -> CompiledHop | None:
        """The rule :func:`dor_hop_one` (None with random ties: the draw needs the packet)."""
        if self.mode == RANDOM:
            return None
        prm = np.array([self.k, self.n, self.mode], dtype=np.int64)
        return CompiledHop(HOP_CODE, prm, np.zeros(1, np.uint8), np.zeros(1, np.int32))

    def distance(self, src: object, dst: object) -> np.ndarray:
        """Exact distances (the routes' lengths: they are minimal), int64."""
        s, d = np.broadcast_arrays(np.asarray(src), np.asarray(dst))
        a = self.topo.coords(self.topo.check_ids(s, "src"))
        b = self.topo.coords(self.topo.check_ids(d, "dst"))
        diff = np.abs(a - b)
        if self.topo.family == "torus":
            diff = np.minimum(diff, self.k - diff)
        return diff.sum(axis=1).reshape(s.shape)


#: the router classes this module registers
ROUTERS_HERE: tuple[type[Router], ...] = (DimensionOrder,)
