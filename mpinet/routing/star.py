"""Routers for the star family.

``star-greedy``: the minimal routing of Akers and Krishnamurthy (paper 000
Alg. 1 made deterministic). With ``sigma = d^-1 * c`` the permutation still to
sort: if its first symbol ``x`` is not 1, swap it to its home position ``x``
(port ``T_x``); otherwise swap in the first misplaced symbol. Each hop lowers
the star distance ``c + m`` / ``c + m - 2`` (:func:`mpinet.perm.star_distance`)
by one, so every route is a shortest path.
"""

from __future__ import annotations

import numpy as np

from mpinet import perm
from mpinet.routing.base import HopContext, Router


class StarGreedy(Router):
    """Cycle-following minimal star routing; distributed, no header.

    Needs no inverse: ``sigma[0]`` is the position of the node's first
    symbol in the destination, and ``sigma[j] != j`` exactly where the node
    and the destination differ at position ``j``.
    """

    name = "star-greedy"
    summary = "minimal star routing: first symbol home, else the first misplaced one (star)"
    families = ("star",)
    distributed = True

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """Port ``T_j - 2`` (0-based) of the position ``j`` swapped with the first."""
        k = self.topo.n  # type: ignore[attr-defined]
        p = perm.unrank(np.asarray(nodes, dtype=np.int64), k)
        q = perm.unrank(np.asarray(dests, dtype=np.int64), k)
        home = np.argmax(q == p[:, :1], axis=1)  # where the first symbol belongs
        first_bad = np.argmax(p != q, axis=1)  # first misplaced position (p != q here)
        j = np.where(home != 0, home, first_bad)
        return (j - 1).astype(np.int64), headers

    def distance(self, src: object, dst: object) -> np.ndarray:
        """Route length = star distance of ``d^-1 * s``, int64 (arrays broadcast)."""
        s, d = np.broadcast_arrays(np.asarray(src), np.asarray(dst))
        p = perm.unrank(self.topo.check_ids(s, "src"), self.topo.n)  # type: ignore[attr-defined]
        q = perm.unrank(self.topo.check_ids(d, "dst"), self.topo.n)  # type: ignore[attr-defined]
        return perm.star_distance(perm.compose(perm.inverse(q), p)).astype(np.int64)


#: the router classes this module registers
ROUTERS_HERE: tuple[type[Router], ...] = (StarGreedy,)
