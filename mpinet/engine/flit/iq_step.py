"""The iq model's cycles (numba): terminals, channels and the routers' steps, BookSim2's
order within a cycle (``src/trafficmanager.cpp``'s ``_Step``; docs/iq-router.md):

1. the terminals take the flit and the credit their router sent them (:func:`read_phase`,
   with the routers' inputs: flits into input buffers, credits into the credit delay line,
   or applied as read where ``credit_delay = 0``);
2. the step's new packets join their source queues, and each terminal sends at most one
   flit of its front packet into its router's injection channel, on a VC it chose for the
   head (round-robin from the last one, free and with a credit), and the credit of a flit
   it took in (:func:`inject_phase`);
3. the routers' internal steps (:func:`~mpinet.engine.flit.iq_router.internal_steps`,
   ``internal_speedup`` per cycle, fractions accumulated);
4. each router sends one flit per output queue and one credit message per input port
   (:func:`write_phase`).

``work[node]`` counts what the node has to do (flits and credits in it or on their way to
it, packets in its source queue); the nodes with work are the active list ``act[:nact]``.

``_nrt=False`` on these kernels, the routers' step and the allocators: no reference counting
of the bundle's arrays (numba took and dropped a reference on every array argument of each
helper: 23-25 % of a run, docs/iq-router.md "Speed"), so they allocate nothing; their
scratch is in the bundle (``ro``, ``mv``). The phases and the moves are compiled apart and
called since session 25, as the lean kernel's helpers (:mod:`~.iq_lean_mode`): inlined, the
general path took 123 s of CPU to compile on a cold cache, called 88 s, at the same speed
(docs/iq-router.md, "Session 25"). Its cache is still renewed when only they change, because
:mod:`mpinet.numba_cache` stamps every kernel with all of mpinet's numba files.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit import iq_looks as iql
from mpinet.engine.flit import iq_router as ir
from mpinet.engine.flit.iq_write import write_in, write_phase

__all__ = ["read_phase", "inject_phase", "write_phase", "compact", "enqueue", "run_block"]

#: :func:`run_block`'s status codes (``status[0]``)
DONE, ROOM, FINISHED, STALL = 0, 1, 2, 3
#: columns of a step row: link flits, delivered, injected, progress, active nodes, flits
#: that crossed ranks (:mod:`.iq_ranks`)
R_FLITS, R_DELIV, R_INJ, R_MOVED, R_WORK, R_CROSS = range(6)


@njit(cache=True, error_model="numpy", _nrt=False)
def _credit(k, q, v, bs_cred, bs_use, bs_tail, fvm, bsz, wftc):
    """A credit back at downstream buffer state ``k`` (VC ``v`` of output port ``q``; ``q <
    0``: a terminal's, no free-VC word); the VC is free again at the tail's last credit under
    ``wait_for_tail_credit``."""
    bs_cred[k] += 1
    if wftc and bs_tail[k] and bs_cred[k] == bsz:
        bs_use[k] = 0
        if q >= 0:
            fvm[q] |= np.uint64(1) << np.uint64(v)


@njit(cache=True, error_model="numpy", _nrt=False)
def _take(t, tl, t2, istep, b, n, p, prm, s, rule, vrule, status, route_out, moved):
    """The flit arriving at input port ``p`` of router ``n`` (``b = n * nport + p``) into
    its VC buffer; a head is routed now (lookahead) or joins route computation, a VC's new
    front flit joins switch allocation. ``tl``, ``t2``: the cycle's channel slot and parity,
    the read phase's (a division a flit where taken here: ``sl`` is not a constant)."""
    nvc, bsz, deg, fl, sl = prm.nvc, prm.bsz, prm.deg, prm.fl, prm.sl
    ib, hv = s.ib, s.hv
    if p < deg:
        c = (n * deg + p) * sl + tl  # the channels by their reader's input port
        fv = s.fc[c]  # flit and VC in one word (f << 6 | v)
        f, v = fv >> 6, fv & 63
        s.fc[c] = -1
    else:
        c = n * 2 + t2
        f, v = s.ic[c], s.icv[c]
        s.ic[c] = -1
    moved[0] += 1
    iv = (n * prm.nport + p) * nvc + v
    ib[iv * bsz + il.wrap(hv[iv, il.IBH] + hv[iv, il.IBN], bsz)] = f
    hv[iv, il.IBN] += 1
    st = hv[iv, il.VST]
    if st == ir.IDLE:  # a head: routed now (lookahead) or after routing_delay
        if prm.rd > 0:
            hv[iv, il.VST] = ir.ROUTING
            il.push(s.rt, il.RT_T, il.RT_RD, il.RT_SEQ, s.qseq, n, iv, istep, s.m_rt, s.rb)
        else:  # lookahead routing: VC allocation (and speculation) from now
            pk = il.div(f, fl, prm.mfl, prm.lfl)
            e = ir.route_head(n + prm.lo, n, pk, nvc, deg, s.nbt, s.lcount, s.sport,
                              s.pk_dst, s.pk_hops, s.pk_state, s.pk_hdr, rule, vrule,
                              route_out)  # fmt: skip
            if e and status[0] == 0:
                status[0], status[1] = e, t
                status[2] = route_out[0 if e == ir.PORT_ERR else 1]
                status[3], status[4] = n, pk
            va = s.va
            va[iv, il.VRP], va[iv, il.VLO], va[iv, il.VHI] = (
                route_out[0],
                route_out[1],
                route_out[2],
            )
            hv[iv, il.VST] = ir.VC_ALLOC
            if prm.spec:
                il.push_sa(hv, s.qseq, n, iv, istep, s.m_sa, s.rb)
            il.push_va(va, s.qseq, n, iv, istep, s.m_va, s.rb)
    elif st == ir.ACTIVE and hv[iv, il.IBN] == 1:
        il.push_sa(hv, s.qseq, n, iv, istep, s.m_sa, s.rb)


@njit(cache=True, error_model="numpy", _nrt=False)
def read_phase(t, istep, prm, s, rule, vrule, status, route_out, deliv, nd, moved):
    """:func:`read_in` as a kernel of its own (for :mod:`.iq_ranks`' block)."""
    return read_in(t, istep, prm, s, rule, vrule, status, route_out, deliv, nd, moved)


@njit(cache=True, error_model="numpy", _nrt=False)  # called, not inlined (iq_lean_mode)
def read_in(t, istep, prm, s, rule, vrule, status, route_out, deliv, nd, moved):
    """Step 1 (see the module docstring); returns the delivery rows' count after it.
    ``moved[0]`` counts the flits taken in (progress); ``status`` a routing error. Visits
    the cycle's events only (``tm``, ``fm``, ``cm``, ``pm``: bit sets by arrival slot), each
    node's in the order of a scan of its ports, BookSim's (nodes do not touch each other's
    state here): the terminal first where BookSim numbers it 0 and output speedup reads it."""
    nport, nvc, bsz, deg, fl, sl, cs = prm.nport, prm.nvc, prm.bsz, prm.deg, prm.fl, prm.sl, prm.cs
    own = prm.hi - prm.lo
    niv = own * nport * nvc  # the terminals' states after
    bs_cred, bs_use, bs_tail, work = s.bs_cred, s.bs_use, s.bs_tail, s.work
    t2, tl, tc = t % 2, t % sl, t % cs
    w0, w1, nrp = il.words(own), il.words(own * nport), own * nport
    d = (t + prm.cd) % cs  # the credits' slot in the delay line
    # the terminals: their ejected flits (a tail delivers its packet), their credits
    for wi in range(w0):
        word = s.tm[t2 * w0 + wi]
        if not word:
            continue
        s.tm[t2 * w0 + wi] = 0
        while word:
            n = (wi << 6) + il.low(word)
            word &= word - np.uint64(1)
            e = n * 2 + t2
            f = s.ec[e]
            if f >= 0:
                s.ec[e] = -1
                work[n] -= 1
                moved[0] += 1
                s.ecr_p[n] |= np.uint64(1) << np.uint64(s.ecv[e])
                pk = il.div(f, fl, prm.mfl, prm.lfl)
                if f - pk * fl == fl - 1:
                    nd = il.deliver(pk, t, nd, deliv, s)
            m = s.tcr[e]
            if m:
                s.tcr[e] = 0
                work[n] -= 1
                while m:  # the VCs credited (each its own buffer state: any order)
                    v = il.low(m)
                    m &= m - np.uint64(1)
                    _credit(niv + n * nvc + v, -1, v, bs_cred, bs_use, bs_tail, s.fvm, bsz,
                            prm.wftc)  # fmt: skip
    # the routers' inputs: flits into their VC buffers. BookSim queues a router's arrivals
    # by its input's number, and anynet's (rot = 1) is 0 for the terminal, the state's last
    # port: where a queue's order is read (output speedup: an output queue takes a cycle's
    # flits in it) each router's terminal comes first (routers share no queue)
    if prm.osp > 1 and prm.rot:
        for n in range(own):
            b = n * nport + deg
            k = tl * w1 + (b >> 6)
            bit = np.uint64(1) << np.uint64(b & 63)
            if s.fm[k] & bit:
                s.fm[k] &= ~bit
                _take(t, tl, t2, istep, b, n, deg, prm, s, rule, vrule, status, route_out, moved)
    for wi in range(w1):
        word = s.fm[tl * w1 + wi]
        if not word:
            continue
        s.fm[tl * w1 + wi] = 0
        while word:
            b = (wi << 6) + il.low(word)
            word &= word - np.uint64(1)
            n = il.div(b, nport, prm.mport, prm.lport)
            _take(
                t, tl, t2, istep, b, n, b - n * nport, prm, s, rule, vrule, status, route_out, moved
            )
    # the routers' credits: into the credit_delay line (then those due now, below); with
    # no delay (``cd = 0``) applied as read: the line's walk would take the same messages
    # in the same order (each touches only its own port's buffer states)
    for wi in range(w1):
        word = s.cm[tl * w1 + wi]
        if not word:
            continue
        s.cm[tl * w1 + wi] = 0
        while word:
            b = (wi << 6) + il.low(word)
            word &= word - np.uint64(1)
            n = il.div(b, nport, prm.mport, prm.lport)
            o = b - n * nport
            if o < deg:
                c = (n * deg + o) * sl + tl  # the credits by their reader's output port
                m = s.cr[c]
                s.cr[c] = 0
            else:
                c = n * 2 + t2
                m = s.ecr[c]
                s.ecr[c] = 0
            if prm.cd:  # into slot d's list: read in port order, the order applied
                k = 2 * (d * nrp + s.pm[d])
                s.pc[k], s.pc[k + 1] = b, m
                s.pm[d] += 1
                continue
            work[n] -= 1
            while m:
                v = il.low(m)
                m &= m - np.uint64(1)
                _credit(b * nvc + v, b, v, bs_cred, bs_use, bs_tail, s.fvm, bsz, prm.wftc)
    # the credits due now (``cd > 0``): slot tc's list, in the order read at cycle t - cd,
    # the ports' order (the bit set walked before this list gave the same order)
    for i in range(s.pm[tc] if prm.cd else 0):
        k = 2 * (tc * nrp + i)
        b, m = np.int64(s.pc[k]), s.pc[k + 1]
        work[il.div(b, nport, prm.mport, prm.lport)] -= 1
        while m:
            v = il.low(m)
            m &= m - np.uint64(1)
            _credit(b * nvc + v, b, v, bs_cred, bs_use, bs_tail, s.fvm, bsz, prm.wftc)
    if prm.cd:
        s.pm[tc] = 0
    return nd


@njit(cache=True, error_model="numpy", _nrt=False)  # called, not inlined (iq_lean_mode)
def inject_phase(t, prm, s, moved):
    """Step 2's sending (the new packets joined their queues before): one flit per
    terminal; the credits of the flits the terminals took in."""
    nvc, fl, niv = prm.nvc, prm.fl, (prm.hi - prm.lo) * prm.nport * prm.nvc
    bs_cred, bs_use, bs_tail, work = s.bs_cred, s.bs_use, s.bs_tail, s.work
    t2 = t % 2
    ta, w1 = (t + 2) % prm.sl, il.words((prm.hi - prm.lo) * prm.nport)  # the arrival's slot
    for a in range(s.nact[0]):
        n = s.act[a]
        m = s.ecr_p[n]
        if m:
            s.ecr_p[n] = 0
            s.ecr[n * 2 + t2] = m
            il.mark(s.cm, ((ta * w1) << 6) + n * prm.nport + prm.deg)
            work[n] += 1
        pk = s.sq_h[n]
        if pk < 0:
            continue
        k = s.sq_k[n]
        vc = s.sq_vc[n]
        if k == 0 and vc < 0:  # the head's VC: round-robin from the last one taken
            lvc = s.last_vc[n]
            for i in range(1, nvc + 1):
                c = 0 if lvc < 0 or lvc >= nvc else il.wrap(lvc + i, nvc)
                b = niv + n * nvc + c
                if bs_use[b] == 0 and bs_cred[b] > 0:
                    vc = c
                    break
            if vc < 0:
                continue
        b = niv + n * nvc + vc
        if bs_cred[b] <= 0:
            continue
        if k == 0:
            bs_use[b], bs_tail[b] = 1, 0
            s.last_vc[n] = vc
            s.pk_adm[pk] = t
        bs_cred[b] -= 1
        if k == fl - 1:
            bs_tail[b] = 1
            if not prm.wftc:
                bs_use[b] = 0
        c = n * 2 + t2
        s.ic[c], s.icv[c] = pk * fl + k, vc
        il.mark(s.fm, ((ta * w1) << 6) + n * prm.nport + prm.deg)
        work[n] += 1
        moved[0] += 1
        if k == fl - 1:
            s.sq_h[n] = s.pk_next[pk]
            if s.sq_h[n] < 0:
                s.sq_t[n] = -1
            s.sq_k[n], s.sq_vc[n] = 0, -1
            work[n] -= 1
        else:
            s.sq_k[n], s.sq_vc[n] = k + 1, vc


@njit(cache=True, error_model="numpy", _nrt=False)  # called, not inlined (iq_lean_mode)
def compact(s):
    """The active list anew, in node order (the phases then walk the arrays in order: fewer
    cache misses), without the nodes that have no work."""
    k = 0
    actb = s.actb
    for wi in range(actb.size):
        word = actb[wi]
        while word:
            n = (wi << 6) + il.low(word)
            word &= word - np.uint64(1)
            if s.work[n] > 0:
                s.act[k] = n
                k += 1
            else:
                s.inact[n] = 0
                il.unmark(actb, n)
    s.nact[0] = k


@njit(cache=True, error_model="numpy", _nrt=False)
def enqueue(t, pid, src, dst, hdr, prm, s):
    """New packets (created at cycle ``t``, in id order) at the back of their source
    queues."""
    for i in range(pid.shape[0]):
        s.pk_nfree[0] -= 1
        pk = s.pk_free[s.pk_nfree[0]]
        s.pk_pid[pk], s.pk_src[pk], s.pk_dst[pk] = pid[i], src[i], dst[i]
        s.pk_inj[pk], s.pk_adm[pk], s.pk_hops[pk], s.pk_state[pk] = t, -1, 0, 0
        for c in range(hdr.shape[1]):
            s.pk_hdr[pk, c] = hdr[i, c]
        s.pk_next[pk], s.pk_away[pk] = -1, 0
        n = src[i] - prm.lo
        if s.sq_t[n] >= 0:
            s.pk_next[s.sq_t[n]] = pk
        else:
            s.sq_h[n] = pk
        s.sq_t[n] = pk
        il.activate(n, s.work, s.inact, s.act, s.nact, s.actb)


@njit(cache=True, error_model="numpy", _nrt=False)
def run_block(t0, t_end, last, win_lo, win_hi, quiet, acc, inj, prm, s, rule, vrule, deliv,
              hop, rows, status, look):  # fmt: skip
    """Cycles ``t0 + 1 .. t_end``; returns the last cycle run. ``inj = (off, pid, src, dst,
    hdr)``: cycle ``t0 + 1 + k``'s packets are rows ``off[k]:off[k + 1]``. ``status``:
    ``[0]`` code (:data:`DONE` ... or a routing error), ``[1]`` the cycle, ``[5]`` packets in
    flight (in and out), ``[6]`` delivery rows, ``[7]`` hop rows, ``[8]`` cycles without
    progress; ``acc[0]`` the internal speedup's fraction carried over, ``acc[1]`` its value;
    ``look``: the deadlock look while injecting (:mod:`~mpinet.engine.flit.iq_looks`: a
    look that found dead fronts or whose scan did not fit ends the call, its code in
    ``status[0]``)."""
    off, pid, src, dst, hdr = inj
    route_out, moved = s.ro, s.mv  # scratch in the bundle: this kernel allocates nothing
    in_flight, nd, nh, idle = status[5], status[6], status[7], status[8]
    nnode = prm.nnode
    status[0], status[1] = DONE, t0
    for t in range(t0 + 1, t_end + 1):
        k = t - t0 - 1
        a, b = off[k], off[k + 1]
        if nd + nnode > deliv.shape[0] or (
            prm.record_hops and nh + nnode * prm.nport > hop.shape[0]
        ):
            status[0], status[1] = ROOM, t - 1
            break
        compact(s)
        moved[0] = 0
        d0 = nd
        nd = read_in(t, s.istep[0], prm, s, rule, vrule, status, route_out, deliv, nd, moved)
        if b > a:
            enqueue(t, pid[a:b], src[a:b], dst[a:b], hdr[a:b], prm, s)
        inject_phase(t, prm, s, moved)
        acc[0] += acc[1]
        while acc[0] >= 1.0:
            acc[0] -= 1.0
            moved[0] += ir.internal_steps(t, s.istep[0], prm, s, rule, vrule, status,
                                          route_out)  # fmt: skip
            s.istep[0] += 1
        flits, nh = write_in(t, win_lo <= t < win_hi, prm, s, hop, nh)
        ndel = nd - d0
        in_flight += (b - a) - ndel
        rows[k, R_FLITS], rows[k, R_DELIV], rows[k, R_INJ] = flits, ndel, b - a
        rows[k, R_MOVED], rows[k, R_WORK] = moved[0] + flits, s.nact[0]
        idle = 0 if moved[0] + flits > 0 else idle + 1
        status[1] = t
        if status[0] >= ir.PORT_ERR:
            break
        if in_flight <= 0 and t >= last:
            status[0] = FINISHED
            break
        if in_flight > 0 and t > last and idle >= quiet:
            status[0] = STALL
            break
        if iql.pace(t, last, in_flight, moved[0] + flits, prm.nnode, look):
            status[0] = iql.one_rank(prm, s, look)
            if status[0]:
                break
    status[5], status[6], status[7], status[8] = in_flight, nd, nh, idle
    return status[1]
