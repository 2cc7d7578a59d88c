"""The deadlock look's search inside the one-rank compiled steps: whether a front is dead.

A look's scan (:func:`~mpinet.engine.flit.deadlock_live._scan`) lists the fronts blocked
since the last look; most looks on a lightly loaded network list a few (a worm waiting
behind another) and none is dead. Returning to Python for each such search cost a call's
return and, in a fresh process, loading :func:`mpinet.engine.waitfor.dead_one_rank` from
numba's cache (about 3.5 ms of a fresh hypercube:8 run's 25 ms of engine CPU,
docs/performance.md, "A fresh run's fixed cost"). :func:`any_dead` answers the same
question as :func:`~mpinet.engine.waitfor.dead_one_rank` (``.any()``: the same definition,
:mod:`mpinet.engine.waitfor`) in scratch arrays, allocating nothing, so
:func:`~mpinet.engine.flit.chunk.run_steps` (compiled without reference counts) calls it;
only a dead set (the report: Python's search finds the same set and names a cycle) or a
search larger than :data:`MAX_ROUNDS` rounds returns to Python.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit.state import heap_sort

#: liveness spreads one link of a wait chain a round; a longer chain: Python's search
MAX_ROUNDS = 64
#: :func:`any_dead`'s answers
NONE_DEAD, DEAD, UNKNOWN = 0, 1, 2


@njit(cache=True, _nrt=False, inline="always")
def _sift(k, v, root, m):
    """Sift ``root`` down the max-heap ``k[:m]``, ``v`` carried along."""
    x, y = k[root], v[root]
    while True:
        c = 2 * root + 1
        if c >= m:
            break
        if c + 1 < m and k[c + 1] > k[c]:
            c += 1
        if k[c] <= x:
            break
        k[root], v[root] = k[c], v[c]
        root = c
    k[root], v[root] = x, y


@njit(cache=True, _nrt=False)
def sort_pairs(k, v, m):
    """Sort ``k[:m]`` ascending in place (heapsort), ``v[:m]`` permuted alike."""
    for r in range(m // 2 - 1, -1, -1):
        _sift(k, v, r, m)
    for end in range(m - 1, 0, -1):
        k[0], k[end] = k[end], k[0]
        v[0], v[end] = v[end], v[0]
        _sift(k, v, 0, end)


@njit(cache=True, _nrt=False, inline="always")
def _first(a, m, x):
    """The first index of ``a[:m]`` (ascending) holding ``x`` or more."""
    lo, hi = 0, m
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, _nrt=False)
def any_dead(nf, nh, nc, fronts, waits, hf, hb, closed, sk, sv, hk, hv, cs, live):
    """:data:`DEAD` if some of the ``nf`` listed fronts is dead, :data:`NONE_DEAD` if none
    is, :data:`UNKNOWN` past :data:`MAX_ROUNDS` rounds. ``hf``/``hb``: the ``nh`` holds,
    ``closed[:nc]`` the closed buffers, as :func:`~mpinet.engine.waitfor.dead_fronts`
    takes them; scratch: ``sk``, ``sv``, ``live`` of ``nf``, ``hk``, ``hv`` of ``nh``,
    ``cs`` of ``nc`` words. A buffer is live when it is not closed or a holder of it is
    live or not listed (it can move); a front when it waits for nothing or for a live
    buffer: liveness spread round by round until nothing changes (the least set, as
    :func:`~mpinet.engine.waitfor.dead_one_rank` spreads it)."""
    for j in range(nf):  # the listed fronts by id, with their index
        sk[j], sv[j] = fronts[j], j
        live[j] = 1 if waits[j] < 0 else 0
    sort_pairs(sk, sv, nf)
    for e in range(nh):  # the holds by buffer
        hk[e], hv[e] = hb[e], hf[e]
    sort_pairs(hk, hv, nh)
    for c in range(nc):
        cs[c] = closed[c]
    heap_sort(cs, 0, nc)
    for _ in range(MAX_ROUNDS):
        changed = False
        dead = False
        for j in range(nf):
            if live[j]:
                continue
            b = waits[j]
            c = _first(cs, nc, b)
            ok = not (c < nc and cs[c] == b)  # not closed: it may free a slot
            e = _first(hk, nh, b)
            while not ok and e < nh and hk[e] == b:
                h = hv[e]
                i = _first(sk, nf, h)
                ok = not (i < nf and sk[i] == h) or live[sv[i]] == 1  # unlisted, or live
                e += 1
            if ok:
                live[j] = 1
                changed = True
            else:
                dead = True
        if not dead:
            return NONE_DEAD
        if not changed:
            return DEAD
    return UNKNOWN


def scratch(fronts: np.ndarray, hf: np.ndarray, closed: np.ndarray) -> tuple:
    """:func:`any_dead`'s scratch for a scan's outputs of these sizes."""
    n, h = fronts.shape[0], hf.shape[0]
    return (np.empty(n, np.int64), np.empty(n, np.int64), np.empty(h, np.int64),
            np.empty(h, np.int64), np.empty(closed.shape[0], np.int64),
            np.empty(n, np.int64))  # fmt: skip
