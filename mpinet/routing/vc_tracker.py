"""What the static deadlock analysis follows of a VC policy: the base :class:`Tracker`.

Each policy of :mod:`mpinet.routing.vc_policies` (and the torus dateline of
:mod:`mpinet.routing.torus_rings`) gives its route followers a subclass
(:meth:`~mpinet.routing.vc_policies.VCPolicy.tracker`); :mod:`mpinet.deadlock.vc_need`
and :mod:`mpinet.deadlock.vc` read the classes it records.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class Tracker:
    """What a route follower tracks for a policy, for routes of up to ``limit`` hops.

    One integer per route (:meth:`advance`, 0 at the source), a class recorded per
    hop (:meth:`key`, ``size`` of them), and the (link, VC) dependencies read off
    the classes: a packet taking a hop of class ``c`` holds one of the VCs
    :meth:`held` (its previous hop's) and waits for each of :meth:`allowed`.
    This base class is ``any``'s: nothing tracked, every VC.
    """

    #: ``swap(c)``: the class at the image of a colour-swapping translation (None: the
    #: translations keep the classes)
    swap: Any = None
    #: the 2-colouring of every node ``swap`` refers to
    colour: np.ndarray | None = None
    #: every range has one VC (the graph has one dependency per hop key)
    unit = False

    def __init__(self, policy: Any, limit: int) -> None:
        self.policy, self.vcs, self.limit = policy, policy.vcs, int(limit)
        self.size = 1
        self.unit = type(self).unit or self.vcs == 1

    def advance(self, cur: np.ndarray, nxt: np.ndarray, hops: Any, s: np.ndarray,
                dst: np.ndarray) -> np.ndarray:  # fmt: skip
        """The tracked integer after the hop ``cur -> nxt`` of a packet for ``dst``."""
        return np.zeros_like(s)

    def key(self, hops: Any, s: np.ndarray, cur: np.ndarray, nxt: np.ndarray,
            dst: np.ndarray) -> np.ndarray:  # fmt: skip
        """The class recorded for the hop ``cur -> nxt`` (of a packet for ``dst``) taken
        after ``hops`` hops with tracked ``s`` (``dateline-turn`` reads the hop; the
        others ``hops`` and ``s`` alone)."""
        return np.zeros_like(s)

    def held(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The VCs ``[lo, hi)`` a packet taking a hop of class ``c`` may hold."""
        return np.zeros_like(c), np.full_like(c, self.vcs)

    def allowed(
        self, c: np.ndarray, cur: np.ndarray, nxt: np.ndarray, swapped: bool = False
    ) -> tuple:
        """The VCs ``[lo, hi)`` allowed for a hop ``cur -> nxt`` of class ``c`` (``swapped``:
        at the image of a colour-swapping translation, ``c`` already swapped)."""
        return np.zeros_like(c), np.full_like(c, self.vcs)

    def reduce(self, c: np.ndarray) -> np.ndarray:
        """The class without what only the symmetry needed."""
        return c
