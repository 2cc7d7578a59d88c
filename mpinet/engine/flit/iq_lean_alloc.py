"""The lean iq path's allocators (docs/iq-router.md, "Session 18: the lean path"): BookSim's
iSLIP on a router's requests, one iteration (:func:`islip1`) or several (:func:`islipn`,
``alloc_iters > 1``), its separable allocators (:func:`separable`, "Session 20"), and VC
allocation's heads split by output port (:func:`vc_split`), compiled apart (without
reference counts, as :func:`~mpinet.engine.flit.iq_lean.run_block`: "Counted (P5)") and
called from it; only the smallest (:func:`ahead`, :func:`_beats`, :func:`_grant`) are
inlined (:mod:`~.iq_lean_mode` says why)."""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit.iq_lean_state import OUT, TOK

U1 = np.uint64(1)


@njit(cache=True, inline="always")
def ahead(a, b, ptr, size):
    """Whether ``a`` is nearer than ``b`` at or after the round-robin pointer ``ptr``."""
    da, db = a - ptr, b - ptr
    da += size if da < 0 else 0
    db += size if db < 0 else 0
    return da < db


@njit(cache=True, error_model="numpy", _nrt=False)
def islip1(nr, rin, rout, q, nin, nout, pin, pout, zi, zo, grant, bo, bi):
    """BookSim's iSLIP, one iteration (:func:`~mpinet.engine.flit.iq_alloc.islip` with
    ``iters = 1``), on requests ``q .. q + nr - 1`` of ``rin``/``rout`` (one an input-output
    pair; ``nin`` inputs, ``nout`` outputs: input speedup's crossbar inputs): each output offers
    itself to the requester nearest its grant pointer ``pout[zo + o]``, each input accepts the
    offer nearest its accept pointer ``pin[zi + i]``; a match moves both pointers past it.
    ``grant[r]``: request ``q + r`` won. ``bo``/``bi`` -1 on entry and on return. Inlined in a
    kernel compiled without reference counts (``_nrt=False``): docs/iq-router.md "Counted (P5)"."""
    if nr == 1:
        grant[0] = 1
        i, o = rin[q], rout[q]
        pout[zo + o] = i + 1 if i + 1 < nin else 0
        pin[zi + i] = o + 1 if o + 1 < nout else 0
        return
    for r in range(nr):
        o, b = rout[q + r], bo[rout[q + r]]
        if b < 0 or ahead(rin[q + r], rin[q + b], pout[zo + o], nin):
            bo[o] = r
    for r in range(nr):
        i, b = rin[q + r], bi[rin[q + r]]
        if bo[rout[q + r]] == r and (b < 0 or ahead(rout[q + r], rout[q + b], pin[zi + i], nout)):
            bi[i] = r
    for r in range(nr):  # the grants selected, not branched on (each row's outcome is data:
        i, o = rin[q + r], rout[q + r]  # a mispredicted branch a few rows), bo/bi reset
        g = bi[i] == r
        grant[r] = g
        pout[zo + o] = (i + 1 if i + 1 < nin else 0) if g else pout[zo + o]
        pin[zi + i] = (o + 1 if o + 1 < nout else 0) if g else pin[zi + i]
        bi[i] = -1 if g else bi[i]  # (the winner's row is the only one bi[i] names)
        bo[o] = -1


@njit(cache=True, error_model="numpy", _nrt=False)
def islip_bits(nr, rin, rout, q, nin, nout, pin, pout, zi, zo, grant, bo, bi, smap, npt, om_):
    """:func:`islip1` on switch allocation's rows (``nin``, ``nout`` at most 64) by bit sets:
    each output's requesters a word, each input's offers a word, the one nearest a pointer
    its first bit at or after it. Loops over the outputs and inputs that take part, with no
    test a row (those were mispredicted: docs/iq-router.md "Session 21"). The words are kept
    complemented in ``bo``/``bi`` (-1: none, as :func:`islip1` leaves them); a match's row
    is ``smap``'s, by crossbar input and output port (``o // osp``; ``om_``: ``osp`` and its
    :func:`~mpinet.engine.flit.iq_lists.magic`)."""
    om = np.uint64(0)
    for r in range(nr):
        i, o = rin[q + r], rout[q + r]
        bo[o] &= ~np.int64(1 << i)
        om |= U1 << np.uint64(o)
        grant[r] = 0
    im = np.uint64(0)
    while om:  # each output offers itself to the requester nearest its grant pointer
        o = il.low(om)
        om &= om - U1
        m = np.uint64(~bo[o])
        bo[o] = -1
        i = il.first_at(m, pout[zo + o])
        bi[i] &= ~np.int64(1 << o)
        im |= U1 << np.uint64(i)
    while im:  # each input accepts the offer nearest its accept pointer
        i = il.low(im)
        im &= im - U1
        m = np.uint64(~bi[i])
        bi[i] = -1
        o = il.first_at(m, pin[zi + i])
        grant[smap[i * npt + il.div(o, om_[0], om_[1], om_[2])]] = 1
        pout[zo + o] = i + 1 if i + 1 < nin else 0
        pin[zi + i] = o + 1 if o + 1 < nout else 0


@njit(cache=True, error_model="numpy", _nrt=False)
def islipn(nr, rin, rout, q, nin, nout, pin, pout, zi, zo, grant, bo, bi, iters):
    """iSLIP with ``iters`` iterations (:func:`~mpinet.engine.flit.iq_alloc.islip`), on
    :func:`islip1`'s arguments: each iteration matches among the inputs and outputs still
    unmatched (``bo``/``bi``: -2 - the request while matched), the pointers move on the first
    iteration's matches only. Called only where ``alloc_iters > 1`` (meshconfig's 2);
    compiled apart as :func:`islip1`, in its own branch."""
    for r in range(nr):
        grant[r] = 0
    for it in range(iters):
        for r in range(nr):
            o, i = rout[q + r], rin[q + r]
            if bo[o] < -1 or bi[i] < -1:
                continue
            b = bo[o]
            if b < 0 or ahead(i, rin[q + b], pout[zo + o], nin):
                bo[o] = r
        for r in range(nr):
            o, i = rout[q + r], rin[q + r]
            if bo[o] != r or bi[i] < -1:
                continue
            b = bi[i]
            if b < 0 or ahead(o, rout[q + b], pin[zi + i], nout):
                bi[i] = r
        for r in range(nr):
            o, i = rout[q + r], rin[q + r]
            if bi[i] == r:
                bi[i], bo[o], grant[r] = -2 - r, -2 - r, 1
                if it == 0:
                    pout[zo + o] = i + 1 if i + 1 < nin else 0
                    pin[zi + i] = o + 1 if o + 1 < nout else 0
        for r in range(nr):  # offers not accepted are withdrawn for the next iteration
            o, i = rout[q + r], rin[q + r]
            if bo[o] >= 0:
                bo[o] = -1
            if bi[i] >= 0:
                bi[i] = -1
    for r in range(nr):
        bo[rout[q + r]], bi[rin[q + r]] = -1, -1


@njit(cache=True, inline="always")
def _beats(a, b, lab, r, y, lo, ptr, size):
    """Whether row ``r``'s port ``a`` wins over row ``y``'s ``b`` in a round-robin arbiter
    at ``ptr``: the higher priority (:func:`separable`'s ``lo``), then ``ahead``."""
    if lo > 0 and (lab[r] >= lo) != (lab[y] >= lo):
        return lab[y] >= lo
    return ahead(a, b, ptr, size)


@njit(cache=True, error_model="numpy", _nrt=False)
def separable(nr, rin, rout, q, lab, lo, nin, nout, pin, pout, zi, zo, grant, bo, bi, first_in):
    """BookSim's separable allocators (:func:`~mpinet.engine.flit.iq_alloc.separable`:
    ``separable_input_first`` where ``first_in``, else ``separable_output_first``) on
    :func:`islip1`'s requests: each input (or output) arbiter picks one of its requests, the
    other side's arbiters pick among those picks; a match moves both arbiters' pointers past
    it, an arbiter whose pick was not matched keeps its pointer. Priority: with ``lo > 0`` a
    row ``r`` with ``lab[r] >= lo`` (a speculative switch bid, ``iq_router``'s -1) below the
    others; ``lo = 0``: one priority, ``lab`` not read (not speculative). ``alloc_iters`` does
    not apply (BookSim's separable allocators make one pass). ``bo``/``bi`` as
    :func:`islip1`'s; without reference counts, as it."""
    if nr == 1:
        grant[0] = 1
        i, o = rin[q], rout[q]
        pout[zo + o] = i + 1 if i + 1 < nin else 0
        pin[zi + i] = o + 1 if o + 1 < nout else 0
        return
    if first_in:
        for r in range(nr):
            grant[r] = 0
            i, o, b = rin[q + r], rout[q + r], bi[rin[q + r]]
            if b < 0 or _beats(o, rout[q + b], lab, r, b, lo, pin[zi + i], nout):
                bi[i] = r
        for r in range(nr):
            i, o = rin[q + r], rout[q + r]
            b = bo[o]
            if bi[i] == r and (b < 0 or _beats(i, rin[q + b], lab, r, b, lo, pout[zo + o], nin)):
                bo[o] = r
    else:
        for r in range(nr):
            grant[r] = 0
            i, o, b = rin[q + r], rout[q + r], bo[rout[q + r]]
            if b < 0 or _beats(i, rin[q + b], lab, r, b, lo, pout[zo + o], nin):
                bo[o] = r
        for r in range(nr):
            i, o = rin[q + r], rout[q + r]
            b = bi[i]
            if bo[o] == r and (b < 0 or _beats(o, rout[q + b], lab, r, b, lo, pin[zi + i], nout)):
                bi[i] = r
    for r in range(nr):  # each arbiter's pick is a row: cleared there (-1 on return)
        i, o = rin[q + r], rout[q + r]
        a, b = bi[i] == r, bo[o] == r
        if a and b:
            grant[r] = 1
            pout[zo + o] = i + 1 if i + 1 < nin else 0
            pin[zi + i] = o + 1 if o + 1 < nout else 0
        if a:
            bi[i] = -1
        if b:
            bo[o] = -1


@njit(cache=True, inline="always")
def _grant(z, j, op, g, nv, nq, pin, pout, ofree, ipb, hv, t):
    """Head ``j`` (input VC of the router) accepts the VC of port ``op`` nearest its accept
    pointer among those granting it (``g``), as iSLIP's accept; both pointers moved past the
    match, the VC taken and the head's output set."""
    ov = il.first_from(g, pin[z + j] - op * nv)  # (g's bits are below nv)
    o = op * nv + ov
    pin[z + j] = o + 1 if o + 1 < nq else 0
    pout[z + o] = j + 1 if j + 1 < nq else 0
    ofree[ipb + op] &= ~(U1 << np.uint64(ov))
    hv[z + j, OUT], hv[z + j, TOK] = op << 6 | ov, t + 1


@njit(cache=True, error_model="numpy", _nrt=False)
def _input_first(h, nh, op, hj, hq, hm, nv, nq, pin, pout, z, ofree, ipb, hv, t, rout, bo):
    """:func:`vc_split`'s ``separable_input_first`` on the heads ``h ..`` asking port ``op``:
    each head picks the VC nearest its accept pointer (``rout``), then each VC the picker
    nearest its grant pointer (``bo``, by the port's VC: -1 on entry and on return); the
    grants after every choice (a grant moves the pointers)."""
    for x in range(h, nh):
        if hq[x] == op:
            o = op * nv + il.first_from(hm[x], pin[z + hj[x]] - op * nv)
            rout[x] = o
            b = bo[o]
            if b < 0 or ahead(hj[x], hj[b], pout[z + o], nq):
                bo[o] = x
    for x in range(h, nh):
        if hq[x] == op and bo[rout[x]] == x:  # the VC's winner (its losers: another)
            o = rout[x]
            bo[o] = -1
            _grant(z, hj[x], op, U1 << np.uint64(o - op * nv), nv, nq, pin, pout, ofree, ipb, hv,
                   t)  # fmt: skip


@njit(cache=True, error_model="numpy", _nrt=False)
def vc_split(nh, hj, hq, hm, opc, rin, rout, nv, nq, pin, pout, z, ofree, ipb, hv, t, mode,
             bo, lst):  # fmt: skip
    """VC allocation's heads split by output port (the prototype's ``M_VQ``; docs/iq-router.md
    "Session 18, part 2"): head ``h`` (input VC ``hj[h]`` of the router, output port
    ``hq[h]``, its free VCs ``hm[h]``, ``opc``: heads a port) alone on its port takes the
    free VC nearest at or after its accept pointer, what iSLIP grants when one input asks
    (every VC it asks offers itself to it; any number of iterations), the pointers moved as
    iSLIP moves them (every allocator's grant: :func:`separable`'s too). The heads sharing a
    port are matched port by port (a port's VCs are asked by its heads only, "Session 19"):
    ``mode`` 1, one iSLIP iteration, which is also ``separable_output_first`` (the VCs'
    arbiters pick, then the heads'; pointers moved on a match); ``mode`` 2,
    ``separable_input_first`` (each head picks, then each VC among its pickers; "Session
    20"); ``mode`` 0 (iSLIP's iterations) puts their requests in rows ``0 ..`` of
    ``rin``/``rout`` for :func:`islipn`. Returns the rows' count; ``opc`` 0 again.
    ``bo``: :func:`islip1`'s (mode 2's scratch). ``lst`` (a constant of the kernel's copy:
    its deep copies, docs/iq-router.md "Session 23"): mode 1 lists a port's heads in ``rin``
    (mode 0's rows) first, so that the offers do not test every head's port."""
    nva = 0
    for h in range(nh):
        j, op, fr = hj[h], hq[h], hm[h]
        c = opc[op]
        if c > 1 and mode == 0:
            while fr:
                rin[nva], rout[nva] = j, op * nv + il.low(fr)
                nva += 1
                fr &= fr - U1
            continue
        if c > 1 and mode == 2:  # separable_input_first on the port's heads
            opc[op] = 0
            _input_first(h, nh, op, hj, hq, hm, nv, nq, pin, pout, z, ofree, ipb, hv, t, rout, bo)
            continue
        if c > 1 and lst:  # as below, over the port's heads listed (heads of many ports:
            opc[op] = 0  # the test of a head's port mispredicted, "Session 23")
            u, k = np.uint64(0), 0
            for x in range(h, nh):
                if hq[x] == op:
                    u |= hm[x]
                    rout[x] = 0
                    rin[k] = x
                    k += 1
            while u:
                ov = il.low(u)
                u &= u - U1
                p, bit, best, bd = pout[z + op * nv + ov], U1 << np.uint64(ov), h, nq
                for i in range(k):
                    x = rin[i]
                    if hm[x] & bit:
                        d = hj[x] - p
                        d += nq if d < 0 else 0
                        if d < bd:
                            best, bd = x, d
                rout[best] |= np.int64(bit)
            for i in range(k):
                x = rin[i]
                if rout[x]:
                    _grant(z, hj[x], op, np.uint64(rout[x]), nv, nq, pin, pout, ofree, ipb, hv, t)
            continue
        if c > 1:  # one iSLIP iteration on the port's heads: each VC offers itself to the
            opc[op] = 0  # head nearest its grant pointer (in rout: the VCs a head is offered)
            u = np.uint64(0)
            for x in range(h, nh):
                if hq[x] == op:
                    u |= hm[x]
                    rout[x] = 0
            while u:
                ov = il.low(u)
                u &= u - U1
                p, bit, best, bd = pout[z + op * nv + ov], U1 << np.uint64(ov), h, nq
                for x in range(h, nh):
                    if hq[x] == op and hm[x] & bit:
                        d = hj[x] - p
                        d += nq if d < 0 else 0
                        if d < bd:
                            best, bd = x, d
                rout[best] |= np.int64(bit)
            for x in range(h, nh):
                if hq[x] == op and rout[x]:
                    _grant(z, hj[x], op, np.uint64(rout[x]), nv, nq, pin, pout, ofree, ipb, hv, t)
            continue
        if c == 1:
            _grant(z, j, op, fr, nv, nq, pin, pout, ofree, ipb, hv, t)
    for h in range(nh):
        opc[hq[h]] = 0
    return nva


@njit(cache=True, error_model="numpy", _nrt=False)
def va_grant(nva, rin, rout, nv, nq, b0, ipb, iters, tok, grant, hv, ofree, s):
    """A router's VC allocation (its ``nva`` requests from :func:`vc_split`, iSLIP over its
    input and output VCs from ``b0``) and its grants applied: each winner's output VC taken
    from ``ofree`` and the head in switch allocation from ``tok`` on."""
    if iters == 1:
        islip1(nva, rin, rout, 0, nq, nq, s.va_pin, s.va_pout, b0, b0, grant, s.bo, s.bi)
    else:
        islipn(nva, rin, rout, 0, nq, nq, s.va_pin, s.va_pout, b0, b0, grant, s.bo, s.bi, iters)
    for y in range(nva):
        if grant[y]:
            iv = b0 + rin[y]
            op = rout[y] // nv
            ov = rout[y] - op * nv
            ofree[ipb + op] &= ~(U1 << np.uint64(ov))
            hv[iv, OUT], hv[iv, TOK] = op << 6 | ov, tok
