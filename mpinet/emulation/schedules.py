"""Star-graph emulation on macro-star networks MS(l, n) as words of MS ports.

Paper 004 (Yeh and Varvarigos), Sections 3.1, 4.1 and 4.3. A *word* is a list
of MS port names (``"T2"`` .. ``"T{n+1}"``, ``"S2"`` .. ``"S{l}"``) applied
left to right: a packet at node ``U`` that follows the word reaches
``U * g_1 * g_2 * ... * g_m`` (generators act on positions, see
:mod:`mpinet.perm`). A word *emulates* a star (or complete-transposition)
generator when the product of its position generators equals that generator.

Index conventions (1-based positions, as in the paper): star dimension ``j``
(``2 <= j <= k = nl + 1``) has ``j0 = (j - 2) mod n`` and
``j1 = (j - 2) // n``; then ``S_{j1+1} T_{j0+2} S_{j1+1} = T_j`` for
``j1 >= 1`` (Definition 2.2: ``S_{n,i} T_j S_{n,i} = T_{(i-1)n+j}``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mpinet import perm
from mpinet.errors import TopologyError
from mpinet.topology.macrostar import swap_generator
from mpinet.values import check_int

__all__ = [
    "SHORTEST_MAX_SYMBOLS",
    "check_ms",
    "consecutive_word",
    "ct_word",
    "dim_split",
    "port_generator",
    "reduce_word",
    "sdc_word",
    "shortest_word",
    "star_transposition",
    "theorem_4_2_length",
    "validate_consecutive",
    "validate_word",
    "word_perm",
]


def check_ms(l: int, n: int) -> tuple[int, int]:
    """Validate MS(l, n) parameters and return them as ints.

    Raises
    ------
    TopologyError
        If ``l < 1``, ``n < 1`` or ``k = nl + 1`` is outside ``[3, MAX_SYMBOLS]``.
    """
    l = check_int("l (macro-star levels)", l, 1, perm.MAX_SYMBOLS)
    n = check_int("n (nucleus is the (n+1)-star)", n, 1, perm.MAX_SYMBOLS)
    k = n * l + 1
    if not 3 <= k <= perm.MAX_SYMBOLS:
        raise TopologyError(
            f"MS(l, n) needs 3 <= l*n+1 <= {perm.MAX_SYMBOLS} symbols, got l*n+1 = {k}"
        )
    return l, n


def _check_dim(l: int, n: int, j: int, name: str = "star dimension j") -> int:
    return check_int(f"{name} of MS({l},{n})", j, 2, n * l + 1)


def dim_split(n: int, j: int) -> tuple[int, int]:
    """Return ``(j0, j1) = ((j - 2) mod n, (j - 2) // n)`` for star dimension ``j``."""
    return (j - 2) % n, (j - 2) // n


def port_generator(l: int, n: int, port: str) -> np.ndarray:
    """Position generator of the MS(l, n) port ``"Tj"`` or ``"Si"``.

    Raises
    ------
    TopologyError
        For a name that is not a port of MS(l, n).
    """
    k = n * l + 1
    if isinstance(port, str) and len(port) >= 2 and port[0] in "TS" and port[1:].isdigit():
        idx = int(port[1:])
        if port[0] == "T" and 2 <= idx <= n + 1:
            return perm.transposition(k, 0, idx - 1)
        if port[0] == "S" and 2 <= idx <= l:
            return swap_generator(l, n, idx)
    raise TopologyError(
        f"{port!r} is not a port of MS({l},{n}): use T2..T{n + 1}"
        + (f" or S2..S{l}" if l >= 2 else "")
    )


def word_perm(l: int, n: int, word: Sequence[str]) -> np.ndarray:
    """Product ``g_1 * g_2 * ... * g_m`` of a word's position generators, shape ``(k,)``."""
    l, n = check_ms(l, n)
    p = perm.identity(n * l + 1)
    for port in word:
        p = perm.compose(p, port_generator(l, n, port))
    return p[0]


def star_transposition(l: int, n: int, i: int, j: int | None = None) -> np.ndarray:
    """Position generator ``T_j`` (one argument) or ``T_{i,j}`` (1-based, ``i != j``)."""
    l, n = check_ms(l, n)
    k = n * l + 1
    if j is None:
        i, j = 1, i
    i = check_int(f"position i of MS({l},{n})", i, 1, k)
    j = check_int(f"position j of MS({l},{n})", j, 1, k)
    if i == j:
        raise TopologyError(f"a transposition needs two distinct positions, got i = j = {i}")
    return perm.transposition(k, i - 1, j - 1)


def validate_word(l: int, n: int, word: Sequence[str], target_perm: np.ndarray) -> bool:
    """True if the word's generators compose to ``target_perm`` (a position permutation).

    Parameters
    ----------
    l, n : int
        The macro-star MS(l, n).
    word : sequence of str
        MS port names, applied left to right.
    target_perm : array of shape ``(k,)``
        Position generator to emulate, e.g. :func:`star_transposition`.
    """
    target = np.asarray(target_perm).ravel()
    p = word_perm(l, n, word)
    return p.shape == target.shape and bool(np.array_equal(p, target))


def sdc_word(l: int, n: int, j: int) -> list[str]:
    """Theorem 3.1: MS word emulating star dimension ``j`` (2 <= j <= nl + 1).

    ``["Tj"]`` for ``j <= n + 1``, else ``[S_{j1+1}, T_{j0+2}, S_{j1+1}]``.
    """
    l, n = check_ms(l, n)
    j = _check_dim(l, n, j)
    j0, j1 = dim_split(n, j)
    if j1 == 0:
        return [f"T{j}"]
    return [f"S{j1 + 1}", f"T{j0 + 2}", f"S{j1 + 1}"]


def reduce_word(word: Sequence[str]) -> list[str]:
    """Cancel back-to-back equal ports (every MS generator is an involution)."""
    out: list[str] = []
    for port in word:
        if out and out[-1] == port:
            out.pop()
        else:
            out.append(port)
    return out


def consecutive_word(l: int, n: int, dims: Sequence[int]) -> list[str]:
    """Theorem 4.2: one MS word for the star dimensions ``dims`` used in successive steps.

    The Theorem 3.1 words are concatenated and back-to-back equal swaps cancelled
    (``S T_a S S T_b S -> S T_a T_b S``). For the consecutive dimensions
    ``j .. j+s-1`` the length is :func:`theorem_4_2_length` or 2 less (see there).
    """
    l, n = check_ms(l, n)
    word: list[str] = []
    for j in dims:
        word.extend(sdc_word(l, n, j))
    return reduce_word(word)


def theorem_4_2_length(n: int, j: int, s: int, exact: bool = False) -> int:
    """Step count of Theorem 4.2 for dimensions ``j .. j+s-1``: ``s - 2a1 + 2b1 + 2c1``.

    With ``exact=False`` this is the paper's formula, ``b1 = (j + s - 2) // n``.
    ``b1`` there is the block of dimension ``j + s`` (one past the range), so the
    formula overcounts by 2 when the last dimension ``j + s - 1`` closes its block
    (``(j + s - 2) % n == 0``). ``exact=True`` uses the block of the last
    dimension, ``b1 = (j + s - 3) // n``, which is what :func:`consecutive_word`
    achieves.
    """
    a1 = (j - 2) // n
    b1 = (j + s - 3) // n if exact else (j + s - 2) // n
    c1 = 1 if a1 > 0 else 0
    return s - 2 * a1 + 2 * b1 + 2 * c1


def validate_consecutive(l: int, n: int, dims: Sequence[int], word: Sequence[str]) -> bool:
    """Check a Theorem 4.2 word step by step, not only as a whole.

    The whole word must equal ``T_{d_1} T_{d_2} ... T_{d_s}``, and there must be
    prefixes ``w_1 <= w_2 <= ... <= w_s`` of the word with
    ``w_t = T_{d_1} ... T_{d_t} * E_t`` where the *emulator offset* ``E_t`` is the
    identity or a single swap ``S_i``: after the t-th emulated star step the data
    of star node ``U`` sits at MS node ``U T_{d_1} .. T_{d_t}`` or at its ``S_i``
    neighbour, as in the proof of Theorem 4.2.
    """
    l, n = check_ms(l, n)
    k = n * l + 1
    offsets = [perm.identity(k)[0]] + [swap_generator(l, n, i) for i in range(2, l + 1)]
    star = perm.identity(k)[0]
    pos = 0
    prefix = perm.identity(k)[0]
    for d in dims:
        star = perm.compose(star, star_transposition(l, n, d))[0]
        while True:  # every emulated star step takes at least one MS step
            if pos == len(word):
                return False
            prefix = perm.compose(prefix, port_generator(l, n, word[pos]))[0]
            pos += 1
            # prefix = star * E for an offset E  <=>  star^-1 * prefix is an offset
            rel = perm.compose(perm.inverse(star), prefix)[0]
            if any(np.array_equal(rel, e) for e in offsets):
                break
    return validate_word(l, n, word, star)


def ct_word(l: int, n: int, i: int, j: int) -> list[str]:
    """Theorem 4.9: MS word for the complete-transposition generator ``T_{i,j}``.

    Positions are 1-based, ``1 <= i < j <= nl + 1`` (the order of ``i`` and ``j``
    does not matter). Lengths: 1, 3, 3, 5, 5, 7 for the six cases of the proof.
    """
    l, n = check_ms(l, n)
    k = n * l + 1
    i = check_int(f"position i of MS({l},{n})", i, 1, k)
    j = check_int(f"position j of MS({l},{n})", j, 1, k)
    if i == j:
        raise TopologyError(f"T_(i,j) needs two distinct positions, got i = j = {i}")
    i, j = min(i, j), max(i, j)
    if i == 1:
        return sdc_word(l, n, j)
    i0, i1 = dim_split(n, i)
    j0, j1 = dim_split(n, j)
    if i1 == 0:  # i in block 1: T_i T_j T_i, T_j itself emulated
        return [f"T{i}", *sdc_word(l, n, j), f"T{i}"]
    si = f"S{i1 + 1}"
    if i1 == j1:
        return [si, f"T{i0 + 2}", f"T{j0 + 2}", f"T{i0 + 2}", si]
    return [si, f"T{i0 + 2}", *sdc_word(l, n, j), f"T{i0 + 2}", si]


#: :func:`shortest_word` explores all k! nodes; keep it to k <= this
SHORTEST_MAX_SYMBOLS = 8


def shortest_word(l: int, n: int, target_perm: np.ndarray) -> list[str]:
    """A shortest MS word composing to ``target_perm`` (breadth-first search).

    Used to check whether the theorems' words are shortest. Only for
    ``nl + 1 <= SHORTEST_MAX_SYMBOLS`` (the search visits up to ``k!`` nodes).
    """
    l, n = check_ms(l, n)
    k = n * l + 1
    if k > SHORTEST_MAX_SYMBOLS:
        raise TopologyError(
            f"shortest_word explores k! nodes; needs l*n+1 <= {SHORTEST_MAX_SYMBOLS}, got {k}"
        )
    ports = [f"T{j}" for j in range(2, n + 2)] + [f"S{i}" for i in range(2, l + 1)]
    gens = [tuple(int(x) for x in port_generator(l, n, p)) for p in ports]
    start = tuple(range(k))
    goal = tuple(int(x) for x in np.asarray(target_perm).ravel())
    parent: dict[tuple[int, ...], tuple[tuple[int, ...], str] | None] = {start: None}
    frontier = [start]
    while goal not in parent and frontier:
        nxt = []
        for p in frontier:
            for name, g in zip(ports, gens, strict=True):
                q = tuple(p[g[i]] for i in range(k))
                if q not in parent:
                    parent[q] = (p, name)
                    nxt.append(q)
        frontier = nxt
    if goal not in parent:
        raise TopologyError(f"target is not a permutation of {k} symbols")
    word: list[str] = []
    node = goal
    while (step := parent[node]) is not None:
        node, name = step
        word.append(name)
    return word[::-1]
