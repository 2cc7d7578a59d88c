"""The lean iq step (numba; docs/iq-router.md, "Session 18: the lean path"): the cycles of
the general path (:mod:`~mpinet.engine.flit.iq_step`) for the keys where every stage takes
one cycle (``routing_delay``, ``vc_alloc_delay``, ``sw_alloc_delay`` and the crossbar 1,
``credit_delay`` 0, iSLIP, one rank; speculation and speedups: ``iq_lean_spec``; internal
speedup, a pass of the routers per internal step: ``iq_lean_speedup``), in the
shape of session 17's exact prototype: one pass per router split in two, channels and credit
returns as lists per due cycle, the routers with flits a bit set, no stage queues (with
one-cycle stages an item's stage is the cycle it may go, ``TOK``). The same cycles as
BookSim2's ``iq_router`` under those keys, as the general path's; the arrays are
:mod:`~mpinet.engine.flit.iq_lean_state`'s.

A cycle, BookSim's order (``TrafficManager::_Step``): the terminals' deliveries and the
credits due, the flits reaching the routers' input VCs (a head may go to VC allocation a
cycle later: its route computation); the cycle's packets join their source queues and each
terminal sends one flit (the head on a VC round-robin from the last, with a credit); then
each router with flits (``Router::Evaluate``/``_InternalStep``): VC allocation (every free
VC of the head's route range requested, iSLIP over the router's input and output VCs) with
the switch allocation's bids collected (per input and output port the VC nearest the input's
pointer whose output VC has a credit), switch allocation (iSLIP over the ports), and the
winners moved: out of their ring, a credit upstream, onto their channel (read ``latency + 1``
cycles after the next: the crossbar's cycle), a tail frees its output VC.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit import iq_step as ist
from mpinet.engine.flit.iq_alloc import INPUT_FIRST, ISLIP, OUTPUT_FIRST
from mpinet.engine.flit.iq_lean_alloc import ahead as _ahead
from mpinet.engine.flit.iq_lean_alloc import (
    islip1,
    islip_bits,
    islipn,
    separable,
    va_grant,
    vc_split,
)
from mpinet.engine.flit.iq_lean_io import (
    KM,
    U1,
    arrivals,
    batch,
    deliveries,
    due,
    enqueue,
    fetch_router,
    keep,
    tail_credits,
    terminals,
    unkeep,
    wait,
)
from mpinet.engine.flit.iq_lean_mode import FAR
from mpinet.engine.flit.iq_lean_route import dor_route
from mpinet.engine.flit.iq_lean_spec import (
    KP,
    KS,
    SPEC,
    kbase,
    rekey,
    sa_order,
    spec_bid,
    spec_deep,
    spec_held,
    tail_keys,
    va_keys,
    xout,
)
from mpinet.engine.flit.iq_lean_speedup import (
    after,
    credit_slot,
    free,
    route_batches,
    sbatch,
    start,
    steps,
    wrap_down,
)
from mpinet.engine.flit.iq_lean_state import CNT, FS, HD, OUT, RHI, RLO, RP, TOK
from mpinet.engine.flit.iq_moves import route_head
from mpinet.prefetch import prefetch
from mpinet.routing import compiled
from mpinet.routing.vc_policies import ANY_VC


@njit(cache=True, error_model="numpy", _nrt=False)
def run_block(t0, t_end, last, win_lo, win_hi, quiet, inj, prm, s, rule, vrule, deliv, hop,
              rows, status, mode):  # fmt: skip
    """Cycles ``t0 + 1 .. t_end``, as :func:`~mpinet.engine.flit.iq_step.run_block`'s
    (its arguments and ``status`` but the look; rows ``R_MOVED`` the flits moved, ``R_WORK``
    0): returns the last cycle run. ``status[0]``: :data:`~.iq_step.DONE`, ``ROOM`` (the hop
    rows), ``FINISHED``, ``STALL`` or a routing error (the run then goes again on the general
    path, which reports it). ``mode``: :func:`~.iq_lean_mode.mode`'s tuple."""
    full, fetch = len(mode) & 1, (len(mode) % 6) >> 1  # constants in each compiled copy
    sep = 1 if len(mode) >= 6 else 0  # (the separable calls below test len(mode): pruned)
    deep = len(mode) // 18  # stages of several cycles ("Session 22")
    spd = 1 if len(mode) >= 24 else 0  # internal speedup ("Session 23", iq_lean_speedup)
    multi = s.spg[1] > 1 if spd else False  # several internal steps a cycle (or only 1)
    off, pid, src, dst, hdr = inj
    n_, deg, npt, nv, bsz, fl = prm.nnode, prm.deg, prm.nport, prm.nvc, prm.bsz, prm.fl
    lat, lo, rd, cd, wt, iters = prm.lat, prm.lo, prm.rd, prm.cd, prm.wftc, prm.iters
    isp = prm.isp  # input speedup: crossbar input p * isp + v % isp, a VC pointer each
    rdp, xd = prm.rd > 1 if deep else False, prm.xd if deep else 1  # (batches: iq_lean_io)
    vad, sad = prm.vad if deep else 1, prm.sad if deep else 1  # (their batches: stb, sdw)
    wheel = rdp or vad > 1  # heads waiting cycles: out of pass 1 until due (iq_lean_io.wait)
    spec = prm.spec if full else 0
    kd = rdp or vad > 1 or sad > 1  # output speedup: the queues' keys of batches (rc_keys)
    svd = spec != 0 and vad > 1  # speculative bids while VC allocation's batch is in flight
    sak = prm.sak if sep else ISLIP  # or a separable allocator ("Session 20"); VC's: vmode
    vmode = 1 if prm.vak == OUTPUT_FIRST or iters == 1 else 0
    vmode = 2 if sep and prm.vak == INPUT_FIRST else vmode
    osp = prm.osp if full else 1  # output speedup: crossbar outputs, output queues
    oq = osp > 1 or xd > 1 or multi  # a flit may wait in its output queue (xd > 1: crossbar)
    nin, nout = npt * isp, npt * osp
    niv, nq = n_ * npt * nv, npt * nv
    hv, rte, buf, vm, pm, vrr = s.hv, s.rte, s.buf, s.vm, s.pm, s.vrr
    ofree, cred = s.ofree, s.cred
    rin, rout, rlab, grant, smap = s.rin, s.rout, s.rlab, s.grant, s.smap
    hj, hq, hm, opc = s.hj, s.hq, s.hm, s.opc
    nar, nkr = s.cn.size, s.kn.size
    cap, capk = s.ck.size // nar, s.kk.size // nkr
    so = nq * nv  # switch allocation's rows after VC allocation's
    dmask = s.dn.size - 1
    # dor with any VC routed here without divisions (iq_lean_route); the others by route_head
    dfast = rule[0] == compiled.DOR and vrule[0] == ANY_VC
    dk, dnd, dmode, vcs = 1, 1, 0, vrule[1]
    if dfast:
        dk, dnd, dmode = rule[1][0], rule[1][1], rule[1][2]
    dm, dlim = ((1 << 32) + dk - 1) // dk, (1 << 32) // dk  # iq_lists.magic(dk)
    flat = nq <= 64  # a router's VCs in one word, pm's (a VC's port by vdm, vdl)
    vdm, vdl = ((1 << 32) + nv - 1) // nv, (1 << 32) // nv
    bits = nin <= 64 and nout <= 64  # switch allocation by bit sets (islip_bits)
    omg = (osp, ((1 << 32) + osp - 1) // osp, (1 << 32) // osp)
    # the prefetches only where the VCs' rows and rings pass 1 MB (ms:3,2: 1.6 MB); under
    # it they cost instructions for nothing (mesh88-lat, hc8-L16: +8-10 %, "Session 19")
    far = niv * (bsz + 4) * 4 > FAR if fetch == 2 else fetch == 1
    in_flight, nd, nh, idle = status[5], status[6], status[7], status[8]
    status[0], status[1] = ist.DONE, t0
    for t in range(t0 + 1, t_end + 1):
        k = t - t0 - 1
        if prm.record_hops and nh + n_ * deg * osp * (s.spg[1] if spd else 1) > hop.shape[0]:
            status[0], status[1] = ist.ROOM, t - 1
            break
        if len(mode) >= 18:  # noqa: SIM102 (the deep copies' calls: pruned by numba)
            if wheel:  # the VCs due now back in pass 1
                due(t, s)
        flits = s.misc[0]  # granted last cycle: on their links in this one
        s.misc[0] = 0
        if oq:  # sent from their output queues in this one
            flits = s.lf[t % nar]
            s.lf[t % nar] = 0
        d0 = nd  # the terminals' deliveries: tails ejected three cycles ago (node order)
        nd = deliveries(t, t & dmask, n_, nd, oq, deliv, s)
        x = t % nkr  # the credits due (each its own counter: any order)
        if wt:
            tail_credits(x, capk, niv, nv, bsz, s, vdm, vdl)
        else:
            for i in range(s.kn[x]):
                cred[s.kk[x * capk + i]] += 1
        s.kn[x] = 0
        tb, ks = t, 1  # the cycle's first internal step (TOK's unit) and the steps
        if len(mode) >= 24:  # (the speedup copies' calls: pruned by numba in the others)
            tb, ks = steps(s)
        moved = arrivals(t, tb, s, prm, rule, rd, far, osp, flat, rdp and not multi,
                         wheel and not multi, kd)  # fmt: skip
        if len(mode) >= 24:  # noqa: SIM102
            if multi and rdp:  # route computation's batches in steps (iq_lean_speedup)
                route_batches(s, t, tb, t % nar, moved, rd, prm, flat, wheel)
        moved += nd - d0
        a, b = off[k], off[k + 1]
        enqueue(t, a, b, pid, src, dst, hdr, lo, s)  # at the back of their source queues
        moved += terminals(t, s, nv, npt, fl, deg, niv, wt)
        # the routers with flits, in node order
        sd = (t + lat + 2) % nar  # a granted flit's arrival downstream
        l1 = (t + 1) % nar  # output speedup: the link flits' slot of the next cycle
        # credits back: a terminal applies its own as it reads them (no credit_delay)
        kl, kt, ke = (t + lat + 1 + cd) % nkr, (t + 2) % nkr, (t + 5 + cd) % nkr
        dl = (t + 3) & dmask  # a tail into the terminal: delivered then
        win = win_lo <= t + 1 < win_hi
        nwd = s.actb.size
        for wq in range(nwd * ks):  # (internal speedup: ks passes, each an internal step)
            wi, tk, nx = wq, t, t + 1  # tk: TOK's now; nx: the cycle a granted flit is
            if spd:  # in its output queue (the router's next step)
                st = wq // nwd
                wi, tk = wq - st * nwd, tb + st
                nx = t + 1 if st == ks - 1 else t
            word = s.actb[wi]
            while word:
                n = (wi << 6) + il.low(word)
                word &= word - U1
                if far and word:  # the next router's lines, a visit ahead (ms:3,2: misses)
                    fetch_router((wi << 6) + il.low(word), s, npt, nv, nin)
                ipb, b0, eib = n * npt, n * nq, n * nin
                nr, nva, nhd = 0, 0, 0
                vfree, sfree, smove, nvh, nsa = True, True, False, 0, 0
                if vad > 1:  # VC allocation's batch in flight: no head evaluated
                    vfree = t >= s.stb[n, 2] + vad
                if sad > 1:  # switch allocation's: no bid; its grants moved at its update
                    sfree = t >= s.stb[n, 3] + sad
                    smove = t == s.stb[n, 3] + sad - 1
                if len(mode) >= 24:  # noqa: SIM102
                    if multi:  # (the batches in steps: iq_lean_speedup)
                        vfree, sfree, smove = free(s, n, tk, vfree, sfree, smove, vad, sad)
                w = pm[n]
                if vad > 1 and sad > 1 and not vfree and not sfree:
                    w = np.uint64(0)  # both allocations busy: pass 1 would skip every VC
                # pass 1: heads' routes and VC requests, switch allocation's bids
                while w:  # by port; or, where a router's VCs fit a word (pm holds them), all
                    if flat:  # in one loop (the ports' loop exits mispredicted, "Session 21")
                        m, p0, w = w, 0, np.uint64(0)
                        if wheel:
                            m &= ~s.wm[n]
                    else:
                        p0 = il.low(w)
                        w &= w - U1
                        m = vm[ipb + p0]
                        if wheel:
                            m &= ~s.wm[ipb + p0]
                    while m:
                        j = il.low(m)
                        m &= m - U1
                        p = il.div(j, nv, vdm, vdl) if flat else p0
                        v = j - p * nv if flat else j
                        ip = ipb + p
                        iv = ip * nv + v
                        if tk < hv[iv, TOK]:
                            if len(mode) >= 18:  # noqa: SIM102 (a head granted, its batch
                                if svd and hv[iv, OUT] >= 0:  # in flight: still speculative)
                                    nr, nsa = spec_deep(p, v, iv, rte[iv, RP], False, sfree, ipb,
                                                        eib, nv, npt, isp, so, nr, nsa, sad, s,
                                                        prm)  # fmt: skip
                            continue
                        out = hv[iv, OUT]
                        if out < 0:
                            if vad > 1:  # (a head with no free VC starts a batch too)
                                if not vfree and not svd:
                                    continue
                                if vfree:
                                    s.wo[nvh] = iv  # (osp > 1: its place in the queue, rekey)
                                    nvh += 1
                            op = rte[iv, RP]
                            if op < 0:  # route computation's result (BookSim: its stage)
                                pk = buf[iv * bsz + hv[iv, HD]] >> FS
                                if dfast:  # dor, any VC: no divisions (iq_lean_route)
                                    op = dor_route(n, lo, s.pk_dst[pk], dk, dnd, dmode, dm,
                                                   dlim, deg, nv, vcs, s.nbt, s.sport)  # fmt: skip
                                    hi = nv if op == deg else vcs
                                    rte[iv, RP], rte[iv, RLO], rte[iv, RHI] = op, 0, hi
                                if op < 0:
                                    e = route_head(n + lo, n, pk, nv, deg, s.nbt, s.lcount,
                                                   s.sport, s.pk_dst, s.pk_hops, s.pk_state,
                                                   s.pk_hdr, rule, vrule, s.ro)  # fmt: skip
                                    if e:
                                        status[0], status[1] = e, t
                                        return t
                                    op = s.ro[0]
                                    rte[iv, RP], rte[iv, RLO], rte[iv, RHI] = op, s.ro[1], s.ro[2]
                            if len(mode) >= 18:  # noqa: SIM102 (speculation, allocations of
                                if spec and (vad > 1 or sad > 1):  # several cycles: iq_lean_spec)
                                    nr, nsa = spec_deep(p, v, iv, op, vfree, sfree, ipb, eib,
                                                        nv, npt, isp, so, nr, nsa, sad, s,
                                                        prm)  # fmt: skip
                                    if not vfree:
                                        continue
                            fr = ofree[ipb + op] & il.vmask(rte[iv, RLO], rte[iv, RHI])
                            if fr:  # its requests: by output port, after the pass (vc_split)
                                hj[nhd], hq[nhd], hm[nhd] = p * nv + v, op, fr
                                opc[op] += 1
                                nhd += 1
                                if spec and vad == 1 and sad == 1:  # a switch bid too (SPEC)
                                    nr = spec_bid(p, v, op, fr, ipb, eib, nv, npt, isp, so, nr, s,
                                                   prm)  # fmt: skip
                            continue
                        if sad > 1:  # (an item with no credit starts a batch too)
                            if not sfree:
                                continue
                            s.wk[nsa] = iv
                            nsa += 1
                        op, ov = out >> 6, out & 63
                        if cred[(ipb + op) * nv + ov] <= 0:
                            continue
                        if far:  # a winner's flit: read after the allocators
                            prefetch(buf, iv * bsz + hv[iv, HD])
                        ei = p if isp == 1 else p * isp + v - (v // isp) * isp
                        key = ei * npt + op  # one bid a (crossbar input, output): the VC
                        y = smap[key]  # nearest the input's pointer
                        if y < 0:
                            smap[key] = nr
                            rin[so + nr], rlab[nr] = ei, v
                            xout(p, op, so, nr, osp, s)
                            nr += 1
                        elif rlab[y] >= SPEC or _ahead(v, rlab[y], vrr[eib + ei], nv):
                            rlab[y] = v
                if nhd:  # a head alone on its port granted, the others' requests kept
                    nva = vc_split(nhd, hj, hq, hm, opc, rin, rout, nv, nq, s.va_pin, s.va_pout,
                                   b0, ofree, ipb, hv, tk, vmode, s.bo, deep)  # fmt: skip
                if nva:  # VC allocation: iSLIP over the router's input and output VCs
                    va_grant(nva, rin, rout, nv, nq, b0, ipb, iters, tk + 1, grant, hv, ofree, s)
                if len(mode) >= 18:  # noqa: SIM102
                    if vad > 1 and nvh:  # the grants applied vad - 1 cycles on: in switch
                        s.stb[n, 2] = t  # allocation from vad on (no one reads them before)
                        for o in range(npt if svd else 0):  # but the speculative bids'
                            s.vpd[ipb + o] = 0  # (iq_lean_spec.spec_deep)
                        g = dc = t + vad  # (TOK and its cycle)
                        if len(mode) >= 24:  # noqa: SIM102
                            if multi:  # the step after the batch's update
                                g = start(s.stb, s.spg, n, 2, tk, t, vad, t, tb) + 1
                                dc = after(s.spg, g - 1, t + vad - 1, t, tb)
                        for i in range(nhd):
                            if hv[b0 + hj[i], OUT] >= 0:
                                hv[b0 + hj[i], TOK] = g
                                j = hj[i]
                                p = il.div(j, nv, vdm, vdl)
                                if svd:
                                    o = hv[b0 + j, OUT]
                                    s.vpd[ipb + (o >> 6)] |= U1 << np.uint64(o & 63)
                                    continue
                                wait(dc, n if flat else ipb + p, j if flat else j - p * nv, s)
                        if osp > 1:  # the others put back in VC allocation's queue
                            rekey(nvh, s.wo, s.vkey, (t + vad - 1) * KS + 2 * KP, hv, True)
                if osp > 1 and nhd and not spec:  # the granted join switch allocation
                    va_keys(nhd, hj, b0, hv, s.vkey, s.skey, kbase(tk, vad, sad))
                if nr:  # switch allocation: iSLIP over the crossbar inputs and the ports
                    if sak != ISLIP:  # speculative bids (rlab >= SPEC) below the others
                        if len(mode) >= 6:  # a separable run's copy: inlined
                            separable(nr, rin, rout, so, rlab, SPEC if spec else 0, nin, nout,
                                      s.sa_pin, s.sa_pout, eib, ipb * osp, grant, s.bo, s.bi,
                                      sak == INPUT_FIRST)  # fmt: skip
                    elif iters == 1 and bits and nr > 1:  # (bit sets: no test a row)
                        islip_bits(nr, rin, rout, so, nin, nout, s.sa_pin, s.sa_pout, eib,
                                   ipb * osp, grant, s.bo, s.bi, smap, npt, omg)  # fmt: skip
                    elif iters == 1:
                        islip1(nr, rin, rout, so, nin, nout, s.sa_pin, s.sa_pout, eib, ipb * osp,
                               grant, s.bo, s.bi)  # fmt: skip
                    else:
                        islipn(nr, rin, rout, so, nin, nout, s.sa_pin, s.sa_pout, eib, ipb * osp,
                               grant, s.bo, s.bi, iters)  # fmt: skip
                if len(mode) >= 18:  # noqa: SIM102
                    if sad > 1:  # the grants kept for the batch's update, sad - 1 cycles on
                        if nsa:
                            s.stb[n, 3] = t
                            if osp > 1:  # the batch put back in its queue at its update
                                rekey(nsa, s.wk, s.skey, (t + sad - 1) * KS + 3 * KP, hv, False)
                            if len(mode) >= 24:  # noqa: SIM102
                                if multi:
                                    start(s.stb, s.spg, n, 3, tk, t, sad, t, tb)
                            nr = keep(nr, n, nin, so, rin, rout, rlab, grant, smap, npt, osp, s)
                        elif smove:
                            nr = unkeep(n, nin, so, rin, rout, rlab, grant, osp, s)
                # the winners: out of their rings, a credit upstream, onto their channels (or
                # output queues: in switch allocation's queue order)
                nw = nr if osp == 1 else sa_order(nr, rin, s.rop, rlab, so, grant, smap, npt,
                                                  isp, ipb, nv, s.skey, s.wo, s.wk)  # fmt: skip
                i2 = 0  # the next packets' heads appended (iq_lean_spec)
                for z in range(nw):
                    y = z if osp == 1 else s.wo[z]
                    ei, op = rin[so + y], rout[so + y]
                    if osp == 1:
                        smap[ei * npt + op] = -1
                        if grant[y] == 0:
                            continue
                    else:
                        op = s.rop[y]
                    v = rlab[y]
                    if v >= SPEC:  # held only if VC allocation gave the head, now, a VC
                        v -= SPEC  # with a credit; the pointers move all the same
                        iv = (ipb + (ei if isp == 1 else ei // isp)) * nv + v
                        out = hv[iv, OUT]
                        if len(mode) >= 18:  # noqa: SIM102
                            if (vad > 1 or sad > 1) and not spec_held(iv, tk, vad, sad, s):
                                out = -1
                        if out < 0 or cred[(ipb + op) * nv + (out & 63)] <= 0:
                            vrr[eib + ei] = il.wrap(v + isp, nv)
                            continue
                    p = ei if isp == 1 else ei // isp
                    ip = ipb + p
                    iv = ip * nv + v
                    ov = hv[iv, OUT] & 63
                    h = hv[iv, HD]
                    code = buf[iv * bsz + h]
                    hv[iv, HD] = h + 1 if h + 1 < bsz else 0
                    c = hv[iv, CNT] - 1
                    hv[iv, CNT] = c  # an emptied VC's bits cleared by selects (c is data)
                    if flat:
                        pm[n] &= ~(np.uint64(1 if c == 0 else 0) << np.uint64(p * nv + v))
                    else:
                        vm[ip] &= ~(np.uint64(1 if c == 0 else 0) << np.uint64(v))
                        pm[n] &= ~(np.uint64(1 if vm[ip] == 0 else 0) << np.uint64(p))
                    x = v + isp - nv  # (isp <= nv: a select, not il.wrap's branch)
                    vrr[eib + ei] = (x if x >= 0 else x + nv) if isp <= nv else il.wrap(v + isp, nv)
                    x = kt if p == deg else kl
                    if len(mode) >= 24:  # noqa: SIM102 (pruned by numba in the other copies)
                        if multi:  # one message a step and port, one sent a cycle
                            x = credit_slot(s, ip, tk, t, 2 if p == deg else lat + 1 + cd, nkr)
                    s.kk[x * capk + s.kn[x]] = s.up[ip] + v
                    s.kn[x] += 1
                    cred[(ipb + op) * nv + ov] -= 1
                    fk, pk = code & KM, code >> FS
                    if fk == fl - 1:  # the tail: its output VC free, the next head routed
                        hv[iv, OUT] = -1
                        if wt:  # free once its last credit is back
                            s.otl[(ipb + op) * nv + ov] = 1
                        else:
                            ofree[ipb + op] |= U1 << np.uint64(ov)
                        if c > 0:  # (its route's entry fetched: read in 1 + rd cycles)
                            e = tk + 1
                            if len(mode) >= 18:
                                if rdp and not multi:
                                    e = batch(s.stb, n, 0, t + 1, rd)
                                dc = e + rd  # (TOK's cycle)
                                if len(mode) >= 24:  # noqa: SIM102
                                    if multi:  # TOK: the step after its batch's update
                                        dc = 0  # (rd < 2: not out of pass 1)
                                        if rdp:
                                            u, cu = sbatch(s.stb, s.spg, n, 0, tk + 1, nx, rd,
                                                           t, tb)  # fmt: skip
                                            e, dc = u + 1 - rd, after(s.spg, u, cu, t, tb)
                                if wheel and dc > t + 1:  # (pass 1 reads it at e + rd)
                                    wait(dc, n if flat else ip, p * nv + v if flat else v, s)
                            hv[iv, TOK], rte[iv, RP] = e + rd, -1
                            nxt = buf[iv * bsz + hv[iv, HD]] >> FS
                            compiled.touch(rule[0], rule[1], rule[2], n + lo, s.pk_dst[nxt])
                            if osp > 1:
                                tail_keys(iv, tk, e, i2, rd, vad, sad, kd, s)
                                i2 += 1
                    snd = nx  # the cycle it leaves its output queue (d cycles late)
                    if len(mode) >= 18:  # noqa: SIM102
                        if xd > 1 and not multi:  # into the output queue at its crossbar
                            snd = batch(s.stb, n, 1, t + 1, xd) + xd - 1  # batch's update
                        if len(mode) >= 24:  # noqa: SIM102
                            if xd > 1 and multi:  # (its cycle, the batch in steps)
                                snd = sbatch(s.stb, s.spg, n, 1, tk + 1, nx, xd, t, tb)[1]
                    if oq:
                        o1 = s.osend[ipb + op] + 1  # (a select: numba's max was a call)
                        snd = o1 if o1 > snd else snd
                        s.osend[ipb + op] = snd
                    d = snd - t - 1
                    if op < deg:
                        ar = sd + d  # (d < nar: selects, not il.wrap's branches on data)
                        ar = ar - nar if ar >= nar else ar
                        if len(mode) >= 24:  # noqa: SIM102
                            if multi:  # (d = -1: sent in this cycle)
                                ar = wrap_down(ar, nar)
                        x = ar * cap + s.cn[ar]
                        s.ck[x], s.cc[x] = s.down[ipb + op] << 6 | ov, code
                        s.cn[ar] += 1
                        if not oq:
                            s.misc[0] += 1
                        elif multi and d < 0:  # on its link in this cycle
                            flits += 1
                        else:
                            s.lf[l1 + d - nar if l1 + d >= nar else l1 + d] += 1
                        if win if not oq else win_lo <= snd < win_hi:
                            s.load[n * deg + op] += 1
                        s.pk_hops[pk] += fk == 0  # (no branch: fk is data)
                        if prm.record_hops and fk == 0:
                            hop[nh, 0], hop[nh, 1], hop[nh, 2] = snd, s.pk_pid[pk], n + lo
                            hop[nh, 3], hop[nh, 4] = s.nbt[n * deg + op], op
                            nh += 1
                    else:  # into the terminal: its credit back, a tail delivers
                        x = ke + d - nkr if ke + d >= nkr else ke + d  # (d < nkr)
                        if len(mode) >= 24:  # noqa: SIM102
                            if multi:
                                x = wrap_down(x, nkr)
                        s.kk[x * capk + s.kn[x]] = (ipb + deg) * nv + ov
                        s.kn[x] += 1
                        if fk == fl - 1:
                            x = (dl + d) & dmask
                            s.dq[x * n_ + s.dn[x]] = pk
                            s.dn[x] += 1
                    moved += 1
                if pm[n] == 0:
                    s.actb[wi] &= ~(U1 << np.uint64(n & 63))
        ndel = nd - d0
        in_flight += (b - a) - ndel
        rows[k, ist.R_FLITS], rows[k, ist.R_DELIV], rows[k, ist.R_INJ] = flits, ndel, b - a
        rows[k, ist.R_MOVED] = moved + flits
        idle = 0 if moved + flits > 0 else idle + 1
        status[1] = t
        if in_flight <= 0 and t >= last:
            status[0] = ist.FINISHED
            break
        if in_flight > 0 and t > last and idle >= quiet:
            status[0] = ist.STALL
            break
    status[5], status[6], status[7], status[8] = in_flight, nd, nh, idle
    return status[1]
