"""The binary N-cube Q_N, a baseline for the other families.

Node id = the N-bit string read as a binary number; port ``dimD`` flips bit
``D`` (bit 0 least significant) and is its own reverse. Labels are the bit
string, most significant bit first, e.g. ``0110`` in Q_4.
"""

from __future__ import annotations

import re

import numpy as np

from mpinet.errors import TopologyError
from mpinet.topology.base import Topology
from mpinet.values import check_int

#: Largest supported dimension: 2^40 nodes still fit int64 ids comfortably.
MAX_N = 40

_LABEL = re.compile(r"^[01]+$")


class Hypercube(Topology):
    """``hypercube:N``: the N-dimensional binary hypercube, N in [1, 40]."""

    family = "hypercube"
    spec_form = "hypercube:N"

    def __init__(self, n: int | str) -> None:
        self.n = check_int("N in hypercube:N", n, 1, MAX_N)
        self.spec = f"hypercube:{self.n}"
        self.num_nodes = 1 << self.n
        self.ports = tuple(f"dim{d}" for d in range(self.n))
        self.port_classes = ("cube",) * self.n
        self.reverse_port = tuple(range(self.n))
        self.regular = True
        self.vertex_transitive = True
        self.identity = 0

    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        masks = np.left_shift(np.int64(1), np.arange(self.n, dtype=np.int64))
        return ids[:, None] ^ masks[None, :]

    @property
    def translation_targets(self) -> np.ndarray:
        """Node 0."""
        return np.zeros(1, dtype=np.int64)

    def _translate(self, cur: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return cur ^ dst, np.zeros(cur.size, dtype=np.int64)

    def _label(self, node: int) -> str:
        return format(node, f"0{self.n}b")

    def _parse_label(self, text: str) -> int:
        if not _LABEL.match(text) or len(text) != self.n:
            raise TopologyError(
                f"{self.spec} label must be exactly {self.n} bits (0/1), most significant "
                f"first, e.g. {'0' * (self.n - 1)}1; got {text!r}"
            )
        return int(text, 2)
