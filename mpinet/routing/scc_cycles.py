"""Cycle-structure kernels of SCC_n routing (paper 000, sections 3-4).

Routing ``<i_s, pi_s> -> <i_d, pi_d>`` is routing from ``<i_s, sigma>`` to
``<i_d, identity>`` with the relative permutation ``sigma = pi_d^-1 * pi_s``
(paper 000 section 4.1): a lateral hop over link ``b`` turns ``sigma`` into
``sigma * T_b`` whatever the destination. Everything here works on rows of
``sigma`` (``(M, n)`` arrays of 0-based symbols) and ring positions given as
0-based permutation indices ``1..n-1`` (the papers' ``i`` minus one).

In the papers' cycle notation a cycle is ``(x sigma(x) sigma(sigma(x)) ...)``
(``sigma(x)`` = the symbol at position ``x``), so with the 0-based rows:

- ``B`` (*bsymbols*, the minimal next lateral links): ``sigma[0]`` when
  ``sigma[0] != 0``, plus every position of a non-trivial cycle that avoids 0;
- ``F`` (*fsymbols*, the possible last links): ``sigma^-1(0)`` when
  ``sigma[0] != 0``, plus the same positions of the other cycles;
- ``MI(loc)`` (eq. 8 summed over the cycles) is
  ``sum over x >= 1 with sigma[x] not in {x, 0} of d(x, sigma[x])``.

A lateral link taken from ``B`` is exactly a star-graph hop that lowers the
star distance by one, so every route built from ``B`` has ``lat`` = the star
distance of ``sigma`` (eq. 4), and its local links are ``MI(loc)`` (eq. 8,
Lemma 1, independent of the route) plus ``MB(loc) >= 0`` (by the triangle
inequality on the ring, executions of other cycles nested between two links
only add to the distance between them).
"""

from __future__ import annotations

import numpy as np

from mpinet import perm
from mpinet.topology.scc import SCC

_MIN_TABLES: dict[int, np.ndarray] = {}


def ring_distances(n: int) -> np.ndarray:
    """``(n, n)`` int64 table of ``d(a, b) = min(|a-b|, n-1-|a-b|)`` (eq. 7).

    Indexed by 0-based positions ``1..n-1``; row and column 0 are unused (0).
    """
    a = np.arange(n)
    diff = np.abs(a[:, None] - a[None, :])
    out = np.minimum(diff, (n - 1) - diff)
    out[0, :] = 0
    out[:, 0] = 0
    return out.astype(np.int64)


def ring_ports(n: int, here: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Port that moves ``here`` towards ring position ``target`` the shorter way.

    ``lateral`` where ``here == target``; ``local+`` when going up is not
    longer (so ties, possible on even rings, go up), else ``local-``. SCC_3
    has one local port (0) and the lateral port 1.
    """
    ring = n - 1
    delta = (np.asarray(target, dtype=np.int64) - here) % ring
    if n == 3:
        return np.where(delta == 0, 1, 0).astype(np.int64)
    return np.where(delta == 0, 2, np.where(delta <= ring // 2, 0, 1)).astype(np.int64)


def relative(topo: SCC, nodes: object, dests: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Relative permutations and ring positions of pairs of node ids.

    Returns
    -------
    sigma : (M, n) uint8, ``pi_d^-1 * pi_c``
    here, there : (M,) int64 ring positions (0-based, ``1..n-1``) of node and destination
    """
    a = np.asarray(nodes, dtype=np.int64).ravel()
    b = np.asarray(dests, dtype=np.int64).ravel()
    ring = topo.ring
    p = perm.unrank(a // ring, topo.n)
    q = perm.unrank(b // ring, topo.n)
    qinv = perm.inverse(q)
    sigma = np.take_along_axis(qinv, p.astype(np.intp), axis=1)
    return sigma, a % ring + 1, b % ring + 1


def ring_rotation(n: int, shift: np.ndarray) -> np.ndarray:
    """``(M, n)`` position maps fixing 0 and rotating ``1..n-1`` by ``shift`` steps up."""
    x = np.arange(1, n)
    rot = (x[None, :] - 1 + np.asarray(shift, dtype=np.int64).reshape(-1, 1)) % (n - 1) + 1
    return np.concatenate([np.zeros((rot.shape[0], 1), dtype=np.int64), rot], axis=1)


def conjugate(sigma: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """``phi sigma phi^-1`` row-wise: the cycles of ``sigma`` with every position relabelled.

    With ``phi`` a ring rotation (:func:`ring_rotation`) this maps routing
    problems to equivalent ones: same ``d``, cycles, routes and costs.
    """
    out = np.empty_like(sigma)
    rows = np.arange(sigma.shape[0])[:, None]
    out[rows, phi] = np.take_along_axis(phi, sigma.astype(np.intp), axis=1)
    return out


def one_cycle_mask(sigma: np.ndarray) -> np.ndarray:
    """``(M, n)`` bool: positions on the cycle through position 0 (0 itself included)."""
    m, n = sigma.shape
    rows = np.arange(m)
    out = np.zeros((m, n), dtype=bool)
    out[:, 0] = True
    x = sigma[:, 0].astype(np.intp)
    for _ in range(n - 1):
        out[rows, x] = True
        x = sigma[rows, x].astype(np.intp)
    return out


def b_mask(sigma: np.ndarray, in1: np.ndarray | None = None) -> np.ndarray:
    """``(M, n)`` bool: *bsymbols* (the lateral links that lower the star distance)."""
    in1 = one_cycle_mask(sigma) if in1 is None else in1
    out = (sigma != np.arange(sigma.shape[1])) & ~in1
    first = sigma[:, 0].astype(np.intp)
    out[np.arange(sigma.shape[0]), first] |= first != 0
    return out


def f_mask(sigma: np.ndarray, in1: np.ndarray | None = None) -> np.ndarray:
    """``(M, n)`` bool: *fsymbols* (the lateral links that can enter the identity last)."""
    in1 = one_cycle_mask(sigma) if in1 is None else in1
    out = (sigma != np.arange(sigma.shape[1])) & ~in1
    last = np.argmax(sigma == 0, axis=1)
    out[np.arange(sigma.shape[0]), last] |= sigma[:, 0] != 0
    return out


def mi_local(sigma: np.ndarray, dist: np.ndarray | None = None) -> np.ndarray:
    """Move-in local links of routing ``sigma`` to the identity (eq. 8 over all cycles), int64."""
    n = sigma.shape[1]
    dist = ring_distances(n) if dist is None else dist
    ar = np.arange(n)
    s = sigma.astype(np.intp)
    term = dist[ar[None, :], s]
    return np.where((s != ar) & (s != 0), term, 0).sum(axis=1)


def canonical_priority(sigma: np.ndarray) -> np.ndarray:
    """``(M, n)`` int64: place of each position in the canonical cycle listing.

    Cycles are written from their smallest symbol and listed by it (so the
    cycle of symbol 1 comes first), symbols in cycle order: the key is
    ``n * smallest + steps from the smallest``. Fixed points get their own key.
    """
    m, n = sigma.shape
    rows = np.arange(m)[:, None]
    start = np.broadcast_to(np.arange(n), (m, n))
    s = sigma.astype(np.intp)
    lead = start.copy()
    y = start.copy()
    for _ in range(n - 1):
        y = s[rows, y]
        lead = np.minimum(lead, y)
    back = np.where(start == lead, 0, -1)  # steps from x forward to its leader
    length = np.zeros((m, n), dtype=np.intp)  # cycle length (found on the way)
    y = start.copy()
    for k in range(1, n):
        y = s[rows, y]
        back = np.where((back < 0) & (y == lead), k, back)
        length = np.where((length == 0) & (y == start), k, length)
    length = np.where(length == 0, n, length)
    offset = (length - back) % length
    return (lead * n + offset).astype(np.int64)


def minloc(
    sigma: np.ndarray, ell: np.ndarray, dest: np.ndarray, dist: np.ndarray | None = None
) -> np.ndarray:
    """Eq. 18 of paper 000 without its ``L_i`` term: a lower bound on the local links left.

    ``min d(ell, B) + MI(loc) + min d(F, dest)`` from ring position ``ell``
    of supernode ``sigma`` to ``<dest, identity>``; ``d(ell, dest)`` when
    ``sigma`` is the identity. Int64, shape (M,).
    """
    m, n = sigma.shape
    dist = ring_distances(n) if dist is None else dist
    in1 = one_cycle_mask(sigma)
    big = 4 * n
    to_b = np.where(b_mask(sigma, in1), dist[np.asarray(ell, dtype=np.intp)], big).min(axis=1)
    dest = np.asarray(dest, dtype=np.intp)
    from_f = np.where(f_mask(sigma, in1), dist[dest], big).min(axis=1)
    ident = ~(sigma != np.arange(n)).any(axis=1)
    rest = to_b + mi_local(sigma, dist) + from_f
    return np.where(ident, dist[np.asarray(ell, dtype=np.intp), dest], rest)


def min_distance_table(n: int) -> np.ndarray:
    """``(n, 2**(n-1))`` uint8: ``min d(l, x)`` over the positions ``x`` of a bit mask.

    Bit ``k`` of the mask stands for position ``k + 1``; the empty mask gives
    ``4 n`` (larger than any distance). Built once per ``n`` (n = 20: 10 MB).
    """
    table = _MIN_TABLES.get(n)
    if table is None:
        dist = ring_distances(n)
        table = np.full((n, 1 << (n - 1)), 4 * n, dtype=np.uint8)
        for k in range(n - 1):
            lo = 1 << k
            table[:, lo : 2 * lo] = np.minimum(table[:, :lo], dist[:, k + 1 : k + 2])
        _MIN_TABLES[n] = table
    return table


def expand(
    sigma: np.ndarray, dest: np.ndarray, children: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """Every child ``sigma * T_b``, ``b`` in ``B``, and its :func:`minloc` from position ``b``.

    Vectorized over all children with bit masks of positions; the children's
    cycle structure is derived from the parents': taking ``b = sigma[0]``
    drops ``b`` from the cycle through 0, taking ``b`` on another cycle
    merges that cycle into it; only positions 0 and ``b`` change, so ``MI``
    changes by one term and the minima over ``B'`` and ``F'`` are table
    look-ups (:func:`min_distance_table`). Equal to :func:`minloc` on the
    children (tested).

    Parameters
    ----------
    sigma : (P, n) parents, none the identity
    dest : (P,) ring position of each parent's destination
    children : bool
        Also build the children's permutations.

    Returns
    -------
    pr, b : (C,) parent row and link (ring position) of each child, by row then link
    child : (C, n) uint8 permutations, or None
    estimate : (C,) int64 :func:`minloc` of ``(child, b, dest[pr])``
    """
    p, n = sigma.shape
    ar = np.arange(n)
    dist = ring_distances(n)
    table = min_distance_table(n)
    s = sigma.astype(np.intp)
    rows = np.arange(p)
    one = np.int64(1)
    mis = ((s != ar) << ar).sum(axis=1)
    flat = s.ravel()
    in1 = np.ones(p, dtype=np.int64)
    x = s[:, 0]
    for _ in range(n - 1):
        in1 |= one << x
        x = flat[rows * n + x]
    s0 = s[:, 0]
    bits = (mis & ~in1) | np.where(s0 != 0, one << s0, 0)
    pr, b = np.nonzero((bits[:, None] >> ar) & 1)
    at = pr * n
    s0, sb = s0[pr], flat[at + b]
    on1 = b == s0  # the one link of B on the cycle through 0
    cyc = np.zeros(pr.size, dtype=np.int64)  # the cycle of b (merged when b is not on it)
    x = b
    for _ in range(n):
        cyc |= one << x
        x = flat[at + x]
    in1c = np.where(on1, in1[pr] & ~(one << b), in1[pr] | cyc)
    misc = (mis[pr] & ~(one | (one << b))) | (sb != 0) | ((s0 != b).astype(np.int64) << b)
    base = misc & ~in1c
    open1 = sb != 0  # symbol 1 still away from home in the child
    zero_at = np.argmax(s == 0, axis=1)[pr]
    zero_at = np.where(s0 == 0, b, np.where(sb == 0, 0, zero_at))
    bc = base | np.where(open1, one << sb, 0)
    fc = base | np.where(open1, one << zero_at, 0)
    old = np.where((sb != b) & (sb != 0), dist[b, sb], 0)
    new = np.where((s0 != b) & (s0 != 0), dist[b, s0], 0)
    mi = mi_local(sigma, dist)[pr] - old + new
    d = np.asarray(dest, dtype=np.intp)[pr]
    rest = table[b, bc >> 1].astype(np.int64) + mi + table[d, fc >> 1]
    estimate = np.where(misc == 0, dist[b, d], rest)
    child = None
    if children:
        child = sigma[pr]
        k = np.arange(pr.size)
        child[:, 0] = sb
        child[k, b] = s0
    return pr, b, child, estimate
