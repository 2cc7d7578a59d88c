"""The n-star graph S_n (Akers and Krishnamurthy): baseline of papers 000/001/004.

Nodes are the n! permutations of ``1..n``; port ``T_i`` (i = 2..n) swaps the
first and the i-th symbol. Labels are the permutations, e.g. ``34125``.
"""

from __future__ import annotations

from mpinet import perm
from mpinet.topology.permgraph import PermCayley
from mpinet.values import check_int


class Star(PermCayley):
    """``star:N``: the N-star, N in [3, 20] (memory limits apply elsewhere)."""

    family = "star"
    spec_form = "star:N"

    def __init__(self, n: int | str) -> None:
        self.n = check_int("N in star:N", n, 3, perm.MAX_SYMBOLS)
        self.spec = f"star:{self.n}"
        k = self.n
        self._setup(
            k,
            [perm.transposition(k, i) for i in range(1, k)],
            [f"T{i + 1}" for i in range(1, k)],
            ["star"] * (k - 1),
        )
