"""The live fronts of :mod:`mpinet.engine.waitfor`'s definition, in the caller's scratch.

One pass, linear in the listing and allocating nothing, so that compiled callers without
reference counts (the flit engine's steps, :mod:`mpinet.engine.flit.look_search`) and
:func:`mpinet.engine.waitfor.dead_one_rank` share it. Ids are looked up in two open-address
hash tables (fronts by id, the buffers some front waits for by id) rather than sorted: a
look on sdc lists some 2,100 fronts, 3,100 holds and 2,400 closed buffers, and sorting them
and searching by bisection, round after round, took about 1 ms a look
(docs/performance.md, "sdc in session 8"). Then liveness spreads along two CSR lists (per
buffer the fronts waiting for it, per front the buffers it holds) from a stack: each front
and buffer is pushed once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Fibonacci hashing's multiplier (2^64 / golden ratio)
_GOLD = np.uint64(11400714819323198485)
#: the scratch arrays of :func:`live_fronts`, in :func:`scratch`'s order
FKEY, FVAL, BKEY, BVAL, WGRP, GPTR, GLIST, GLIVE, HPTR, HFRONT, HGRP, HLIST, STACK = range(13)


@njit(cache=True, _nrt=False, inline="always")
def _slot(key, shift, mask, tab):
    """The slot of ``key`` in the table ``tab`` (its own, or the empty one where it goes)."""
    i = np.int64((np.uint64(key) * _GOLD) >> shift) & mask
    while tab[i] != -1 and tab[i] != key:
        i = (i + 1) & mask
    return i


@njit(cache=True, _nrt=False, inline="always")
def _rows(key, val, m, n, ptr, out, by_index):
    """Rows by a counting sort: ``out[ptr[k]:ptr[k + 1]]`` holds, in order, each ``e < m``
    with ``key[e] == k`` (``k < n``; -1: in no row), as ``e`` (``by_index``) or ``val[e]``."""
    ptr[: n + 2] = 0
    for e in range(m):
        if key[e] >= 0:
            ptr[key[e] + 2] += 1
    for k in range(2, n + 2):
        ptr[k] += ptr[k - 1]
    for e in range(m):
        k = key[e]
        if k >= 0:
            out[ptr[k + 1]] = e if by_index else val[e]
            ptr[k + 1] += 1


@njit(cache=True, _nrt=False, inline="always")
def _table_bits(nf):
    """The hash tables' ``(size, shift, mask)`` for ``nf`` fronts (at most half full)."""
    size, bits = 16, 4
    while size < 2 * nf:
        size, bits = 2 * size, bits + 1
    return size, np.uint64(64 - bits), size - 1


@njit(cache=True, _nrt=False, inline="always")
def group_waits(nf, nc, waits, closed, live, wgrp, bkey, bval, gptr, glist, glive, shift, mask):
    """Number the buffers the ``nf`` fronts wait for as first met (``bkey``/``bval``, cleared
    by the caller), each front's in ``wgrp`` (-1: waits for nothing, live), per buffer the
    fronts waiting for it in ``glist[gptr[g]:gptr[g + 1]]``, ``glive[g]`` 0 where closed;
    returns their number."""
    ng = 0
    for j in range(nf):
        live[j] = 1
        wgrp[j] = -1
        b = waits[j]
        if b >= 0:
            live[j] = 0
            i = _slot(b, shift, mask, bkey)
            if bkey[i] == -1:
                bkey[i], bval[i] = b, ng
                glive[ng] = 1  # not closed (yet)
                ng += 1
            wgrp[j] = bval[i]
    for c in range(nc):
        i = _slot(closed[c], shift, mask, bkey)
        if bkey[i] != -1:
            glive[bval[i]] = 0
    _rows(wgrp, wgrp, nf, ng, gptr, glist, True)
    return ng


@njit(cache=True, _nrt=False, inline="always")
def spread(nf, ng, live, glive, hptr, hlist, gptr, glist, stack):
    """Liveness spread from a stack of fronts (``j``) and buffers (``nf + g``), each pushed
    once when found live: a live front frees the buffers it holds (``hlist[hptr[j]:hptr[j +
    1]]``), a live buffer the fronts waiting for it; returns the number of fronts dead."""
    top = 0
    for j in range(nf):
        if live[j]:
            stack[top] = j
            top += 1
    for g in range(ng):
        if glive[g]:
            stack[top] = nf + g
            top += 1
    while top > 0:
        top -= 1
        x = stack[top]
        if x < nf:
            for k in range(hptr[x], hptr[x + 1]):
                g = hlist[k]
                if not glive[g]:
                    glive[g] = 1
                    stack[top] = nf + g
                    top += 1
        else:
            g = x - nf
            for k in range(gptr[g], gptr[g + 1]):
                j = glist[k]
                if not live[j]:
                    live[j] = 1
                    stack[top] = j
                    top += 1
    dead = 0
    for j in range(nf):
        dead += 1 - live[j]
    return dead


@njit(cache=True, _nrt=False)
def live_fronts(nf, nh, nc, fronts, waits, hf, hb, closed, scr, live):
    """Mark ``live[j]`` 1 for each live front ``fronts[j]`` of the ``nf`` listed, 0 for a dead
    one; returns the number dead. ``waits[:nf]``, the holds ``hf[:nh]``/``hb[:nh]`` and
    ``closed[:nc]`` as :func:`~mpinet.engine.waitfor.dead_fronts` takes them (ids >= 0,
    fronts distinct); ``scr``: :func:`scratch` for at least these sizes. A buffer nobody
    waits for plays no part; a buffer is live when it is not closed or some holder of it is
    live or not listed; a front when it waits for nothing or for a live buffer (the least
    fixed point, as :func:`~mpinet.engine.waitfor.dead_one_rank` defines it)."""
    fkey, fval, bkey, bval = scr[FKEY], scr[FVAL], scr[BKEY], scr[BVAL]
    wgrp, gptr, glist, glive = scr[WGRP], scr[GPTR], scr[GLIST], scr[GLIVE]
    hptr, hfront, hgrp, hlist, stack = scr[HPTR], scr[HFRONT], scr[HGRP], scr[HLIST], scr[STACK]
    size, shift, mask = _table_bits(nf)
    fkey[:size] = -1
    bkey[:size] = -1
    for j in range(nf):
        i = _slot(fronts[j], shift, mask, fkey)
        if fkey[i] == -1:
            fkey[i], fval[i] = fronts[j], j
    ng = group_waits(nf, nc, waits, closed, live, wgrp, bkey, bval, gptr, glist, glive, shift,
                     mask)  # fmt: skip
    # per listed front the waited-for buffers it holds; a holder nobody lists frees its buffer
    for e in range(nh):
        hfront[e] = -1
        i = _slot(hb[e], shift, mask, bkey)
        if bkey[i] == -1:
            continue
        g = bval[i]
        i = _slot(hf[e], shift, mask, fkey)
        if fkey[i] == -1:
            glive[g] = 1
            continue
        hfront[e], hgrp[e] = fval[i], g
    _rows(hfront, hgrp, nh, nf, hptr, hlist, False)
    return spread(nf, ng, live, glive, hptr, hlist, gptr, glist, stack)


def scratch(nf: int, nh: int) -> tuple:
    """:func:`live_fronts`' scratch for up to ``nf`` fronts and ``nh`` holds."""
    return new_scratch.py_func(max(nf, 1), max(nh, 1))  # numpy's: no kernel to load


@njit(cache=True)
def new_scratch(nf, nh):
    """:func:`scratch`, compiled (for :func:`~mpinet.engine.waitfor.dead_one_rank`)."""
    size = 16
    while size < 2 * nf:
        size *= 2
    e = np.empty
    return (e(size, np.int64), e(size, np.int64), e(size, np.int64), e(size, np.int64),
            e(nf, np.int64), e(nf + 2, np.int64), e(nf, np.int64), e(nf, np.int64),
            e(nf + 2, np.int64), e(nh, np.int64), e(nh, np.int64), e(nh, np.int64),
            e(2 * nf + 1, np.int64))  # fmt: skip
