"""The allocators of scripts/iq_floor_x.py: iSLIP's one iteration on a router's requests, and
the round-robin test and bit scan it is built from (inlined into the run loop, which compiles
without reference counts: no count a call)."""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros


@njit(cache=True, inline="always")
def low(w):
    """The index of ``w``'s lowest set bit (``w`` non-zero)."""
    return np.int64(trailing_zeros(w))


@njit(cache=True, inline="always")
def ahead(a, b, ptr, size):
    """Whether ``a`` is nearer than ``b`` at or after the round-robin pointer ``ptr``."""
    da, db = a - ptr, b - ptr
    da += size if da < 0 else 0
    db += size if db < 0 else 0
    return da < db


@njit(cache=True, inline="always")
def islip(nr, rin, rout, q, nin, nout, pin, pout, zi, zo, grant, bo, bi):
    """One iSLIP iteration on ``nr`` requests (one an input-output pair), rows ``q ..`` of
    ``rin``/``rout``: each output offers itself to the requester nearest its grant pointer
    ``pout[zo + o]``, each input accepts the offer nearest its accept pointer ``pin[zi + i]``;
    a match moves both pointers past it (offsets, not slices: a slice a call cost 2-3x the
    floor's time a flit-hop). ``bo``/``bi``: scratch, -1 on entry and on return. One
    request is matched at once (as the full pass matches it)."""
    if nr == 1:
        grant[0] = 1
        i, o = rin[q], rout[q]
        pout[zo + o] = i + 1 if i + 1 < nin else 0
        pin[zi + i] = o + 1 if o + 1 < nout else 0
        return
    for r in range(nr):
        grant[r] = 0
        o, b = rout[q + r], bo[rout[q + r]]
        if b < 0 or ahead(rin[q + r], rin[q + b], pout[zo + o], nin):
            bo[o] = r
    for r in range(nr):
        i, b = rin[q + r], bi[rin[q + r]]
        if bo[rout[q + r]] == r and (b < 0 or ahead(rout[q + r], rout[q + b], pin[zi + i], nout)):
            bi[i] = r
    for r in range(nr):
        i, o = rin[q + r], rout[q + r]
        if bi[i] == r:
            grant[r] = 1
            pout[zo + o] = i + 1 if i + 1 < nin else 0
            pin[zi + i] = o + 1 if o + 1 < nout else 0
    for r in range(nr):
        bo[rout[q + r]], bi[rin[q + r]] = -1, -1
