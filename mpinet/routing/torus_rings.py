"""The ``dateline`` VC policy on ``torus:K,N``: two VC classes per dimension ring.

Every ring of dimension ``i`` has its dateline on the wrap link between
coordinates ``K - 1`` and ``0`` (both directions), as BookSim's ``dim_order_torus``
(src/routefunc.cpp). The VCs split in two halves as BookSim splits them: class 0
takes ``[0, V/2)``, class 1 ``[V/2, V)`` (``V`` odd: BookSim's halves share VC
``V // 2``; here class 1 alone has it, keeping the classes apart). A hop's class is
1 once the packet has crossed the dateline of the dimension it is moving in, this
hop included, and 0 again when it turns into another dimension (Dally & Seitz 1987).

``dateline-turn`` is BookSim's own rule (``dor_next_torus`` with its fixed dateline):
the class is chosen when the packet turns into dimension ``i`` (at its source too) and
kept along the ring: 1 where the packet's coordinate ``i`` is above the destination's,
else 0. Moving up, that is the packet that will cross the dateline; moving down, the
one that will not (BookSim tests ``cur > dest`` both ways): deadlock-free either way,
since a class's hops down the ring never cover the link half way round from the
dateline. It needs the destination, so its hop takes ``dst``.

The policy's state word is ``2 (i + 1) + class`` of the last hop (0 at the source).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.errors import RoutingError
from mpinet.routing.vc_tracker import Tracker


def _as(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.int64).ravel()


def advance(topo: Any, cur: Any, nxt: Any, state: Any, dst: Any = None) -> np.ndarray:
    """The state after the hops ``cur -> nxt`` from ``state`` (one word per hop); with
    ``dst``, ``dateline-turn``'s class, else ``dateline``'s."""
    cur, nxt, s = _as(cur), _as(nxt), _as(state)
    k = topo.k
    a, b = topo.coords(cur), topo.coords(nxt)
    moved = a != b
    dim = np.argmax(moved, axis=1)
    rows = np.arange(cur.size)
    x, y = a[rows, dim], b[rows, dim]
    cross = ((x == k - 1) & (y == 0)) | ((x == 0) & (y == k - 1))
    same = (s >> 1) == dim + 1
    if dst is None:
        cls = np.where(same, s & 1, 0) | cross
    else:
        cls = np.where(same, s & 1, x > topo.coords(_as(dst))[rows, dim])
    return 2 * (dim + 1) + cls


def link_words(topo: Any, cur: Any, nxt: Any, turn: bool) -> np.ndarray:
    """The iq router's word of each link ``cur -> nxt`` (``iq_moves.route_head``): ``2 (i + 1)
    + crossing`` for ``dateline``; for ``dateline-turn``, ``2 (i + 1)`` (bits 0-7), K (bits
    8-31) and the dimension's stride ``K**i`` (bits 32-), the coordinates' divisors."""
    w = advance(topo, cur, nxt, np.zeros(_as(cur).size, np.int64))
    if not turn:
        return w
    if topo.k >= 1 << 24 or topo.k ** (topo.n - 1) >= 1 << 31:
        raise RoutingError(
            f"vc_policy 'dateline-turn' on the iq router runs tori with K < 2^24 and "
            f"K^(N-1) < 2^31 (its per-link words); {topo.spec} is larger"
        )
    return (w & ~1) | (topo.k << 8) | (topo.k ** ((w >> 1) - 1) << 32)


def vc_range(cls: np.ndarray, vcs: int) -> tuple[np.ndarray, np.ndarray]:
    """VCs ``[lo, hi)`` of class 0 / 1 with ``vcs`` VCs (class 1 needs at least two)."""
    half = max(1, vcs // 2)
    lo = np.where(cls == 1, half, 0)
    hi = np.where(cls == 1, max(vcs, 2), half)
    return lo.astype(np.int64), hi.astype(np.int64)


def hop(
    policy: Any, cur: Any, nxt: Any, hops: Any = None, state: Any = None, dst: Any = None
) -> tuple:
    """:meth:`VCPolicy.hop` of ``dateline`` (and ``dateline-turn``) on a torus."""
    cur = _as(cur)
    s = np.zeros(cur.size, np.int64) if state is None else np.asarray(state, np.int64)
    if policy.turn and dst is None:
        raise RoutingError("vc_policy 'dateline-turn' needs the packets' destinations (dst)")
    s = s.reshape(cur.size, -1)[:, 0] if s.size else s
    new = advance(policy.topo, cur, nxt, s, dst if policy.turn else None)
    lo, hi = vc_range(new & 1, policy.vcs)
    return lo, hi, new.reshape(-1, 1)


class TorusTracker(Tracker):
    """The route follower's view: the state word tracked and recorded as the hop's key
    (before the hop); the hop's class follows from it and the hop itself."""

    def __init__(self, policy: Any, limit: int) -> None:
        super().__init__(policy, limit)
        self.unit = self.vcs <= 2
        self.size = 2 * (policy.topo.n + 1)

    def advance(self, cur: np.ndarray, nxt: np.ndarray, hops: Any, s: np.ndarray,
                dst: np.ndarray) -> np.ndarray:  # fmt: skip
        return advance(self.policy.topo, cur, nxt, s).reshape(np.shape(s))

    def key(self, hops: Any, s: np.ndarray, *hop: np.ndarray) -> np.ndarray:
        return np.asarray(s, dtype=np.int64).copy()

    def held(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return vc_range(np.asarray(c) & 1, self.vcs)

    def allowed(
        self, c: np.ndarray, cur: np.ndarray, nxt: np.ndarray, swapped: bool = False
    ) -> tuple:
        return vc_range(advance(self.policy.topo, cur, nxt, c) & 1, self.vcs)

    def lowest(self, c: np.ndarray, cur: np.ndarray, nxt: np.ndarray) -> np.ndarray:
        """The hop's class: VC 0 is the least a class-0 hop needs, VC 1 a class-1 hop's (two
        VCs, one a half), whatever halves this V makes (:func:`vc_need.lowest_vcs`)."""
        return advance(self.policy.topo, cur, nxt, c) & 1


class TurnTracker(TorusTracker):
    """``dateline-turn``'s view: a hop's class needs its destination, so the class recorded
    is ``2 s + c``, the state ``s`` before the hop and the hop's own class ``c``."""

    def __init__(self, policy: Any, limit: int) -> None:
        super().__init__(policy, limit)
        self.size = 4 * (policy.topo.n + 1)

    def advance(self, cur, nxt, hops, s, dst) -> np.ndarray:  # noqa: D102
        return advance(self.policy.topo, cur, nxt, s, dst).reshape(np.shape(s))

    def key(self, hops, s, cur, nxt, dst) -> np.ndarray:  # noqa: D102
        s = np.asarray(s, dtype=np.int64)
        return 2 * s + (self.advance(cur, nxt, hops, s, dst) & 1)

    def held(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return vc_range((np.asarray(c) >> 1) & 1, self.vcs)

    def allowed(self, c, cur, nxt, swapped: bool = False) -> tuple:  # noqa: D102
        return vc_range(np.asarray(c) & 1, self.vcs)

    def lowest(self, c: np.ndarray, cur: np.ndarray, nxt: np.ndarray) -> np.ndarray:
        return np.asarray(c) & 1
