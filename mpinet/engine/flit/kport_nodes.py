"""k-port's and one-port's choice kept between steps, the allowed links first (numba).

A node with more than ``k`` links with requests sends on the ``k`` whose oldest movable
requests are the oldest (:func:`~mpinet.engine.flit.port_choice.kport_choice`). Made afresh,
that reads every such link's requests each step: on the ms:3,2 one-port run of
docs/performance.md a quarter of the step (about 95 ms of a 385 ms run, stage clocks), and
chaining the links by node instead of counting them saved nothing, so the reads are the
cost. Yet the choice rarely changes: a 16-flit worm wins its node's port for 16 steps or
more. Here a node's choice is kept (``inc.wpid``: per winning link the packet id of its
oldest movable request; ``inc.vstep``: the step it was made) and at the next step only the
winners are read again: if each winner's oldest movable request is of the same packet, the
choice is the same, since the losers' requests did not change. A loser sent nothing, so its
requests, their VCs and its VCs' credits and holds change only by the events that
:func:`~mpinet.engine.flit.port_demand.mark_moves` (called with no sending links),
:func:`~mpinet.engine.flit.port_demand.mark_routed` and, on several ranks,
:func:`~mpinet.engine.flit.ranks.mark_taken` list: credits back to a VC that had fewer than
``need``, a VC released, a front that became a request, a head routed or a packet injected,
flits and credits from other ranks. A listed link that did not win voids its node's kept
choice (:func:`kport_kept`'s first pass); a winner is read again anyway. Check mode
(``inc.chk[0]``) makes every kept choice afresh too and counts those that differ
(``inc.kchk``).

A link the choice denies gets ``links.nreq = 0`` (``move`` would not serve it; the step
zeroes it after ``move`` anyway), which is how the last pass, as
:func:`~mpinet.engine.flit.port_choice.allowed_first`, tells it apart without a flag.
"""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit.kernels import _older
from mpinet.engine.flit.layout import quotient
from mpinet.engine.flit.port_choice import _oldest_movable


@njit(cache=True, error_model="numpy", _nrt=False)
def kport_kept(nt, t, fresh, prm, segs, pkts, links, so, inc):
    """The k-port (one-port) choice of :func:`~mpinet.engine.flit.port_choice.kport_choice`
    at step ``t`` with its allowed links moved to the front of ``so.touched`` in their order
    (the others after them, in theirs; ``so.allow`` to match), as
    :func:`~mpinet.engine.flit.port_choice.allowed_first` leaves them; returns their number.
    ``fresh`` (or ``inc.chk[3]``, then cleared): keep nothing from before (a call's first
    step; Python ran between).

    Scratch: ``so.node`` (per node, the count of its touched links less one; -1 between
    steps), ``so.bufs`` (the nodes touched), ``so.rq_prev`` (a node's links' oldest movable
    requests; ``collect`` is done with it), ``so.route[0]`` (the denied links, in order) and
    ``so.route[1]`` (check mode's fresh choice)."""
    nvc, need, deg, kk = prm.nvc, prm.need, prm.deg, prm.k
    touched, allow, cntn, nodes, rest = so.touched, so.allow, so.node, so.bufs, so.route[0]
    rq, firsts, other = so.rq, so.rq_prev, so.route[1]
    seg_ovc, seg_pkt, seg_vlo, seg_vhi = segs.ovc, segs.pkt, segs.vlo, segs.vhi
    nbt, held, credit, lstart, lreq = links.nbt, links.held, links.credit, links.start, links.nreq
    pkt_dst, pkt_inj, pkt_pid = pkts.dst, pkts.inj, pkts.pid
    wpid, vstep, kchk = inc.wpid, inc.vstep, inc.kchk
    flag, dirty, nd = inc.flag, inc.dirty, inc.nd
    rdeg = 1.0 / deg
    if inc.chk[3]:
        fresh = True
        inc.chk[3] = 0
    for i in range(nd[0]):  # a loser's events void its node's choice
        link = dirty[i]
        flag[link] = 0
        if wpid[link] < 0:
            vstep[quotient(link, deg, rdeg)] = -2
    nd[0] = 0
    nn = 0
    for j in range(nt):
        node = quotient(touched[j], deg, rdeg)
        c = cntn[node]
        if c < 0:
            nodes[nn] = node
            nn += 1
        cntn[node] = c + 1
    check = inc.chk[0] != 0
    if check:
        kchk[0] += 1
    for i in range(nn):
        node = nodes[i]
        many = cntn[node] >= kk  # more than k links with requests: a choice
        cntn[node] = -1
        if not many:
            vstep[node] = -2
            continue
        base = node * deg
        same = not fresh and vstep[node] == t - 1
        if same:  # each winner's oldest movable request of the same packet
            for link in range(base, base + deg):
                w = wpid[link]
                if w >= 0 and _first_pid(link, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt,
                                         seg_vlo, seg_vhi, nbt, held, credit, pkt_dst,
                                         pkt_pid) != w:  # fmt: skip
                    same = False
                    break
        if same:
            kchk[1] += 1
            if check:
                _choose(base, kk, deg, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt, seg_vlo,
                        seg_vhi, nbt, held, credit, pkt_dst, pkt_inj, pkt_pid, firsts,
                        other, 0)  # fmt: skip
                for q in range(deg):
                    if other[q] != wpid[base + q]:
                        kchk[2] += 1
                        break
        else:
            _choose(base, kk, deg, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt, seg_vlo,
                    seg_vhi, nbt, held, credit, pkt_dst, pkt_inj, pkt_pid, firsts, wpid,
                    base)  # fmt: skip
        vstep[node] = t
        for link in range(base, base + deg):
            if wpid[link] < 0:
                lreq[link] = 0  # denied (or not touched: already 0)
    na = 0
    nr = 0
    for j in range(nt):
        link = touched[j]
        if lreq[link] > 0:
            touched[na] = link
            na += 1
        else:
            rest[nr] = link
            nr += 1
    for i in range(nr):
        touched[na + i] = rest[i]
    allow[:na] = True
    allow[na:nt] = False
    return na


@njit(cache=True, inline="always")
def _first_pid(link, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt, seg_vlo, seg_vhi, nbt, held,
               credit, pkt_dst, pkt_pid):  # fmt: skip
    """The packet id of ``link``'s oldest movable request, -1 if none."""
    if lreq[link] == 0:
        return -1
    f = _oldest_movable(link, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt, seg_vlo, seg_vhi,
                        nbt, held, credit, pkt_dst)  # fmt: skip
    return -1 if f < 0 else pkt_pid[seg_pkt[rq[f]]]


@njit(cache=True, inline="always")
def _choose(base, kk, deg, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt, seg_vlo, seg_vhi, nbt,
            held, credit, pkt_dst, pkt_inj, pkt_pid, firsts, out, off):  # fmt: skip
    """The choice of the node of links ``base .. base + deg - 1`` made afresh into
    ``out[off + q]`` (the winners' packet ids, -1 the others): the ``kk`` links whose oldest
    movable requests are the oldest (an older packet; one packet on two links: the lower
    link). ``firsts``: ``deg`` entries of scratch."""
    for q in range(deg):
        link = base + q
        f = -1
        if lreq[link] > 0:
            f = _oldest_movable(link, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt, seg_vlo,
                                seg_vhi, nbt, held, credit, pkt_dst)  # fmt: skip
        firsts[q] = f
        out[off + q] = -1
    for _ in range(kk):
        best, bp = -1, -1
        for q in range(deg):  # ports in order, older strictly: of one packet, the lower link
            f = firsts[q]
            if f >= 0:
                p = seg_pkt[rq[f]]
                if best < 0 or _older(pkt_inj, pkt_pid, p, bp):
                    best, bp = q, p
        if best < 0:
            return
        firsts[best] = -1
        out[off + best] = pkt_pid[bp]
