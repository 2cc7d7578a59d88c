"""The permutation kernel shared by the star, SCC and macro-star families.

A permutation of ``k`` symbols is a row of a ``(M, k)`` uint8 array holding
the symbols ``0..k-1`` (printed 1-based, as the papers do). Everything here is
vectorized over the ``M`` rows.

Conventions (shared/papers/README.md): a generator ``g`` acts on *positions*,
``(pi * g)[i] = pi[g[i]]``, so ``T_i`` swaps the first and the i-th symbol.
Routing from ``s`` to ``d`` is routing from ``d^-1 * s`` to the identity.

Ranking: the *last* symbols are most significant. The digit of position ``i``
is ``c_i = #{j < i : pi[j] > pi[i]}`` in ``[0, i]`` with weight ``i!``, so the
identity has rank 0 and all permutations that share their last ``s`` symbols
form one block of ``(k - s)!`` consecutive ranks (a cluster).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from mpinet import numba_cache  # noqa: F401 (an unreadable kernel index compiles again)
from mpinet.errors import TopologyError
from mpinet.values import check_int

MAX_SYMBOLS = 20  # 20! < 2**63 - 1 < 21!
_CHUNK = 1 << 16


def factorials(k: int) -> np.ndarray:
    """Return ``[0!, 1!, ..., (k-1)!]`` as int64."""
    return np.array([math.factorial(i) for i in range(k)], dtype=np.int64)


def identity(k: int, count: int = 1) -> np.ndarray:
    """Return ``count`` copies of the identity permutation of ``k`` symbols."""
    return np.tile(np.arange(k, dtype=np.uint8), (count, 1))


def _as_perms(perms: np.ndarray) -> np.ndarray:
    p = np.asarray(perms)
    if p.ndim == 1:
        p = p[None, :]
    if p.ndim != 2 or p.shape[1] > MAX_SYMBOLS:
        raise TopologyError(f"perms must have shape (M, k) with k <= {MAX_SYMBOLS}, got {p.shape}")
    return p


def rank(perms: np.ndarray) -> np.ndarray:
    """Rank permutations (last symbols most significant; identity -> 0).

    Parameters
    ----------
    perms : (M, k) array of symbols ``0..k-1``

    Returns
    -------
    (M,) int64 array of ranks in ``[0, k!)``.
    """
    p = _as_perms(perms)
    m, k = p.shape
    fact = factorials(k)
    out = np.zeros(m, dtype=np.int64)
    one = np.uint32(1)
    for lo in range(0, m, _CHUNK):
        blk = p[lo : lo + _CHUNK].astype(np.uint32)
        seen = np.zeros(blk.shape[0], dtype=np.uint32)  # bit s set: symbol s seen
        acc = out[lo : lo + _CHUNK]
        for i in range(k):
            sym = blk[:, i]
            if i:
                # digit: earlier symbols greater than this one = set bits above it
                acc += np.bitwise_count(seen >> (sym + one)).astype(np.int64) * fact[i]
            seen |= one << sym
    return out


#: up to this many symbols, unrank is a lookup in a table of all k! permutations
TABLE_SYMBOLS = 9  # 9! x 9 bytes = 3.3 MB, built once per process on first use
_tables: dict[int, np.ndarray] = {}


def unrank(ranks: np.ndarray, k: int) -> np.ndarray:
    """Inverse of :func:`rank`: ``(M,)`` ranks -> ``(M, k)`` uint8 permutations."""
    k = check_int("k (number of symbols)", k, 1, MAX_SYMBOLS)
    r = np.asarray(ranks, dtype=np.int64).ravel()
    if r.size and (r.min() < 0 or r.max() >= math.factorial(k)):
        raise TopologyError(f"rank must be in [0, {math.factorial(k) - 1}] for k={k}")
    if k <= TABLE_SYMBOLS and r.size > 64:
        return _table(k)[r]
    return _unrank(r, k)


def _table(k: int) -> np.ndarray:
    """All ``k!`` permutations of ``k <= TABLE_SYMBOLS`` symbols, by rank (built once)."""
    table = _tables.get(k)
    if table is None:
        table = _tables[k] = _unrank(np.arange(math.factorial(k), dtype=np.int64), k)
    return table


#: from this many ranks on, unranking k > TABLE_SYMBOLS symbols starts from the table
TABLE_FROM = 1 << 12


def _unrank(r: np.ndarray, k: int) -> np.ndarray:
    tk = TABLE_SYMBOLS if k > TABLE_SYMBOLS and r.size >= TABLE_FROM else 1
    out = np.empty((r.size, k), dtype=np.uint8)
    _unrank_rows(r, k, factorials(max(k, tk + 1)), _table(tk) if tk > 1 else _ONE, tk, out)
    return out


#: the table of the permutations of one symbol (a loop start needing no table)
_ONE = np.zeros((1, 1), dtype=np.uint8)


@nb.njit(cache=True, nogil=True)
def _unrank_rows(r, k, fact, table, tk, out):
    p = np.empty(k, np.int64)
    for m in range(r.size):
        _unrank_one(r[m], k, fact, table, tk, p)
        for i in range(k):
            out[m, i] = p[i]


def relative_rank(cur: np.ndarray, dst: np.ndarray, k: int) -> np.ndarray:
    """``rank(inverse(unrank(dst)) * unrank(cur))`` of each pair, without the permutations.

    The translation of a Cayley graph on positions (``x -> d^-1 * x``), in one
    compiled pass: the numpy composition of :func:`unrank`, :func:`inverse`,
    :func:`compose` and :func:`rank` makes a dozen passes over ``(M, k)``
    arrays (6.5-7 s for ms:3,3's 29 M injected packets; compiled 2.2-2.9 s).

    Parameters
    ----------
    cur, dst : (M,) arrays of ranks in ``[0, k!)``
    k : number of symbols, 1..20
    """
    k = check_int("k (number of symbols)", k, 1, MAX_SYMBOLS)
    c = np.ascontiguousarray(cur, dtype=np.int64).ravel()
    d = np.ascontiguousarray(dst, dtype=np.int64).ravel()
    if c.size != d.size:
        raise TopologyError(f"cur and dst must have the same length, got {c.size} and {d.size}")
    top = math.factorial(k)
    for name, a in (("cur", c), ("dst", d)):
        if a.size and (a.min() < 0 or a.max() >= top):
            raise TopologyError(f"{name} ranks must be in [0, {top - 1}] for k={k}")
    out = np.empty(c.size, dtype=np.int64)
    tk = min(k, TABLE_SYMBOLS) if c.size >= TABLE_FROM else 1
    _relative(c, d, k, factorials(max(k, tk + 1)), _table(tk) if tk > 1 else _ONE, tk, out)
    return out


@nb.njit(cache=True, nogil=True, inline="always")
def _unrank_one(r, k, fact, table, tk, p):
    """One rank into ``p[:k]``: the first ``tk`` symbols from their table, then the rest.

    Digit i (symbol i's relative position among the first i + 1) depends on r
    only through r % (i + 1)!, so the first ``tk`` symbols are one row of the
    table of their permutations (ms:3,3's 29 M injections: 13 s -> 3.4 s in numpy).
    """
    row = table[r % fact[tk]]
    for i in range(tk):
        p[i] = row[i]
    for i in range(tk, k):
        e = i - (r // fact[i]) % (i + 1)  # relative rank of symbol i among the first i + 1
        for j in range(i):
            p[j] += p[j] >= e
        p[i] = e


@nb.njit(cache=True, nogil=True)
def _relative(cur, dst, k, fact, table, tk, out):
    pc = np.empty(k, np.int64)
    pd = np.empty(k, np.int64)
    inv = np.empty(k, np.int64)
    for m in range(cur.size):
        _unrank_one(cur[m], k, fact, table, tk, pc)
        _unrank_one(dst[m], k, fact, table, tk, pd)
        for i in range(k):
            inv[pd[i]] = i
        for i in range(k):
            pd[i] = inv[pc[i]]  # the relative permutation
        r = 0
        for i in range(1, k):
            c = 0
            for j in range(i):  # earlier symbols greater than this one (branch-free)
                c += pd[j] > pd[i]
            r += c * fact[i]
        out[m] = r


def compose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise product ``a * b``: ``(a * b)[i] = a[b[i]]`` (broadcasts rows)."""
    a2, b2 = np.broadcast_arrays(_as_perms(a), _as_perms(b))
    out = np.empty(a2.shape, dtype=a2.dtype)
    # by chunks: the intp copy of the indices (8 bytes a symbol) stays small and in cache
    # (29 M permutations of 10 symbols at once: a 2.3 GB temporary and 7 s, against 1 s)
    for lo in range(0, a2.shape[0], _CHUNK):
        hi = lo + _CHUNK
        out[lo:hi] = np.take_along_axis(a2[lo:hi], b2[lo:hi].astype(np.intp), axis=1)
    return out


def inverse(perms: np.ndarray) -> np.ndarray:
    """Row-wise inverse permutation."""
    p = _as_perms(perms)
    out = np.empty_like(p)
    k = p.shape[1]
    symbols = np.arange(k, dtype=p.dtype)
    for lo in range(0, p.shape[0], _CHUNK):  # chunks, as in compose
        blk = p[lo : lo + _CHUNK]
        rows = np.arange(blk.shape[0])[:, None]
        out[lo : lo + _CHUNK][rows, blk] = symbols
    return out


def apply_positions(perms: np.ndarray, gens: np.ndarray) -> np.ndarray:
    """Apply position generators: ``(M, k)`` x ``(G, k)`` -> ``(M, G, k)``."""
    p = _as_perms(perms)
    g = np.asarray(gens, dtype=np.intp)
    return p[:, g]


def transposition(k: int, i: int, j: int = 0) -> np.ndarray:
    """Position generator swapping positions ``i`` and ``j`` (0-based)."""
    g = np.arange(k, dtype=np.uint8)
    g[[i, j]] = g[[j, i]]
    return g


def cycle_stats(perms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Count the cycles of length >= 2 and the symbols they hold, per row.

    Returns
    -------
    cycles, moved : (M,) int64 arrays
    """
    p = _as_perms(perms).astype(np.int64)
    m, k = p.shape
    # minimum position in each cycle, by pointer doubling
    low = np.broadcast_to(np.arange(k), (m, k)).copy()
    step = p.copy()
    rows = np.arange(m)[:, None]
    for _ in range(max(1, math.ceil(math.log2(max(k, 2)))) + 1):
        low = np.minimum(low, low[rows, step])
        step = step[rows, step]
    moved_mask = p != np.arange(k)
    moved = moved_mask.sum(axis=1)
    leaders = (low == np.arange(k)) & moved_mask
    return leaders.sum(axis=1), moved


def star_distance(perms: np.ndarray) -> np.ndarray:
    """Distance from each permutation to the identity in the star graph.

    ``c + m`` when the first symbol is in place, else ``c + m - 2`` (Akers and
    Krishnamurthy; paper 001 eq. 3), with ``c`` cycles of length >= 2 holding
    ``m`` symbols.
    """
    p = _as_perms(perms)
    c, mv = cycle_stats(p)
    first_ok = p[:, 0] == 0
    return np.where(first_ok, c + mv, c + mv - 2)


def format_perm(perm: np.ndarray, groups: list[int] | None = None) -> str:
    """Print one permutation 1-based: ``34125``; with ``groups`` of sizes,
    ``1 23 45``; symbols above 9 force a dotted form ``1.2.10.3``."""
    syms = [int(x) + 1 for x in np.asarray(perm).ravel()]
    if len(syms) > 9:
        return ".".join(map(str, syms))
    text = "".join(map(str, syms))
    if groups:
        parts, pos = [], 0
        for g in groups:
            parts.append(text[pos : pos + g])
            pos += g
        text = " ".join(parts)
    return text


def parse_perm(text: str, k: int) -> np.ndarray:
    """Parse ``34125``, ``1 23 45`` or ``1.2.10.3`` into a 0-based (k,) array."""
    s = text.strip()
    if any(c in s for c in ".,") or (k > 9 and " " in s):
        tokens = [t for t in s.replace(",", " ").replace(".", " ").split() if t]
    else:
        tokens = [c for c in s if not c.isspace()]
    try:
        syms = [int(t) for t in tokens]
    except ValueError:
        raise TopologyError(f"permutation label {text!r} must list the symbols 1..{k}") from None
    if sorted(syms) != list(range(1, k + 1)):
        raise TopologyError(
            f"permutation label {text!r} must hold each of the symbols 1..{k} exactly once"
        )
    return np.array(syms, dtype=np.uint8) - 1
