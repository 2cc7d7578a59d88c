"""Cube-connected cycles CCC_N with N nodes per ring (Preparata & Vuillemin).

Nodes are ``(i, x)``: ``i`` in ``0..N-1`` is the position on the ring that
replaces hypercube node ``x`` (an N-bit string). Ring links join ``(i, x)``
and ``(i +- 1 mod N, x)``; the cube link of ``(i, x)`` goes to
``(i, x XOR 2^i)``. ``N * 2^N`` nodes, degree 3, diameter
``2N + floor(N/2) - 2`` for N >= 4 (6 for N = 3), as quoted in paper 001.

Node id = ``i + N * x``, so each ring is N consecutive ids. Ports:
``cycle+`` (to i+1), ``cycle-`` (to i-1), ``cube``.
"""

from __future__ import annotations

import re

import numpy as np

from mpinet.errors import TopologyError
from mpinet.topology.base import Topology
from mpinet.values import check_int

#: Largest supported ring length: 30 * 2^30 nodes.
MAX_N = 30

_LABEL = re.compile(r"^\(?\s*(\d+)\s*,\s*([01]+)\s*\)?$")


def ccc_diameter(n: int) -> int:
    """Known diameter of CCC_n: ``2n + floor(n/2) - 2`` for n >= 4, 6 for n = 3."""
    n = check_int("n in ccc_diameter", n, 3)
    return 6 if n == 3 else 2 * n + n // 2 - 2


class CCC(Topology):
    """``ccc:N``: cube-connected cycles with N-node rings, N in [3, 30]."""

    family = "ccc"
    spec_form = "ccc:N"

    def __init__(self, n: int | str) -> None:
        self.n = check_int("N in ccc:N", n, 3, MAX_N)
        self.spec = f"ccc:{self.n}"
        self.num_nodes = self.n << self.n
        self.ports = ("cycle+", "cycle-", "cube")
        self.port_classes = ("cycle", "cycle", "cube")
        self.reverse_port = (1, 0, 2)
        self.regular = True
        self.vertex_transitive = True
        self.identity = 0

    def split(self, ids: object) -> tuple[np.ndarray, np.ndarray]:
        """``(i, x)`` of ids: ring position and hypercube node."""
        a = np.asarray(ids, dtype=np.int64)
        return a % self.n, a // self.n

    def join(self, i: object, x: object) -> np.ndarray:
        """Ids of nodes ``(i, x)``."""
        return np.asarray(i, dtype=np.int64) + self.n * np.asarray(x, dtype=np.int64)

    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        i, x = ids % self.n, ids // self.n
        base = ids - i
        plus = base + (i + 1) % self.n
        minus = base + (i - 1) % self.n
        cube = i + self.n * (x ^ (np.int64(1) << i))
        return np.stack([plus, minus, cube], axis=1)

    @property
    def translation_targets(self) -> np.ndarray:
        """Node ``(0, 0...0)`` (id 0)."""
        return np.zeros(1, dtype=np.int64)

    def _translate(self, cur: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # (i, x) -> (i - j, rotr(x ^ y, j)) for dst = (j, y): XOR keeps every port,
        # rotating ring positions with bit positions keeps the cube link on bit i.
        n = self.n
        i, x = cur % n, cur // n
        j, y = dst % n, dst // n
        z = x ^ y
        mask = (np.int64(1) << n) - 1
        z = ((z >> j) | (z << (n - j))) & mask
        return (i - j) % n + n * z, np.zeros(cur.size, dtype=np.int64)

    def _label(self, node: int) -> str:
        i, x = divmod(node, self.n)[::-1]
        return f"({i}, {x:0{self.n}b})"

    def _parse_label(self, text: str) -> int:
        mt = _LABEL.match(text)
        if not mt or len(mt.group(2)) != self.n or text.count("(") != text.count(")"):
            raise TopologyError(
                f"{self.spec} label must look like (i, bits) with i in [0, {self.n - 1}] and "
                f"exactly {self.n} bits, e.g. (0, {'0' * self.n}); got {text!r}"
            )
        i = check_int(f"i in the {self.spec} label (i, bits)", mt.group(1), 0, self.n - 1)
        return i + self.n * int(mt.group(2), 2)
