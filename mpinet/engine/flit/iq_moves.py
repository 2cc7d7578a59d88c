"""The moves of one input VC of an iq router (numba, called from
:func:`~mpinet.engine.flit.iq_router.internal_steps` and the read phase): a head's route and
its entry into VC allocation, a lone head's VC requests, switch allocation's update (the
flit leaves its input buffer for the crossbar) and the crossbar's (into the output queue).
The arrays are those of :mod:`~mpinet.engine.flit.iq_state`."""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.routing import compiled
from mpinet.routing.vc_policies import ANY_VC, HOPS_VC

#: input VC states (BookSim's idle, routing, vc_alloc, active)
IDLE, ROUTING, VC_ALLOC, ACTIVE = 0, 1, 2, 3
#: stage numbers of ``bt``
S_RT, S_VA, S_SA, S_X = 0, 1, 2, 3
#: the ``dateline`` policy on ``torus:K,N`` (:mod:`mpinet.routing.torus_rings`), which has
#: no compiled rule of its own: its state word and VC halves, computed here; and
#: ``dateline-turn``'s (BookSim's class chosen at a turn), whose ``lcount`` of a link packs
#: ``2 (dimension + 1)`` (bits 0-7), K (bits 8-31) and the dimension's stride K^i (32-)
TORUS_DATELINE, TORUS_TURN = 100, 101
#: ``status[0]`` codes of a routing error (status[1:5] = step, port or VC, node, pid)
PORT_ERR, VC_ERR = 5, 6


@njit(cache=True, error_model="numpy", _nrt=False)
def route_head(n, ln, pk, nvc, deg, nbt, lcount, sport, pk_dst, pk_hops, pk_state, pk_hdr, rule,
               vrule, out):  # fmt: skip
    """The output port and VC range ``out = (port, lo, hi)`` of packet slot ``pk``'s head
    at router ``n`` (``ln`` on the rank, whose rows the links' tables hold, in state ports):
    the terminal port ``deg`` (any VC) at its destination, else the router's compiled hop,
    its port renamed by ``sport`` (:mod:`~mpinet.engine.flit.iq_ports`), and the VC
    policy's range. Returns 0, or an error code (its port mpinet's)."""
    dst = pk_dst[pk]
    if n == dst:
        out[0], out[1], out[2] = deg, 0, nvc
        return 0
    code, rprm, ta, tb = rule
    vpol, vcs, _ = vrule
    port, h2 = compiled.hop(code, rprm, ta, tb, n, dst, pk_hdr[pk, 0])
    if port < 0 and code == compiled.DOR:  # a torus tie, drawn at injection (iq_blocks.ties)
        base = -1 - port
        port = base + ((pk_hdr[pk, 0] >> (base // 2)) & 1)
    else:
        pk_hdr[pk, 0] = h2
    if port < 0 or port >= deg or nbt[ln * deg + sport[ln * deg + port]] < 0:
        out[0] = port
        return PORT_ERR
    port = sport[ln * deg + port]
    hops, state = pk_hops[pk], pk_state[pk]
    if vpol == ANY_VC:
        lo, hi = 0, vcs
    elif vpol == HOPS_VC:
        lo, hi = hops, hops + 1
    elif vpol >= TORUS_DATELINE:  # lcount: 2 (dimension + 1) + crossing of the link
        a = lcount[ln * deg + port]
        d = (a & 255) >> 1
        if vpol == TORUS_DATELINE:
            cls = (state & 1 if (state >> 1) == d else 0) | (a & 1)
        elif (state >> 1) == d:  # dateline-turn: the class kept along the ring
            cls = state & 1
        else:  # a turn: 1 where the coordinate is above the destination's (BookSim's)
            k, stride = (a >> 8) & 0xFFFFFF, a >> 32
            cls = 1 if (n // stride) % k > (dst // stride) % k else 0
        state = d * 2 + cls
        half = max(1, vcs // 2)
        lo, hi = (half, max(vcs, 2)) if cls else (0, half)
    else:  # COUNT_VC
        state = state + lcount[ln * deg + port]
        lo, hi = state, state + 1
    if lo < 0 or hi > vcs or lo >= hi:
        out[0], out[1] = port, lo
        return VC_ERR
    pk_state[pk] = state
    out[0], out[1], out[2] = port, lo, hi
    return 0


@njit(cache=True, error_model="numpy", _nrt=False)
def to_vc_alloc(t, ready, n, iv, pk, prm, s, rule, vrule, status, route_out):
    """The head of packet slot ``pk`` at input VC ``iv`` of router ``n``, its route known
    (lookahead, or routing done): its output port and VC range, then VC allocation (and,
    speculative, switch allocation) from internal step ``ready``; a routing error in
    ``status`` as :func:`route_head`'s."""
    e = route_head(n + prm.lo, n, pk, prm.nvc, prm.deg, s.nbt, s.lcount, s.sport, s.pk_dst,
                   s.pk_hops, s.pk_state, s.pk_hdr, rule, vrule, route_out)  # fmt: skip
    if e and status[0] == 0:
        status[0], status[1], status[2] = e, t, route_out[0 if e == PORT_ERR else 1]
        status[3], status[4] = n, pk
    s.va[iv, il.VRP], s.va[iv, il.VLO], s.va[iv, il.VHI] = route_out[0], route_out[1], route_out[2]
    s.hv[iv, il.VST] = VC_ALLOC
    if prm.spec:
        il.push_sa(s.hv, s.qseq, n, iv, ready, s.m_sa, s.rb)
    il.push_va(s.va, s.qseq, n, iv, ready, s.m_va, s.rb)


@njit(cache=True, error_model="numpy", _nrt=False)
def sa_update(t, istep, n, j, iv, eo, prm, s, rule, vrule, status, route_out):
    """Switch allocation's update of input VC ``j`` (``iv``) of router ``n``, granted
    crossbar output ``eo`` (-1: none): the flit leaves its input buffer for the crossbar, or
    the VC goes back in the queue; returns the flits moved (0 or 1)."""
    nport, nvc, bsz, fl, osp = prm.nport, prm.nvc, prm.bsz, prm.fl, prm.osp
    base = n * nport * nvc
    hv = s.hv
    if eo >= 0:  # the speculative grant holds only with the VC it bid for
        op = il.div(eo, osp, prm.mosp, prm.losp) if osp > 1 else eo
        if prm.spec and s.sa_spec[iv]:  # (sa_spec is 0 unless speculative)
            ok = s.va[iv, il.VA_EV] == istep and hv[iv, il.VST] == ACTIVE and hv[iv, il.VOP] == op
        else:
            ok = True
        if not ok or s.bs_cred[base + op * nvc + hv[iv, il.VOV]] <= 0:
            eo = -1
    if eo < 0:
        il.push_sa(hv, s.qseq, n, iv, istep + 1, s.m_sa, s.rb)
        return 0
    hv[iv, il.SA_T] = -2
    il.unmark(s.m_sa, iv)
    p = il.div(j, nvc, prm.mvc, prm.lvc)
    v = j - p * nvc
    op, ov = (il.div(eo, osp, prm.mosp, prm.losp) if osp > 1 else eo), hv[iv, il.VOV]
    h = hv[iv, il.IBH]
    f = s.ib[iv * bsz + h]
    h = il.wrap(h + 1, bsz)
    hv[iv, il.IBH] = h
    left = hv[iv, il.IBN] - 1
    hv[iv, il.IBN] = left
    k = f - il.div(f, fl, prm.mfl, prm.lfl) * fl
    tail = k == fl - 1
    bsk = base + op * nvc + ov
    s.bs_cred[bsk] -= 1
    if tail:
        s.bs_tail[bsk] = 1
        if not prm.wftc:
            s.bs_use[bsk] = 0
            s.fvm[n * nport + op] |= np.uint64(1) << np.uint64(ov)
    if prm.dx:  # a crossbar of one cycle, one step a cycle: into the output queue now
        o = n * nport + op  # (sent from the next cycle on: obp, iq_write.write_phase)
        y = o * prm.obs + il.wrap(s.obh[o] + s.obn[o], prm.obs)
        s.ob[y] = f << 6 | ov
        if s.obn[o] == 0:
            il.mark(s.obp, o)
        s.obn[o] += 1
    else:
        xqs = prm.xqs
        x = n * xqs + il.wrap(s.xqh[n] + s.xqn[n], xqs)
        xr = s.xr
        xr[x, il.X_FV], xr[x, il.X_OP], xr[x, il.X_T] = f << 6 | ov, op, -1
        xr[x, il.X_RD] = istep + 1
        s.xqn[n] += 1
    s.oqc[n * nport + p] |= 1 << v
    if left == 0:
        if tail:
            hv[iv, il.VST] = IDLE
    elif not tail:
        il.push_sa(hv, s.qseq, n, iv, istep + 1, s.m_sa, s.rb)
    elif prm.rd > 0:  # the next packet's head: route computation
        hv[iv, il.VST] = ROUTING
        il.push(s.rt, il.RT_T, il.RT_RD, il.RT_SEQ, s.qseq, n, iv, istep + 1, s.m_rt, s.rb)
    else:  # lookahead routing: its route is known
        pk = il.div(s.ib[iv * bsz + h], fl, prm.mfl, prm.lfl)
        to_vc_alloc(t, istep + 1, n, iv, pk, prm, s, rule, vrule, status, route_out)
    return 1


@njit(cache=True, error_model="numpy", _nrt=False)
def to_output(n, prm, s):
    """The crossbar's front flit of router ``n`` into its output queue."""
    xqs = prm.xqs
    x = n * xqs + s.xqh[n]
    o = n * prm.nport + s.xr[x, il.X_OP]
    y = o * prm.obs + il.wrap(s.obh[o] + s.obn[o], prm.obs)
    s.ob[y] = s.xr[x, il.X_FV]  # flit and VC in one word (f << 6 | v)
    s.obn[o] += 1
    il.mark(s.obm, o)
    s.xqh[n] = il.wrap(s.xqh[n] + 1, xqs)
    s.xqn[n] -= 1


@njit(cache=True, error_model="numpy", _nrt=False)
def va_requests(j, fv, o0, rin, rout, rpri, nr):
    """VC allocation's requests of input VC ``j`` for the free VCs ``fv`` of the output
    whose first VC is ``o0``, in VC order, from row ``nr``; returns the rows' count."""
    while fv:
        rin[nr], rout[nr], rpri[nr] = j, o0 + il.low(fv), 0
        nr += 1
        fv &= fv - np.uint64(1)
    return nr
