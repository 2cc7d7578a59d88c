"""Cayley graphs on permutations whose generators act on positions (star, MS).

Shared by :mod:`star` and :mod:`macrostar`; the ranking is :mod:`mpinet.perm`'s,
so ids of permutations that share their last symbols are consecutive.
"""

from __future__ import annotations

import math

import numpy as np

from mpinet import perm
from mpinet.errors import TopologyError
from mpinet.topology.base import Topology


class PermCayley(Topology):
    """A Cayley graph on the permutations of ``k`` symbols with involutive
    position generators ``gens`` (each port is its own reverse)."""

    k: int
    gens: np.ndarray  # (degree, k) position generators

    def _setup(self, k: int, gens: list[np.ndarray], names: list[str], classes: list[str]) -> None:
        self.k = k
        self.gens = np.array(gens, dtype=np.intp)
        self.num_nodes = math.factorial(k)
        self.ports = tuple(names)
        self.port_classes = tuple(classes)
        self.reverse_port = tuple(range(len(names)))

    def perms(self, ids: np.ndarray) -> np.ndarray:
        """Permutations (0-based symbols) of validated ids."""
        return perm.unrank(ids, self.k)

    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        p = perm.unrank(ids, self.k)
        moved = p[:, self.gens]  # (M, degree, k)
        return perm.rank(moved.reshape(-1, self.k)).reshape(ids.size, -1)

    @property
    def translation_targets(self) -> np.ndarray:
        """The identity (id 0): every destination is translated to it."""
        return np.zeros(1, dtype=np.int64)

    def _translate(self, cur: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # x -> d^-1 * x commutes with the position generators (right multiplication).
        rel = perm.relative_rank(cur, dst, self.k)
        return rel, np.zeros(cur.size, dtype=np.int64)

    def _label(self, node: int) -> str:
        return perm.format_perm(perm.unrank([node], self.k)[0])

    def _parse_label(self, text: str) -> int:
        try:
            p = perm.parse_perm(text, self.k)
        except TopologyError as exc:
            raise TopologyError(f"{self.spec} label: {exc}") from None
        return int(perm.rank(p[None, :])[0])
