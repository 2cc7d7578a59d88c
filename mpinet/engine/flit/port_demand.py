"""sdc's demand kept between steps (numba): per link its movable requests, per port their sum.

sdc sends on the links of the port with the most movable requests. Counting them afresh
(:func:`~mpinet.engine.flit.port_choice.movable`) walks every waiting request each step,
and sdc keeps about 8x as many requests waiting as it sends (ms:3,2 at Bernoulli 0.003:
12,000 active buffers, 6,450 links with requests, 1,500 sending): that walk was a third of
its step (docs/performance.md, "Cost per step"). Here the count of a link is kept in
``inc.mc`` and the ports' sums in ``inc.dem``, and a step recounts only the links whose
requests, credits or VC holds changed in the step before, which :func:`mark_moves` and
:func:`mark_routed` list (``inc.dirty``) from the step's own lists:

* the links that were allowed to send (their requests' flits, credits and holds);
* the links whose VC got credits back while it had fewer than ``need`` (``so.cred_l``), or
  a VC released (``so.rel``);
* the output links of front segments that became requests (``so.local``: their first
  flits, or under store-and-forward their last), of the new fronts of buffers whose front
  segment drained (``so.drain``), and of heads routed or packets injected in the step (the
  routing's links, ``so.route[6]``); on several ranks also those the flits and credits from
  other ranks reached (:func:`~mpinet.engine.flit.ranks.mark_taken`).

Nothing else changes whether a request can move (its VC's credits, the holds and credits of
its link's VCs, its segment's VC and policy range, and whether it is a request at all: a
buffer's front with flits, wholly received under store-and-forward). A count is then the
same as a fresh one; :func:`check` compares them (a test's check mode of
:func:`~mpinet.engine.flit.chunk.run_steps` and of the blocks on several ranks). The
compiled steps count afresh at the start of each call (:func:`recount`, ``full`` or
``inc.chk[3]``), so nothing Python does between calls needs marking. :func:`oldest_only`
spares ``move`` the sorting of the chosen port's requests.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from mpinet.engine.flit.kernels import LA_BUF, LA_N, LA_SEG
from mpinet.engine.flit.layout import SAF, can_move, quotient

Demand = namedtuple("Demand", ["mc", "dem", "flag", "dirty", "nd", "chk", "cdem", "nstep",
                               "ncnt"])  # fmt: skip
Demand.__doc__ = """sdc's demand between steps: per link its movable requests (``mc``), per
port their sum (``dem``), whether a link is listed to recount (``flag``) and the list
(``dirty[:nd[0]]``); ``chk = (on, steps checked, mismatches, afresh)``: :func:`check`'s,
and 1 while the next :func:`recount` must count every link afresh (set by the caller);
``cdem`` the check's scratch. k-port's count of a node's links with requests in a step
(:func:`~mpinet.engine.flit.kport_nodes.kport_deny`): ``ncnt``, valid where ``nstep`` is
the step (no reset between steps)."""


def make_demand(nlinks: int, deg: int, check: bool = False) -> Demand:
    """Empty state for ``nlinks`` links of ``deg`` ports; ``check``: compare every step's
    counts with fresh ones (tests)."""
    return Demand(np.zeros(nlinks, np.int64), np.zeros(deg, np.int64),
                  np.zeros(nlinks, np.uint8), np.empty(nlinks, np.int64), np.zeros(1, np.int64),
                  np.array([int(check), 0, 0, 1], np.int64), np.zeros(deg, np.int64),
                  np.full(nlinks // deg, -1, np.int64),
                  np.zeros(nlinks // deg, np.int64))  # fmt: skip


@njit(cache=True, inline="always")
def _count(link, nvc, need, lstart, lreq, rq, rq_prev, seg_ovc, seg_pkt, seg_vlo, seg_vhi, nbt,
           held, credit, pkt_dst):  # fmt: skip
    """The movable requests of ``link`` along its chain (as ``movable`` counts them)."""
    m = lreq[link]
    x = lstart[link]
    c = 0
    for i in range(m):
        if i > 0:
            x = rq_prev[x]
        if can_move(link, rq[x], nvc, need, seg_ovc, seg_pkt, seg_vlo, seg_vhi, nbt, held, credit,
                    pkt_dst):  # fmt: skip
            c += 1
    return c


@njit(cache=True, error_model="numpy", _nrt=False)
def recount(nt, full, prm, segs, pkts, links, so, inc):
    """The counts at the start of the step, after ``collect``: every touched link's afresh
    (``full`` or ``inc.chk[3]``: and every other link's 0), else only the listed links'; the
    list emptied."""
    nvc, need, deg = prm.nvc, prm.need, prm.deg
    rdeg = 1.0 / deg
    seg_ovc, seg_pkt, seg_vlo, seg_vhi = segs.ovc, segs.pkt, segs.vlo, segs.vhi
    nbt, held, credit, lstart, lreq = links.nbt, links.held, links.credit, links.start, links.nreq
    pkt_dst, rq, rq_prev, touched = pkts.dst, so.rq, so.rq_prev, so.touched
    mc, dem, flag, dirty, nd = inc.mc, inc.dem, inc.flag, inc.dirty, inc.nd
    if full or inc.chk[3]:
        inc.chk[3] = 0
        mc[:] = 0
        dem[:] = 0
        for j in range(nt):
            link = touched[j]
            c = _count(link, nvc, need, lstart, lreq, rq, rq_prev, seg_ovc, seg_pkt, seg_vlo,
                       seg_vhi, nbt, held, credit, pkt_dst)  # fmt: skip
            mc[link] = c
            dem[link - quotient(link, deg, rdeg) * deg] += c
        for i in range(nd[0]):
            flag[dirty[i]] = 0
        nd[0] = 0
        return
    for i in range(nd[0]):
        link = dirty[i]
        flag[link] = 0
        c = 0
        if lreq[link] > 0:  # not touched this step: no request, 0
            c = _count(link, nvc, need, lstart, lreq, rq, rq_prev, seg_ovc, seg_pkt, seg_vlo,
                       seg_vhi, nbt, held, credit, pkt_dst)  # fmt: skip
        dem[link - quotient(link, deg, rdeg) * deg] += c - mc[link]
        mc[link] = c
    nd[0] = 0


@njit(cache=True, error_model="numpy", _nrt=False)
def allow_port(nt, port, prm, so, inc):
    """sdc's choice: the touched links of ``port`` with a movable request, moved to the front
    of ``so.touched`` in their order, ``so.allow`` set; returns their number. The order of the
    allowed links is :func:`~mpinet.engine.flit.port_choice.choose_links`' so the moves are
    the same, and ``move`` then visits only them. The others' order after them is any (they
    move nothing: only their counts are zeroed and their flits, none, checked): one pass of
    swaps, and a link's count read only on the port (a miss per link, most of the pass)."""
    touched, allow, mc, deg = so.touched, so.allow, inc.mc, prm.deg
    rdeg = 1.0 / deg
    na = 0
    for j in range(nt):
        link = touched[j]
        if link - quotient(link, deg, rdeg) * deg == port and mc[link] > 0:
            touched[j] = touched[na]  # a link not allowed (or this one): behind the front
            touched[na] = link
            na += 1
    allow[:na] = True
    allow[na:nt] = False
    return na


@njit(cache=True, error_model="numpy", _nrt=False)
def oldest_only(na, prm, segs, pkts, links, so):
    """sdc: each allowed link of capacity 1 with several requests keeps only its oldest
    movable one (``links.start`` at it, ``links.nreq`` 1), so that ``move`` neither buckets
    nor sorts the others. Exact: ``move`` serves a link's requests oldest first (the order
    of :func:`~mpinet.engine.flit.kernels.collect`: older packet, of one packet the segment
    with more hops) and a request moves flits if and only if it is movable (its flits are
    present, and its credits or VC allocation give at least one), so the first movable one
    takes the flit of capacity and none after it moves. On the ms:3,2 sdc run the bucketing
    of the chosen port's chains was a twelfth of a step."""
    nvc, need = prm.nvc, prm.need
    seg_ovc, seg_pkt, seg_vlo, seg_vhi, seg_hops = segs.ovc, segs.pkt, segs.vlo, segs.vhi, segs.hops
    nbt, held, credit, lstart, lreq, lcap = (links.nbt, links.held, links.credit, links.start,
                                             links.nreq, links.cap)  # fmt: skip
    pkt_dst, pkt_inj, pkt_pid, rq, rq_prev, touched = (
        pkts.dst,
        pkts.inj,
        pkts.pid,
        so.rq,
        so.rq_prev,
        so.touched,
    )
    for j in range(na):
        link = touched[j]
        m = lreq[link]
        if m < 2 or lcap[link] != 1:
            continue
        x = lstart[link]
        best, bp, bh = -1, -1, -1
        for i in range(m):
            if i > 0:
                x = rq_prev[x]
            s = rq[x]
            p = seg_pkt[s]
            # not older than the best (nor of its packet, nearer the head): not the first
            if best >= 0 and not (pkt_inj[p] < pkt_inj[bp] or (pkt_inj[p] == pkt_inj[bp] and (
                    pkt_pid[p] < pkt_pid[bp] or (p == bp and seg_hops[s] > bh)))):  # fmt: skip
                continue
            if can_move(link, s, nvc, need, seg_ovc, seg_pkt, seg_vlo, seg_vhi, nbt, held, credit,
                        pkt_dst):  # fmt: skip
                best, bp, bh = x, p, seg_hops[s]
        if best >= 0:
            lstart[link] = best
            lreq[link] = 1


@njit(cache=True, inline="always")
def mark_link(link, flag, dirty, nd):
    """List ``link`` to recount (once; -1: no link)."""
    if link >= 0 and flag[link] == 0:
        flag[link] = 1
        dirty[nd[0]] = link
        nd[0] += 1


@njit(cache=True, error_model="numpy", _nrt=False)
def mark_moves(na, prm, segs, links, bufs, so, inc, c_cred, c_rel, c_local, c_drain):
    """List the links whose counts the step's moves may have changed (module docstring),
    after ``settle`` and before the routing (a drained segment's buffer still readable);
    ``c_*``: the counters of ``so``'s lists. Of the credits back and the arrivals only those
    that can change a count are listed: a VC's credits that were below ``need`` (every test
    of a request is ``credit > 0`` or ``credit >= need``, and ``need >= 1``), a front
    segment that became a request (its first flits; store-and-forward: its last). On the
    ms:3,2 sdc run of docs/performance.md that lists about a third fewer links a step."""
    flag, dirty, nd, nvc, need = inc.flag, inc.dirty, inc.nd, prm.nvc, prm.need
    saf, flits, nvcbuf = prm.mode == SAF, prm.flits, prm.nvcbuf
    touched, cnt, cred_l, rel = so.touched, so.cnt, so.cred_l, so.rel
    local, drain, credit = so.local, so.drain, links.credit
    seg_out, seg_buf, seg_cnt, seg_recv, bhead = segs.out, segs.buf, segs.cnt, segs.recv, bufs.head
    for j in range(na):
        mark_link(touched[j], flag, dirty, nd)
    for i in range(cnt[c_cred]):  # a buffer returns credits once a step: one row per VC
        k, n = cred_l[i, 0], cred_l[i, 1]
        if credit[k] - n < need:  # applied by settle: the credits before were these
            mark_link(k // nvc, flag, dirty, nd)
    for i in range(cnt[c_rel]):
        mark_link(rel[i] // nvc, flag, dirty, nd)
    for i in range(cnt[c_local]):  # a new head: seg_out -1, routed later (mark_routed)
        s, n, b = local[i, LA_SEG], local[i, LA_N], local[i, LA_BUF]
        if bhead[b] != s:  # behind the front: no request before or after
            continue
        if saf and b < nvcbuf:
            if seg_recv[s] == flits:  # wholly received now
                mark_link(seg_out[s], flag, dirty, nd)
        elif seg_cnt[s] == n:  # had no flits: its first (a front that sent is listed above)
            mark_link(seg_out[s], flag, dirty, nd)
    for i in range(cnt[c_drain]):
        f = bhead[seg_buf[drain[i]]]
        if f >= 0:
            mark_link(seg_out[f], flag, dirty, nd)


@njit(cache=True, error_model="numpy", _nrt=False)
def mark_routed(m, so, inc):
    """List the links of the step's ``m`` routed heads and injected packets."""
    flag, dirty, nd, lk = inc.flag, inc.dirty, inc.nd, so.route[6]
    for i in range(m):
        mark_link(lk[i], flag, dirty, nd)


@njit(cache=True, error_model="numpy", _nrt=False)
def check(nt, prm, segs, pkts, links, so, inc):
    """Check mode: the kept counts against fresh ones (every link's, and the ports' sums);
    ``inc.chk[1]`` steps checked, ``inc.chk[2]`` those that differed."""
    nvc, need, deg = prm.nvc, prm.need, prm.deg
    seg_ovc, seg_pkt, seg_vlo, seg_vhi = segs.ovc, segs.pkt, segs.vlo, segs.vhi
    nbt, held, credit, lstart, lreq = links.nbt, links.held, links.credit, links.start, links.nreq
    pkt_dst, rq, rq_prev, touched, mc = pkts.dst, so.rq, so.rq_prev, so.touched, inc.mc
    bad = False
    seen = 0
    dem = inc.cdem
    dem[:] = 0
    for j in range(nt):
        link = touched[j]
        c = _count(link, nvc, need, lstart, lreq, rq, rq_prev, seg_ovc, seg_pkt, seg_vlo,
                   seg_vhi, nbt, held, credit, pkt_dst)  # fmt: skip
        dem[link % deg] += c
        seen += mc[link]
        if c != mc[link]:
            bad = True
    if seen != mc.sum():  # a link with no request this step counted as movable
        bad = True
    for q in range(deg):
        if dem[q] != inc.dem[q]:
            bad = True
    inc.chk[1] += 1
    if bad:
        inc.chk[2] += 1
