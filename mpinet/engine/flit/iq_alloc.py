"""The iq router's allocators (numba): separable input-first, separable output-first and
iSLIP, on one router's requests, as BookSim2 behaves (``src/allocators/separable_input_first.cpp``,
``separable_output_first.cpp``, ``islip.cpp``, ``src/arbiters/roundrobin_arb.cpp``; written
from their documented behaviour, docs/iq-router.md).

A call takes the router's requests as parallel arrays ``(rin, rout, rpri)`` of ``n`` rows
(at most one per input-output pair), the round-robin pointers of its inputs and outputs
(``pin``, ``pout``: slices of the run's arrays, kept between cycles) and writes ``grant[r]``
(1: request ``r`` won). The separable allocators' arbiters prefer the higher priority, then
the first port at or after their pointer; a pointer moves past its grant only when its
arbiter's choice was matched. iSLIP ignores priorities and moves its pointers on the first
iteration's matches only. ``best_in``/``best_out`` are scratch of the port counts, all -1 on
entry and on return.
"""

from __future__ import annotations

from numba import njit

#: allocator codes (:data:`mpinet.engine.iq_config.ALLOCATORS` in order)
INPUT_FIRST, OUTPUT_FIRST, ISLIP = 0, 1, 2


@njit(cache=True, error_model="numpy", _nrt=False)
def supersedes(a, pa, b, pb, offset, size):
    """Whether port ``a`` at priority ``pa`` wins over ``b`` at ``pb`` under a round-robin
    pointer at ``offset`` (higher priority, then nearer at or after the pointer)."""
    if pa != pb:
        return pa > pb
    da, db = a - offset, b - offset  # ports and pointer in 0 .. size - 1: no division
    if da < 0:
        da += size
    if db < 0:
        db += size
    return da < db


@njit(cache=True, _nrt=False)
def separable(n, rin, rout, rpri, nin, nout, pin, pout, grant, best_in, best_out, input_first):
    """One pass of a separable allocator; returns the number of grants."""
    for r in range(n):
        grant[r] = 0
    first_side_in = input_first
    # the first stage: each input (input-first) or output picks one of its requests
    for r in range(n):
        if first_side_in:
            i = rin[r]
            b = best_in[i]
            if b < 0 or supersedes(rout[r], rpri[r], rout[b], rpri[b], pin[i], nout):
                best_in[i] = r
        else:
            o = rout[r]
            b = best_out[o]
            if b < 0 or supersedes(rin[r], rpri[r], rin[b], rpri[b], pout[o], nin):
                best_out[o] = r
    # the second stage: the other side picks among the first stage's choices
    for r in range(n):
        if first_side_in:
            if best_in[rin[r]] != r:
                continue
            o = rout[r]
            b = best_out[o]
            if b < 0 or supersedes(rin[r], rpri[r], rin[b], rpri[b], pout[o], nin):
                best_out[o] = r
        else:
            if best_out[rout[r]] != r:
                continue
            i = rin[r]
            b = best_in[i]
            if b < 0 or supersedes(rout[r], rpri[r], rout[b], rpri[b], pin[i], nout):
                best_in[i] = r
    ng = 0
    for r in range(n):
        i, o = rin[r], rout[r]
        if best_in[i] == r and best_out[o] == r:
            grant[r] = 1
            ng += 1
            pin[i] = o + 1 if o + 1 < nout else 0
            pout[o] = i + 1 if i + 1 < nin else 0
    for r in range(n):
        best_in[rin[r]] = -1
        best_out[rout[r]] = -1
    return ng


@njit(cache=True, _nrt=False)
def islip(n, rin, rout, nin, nout, iters, pin, pout, grant, best_in, best_out):
    """iSLIP with ``iters`` iterations (``pin``: accept pointers, ``pout``: grant pointers);
    returns the number of grants. ``best_in``/``best_out`` hold the matches while it runs."""
    for r in range(n):
        grant[r] = 0
    ng = 0
    for it in range(iters):
        # grant: each unmatched output offers itself to the first unmatched requester at or
        # after its pointer (best_out[o] = that request, < -1 while matched: -2 - request)
        for r in range(n):
            o, i = rout[r], rin[r]
            if best_out[o] < -1 or best_in[i] < -1:
                continue
            b = best_out[o]
            if b < 0 or supersedes(i, 0, rin[b], 0, pout[o], nin):
                best_out[o] = r
        # accept: each input takes the first offer at or after its pointer
        for r in range(n):
            o, i = rout[r], rin[r]
            if best_out[o] != r or best_in[i] < -1:
                continue
            b = best_in[i]
            if b < 0 or supersedes(o, 0, rout[b], 0, pin[i], nout):
                best_in[i] = r
        for r in range(n):
            o, i = rout[r], rin[r]
            if best_in[i] == r:
                best_in[i] = -2 - r
                best_out[o] = -2 - r
                grant[r] = 1
                ng += 1
                if it == 0:
                    pout[o] = i + 1 if i + 1 < nin else 0
                    pin[i] = o + 1 if o + 1 < nout else 0
        for r in range(n):  # offers not accepted are withdrawn for the next iteration
            o, i = rout[r], rin[r]
            if best_out[o] >= 0:
                best_out[o] = -1
            if best_in[i] >= 0:
                best_in[i] = -1
    for r in range(n):
        best_in[rin[r]] = -1
        best_out[rout[r]] = -1
    return ng


@njit(cache=True, error_model="numpy", _nrt=False)
def _match(i, o, nin, nout, pin, pout, grant, r):
    """Request ``r`` (input ``i``, output ``o``) granted; both pointers move past it."""
    grant[r] = 1
    pin[i] = o + 1 if o + 1 < nout else 0
    pout[o] = i + 1 if i + 1 < nin else 0


@njit(cache=True, _nrt=False)
def uncontested(kind, n, rin, rout, rpri, nin, nout, pin, pout, grant, best_in, best_out):
    """The grants where the requests cannot conflict, as every allocator here makes them, or
    -1 (then the full pass): all from one input (its arbiter picks one: every output it asks
    offers itself, iSLIP's first iteration matches it), all to one output (that output's
    arbiter picks), or no two sharing an input or an output (all granted). Pointers move as
    the full pass moves them: past each match (iSLIP: its first iteration's)."""
    i0, o0 = rin[0], rout[0]
    one_in, one_out = True, True
    for r in range(1, n):
        one_in &= rin[r] == i0
        one_out &= rout[r] == o0
    pri = kind != ISLIP  # iSLIP ignores priorities
    if one_in or one_out:
        b = 0
        for r in range(1, n):
            grant[r] = 0
            if one_in:
                better = supersedes(rout[r], rpri[r] if pri else 0, rout[b],
                                    rpri[b] if pri else 0, pin[i0], nout)  # fmt: skip
            else:
                better = supersedes(rin[r], rpri[r] if pri else 0, rin[b],
                                    rpri[b] if pri else 0, pout[o0], nin)  # fmt: skip
            if better:
                b = r
        grant[0] = 0
        _match(rin[b], rout[b], nin, nout, pin, pout, grant, b)
        return 1
    free = True
    k = 0
    while k < n:  # best_in/best_out as marks (-1 on entry and on return)
        if best_in[rin[k]] >= 0 or best_out[rout[k]] >= 0:
            free = False
            break
        best_in[rin[k]], best_out[rout[k]] = k, k
        k += 1
    for r in range(k):
        best_in[rin[r]], best_out[rout[r]] = -1, -1
    if not free:
        return -1
    for r in range(n):
        _match(rin[r], rout[r], nin, nout, pin, pout, grant, r)
    return n


@njit(cache=True, _nrt=False)
def allocate(kind, n, rin, rout, rpri, nin, nout, iters, pin, pout, grant, best_in, best_out):
    """The allocator ``kind`` (:data:`INPUT_FIRST`, :data:`OUTPUT_FIRST`, :data:`ISLIP`); a
    router whose requests cannot conflict takes :func:`uncontested`'s shorter pass."""
    if n == 0:
        return 0
    ng = uncontested(kind, n, rin, rout, rpri, nin, nout, pin, pout, grant, best_in, best_out)
    if ng >= 0:
        return ng
    if kind == ISLIP:
        return islip(n, rin, rout, nin, nout, iters, pin, pout, grant, best_in, best_out)
    return separable(n, rin, rout, rpri, nin, nout, pin, pout, grant, best_in, best_out,
                     kind == INPUT_FIRST)  # fmt: skip
