"""Star-connected cycles SCC_n (Latifi, de Azevedo, Bagherzadeh, paper 001).

Each node of the n-star becomes a ring (supernode) of n-1 nodes ``<i, pi>``,
``2 <= i <= n``. Local links join ``i`` and ``i +- 1`` cyclically inside the
ring; the lateral link of ``<i, pi>`` goes to ``<i, pi * T_i>``. Ports:
``local+`` (to i+1), ``local-`` (to i-1), ``lateral``; for n = 3 the ring has
two nodes and a single ``local`` port (SCC_3 is a 12-cycle, degree 2).

Node id = ``(n - 1) * rank(pi) + (i - 2)``: a supernode is n-1 consecutive ids
and, with the last symbols most significant, supernodes that differ only in
their first symbols are neighbours in id order.
"""

from __future__ import annotations

import math
import re

import numpy as np

from mpinet import perm
from mpinet.errors import TopologyError
from mpinet.topology.base import Topology
from mpinet.values import check_int

_LABEL = re.compile(r"^<?\s*(\d+)\s*[,;]\s*([\d .,]+?)\s*>?$")


class SCC(Topology):
    """``scc:N``: the N-dimensional star-connected cycles, N in [3, 20]."""

    family = "scc"
    spec_form = "scc:N"

    def __init__(self, n: int | str) -> None:
        self.n = check_int("N in scc:N", n, 3, perm.MAX_SYMBOLS)
        self.spec = f"scc:{self.n}"
        self.ring = self.n - 1
        self.num_nodes = self.ring * math.factorial(self.n)
        if self.n == 3:
            self.ports, self.port_classes, self.reverse_port = (
                ("local", "lateral"),
                ("local", "lateral"),
                (0, 1),
            )
        else:
            self.ports = ("local+", "local-", "lateral")
            self.port_classes = ("local", "local", "lateral")
            self.reverse_port = (1, 0, 2)

    def split(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(i, pi_rank)`` of ids, with ``i`` in ``2..n`` as in the papers."""
        a = np.asarray(ids, dtype=np.int64)
        return a % self.ring + 2, a // self.ring

    def join(self, i: np.ndarray, pi_rank: np.ndarray) -> np.ndarray:
        """Ids of nodes ``<i, pi>`` from ``i`` (2..n) and the rank of ``pi``."""
        return np.asarray(pi_rank, dtype=np.int64) * self.ring + (np.asarray(i) - 2)

    @property
    def translation_targets(self) -> np.ndarray:
        """Ids of ``<i, identity>``, i = 2..n (key ``i - 2``)."""
        return np.arange(self.ring, dtype=np.int64)

    def _translate(self, cur: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # <i, pi> -> <i, pi_d^-1 pi> keeps the ring position, so local ports are kept,
        # and commutes with the lateral step pi -> pi * T_i.
        ic, rc = self.split(cur)
        idst, rd = self.split(dst)
        rel = self.join(ic, perm.relative_rank(rc, rd, self.n))
        return rel, idst - 2

    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        r = ids % self.ring
        base = ids - r
        p = perm.unrank(ids // self.ring, self.n)
        rows = np.arange(ids.size)
        pos = r + 1  # 0-based position of the i-th symbol
        first = p[:, 0].copy()
        p[:, 0] = p[rows, pos]
        p[rows, pos] = first
        lateral = perm.rank(p) * self.ring + r
        if self.n == 3:
            return np.stack([base + (1 - r), lateral], axis=1)
        plus = base + (r + 1) % self.ring
        minus = base + (r - 1) % self.ring
        return np.stack([plus, minus, lateral], axis=1)

    def _label(self, node: int) -> str:
        i, pr = self.split(np.array([node]))
        return f"<{int(i[0])}, {perm.format_perm(perm.unrank(pr, self.n)[0])}>"

    def _parse_label(self, text: str) -> int:
        m = _LABEL.match(text)
        if not m:
            raise TopologyError(
                f"{self.spec} label must look like <i, pi> e.g. <3, 34125>, got {text!r}"
            )
        i = check_int(f"i in the {self.spec} label <i, pi>", m.group(1), 2, self.n)
        p = perm.parse_perm(m.group(2), self.n)
        return int(self.join(np.array([i]), perm.rank(p[None, :]))[0])
