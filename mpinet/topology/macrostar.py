"""Macro-star networks MS(l, n) (Yeh and Varvarigos, paper 004, Def. 2.3).

Nodes are the permutations of ``k = nl + 1`` symbols. Nucleus ports ``T_j``
(j = 2..n+1) swap the first and the j-th symbol; intercluster ports ``S_i``
(i = 2..l) swap block 1 (positions 2..n+1) with block i (positions
(i-1)n+2..in+1). ``ms:1,N`` is the (N+1)-star. Since the last symbols are the
most significant in the id order, a level-2 cluster (nucleus) is a block of
(n+1)! consecutive ids and a level-i cluster one of ((i-1)n+1)!.
"""

from __future__ import annotations

import numpy as np

from mpinet import perm
from mpinet.errors import TopologyError
from mpinet.topology.permgraph import PermCayley
from mpinet.values import check_int


def swap_generator(l: int, n: int, i: int) -> np.ndarray:
    """Position generator ``S_i`` of MS(l, n) (i in 2..l): swaps blocks 1 and i."""
    k = n * l + 1
    g = np.arange(k, dtype=np.uint8)
    b1 = np.arange(1, n + 1)
    bi = np.arange((i - 1) * n + 1, i * n + 1)
    g[b1], g[bi] = bi, b1
    return g


class MacroStar(PermCayley):
    """``ms:L,N``: MS(l, n) with l levels and the (n+1)-star as nucleus."""

    family = "ms"
    spec_form = "ms:L,N"

    def __init__(self, l: int | str, n: int | str) -> None:
        self.l = check_int("L in ms:L,N", l, 1, perm.MAX_SYMBOLS)
        self.n = check_int("N in ms:L,N", n, 1, perm.MAX_SYMBOLS)
        k = self.n * self.l + 1
        if not 3 <= k <= perm.MAX_SYMBOLS:
            raise TopologyError(
                f"ms:L,N needs 3 <= L*N+1 <= {perm.MAX_SYMBOLS} symbols, got L*N+1 = {k}"
            )
        self.spec = f"ms:{self.l},{self.n}"
        gens = [perm.transposition(k, j) for j in range(1, self.n + 1)]
        names = [f"T{j + 1}" for j in range(1, self.n + 1)]
        classes = ["nucleus"] * self.n
        for i in range(2, self.l + 1):
            gens.append(swap_generator(self.l, self.n, i))
            names.append(f"S{i}")
            classes.append("intercluster")
        self._setup(k, gens, names, classes)
