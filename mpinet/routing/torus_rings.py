"""The ``dateline`` VC policy on ``torus:K,N``: two VC classes per dimension ring.

Every ring of dimension ``i`` has its dateline on the wrap link between
coordinates ``K - 1`` and ``0`` (both directions), as BookSim's ``dim_order_torus``
(src/routefunc.cpp). The VCs split in two halves as BookSim splits them: class 0
takes ``[0, V/2)``, class 1 ``[V/2, V)`` (``V`` odd: BookSim's halves share VC
``V // 2``; here class 1 alone has it, keeping the classes apart). A hop's class is
1 once the packet has crossed the dateline of the dimension it is moving in, this
hop included, and 0 again when it turns into another dimension (Dally & Seitz 1987).
BookSim decides the class instead when the packet turns, from whether the rest of
that dimension will cross (it knows the destination; an mpinet VC policy sees the
hop only): the same halves, deadlock-free either way, on other hops (docs/booksim.md).

The policy's state word is ``2 (i + 1) + class`` of the last hop (0 at the source).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.routing.vc_tracker import Tracker


def _as(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.int64).ravel()


def advance(topo: Any, cur: Any, nxt: Any, state: Any) -> np.ndarray:
    """The state after the hops ``cur -> nxt`` from ``state`` (one word per hop)."""
    cur, nxt, s = _as(cur), _as(nxt), _as(state)
    k = topo.k
    a, b = topo.coords(cur), topo.coords(nxt)
    moved = a != b
    dim = np.argmax(moved, axis=1)
    rows = np.arange(cur.size)
    x, y = a[rows, dim], b[rows, dim]
    cross = ((x == k - 1) & (y == 0)) | ((x == 0) & (y == k - 1))
    same = (s >> 1) == dim + 1
    cls = np.where(same, s & 1, 0) | cross
    return 2 * (dim + 1) + cls


def vc_range(cls: np.ndarray, vcs: int) -> tuple[np.ndarray, np.ndarray]:
    """VCs ``[lo, hi)`` of class 0 / 1 with ``vcs`` VCs (class 1 needs at least two)."""
    half = max(1, vcs // 2)
    lo = np.where(cls == 1, half, 0)
    hi = np.where(cls == 1, max(vcs, 2), half)
    return lo.astype(np.int64), hi.astype(np.int64)


def hop(policy: Any, cur: Any, nxt: Any, hops: Any = None, state: Any = None) -> tuple:
    """:meth:`VCPolicy.hop` of ``dateline`` on a torus."""
    cur = _as(cur)
    s = np.zeros(cur.size, np.int64) if state is None else np.asarray(state, np.int64)
    new = advance(policy.topo, cur, nxt, s.reshape(cur.size, -1)[:, 0] if s.size else s)
    lo, hi = vc_range(new & 1, policy.vcs)
    return lo, hi, new.reshape(-1, 1)


class TorusTracker(Tracker):
    """The route follower's view: the state word tracked and recorded as the hop's key
    (before the hop); the hop's class follows from it and the hop itself."""

    def __init__(self, policy: Any, limit: int) -> None:
        super().__init__(policy, limit)
        self.unit = self.vcs <= 2
        self.size = 2 * (policy.topo.n + 1)

    def advance(self, cur: np.ndarray, nxt: np.ndarray, hops: Any, s: np.ndarray) -> np.ndarray:
        return advance(self.policy.topo, cur, nxt, s).reshape(np.shape(s))

    def key(self, hops: Any, s: np.ndarray) -> np.ndarray:
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
