"""One internal step of the iq routers (numba): BookSim2's input-queued router's stages.

Per router, as ``src/routers/iq_router.cpp`` behaves (written from its documented
behaviour and cycle-by-cycle traces, docs/iq-router.md): the stages *evaluate* (route
computation, VC allocation, switch allocation, crossbar) on the items waiting for them,
then *update* the items whose delay has passed; an item an update hands on is evaluated at
the next internal step, so each stage takes its delay in cycles and the stages follow one
another without overlap (``speculative``: switch allocation bids with VC allocation).
Switch allocation takes the flit out of its input buffer, spends the downstream credit and
returns one upstream; the crossbar delivers it to the output queue, which sends one flit a
cycle (:mod:`~mpinet.engine.flit.iq_step`). The arrays are those of
:mod:`~mpinet.engine.flit.iq_state`.

The ports are the state's (:mod:`~mpinet.engine.flit.iq_ports`): BookSim's order rotated
by ``prm.rot``, so the allocators' requests and round-robin pointers go by them with no
renaming and ties break as on BookSim; only the crossbar output a flit takes under output
speedup reads BookSim's number of its input.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit.iq_alloc import allocate, supersedes
from mpinet.engine.flit.iq_moves import (  # noqa: F401 (the names the other phases use)
    ACTIVE,
    IDLE,
    PORT_ERR,
    ROUTING,
    S_RT,
    S_SA,
    S_VA,
    S_X,
    TORUS_DATELINE,
    VC_ALLOC,
    VC_ERR,
    route_head,
    sa_update,
    to_output,
    to_vc_alloc,
    va_requests,
)
from mpinet.engine.flit.iq_write import send_credit


@njit(cache=True, error_model="numpy", _nrt=False)
def internal_steps(t, istep, prm, s, rule, vrule, status, route_out):
    """One internal step of every active router at cycle ``t`` (internal step ``istep``);
    returns the number of flits switch allocation moved (progress). ``status`` as
    :func:`route_head`'s errors (the first of the step). Each stage visits the input VCs of
    its event list (:mod:`~mpinet.engine.flit.iq_lists`), in the order of a full scan."""
    nport, nvc, bsz = prm.nport, prm.nvc, prm.bsz
    fl, isp, osp, spec = prm.fl, prm.isp, prm.osp, prm.spec
    rd, vad, sad, xd, xqs = prm.rd, prm.vad, prm.sad, prm.xd, prm.xqs
    ib, hv, va = s.ib, s.hv, s.va
    rt = s.rt
    sa_res, sa_spec, bt = s.sa_res, s.sa_spec, s.bt
    xr, xqh, xqn, oqc = s.xr, s.xqh, s.xqn, s.oqc
    bs_cred, bs_use, bs_tail, fvm = s.bs_cred, s.bs_use, s.bs_tail, s.fvm
    sw_rr = s.sw_rr
    rin, rout, rpri, rlab, grant = s.rin, s.rout, s.rpri, s.rlab, s.grant
    best_in, best_out, sa_map, ei_grant = s.best_in, s.best_out, s.sa_map, s.ei_grant
    qseq, order = s.qseq, s.order
    m_rt, m_va, m_sa = s.m_rt, s.m_va, s.m_sa
    nin_sa, nout_sa = nport * isp, nport * osp
    ordered = osp > 1  # the updates in their queues' order: flits share an output queue
    # an item that cannot bid is put back without its batch where nothing can tell: a stage
    # of one cycle (no batch in flight) and no output speedup (the queue's order unused)
    quick_va, quick_sa = vad == 1 and not ordered, sad == 1 and not ordered
    moved = 0
    t2, tl = t % 2, t % prm.sl  # the write phase's channel slot (credits sent now: dx)
    rb, rl = s.rb, s.rl
    nvis = 0
    for ri in range(rb.size):  # the routers with an item, in node order
        word = rb[ri]
        while word:
            rl[nvis] = (ri << 6) + il.low(word)
            nvis += 1
            word &= word - np.uint64(1)
    for a in range(nvis):
        n = rl[a]
        base = n * nport * nvc  # the router's first input VC (and first output buffer state)
        end = base + nport * nvc
        if xqn[n] == 0 and not (il.any_in(m_rt, base, end) or il.any_in(m_va, base, end)
                                or il.any_in(m_sa, base, end)):  # fmt: skip
            il.unmark(rb, n)  # no item in any stage, nothing in the crossbar: nothing to do
            continue
        # -- route computation (routing_delay > 0)
        if rd > 0 and bt[n * 4 + S_RT] < 0:
            for wi in range(base >> 6, ((end - 1) >> 6) + 1):
                word = il.span(m_rt, wi, base, end)
                while word:
                    j = (wi << 6) + il.low(word) - base
                    word &= word - np.uint64(1)
                    iv = base + j
                    if rt[iv, il.RT_T] == -1 and rt[iv, il.RT_RD] <= istep:
                        rt[iv, il.RT_T] = t + rd - 1
                        bt[n * 4 + S_RT] = t + rd - 1
        # -- VC allocation: every free output VC of the route's range is requested
        nva = 0
        if bt[n * 4 + S_VA] < 0:
            nr = 0
            j1, m1, o1 = -1, np.uint64(0), 0  # the first head: its requests written only
            for wi in range(base >> 6, ((end - 1) >> 6) + 1):  # when a second one comes
                word = il.span(m_va, wi, base, end)
                while word:
                    j = (wi << 6) + il.low(word) - base
                    word &= word - np.uint64(1)
                    iv = base + j
                    if va[iv, il.VA_T] != -1 or va[iv, il.VA_RD] > istep:
                        continue
                    op = va[iv, il.VRP]
                    fv = fvm[n * nport + op] & il.vmask(va[iv, il.VLO], va[iv, il.VHI])
                    if not fv and quick_va:  # no VC free: back in the queue, as its
                        va[iv, il.VA_RD] = istep + 1  # update would put it (skipped: cheaper)
                        continue
                    nva += 1
                    if nva == 1:
                        j1, m1, o1 = j, fv, op * nvc
                        continue
                    if nva == 2:
                        nr = va_requests(j1, m1, o1, rin, rout, rpri, nr)
                    nr = va_requests(j, fv, op * nvc, rin, rout, rpri, nr)
            if nva > 1:
                allocate(prm.vak, nr, rin, rout, rpri, nport * nvc, nport * nvc, prm.iters,
                         s.va_pin[base : base + nport * nvc],
                         s.va_pout[base : base + nport * nvc], grant,
                         best_in, best_out)  # fmt: skip
            w1 = -1  # one head: its arbiter's choice, as every allocator makes it (uncontested)
            if nva == 1 and m1:
                w1 = o1 + il.first_from(m1, s.va_pin[base + j1] - o1)
                s.va_pin[base + j1] = w1 + 1 if w1 + 1 < nport * nvc else 0
                s.va_pout[base + w1] = j1 + 1 if j1 + 1 < nport * nvc else 0
            if nva:
                for wi in range(base >> 6, ((end - 1) >> 6) + 1):
                    word = il.span(m_va, wi, base, end)
                    while word:
                        j = (wi << 6) + il.low(word) - base
                        word &= word - np.uint64(1)
                        iv = base + j
                        if va[iv, il.VA_T] == -1 and va[iv, il.VA_RD] <= istep:
                            va[iv, il.VA_T] = t + vad - 1
                            va[iv, il.VA_RES] = -1
                            va[iv, il.VA_EV] = istep
                if nva > 1:
                    for r in range(nr):
                        if grant[r]:
                            va[base + rin[r], il.VA_RES] = rout[r]
                elif w1 >= 0:
                    va[base + j1, il.VA_RES] = w1
                bt[n * 4 + S_VA] = t + vad - 1
        # -- switch allocation: per (crossbar input, crossbar output) one VC, round-robin
        sa_now, nsr = False, 0
        if bt[n * 4 + S_SA] < 0:
            nr = 0
            nsa = 0
            for wi in range(base >> 6, ((end - 1) >> 6) + 1):
                word = il.span(m_sa, wi, base, end)
                while word:
                    j = (wi << 6) + il.low(word) - base
                    word &= word - np.uint64(1)
                    iv = base + j
                    if hv[iv, il.SA_T] != -1 or hv[iv, il.SA_RD] > istep:
                        continue
                    prio = 0
                    if hv[iv, il.VST] == ACTIVE:
                        op = hv[iv, il.VOP]
                        ok = bs_cred[base + op * nvc + hv[iv, il.VOV]] > 0
                    else:  # speculative, in VC allocation: a free VC with a credit, low priority
                        op = va[iv, il.VRP]
                        ok = False
                        fv = fvm[n * nport + op] & il.vmask(va[iv, il.VLO], va[iv, il.VHI])
                        while fv:
                            if bs_cred[base + op * nvc + il.low(fv)] > 0:
                                ok = True
                                break
                            fv &= fv - np.uint64(1)
                        prio = -1
                    if not ok and quick_sa:  # no credit: back in the queue, as its update
                        hv[iv, il.SA_RD] = istep + 1  # would put it (skipped: cheaper)
                        continue
                    nsa += 1
                    if not quick_sa:  # read by the batch's update only
                        sa_res[iv] = -1
                    if spec:  # 0 unless speculative (a head in VC allocation bids)
                        sa_spec[iv] = 0 if not ok else -prio
                    if not ok:
                        continue
                    p = il.div(j, nvc, prm.mvc, prm.lvc)
                    v = j - p * nvc
                    ei = p * isp + (v - il.div(v, isp, prm.misp, prm.lisp) * isp if isp > 1 else 0)
                    eo = op * osp
                    if osp > 1:  # the output's crossbar port by the input's BookSim number
                        pb = p + prm.rot if p + prm.rot < nport else p + prm.rot - nport
                        eo += pb - il.div(pb, osp, prm.mosp, prm.losp) * osp
                    key = ei * nout_sa + eo
                    r = sa_map[key]
                    if r < 0:
                        sa_map[key] = nr
                        rin[nr], rout[nr], rpri[nr], rlab[nr] = ei, eo, prio, v
                        nr += 1
                    elif supersedes(v, prio, rlab[r], rpri[r], sw_rr[n * nin_sa + ei], nvc):
                        rpri[r], rlab[r] = prio, v
            if nr == 1:  # one request: granted, as every allocator grants it (uncontested)
                grant[0] = 1
                s.sa_pin[n * nin_sa + rin[0]] = rout[0] + 1 if rout[0] + 1 < nout_sa else 0
                s.sa_pout[n * nout_sa + rout[0]] = rin[0] + 1 if rin[0] + 1 < nin_sa else 0
            elif nr:
                allocate(prm.sak, nr, rin, rout, rpri, nin_sa, nout_sa, prm.iters,
                         s.sa_pin[n * nin_sa:(n + 1) * nin_sa],
                         s.sa_pout[n * nout_sa:(n + 1) * nout_sa], grant, best_in,
                         best_out)  # fmt: skip
            for r in range(nr):
                sa_map[rin[r] * nout_sa + rout[r]] = -1
                if grant[r]:
                    ei_grant[rin[r]] = r
            nsr = nr
            if nsa and quick_sa:  # a stage of one cycle: the grants taken in its update's pass
                sa_now = True
            elif nsa:
                for wi in range(base >> 6, ((end - 1) >> 6) + 1):
                    word = il.span(m_sa, wi, base, end)
                    while word:
                        j = (wi << 6) + il.low(word) - base
                        word &= word - np.uint64(1)
                        iv = base + j
                        if hv[iv, il.SA_T] != -1 or hv[iv, il.SA_RD] > istep:
                            continue
                        hv[iv, il.SA_T] = t + sad - 1
                        p = il.div(j, nvc, prm.mvc, prm.lvc)
                        v = j - p * nvc
                        ei = p * isp + (v - il.div(v, isp, prm.misp, prm.lisp) * isp if isp > 1
                                        else 0)  # fmt: skip
                        r = ei_grant[ei]
                        if r >= 0 and rlab[r] == v:
                            sa_res[iv] = rout[r]
                            sw_rr[n * nin_sa + ei] = il.wrap(v + isp, nvc)
                for r in range(nr):
                    ei_grant[rin[r]] = -1
                bt[n * 4 + S_SA] = t + sad - 1
        # -- crossbar (of one cycle: its update takes the flits queued before this step's
        # switch allocation, the ones evaluated now, so it marks nothing)
        if xd > 1 and bt[n * 4 + S_X] < 0:
            for k in range(xqn[n]):
                x = n * xqs + il.wrap(xqh[n] + k, xqs)
                if xr[x, il.X_T] == -1 and xr[x, il.X_RD] <= istep:
                    xr[x, il.X_T] = t + xd - 1
                    bt[n * 4 + S_X] = t + xd - 1
        # -- updates: route computation
        if rd > 0 and 0 <= bt[n * 4 + S_RT] <= t:
            bt[n * 4 + S_RT] = -1
            nb = il.batch(rt, il.RT_T, il.RT_SEQ, base, nport * nvc, ordered, order, m_rt)
            for q in range(nb):
                iv = base + order[q]
                rt[iv, il.RT_T] = -2
                il.unmark(m_rt, iv)
                pk = il.div(ib[iv * bsz + hv[iv, il.IBH]], fl, prm.mfl, prm.lfl)
                to_vc_alloc(t, istep + 1, n, iv, pk, prm, s, rule, vrule, status, route_out)
        # -- updates: VC allocation
        if 0 <= bt[n * 4 + S_VA] <= t:
            bt[n * 4 + S_VA] = -1
            nb = il.batch(va, il.VA_T, il.VA_SEQ, base, nport * nvc, ordered, order, m_va)
            for q in range(nb):
                iv = base + order[q]
                ovc = va[iv, il.VA_RES]
                if ovc >= 0 and bs_use[base + ovc] == 0:
                    va[iv, il.VA_T] = -2
                    il.unmark(m_va, iv)
                    bs_use[base + ovc] = 1
                    bs_tail[base + ovc] = 0
                    op = il.div(ovc, nvc, prm.mvc, prm.lvc)
                    ov = ovc - op * nvc
                    hv[iv, il.VOP], hv[iv, il.VOV] = op, ov
                    fvm[n * nport + op] &= ~(np.uint64(1) << np.uint64(ov))
                    hv[iv, il.VST] = ACTIVE
                    if not spec:
                        il.push_sa(hv, qseq, n, iv, istep + 1, m_sa, s.rb)
                else:
                    il.push_va(va, qseq, n, iv, istep + 1, m_va, s.rb)
        # -- updates: switch allocation (the flit leaves its input buffer)
        if sa_now:  # one pass: each item evaluated now takes its grant and is updated
            for wi in range(base >> 6, ((end - 1) >> 6) + 1):
                word = il.span(m_sa, wi, base, end)
                while word:
                    j = (wi << 6) + il.low(word) - base
                    word &= word - np.uint64(1)
                    iv = base + j
                    if hv[iv, il.SA_T] != -1 or hv[iv, il.SA_RD] > istep:
                        continue
                    p = il.div(j, nvc, prm.mvc, prm.lvc)
                    v = j - p * nvc
                    ei = p * isp + (v - il.div(v, isp, prm.misp, prm.lisp) * isp if isp > 1
                                    else 0)  # fmt: skip
                    r = ei_grant[ei]
                    eo = -1
                    if r >= 0 and rlab[r] == v:
                        eo = rout[r]
                        sw_rr[n * nin_sa + ei] = il.wrap(v + isp, nvc)
                    moved += sa_update(t, istep, n, j, iv, eo, prm, s, rule, vrule, status,
                                        route_out)  # fmt: skip
            for r in range(nsr):
                ei_grant[rin[r]] = -1
        elif 0 <= bt[n * 4 + S_SA] <= t:
            bt[n * 4 + S_SA] = -1
            nb = il.batch(hv, il.SA_T, il.SA_SEQ, base, nport * nvc, ordered, order, m_sa)
            for q in range(nb):
                j = order[q]
                iv = base + j
                if hv[iv, il.SA_T] >= 0:
                    moved += sa_update(t, istep, n, j, iv, sa_res[iv], prm, s, rule, vrule,
                                        status, route_out)  # fmt: skip
        # -- updates: crossbar (into the output queues)
        if prm.dx:  # nothing in the crossbar: switch allocation's update queued the flits
            pass
        elif xd == 1:  # what was queued before this step (switch allocation's are ready later)
            while xqn[n] > 0 and xr[n * xqs + xqh[n], il.X_RD] <= istep:
                to_output(n, prm, s)
        elif 0 <= bt[n * 4 + S_X] <= t:
            bt[n * 4 + S_X] = -1
            while xqn[n] > 0 and xr[n * xqs + xqh[n], il.X_T] >= 0:
                to_output(n, prm, s)
        # -- the step's credits, one message per input port: sent now where a cycle has one
        # internal step (``dx``: the queue would hold this message alone and the write phase
        # send it in this cycle, into the same slot; the rank's exchange in the same order)
        for p in range(nport):
            m = oqc[n * nport + p]
            if m:
                oqc[n * nport + p] = 0
                if prm.dx:
                    send_credit(n, p, m, t2, tl, prm, s)
                    continue
                c = n * nport + p
                s.cq[c * prm.cqs + il.wrap(s.cqh[c] + s.cqn[c], prm.cqs)] = m
                s.cqn[c] += 1
                il.mark(s.cqm, c)
                s.work[n] += 1
    return moved
