"""Star-graph algorithms as star steps, before any emulation (paper 004, sections 3-4).

A star algorithm is a sequence of *star steps*; in each, star node ``U`` sends on
star dimensions ``j`` (to ``U * T_j``, :func:`star_neighbors`). ``all-dims``
(every node sends one packet on every dimension: one all-port star step, or
``k - 1`` SDC steps), ``sweep`` (every node's packet crosses dimensions 2..k in
order), ``broadcast`` (a greedy SDC one-port broadcast from the identity: each
star step the dimension that informs most nodes), ``mnb`` (the translated-tree
multinode broadcast of :mod:`mpinet.workloads.mnb_te`, computed on the star).
:mod:`mpinet.workloads.emulate_star` runs them on a macro-star with real packets.
"""

from __future__ import annotations

import math

import numpy as np

from mpinet import perm
from mpinet.errors import MpinetError
from mpinet.topology import from_spec
from mpinet.workloads.mnb_te import TreeMNB

ALGORITHMS = ("all-dims", "sweep", "broadcast", "mnb")


class EmulationError(MpinetError, ValueError):
    """An emulation that cannot be built as asked."""


def star_neighbors(k: int, nodes: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """``U * T_j`` for star nodes ``U`` and dimensions ``j`` (1-based, 2..k)."""
    p = perm.unrank(nodes, k)
    rows = np.arange(p.shape[0])
    first = p[:, 0].copy()
    p[:, 0] = p[rows, dims - 1]
    p[rows, dims - 1] = first
    return perm.rank(p)


class StarAlgorithm:
    """A star algorithm as star steps of transmissions ``(sender, dimension, message)``."""

    def __init__(self, name: str, k: int, mode: str) -> None:
        if name not in ALGORITHMS:
            raise EmulationError(
                f"workload.algorithm for emulate-star must be one of {', '.join(ALGORITHMS)}; "
                f"got {name!r}"
            )
        if mode == "consecutive" and name != "sweep":
            raise EmulationError(
                "emulation 'consecutive' (Thm 4.2) needs a star algorithm whose packets cross "
                "consecutive dimensions: algorithm = 'sweep'"
            )
        self.name, self.k, self.mode = name, k, mode
        self.n = math.factorial(k)
        self.sdc = mode != "all-port"  # the star algorithm's own model
        dims = np.arange(2, k + 1)
        if name == "all-dims":
            self.step_dims = [dims] if not self.sdc else [np.array([j]) for j in dims]
        elif name == "sweep":
            self.step_dims = [np.array([j]) for j in dims]
        elif name == "broadcast":
            self._plan_broadcast()
        else:
            self._plan_mnb()

    @property
    def steps(self) -> int:
        return len(self.step_dims)

    def _plan_broadcast(self) -> None:
        """Greedy SDC broadcast from the identity: each step the best dimension."""
        k, n = self.k, self.n
        ids = np.arange(n, dtype=np.int64)
        nb = np.stack([star_neighbors(k, ids, np.full(n, j)) for j in range(2, k + 1)], 1)
        when = np.full(n, -1, dtype=np.int64)  # star step after which the node is informed
        when[0] = 0
        self.step_dims = []
        while (when < 0).any():
            have = when >= 0
            gain = [int((have & ~have[nb[:, g]]).sum()) for g in range(k - 1)]
            g = int(np.argmax(gain))
            new = have & ~have[nb[:, g]]
            when[nb[new, g]] = len(self.step_dims) + 1
            self.step_dims.append(np.array([g + 2]))
        self.informed = when

    def _plan_mnb(self) -> None:
        star = from_spec(f"star:{self.k}")
        self.tree = TreeMNB(star, "sdc" if self.sdc else "all-port")
        self.step_dims = [np.asarray(rows[:, 1]) + 2 for rows in self.tree.schedule]

    def transmissions(self, s: int, lo: int, hi: int) -> tuple[np.ndarray, ...]:
        """(senders, dims, messages, destinations) of star step ``s`` sent by nodes in [lo, hi).

        Messages: ``all-dims`` the packet's own id; ``sweep`` the sender;
        ``broadcast`` 0; ``mnb`` the source whose message it is.
        """
        x = np.arange(lo, hi, dtype=np.int64)
        if self.name == "sweep":
            if s:
                e = x[:0]
                return e, e, e, e
            dst = x
            for j in range(2, self.k + 1):
                dst = star_neighbors(self.k, dst, np.full(x.size, j))
            return x, np.full(x.size, 2), x, dst
        if self.name == "all-dims":
            dims = self.step_dims[s]
            snd, d = np.repeat(x, dims.size), np.tile(dims, x.size)
            return snd, d, snd * (self.k - 1) + d - 2, star_neighbors(self.k, snd, d)
        if self.name == "broadcast":
            j = int(self.step_dims[s][0])
            dst = star_neighbors(self.k, x, np.full(x.size, j))
            go = (self.informed[x] >= 0) & (self.informed[x] <= s) & (self.informed[dst] == s + 1)
            return x[go], np.full(int(go.sum()), j), np.zeros(int(go.sum()), np.int64), dst[go]
        rows = self.tree.schedule[s]
        snd = np.tile(x, rows.shape[0])
        d = np.repeat(rows[:, 1] + 2, x.size)
        msgs = np.concatenate([self.tree._source_at(x, int(h)) for h in rows[:, 0]])
        return snd, d, msgs, star_neighbors(self.k, snd, d)
