"""The flit engine's compiled steps on several ranks: the kernels of a step, called from
the compiled block of steps (:mod:`~mpinet.engine.flit.rank_loop`) or one step per call,
two compiled calls around one mpi4py exchange with the neighbour ranks
(:class:`~mpinet.engine.flit.rank_steps.RankSteps`: with an MPI whose handles are pointers,
or routes walked at injection). In a block, :func:`block_moves` runs the step's first part
(under sdc after :func:`post_demand`'s reduction, called from the compiled code).

A step ``t`` on rank ``r`` (the same model as docs/switching.md, the same order of work as
the step-by-step path, so the same run on any rank count):

1. :func:`moves`: the requests, the port model (sdc: the demand per port summed over the
   ranks by one ``Allreduce`` between :func:`requests` and :func:`moves`), the moves and
   the step's end on the rank, and the flits and credits owed to other ranks packed into
   one message per neighbour (:func:`pack`);
2. :meth:`Exchange.run`: one message to and from each rank that owns a far end of one of
   the rank's links (its *neighbours*; persistent receives, one ``Isend`` each): a
   header (rows, credits, heads), the wire rows, the credits;
3. :func:`arrivals`: the credits applied, the flits taken in (a head opens its packet's
   record and a segment), the buffers they filled checked, the packets injected at their
   destination delivered, and the heads that reached a node routed with the step's
   injections by the router's compiled hop (:func:`mpinet.engine.flit.step_route.route`);
4. one ``Allreduce`` of the step's counters (the engine's loop: trace row, end, deadlock).

Why: the step-by-step path's Python between the kernels (a vectorized router call, an
``Alltoall`` of counts and an ``Alltoallv``, numpy bookkeeping) cost more than the kernels
on a rank's half of ms:3,2 (issue 33). Numba's type dispatch of the bundles costs tens of
microseconds a call; :class:`Direct` calls the compiled entry point of the signature the
first call resolved. The kernels a block runs every step allocate nothing and are compiled
without reference counting (``_nrt=False``, as :mod:`~mpinet.engine.flit.kernels`' are): a function
that takes the bundles otherwise counts a reference to each of their some 65 arrays as it
is entered and left, several calls a step (docs/performance.md, "The 2-rank step, split").
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from mpinet.engine.flit import chunk, step_end
from mpinet.engine.flit import kept_requests as kr
from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import port_demand as pd
from mpinet.engine.flit import state as fs
from mpinet.engine.flit import step_route as sr
from mpinet.engine.flit.direct import Direct  # noqa: F401 (its callers read it here)
from mpinet.engine.flit.kport_nodes import kport_deny
from mpinet.engine.flit.layout import list_once
from mpinet.engine.flit.park import credit_back

#: a message's header: wire rows, credit pairs, heads among the rows, then the step's
#: counters (:data:`NK` words, written by the compiled loop of :mod:`.rank_loop`)
H_ROWS, H_CRED, H_HEADS, H_CNT = 0, 1, 2, 3
#: the counters a message carries: the step's flits, deliveries, injections, cross-rank
#: flits, an error; then the previous step's (``K_LAG`` 1 if present) error and active buffers;
#: the iq router's flits moved inside the routers (:mod:`.iq_ranks`: its stall test)
K_FLITS, K_DELIV, K_INJ, K_CROSS, K_ERR, K_LAG, K_LAG_ERR, K_LAG_WORK, K_MOVED, NK = range(10)
HEADER = H_CNT + NK
#: the exchange's tag (the engine's other messages are collectives)
TAG = 3301

Exchange = namedtuple(
    "Exchange", ["slot", "owner", "send", "nsend", "recv", "rbufs", "width"]
)  # fmt: skip
Exchange.__doc__ = """The arrays of the exchange: ``slot[rank]`` the neighbour index of a rank
(-1: not one); ``owner``: the global VC-buffer ids where each rank's begin (``bounds * degree *
V``); per neighbour its message out (``send[j, :nsend[j]]``) and in (``recv[j]``); ``rbufs``:
the buffers filled by a step's rows in (checked); ``width``: a wire row's width."""


@njit(cache=True, error_model="numpy", _nrt=False)
def requests(t, prm, segs, pkts, links, bufs, so):
    """The step's requests (buffers in id order every 8 steps, as the other paths)."""
    if t % 8 == 0:
        fs.sort_active(bufs.act, bufs.nact[0], so.rq)
    return fk.collect(prm, segs, pkts, links, bufs, so)


@njit(cache=True, error_model="numpy", _nrt=False, inline="always")
def _slot(ex, nn, b):
    """The neighbour index of the rank owning global buffer ``b`` (the one neighbour: 0)."""
    if nn == 1:
        return 0
    return ex.slot[np.searchsorted(ex.owner, b, side="right") - 1]


@njit(cache=True, error_model="numpy", _nrt=False)
def pack(prm, so, ex):
    """The step's wire rows and remote credits, one message per neighbour, in the order
    they were made (the receiver takes them as the step-by-step exchange delivers them).
    In place: the headers count each message's rows and credits, then ``ex.nsend`` walks
    its rows and its credits (no scratch allocated per step)."""
    cnt, width, send, nsend = so.cnt, ex.width, ex.send, ex.nsend
    nn = send.shape[0]
    nw, nc = cnt[fk.C_WIRE], cnt[fk.C_CRED_R]
    wire, cred = so.wire, so.cred_r
    for j in range(nn):
        send[j, H_ROWS], send[j, H_CRED], send[j, H_HEADS] = 0, 0, 0
        nsend[j] = HEADER
    for i in range(nw):
        send[_slot(ex, nn, wire[i, fk.W_BUF]), H_ROWS] += 1
    for i in range(nc):
        send[_slot(ex, nn, cred[i, 0]), H_CRED] += 1
    for i in range(nw):
        j = _slot(ex, nn, wire[i, fk.W_BUF])
        a = nsend[j]
        for c in range(width):
            send[j, a + c] = wire[i, c]
        send[j, H_HEADS] += wire[i, fk.W_HEAD]
        nsend[j] = a + width
    for i in range(nc):  # after each message's rows
        j = _slot(ex, nn, cred[i, 0])
        a = nsend[j]
        send[j, a], send[j, a + 1] = cred[i, 0], cred[i, 1]
        nsend[j] = a + 2


@njit(cache=True, error_model="numpy")
def moves(t, nt, in_window, sdc, first, prm, segs, pkts, links, bufs, so, ex):
    """The port model (sdc: its choice on ``first``, as ``kernels.sdc_demand`` left it), the
    moves, the step's end on this rank and the messages packed; returns the heads that
    reached a node of the rank (``so.new``), -1 on a model violation (``so.out``)."""
    if prm.kind == fk.SDC:
        fk.choose_links(nt, prm, segs, pkts, so, first, sdc)
    else:
        fk.port_model(nt, prm, segs, pkts, links, so, sdc)
    so.cnt[:] = 0
    fk.move(t, nt, in_window, prm, segs, pkts, links, bufs, so)
    nnew = step_end.settle(nt, sdc, prm, segs, pkts, links, bufs, so)
    pack(prm, so, ex)
    return -1 if so.out[0] else nnew


@njit(cache=True, error_model="numpy")
def step_moves(t, in_window, prm, segs, pkts, links, bufs, so, ex):
    """:func:`requests` then :func:`moves`, for every port model but sdc on several ranks."""
    nt = requests(t, prm, segs, pkts, links, bufs, so)
    first = np.empty(nt, np.int64)
    sdc = -1
    if prm.kind == fk.SDC:  # one rank: its demand is all
        sdc = fk.sdc_port(fk.sdc_demand(nt, prm, segs, pkts, links, so, first))
    return moves(t, nt, in_window, sdc, first, prm, segs, pkts, links, bufs, so, ex)


@njit(cache=True, error_model="numpy", _nrt=False)
def post_demand(fns, hnd, t, prm, segs, pkts, links, bufs, so, net, err, inc):
    """sdc: this rank's movable requests per port (none on a failed rank) in ``net.dem``,
    their sum over the ranks posted; returns 0. The rank's requests and counts are kept
    between steps in ``inc`` (:mod:`~mpinet.engine.flit.kept_requests`, as on one rank):
    read afresh at a block's first step (``inc.chk[3]``), else recounted at the end of the
    step before."""
    comm, i64, opsum = hnd
    dem = net.dem[: prm.deg]
    dem[:] = 0
    nt = 0
    if err[0] == 0:
        if t % 8 == 0:  # buffers in id order, as the other paths sort them
            fs.sort_active(bufs.act, bufs.nact[0], so.rq)
        if inc.chk[3]:
            inc.chk[3] = 0
            kr.rebuild(prm, segs, bufs, inc)
            kr.recount(True, prm, segs, pkts, links, bufs, inc)
        if inc.chk[0]:
            kr.check(prm, segs, pkts, links, bufs, inc)
        for q in range(prm.deg):  # a loop: a slice copy allocates (no NRT here)
            dem[q] = inc.dem[q]
    net.sent[0] += 8 * prm.deg
    fns[3](dem.ctypes.data, net.dem[prm.deg :].ctypes.data, prm.deg, i64, opsum, comm,
           net.reqs.ctypes.data)  # fmt: skip
    return nt


@njit(cache=True, error_model="numpy", _nrt=False)
def block_moves(t, in_window, prm, segs, pkts, links, bufs, so, ex, mine, status, inc):
    """The step's requests (sdc: :func:`post_demand`'s, its port ``status[3]``), port model
    (as :func:`~mpinet.engine.flit.chunk.run_steps` chooses: the allowed links first, sdc's
    from its kept counts), moves and end on this rank, the messages packed; the step's
    counters so far in ``mine``; returns the heads that reached a local node (``so.new``)."""
    cnt = so.cnt
    sdc = -1
    if prm.kind == fk.SDC:  # the port's requests, kept (post_demand)
        sdc = status[3]
        nt = na = kr.collect_port(sdc, prm, segs, pkts, links, bufs, so, inc, False)
    else:
        if t % 8 == 0:  # buffers in id order, as the other paths sort them
            fs.sort_active(bufs.act, bufs.nact[0], so.rq)
        nt = fk.collect(prm, segs, pkts, links, bufs, so)
        na = nt
        if prm.kind == fk.ALL:
            so.allow[:nt] = True
        else:  # k-port, one-port: as run_steps chooses
            na = kport_deny(nt, t, prm, segs, pkts, links, so, inc)
    for c in range(fk.NCOUNT):  # deliveries and hop rows pile up over the block
        if c != fk.C_FLITS and c != fk.C_DELIV and c != fk.C_HOPS and c != fk.C_CROSS:
            cnt[c] = 0
    f0, d0, x0 = cnt[fk.C_FLITS], cnt[fk.C_DELIV], cnt[fk.C_CROSS]
    if na:
        fk.move(t, na, in_window, prm, segs, pkts, links, bufs, so)
    # the links after na (k-port's denied) moved nothing and have nreq 0 (kport_deny)
    nnew = step_end.settle(na, sdc, prm, segs, pkts, links, bufs, so)
    if prm.kind == fk.SDC:
        kr.mark_moved(na, prm, segs, links, bufs, so, inc, fk.C_CRED_L, fk.C_REL, fk.C_LOCAL)
    pack(prm, so, ex)
    mine[K_FLITS], mine[K_DELIV] = cnt[fk.C_FLITS] - f0, cnt[fk.C_DELIV] - d0
    mine[K_CROSS] = cnt[fk.C_CROSS] - x0
    return nnew


@njit(cache=True, error_model="numpy", _nrt=False)
def mark_taken(prm, segs, links, bufs, ex, inc):
    """sdc: list what :func:`take_in` may have changed: the links whose VCs got credits from
    other ranks, to recount, and the buffers that received flits, to read again
    (:func:`~mpinet.engine.flit.kept_requests.settle_buffers`, after the routing)."""
    nvc, width, base = prm.nvc, ex.width, prm.lo * prm.deg * prm.nvc
    flag, dirty, nd = inc.flag, inc.dirty, inc.nd
    nb = 0
    for j in range(ex.recv.shape[0]):
        m = ex.recv[j]
        a = HEADER + m[H_ROWS] * width
        for c in range(m[H_CRED]):
            pd.mark_link((m[a + 2 * c] - base) // nvc, flag, dirty, nd)
        nb += m[H_ROWS]
    for i in range(nb):
        list_once(ex.rbufs[i], inc.bflag, inc.dbuf, inc.ndb)


@njit(cache=True, error_model="numpy")
def arrivals(t, k, nnew, sdc, inj, rule, vrule, prm, segs, pkts, links, bufs, so, ex, status):
    """The messages in (credits, then rows in the neighbours' rank order), the buffers they
    filled checked, step ``t``'s packets injected at their destination delivered, then the
    heads (local ``so.new[:nnew]``, then those that came) and the step's injections (step
    ``k`` of ``inj``) routed. Returns False with ``status`` set (:mod:`~mpinet.engine.flit.chunk`'s
    codes; ``status[2]`` a packet's id when ``status[0]`` is -1: flits without their head)."""
    heads = take_in(t, nnew, sdc, prm, segs, pkts, links, bufs, so, ex, status)
    if heads < 0:
        return False
    home_deliveries(t, k, inj, so)
    ia, ni = inj.off[k], inj.off[k + 1] - inj.off[k]
    return sr.route(t, heads, ni, ia, inj, rule, vrule, prm, segs, pkts, links, bufs, so,
                       status)  # fmt: skip


@njit(cache=True, error_model="numpy", _nrt=False)
def home_deliveries(t, k, inj, so):
    """Step ``t``'s packets injected at their destination (step ``k`` of ``inj``): delivered."""
    cnt, deliv = so.cnt, so.deliv
    ha, nh = inj.hoff[k], inj.hoff[k + 1] - inj.hoff[k]
    for i in range(nh):
        r = cnt[fk.C_DELIV]
        deliv[r, 0], deliv[r, 1] = inj.hpid[ha + i], inj.hsrc[ha + i]
        deliv[r, 2] = inj.hdst[ha + i]
        deliv[r, 3], deliv[r, 4], deliv[r, 5], deliv[r, 6] = t, t, 0, t
        cnt[fk.C_DELIV] += 1


@njit(cache=True, error_model="numpy", _nrt=False)
def take_in(t, nnew, sdc, prm, segs, pkts, links, bufs, so, ex, status):
    """The messages in: credits, then rows in the neighbours' rank order, the buffers they
    filled checked. Returns the heads to route (``so.new``: the ``nnew`` local ones, then
    those that came), -1 with ``status`` set on an error."""
    width = ex.width
    base = prm.lo * prm.deg * prm.nvc
    nn = ex.recv.shape[0]
    credit, pwait, active, act, nact = links.credit, bufs.pwait, bufs.active, bufs.act, bufs.nact
    for j in range(nn):
        m = ex.recv[j]
        a = HEADER + m[H_ROWS] * width
        for c in range(m[H_CRED]):  # a parked body woken as by a local credit (park.py)
            credit_back(m[a + 2 * c] - base, m[a + 2 * c + 1], credit, pwait, active, act, nact)
    nb = 0
    heads = nnew
    seg_free, nfree, seg_pkt, seg_cnt, seg_recv = (
        segs.free,
        segs.nfree,
        segs.pkt,
        segs.cnt,
        segs.recv,
    )
    seg_sent, seg_next, seg_buf, seg_out, seg_ovc = (
        segs.sent,
        segs.next,
        segs.buf,
        segs.out,
        segs.ovc,
    )
    seg_hops, bhead, btail, bocc = segs.hops, bufs.head, bufs.tail, bufs.occ
    pkt_free, npfree, pkt_pid, pkt_hdr, pkt_nseg = (
        pkts.free,
        pkts.nfree,
        pkts.pid,
        pkts.hdr,
        pkts.nseg,
    )
    new, rbufs = so.new, ex.rbufs
    for j in range(nn):
        m = ex.recv[j]
        for i in range(m[H_ROWS]):
            r = HEADER + i * width
            b = m[r + fk.W_BUF] - base
            n = m[r + fk.W_N]
            if m[r + fk.W_HEAD]:
                npfree[0] -= 1
                p = pkt_free[npfree[0]]
                pkt_pid[p] = m[r + fk.W_PID]
                pkts.src[p] = m[r + fk.W_SRC]
                pkts.dst[p] = m[r + fk.W_DST]
                pkts.inj[p] = m[r + fk.W_INJ]
                pkts.adm[p] = m[r + fk.W_ADM]
                pkts.state[p] = m[r + fk.W_STATE]
                for c in range(pkt_hdr.shape[1]):
                    pkt_hdr[p, c] = m[r + fk.W_WIDTH + c]
                pkt_nseg[p] = 1
                s = fk.push_segment(p, b, m[r + fk.W_HOPS], seg_free, nfree, seg_pkt, seg_cnt,
                                    seg_recv, seg_sent, seg_next, seg_buf, seg_out, seg_ovc,
                                    seg_hops, bhead, btail, segs.age, m[r + fk.W_INJ])  # fmt: skip
                new[heads] = s
                heads += 1
            else:
                s = btail[b]
                if s < 0 or pkt_pid[seg_pkt[s]] != m[r + fk.W_PID]:
                    status[0], status[1], status[2] = -1, t, m[r + fk.W_PID]
                    return -1
            seg_cnt[s] += n
            seg_recv[s] += n
            bocc[b] += n
            rbufs[nb] = b
            nb += 1
    for i in range(nb):
        fs.activate_one(rbufs[i], active, act, nact)
    step_end.check_step(0, sdc, prm, links, bufs, so.touched, nb, ex.rbufs, so.out)
    if so.out[0]:
        status[0], status[1], status[2] = chunk.MODEL_ERR, t, sdc
        return -1
    return heads
