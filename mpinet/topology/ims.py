"""Incomplete macro-star networks IMS((m), l, n) (Yeh and Varvarigos, paper 004, section 5.1).

An MS(l-1, n) scaled up by ``m <= n`` extra symbols: nodes are the permutations
of ``k = n(l-1) + 1 + m`` symbols, i.e. ``k!/(k-m)!`` copies of MS(l-1, n).
Ports: the nucleus transpositions ``T_j`` (j = 2..n+1) and, for every block
``i = 2..l``, a swap ``S_i`` exchanging the first ``|block i|`` symbols of
block 1 (positions ``2 .. |block i| + 1``) with block ``i``. Blocks 1..l-1 hold
``n`` symbols and block ``l`` (the rightmost, incomplete one) holds ``m``, so
``S_l`` swaps positions ``2..m+1`` with the last ``m`` positions: for
IMS((1), 3, 3) (8! nodes) the generators applied to the identity are the
paper's ``T_2, T_3, T_4``, ``S_2 = 1 567 234 8`` and ``S_3 = 1 8 34 567 2``.

The generalisation of the same section is accepted too: ``ims:2+2,3,3`` is
IMS((2, 2), 3, 3), whose *last two* blocks hold two symbols each (``S_2 = 1 56
4 23 78``, ``S_3 = 1 78 4 56 23``, 8! nodes, degree 5). In general
``ims:M1+M2+...+Mt,L,N`` gives blocks ``L-t+1 .. L`` the sizes ``M1..Mt``
(each in 1..N) and the blocks before them N symbols; block 1 is always full.
With every M equal to N the network is MS(L, N).

Since the last symbols are the most significant in the id order, a copy of
MS(l-1, n) (the permutations sharing their last ``m`` symbols) is a block of
``(k-m)!`` consecutive ids, and a nucleus one of ``(n+1)!``.
"""

from __future__ import annotations

import numpy as np

from mpinet import perm
from mpinet.errors import TopologyError
from mpinet.topology.permgraph import PermCayley
from mpinet.values import check_int

SPEC_FORM = "ims:M,L,N"


def parse_sizes(m: object, n: int) -> tuple[int, ...]:
    """The incomplete block sizes of ``M`` in ``ims:M,L,N``: ``"1"`` -> (1,), ``"2+2"`` -> (2, 2).

    Raises
    ------
    TopologyError
        An empty part or a size outside ``[1, n]``.
    """
    parts = str(m).split("+") if isinstance(m, str) else ([m] if not isinstance(m, tuple) else m)
    return tuple(check_int(f"M in {SPEC_FORM} (block size)", p, 1, n) for p in parts)


def block_positions(sizes: tuple[int, ...]) -> list[np.ndarray]:
    """0-based positions of each block (block 1 first) for the given block sizes."""
    out, start = [], 1
    for s in sizes:
        out.append(np.arange(start, start + s))
        start += s
    return out


def swap_generator(sizes: tuple[int, ...], i: int) -> np.ndarray:
    """Position generator ``S_i`` (i >= 2): block ``i`` <-> the first ``|block i|`` of block 1."""
    blocks = block_positions(sizes)
    k = 1 + sum(sizes)
    g = np.arange(k, dtype=np.uint8)
    bi = blocks[i - 1]
    b1 = blocks[0][: bi.size]
    g[b1], g[bi] = bi, b1
    return g


class IncompleteMacroStar(PermCayley):
    """``ims:M,L,N``: IMS((M), L, N), or IMS((M1, M2, ...), L, N) for ``M = M1+M2+...``.

    Attributes
    ----------
    l, n : int
        Levels (blocks) and nucleus parameter (the nucleus is the (n+1)-star).
    m : tuple of int
        Sizes of the incomplete (last) blocks, as in the paper's inner parenthesis.
    sizes : tuple of int
        Sizes of all ``l`` blocks, block 1 first.
    full : int
        Number of leading blocks of ``n`` symbols (block 1 included).
    k : int
        Symbols per label.
    """

    family = "ims"
    spec_form = SPEC_FORM

    def __init__(self, m: int | str, l: int | str, n: int | str) -> None:
        self.l = check_int(f"L in {SPEC_FORM}", l, 2, perm.MAX_SYMBOLS)
        self.n = check_int(f"N in {SPEC_FORM}", n, 1, perm.MAX_SYMBOLS)
        self.m = parse_sizes(m, self.n)
        if len(self.m) > self.l - 1:
            raise TopologyError(
                f"M in {SPEC_FORM} lists {len(self.m)} incomplete block sizes but only "
                f"blocks 2..L = 2..{self.l} may be incomplete (at most L-1 = {self.l - 1})"
            )
        self.full = self.l - len(self.m)
        self.sizes = (self.n,) * self.full + self.m
        k = 1 + sum(self.sizes)
        if not 3 <= k <= perm.MAX_SYMBOLS:
            raise TopologyError(
                f"{SPEC_FORM} needs 3 <= N*(L-t)+1+M1+..+Mt <= {perm.MAX_SYMBOLS} symbols "
                f"(t = number of sizes in M), got {k}"
            )
        self.spec = f"ims:{'+'.join(map(str, self.m))},{self.l},{self.n}"
        gens = [perm.transposition(k, j) for j in range(1, self.n + 1)]
        names = [f"T{j + 1}" for j in range(1, self.n + 1)]
        classes = ["nucleus"] * self.n
        for i in range(2, self.l + 1):
            gens.append(swap_generator(self.sizes, i))
            names.append(f"S{i}")
            classes.append("intercluster")
        self._setup(k, gens, names, classes)

    @property
    def paper_name(self) -> str:
        """The paper's notation, e.g. ``IMS((1),3,3)``."""
        return f"IMS(({','.join(map(str, self.m))}),{self.l},{self.n})"

    def generator(self, port: str) -> np.ndarray:
        """Position generator of a port name (``"T3"``, ``"S2"``), shape ``(k,)``.

        Raises
        ------
        TopologyError
            For a name that is not a port of this network.
        """
        if port not in self.ports:
            raise TopologyError(f"{port!r} is not a port of {self.spec}: {', '.join(self.ports)}")
        return self.gens[self.ports.index(port)].astype(np.uint8)

    def block_of(self, position: int) -> tuple[int, int]:
        """``(block, offset)`` of a 1-based position ``>= 2`` (block 1-based, offset 0-based)."""
        pos = check_int(f"position of {self.spec}", position, 2, self.k)
        for b, p in enumerate(block_positions(self.sizes)):
            if pos - 1 in p:
                return b + 1, int(pos - 1 - p[0])
        raise AssertionError("unreachable")  # pragma: no cover
