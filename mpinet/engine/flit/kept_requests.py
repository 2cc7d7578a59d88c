"""sdc's requests kept between steps (numba): each buffer's request held, not re-read.

:func:`~mpinet.engine.flit.kernels.collect` reads the front segment of every active buffer
each step. Under sdc only the links of one port send a step, and most buffers wait: on the
ms:3,2 run of docs/performance.md ("One-port and sdc in session 7") 11,900 active buffers a
step, 8,850 requests, 1,510 links allowed. Here each buffer's request (the output link of
its front segment when that segment has flits, wholly received under store-and-forward) is
kept in ``inc.breq`` (its port in ``inc.bport``, :data:`EMPTY` for an empty buffer), each
link's requesting buffers in a list (``inc.lhead``, ``inc.bnext``/``inc.bprev``), and a step
re-reads only the buffers whose front may have changed (:func:`mark_moved`,
:func:`mark_injected`, :func:`~mpinet.engine.flit.ranks.mark_taken`; applied by
:func:`settle_buffers` at the step's end): the buffers of the allowed links' requests left
empty (or drained by a tail; one with flits left keeps its request), those whose front
segment received flits or a new head
(``so.local``) or drained (``so.drain``), the source queues of the step's injections, on
several ranks those other ranks' flits reached. Nothing else changes a buffer's front or its
flits. Then a step needs no ``collect``: :func:`recount` keeps the movable requests per link
and port (as :mod:`~mpinet.engine.flit.port_demand` lists the links to recount) by walking
the kept lists, and :func:`collect_port` takes only the chosen port's requests, the links in
the order of their first request in the active list (the reference's order of the moves),
found by :func:`~mpinet.engine.flit.port_links.port_links` from the port's links and their
kept lists rather than from every active buffer. The lists are built afresh at each compiled
call's first step (:func:`rebuild`, or ``inc.chk[3]``); :func:`check` compares them with a
fresh read at every step (the tests' check mode).
"""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit.kernels import LA_BUF, LA_N, LA_SEG, older
from mpinet.engine.flit.layout import DEST, SAF, can_move, list_once, quotient, vc_id
from mpinet.engine.flit.port_demand import list_if, mark_link
from mpinet.engine.flit.port_links import EMPTY, H_EMP, NONE, port_links, squeeze
from mpinet.prefetch import ahead


@njit(cache=True, inline="always")
def _front(b, saf, flits, nvcbuf, deg, rdeg, head, seg_cnt, seg_recv, seg_out):
    """Buffer ``b``'s front: ``(link, code)``, its front segment's link (-1: empty or not
    routed) and its request as ``collect`` reads it (the link's port, :data:`NONE`,
    :data:`EMPTY`)."""
    s = head[b]
    if s < 0:
        return -1, EMPTY
    link = seg_out[s]
    if link < 0 or seg_cnt[s] <= 0 or (saf and b < nvcbuf and seg_recv[s] < flits):
        return link, NONE
    return link, link - quotient(link, deg, rdeg) * deg


@njit(cache=True, inline="always")
def _list(b, link, breq, bnext, bprev, lhead):
    """Buffer ``b`` (in no list) into ``link``'s list (-1: none)."""
    breq[b] = link
    if link < 0:
        return
    f = lhead[link]
    bnext[b] = f
    bprev[b] = -1
    if f >= 0:
        bprev[f] = b
    lhead[link] = b


@njit(cache=True, inline="always")
def _unlist(b, link, bnext, bprev, lhead):
    """Buffer ``b`` out of ``link``'s list."""
    p, n = bprev[b], bnext[b]
    if p >= 0:
        bnext[p] = n
    else:
        lhead[link] = n
    if n >= 0:
        bprev[n] = p


@njit(cache=True, inline="always")
def _ahead(far, links, i, n, lhead, head, seg_pkt):
    """Prefetch, for the walk over ``links[:n]`` at ``i``, the chain a link's first request
    is read through (its list's head, that buffer's front segment, its packet), each a few
    links ahead of the one before: three misses in a row otherwise."""
    if i + 12 < n:
        ahead(far, lhead, links[i + 12])
    if i + 8 < n:
        ahead(far, head, lhead[links[i + 8]])
    if i + 4 < n:
        x4 = lhead[links[i + 4]]
        if x4 >= 0:
            ahead(far, seg_pkt, head[x4])


@njit(cache=True, error_model="numpy", _nrt=False)
def rebuild(prm, segs, bufs, inc):
    """Every active buffer's request read afresh, the lists built; the listed buffers
    forgotten (a compiled call's first step, or ``inc.chk[3]``), the emptied ones too."""
    squeeze(bufs, inc)
    inc.hole[H_EMP] = -1  # port_links compacts the list by a pass over it
    saf, flits, nvcbuf, deg = prm.mode == SAF, prm.flits, prm.nvcbuf, prm.deg
    rdeg = 1.0 / deg
    head, act = bufs.head, bufs.act
    seg_cnt, seg_recv, seg_out = segs.cnt, segs.recv, segs.out
    breq, bport, bnext, bprev, lhead = inc.breq, inc.bport, inc.bnext, inc.bprev, inc.lhead
    lhead[:] = -1
    breq[:] = -1
    bport[:] = EMPTY
    for i in range(inc.ndb[0]):
        inc.bflag[inc.dbuf[i]] = 0
    inc.ndb[0] = 0
    for i in range(bufs.nact[0]):
        b = act[i]
        link, code = _front(b, saf, flits, nvcbuf, deg, rdeg, head, seg_cnt, seg_recv, seg_out)
        _list(b, link, breq, bnext, bprev, lhead)
        bport[b] = code


@njit(cache=True, inline="always")
def _count(link, nvc, need, head, bport, bnext, lhead, seg_ovc, seg_pkt, seg_vlo, seg_vhi,
           seg_hops, nbt, held, credit, pkt_dst, pkt_inj, pkt_pid):  # fmt: skip
    """The movable requests of ``link``, along its kept list, and the oldest of them (-1:
    none): the one ``move`` serves first (the older packet; of one packet the segment
    nearer its head). Kept with the count, so that :func:`collect_port` need not walk the
    chosen port's lists again; the packets are read only where two can move."""
    c = 0
    best, bp = -1, -1
    b = lhead[link]
    while b >= 0:
        if bport[b] >= 0:
            s = head[b]
            if can_move(link, s, nvc, need, seg_ovc, seg_pkt, seg_vlo, seg_vhi, nbt, held,
                        credit, pkt_dst):  # fmt: skip
                c += 1
                if best < 0:
                    best = s
                else:
                    if bp < 0:
                        bp = seg_pkt[best]
                    p = seg_pkt[s]
                    if older(pkt_inj, pkt_pid, p, bp) or (p == bp and seg_hops[s] > seg_hops[best]):
                        best, bp = s, p
        b = bnext[b]
    return c, best


@njit(cache=True, error_model="numpy", _nrt=False)
def recount(full, prm, segs, pkts, links, bufs, inc):
    """The movable requests per link (``inc.mc``) and port (``inc.dem``) at the start of the
    step, and each link's oldest (``inc.best``): every link's afresh if ``full``, else the
    listed links' (``inc.dirty``); the list emptied."""
    nvc, need, deg = prm.nvc, prm.need, prm.deg
    rdeg = 1.0 / deg
    seg_ovc, seg_pkt, seg_vlo, seg_vhi, seg_hops = segs.ovc, segs.pkt, segs.vlo, segs.vhi, segs.hops
    nbt, held, credit, pkt_dst, head = links.nbt, links.held, links.credit, pkts.dst, bufs.head
    pkt_inj, pkt_pid, lbest, bits = pkts.inj, pkts.pid, inc.best, inc.bits
    words = bits.shape[0] // deg
    bnext, lhead, mc, dem, flag, dirty, nd = (inc.bnext, inc.lhead, inc.mc, inc.dem, inc.flag,
                                              inc.dirty, inc.nd)  # fmt: skip
    bport = inc.bport
    if full:
        dem[:] = 0
        bits[:] = 0
        for link in range(lhead.shape[0]):
            c, best = 0, -1
            if lhead[link] >= 0:
                c, best = _count(link, nvc, need, head, bport, bnext, lhead, seg_ovc, seg_pkt,
                                 seg_vlo, seg_vhi, seg_hops, nbt, held, credit, pkt_dst, pkt_inj,
                                 pkt_pid)  # fmt: skip
                node = quotient(link, deg, rdeg)
                dem[link - node * deg] += c
                if c:
                    bits[(link - node * deg) * words + (node >> 6)] |= 1 << (node & 63)
            mc[link] = c
            lbest[link] = best
        for i in range(nd[0]):
            flag[dirty[i]] = 0
        nd[0] = 0
        return
    n = nd[0]
    for i in range(n):
        _ahead(prm.far, dirty, i, n, lhead, head, seg_pkt)
        link = dirty[i]
        flag[link] = 0
        c, best = 0, -1
        if lhead[link] >= 0:
            c, best = _count(link, nvc, need, head, bport, bnext, lhead, seg_ovc, seg_pkt,
                             seg_vlo, seg_vhi, seg_hops, nbt, held, credit, pkt_dst, pkt_inj,
                             pkt_pid)  # fmt: skip
        node = quotient(link, deg, rdeg)
        dem[link - node * deg] += c - mc[link]
        if (c == 0) != (mc[link] == 0):  # the port's bitmap: the node's link came or went
            bits[(link - node * deg) * words + (node >> 6)] ^= 1 << (node & 63)
        mc[link] = c
        lbest[link] = best
    nd[0] = 0


@njit(cache=True, error_model="numpy", _nrt=False)
def collect_port(port, prm, segs, pkts, links, bufs, so, inc, lazy):
    """sdc's requests of the step on ``port``: the active list compacted (empty buffers
    dropped, as ``collect`` drops them) and, in its order, the links of ``port`` with a
    movable request (``inc.mc``) listed in ``so.touched`` at their first request, all
    allowed; returns their number. A link of capacity 1 gets only its oldest movable request
    (``move`` serves a link oldest first and a request moves if and only if it can, so
    only that one moves: ``port_demand.oldest_only``), kept by :func:`recount`
    (``inc.best``); a link of more all its requests chained as ``collect`` chains sdc's
    (``move`` buckets and sorts them). ``lazy``: :func:`port_links`' (one rank)."""
    head = bufs.head
    lcap, lreq, lstart = links.cap, links.nreq, links.start
    bport, bnext, lhead, lbest = inc.bport, inc.bnext, inc.lhead, inc.best
    touched, allow, rq, rq_prev = so.touched, so.allow, so.rq, so.rq_prev
    na = port_links(port, prm, bufs, lreq, inc, touched, lazy)
    pos = several = 0
    for j in range(na):
        link = touched[j]
        if lcap[link] == 1:  # the oldest movable request, kept
            rq[pos] = lbest[link]
            lstart[link] = pos
            lreq[link] = 1
            pos += 1
        else:  # chained, latest first (kernels._buckets sorts them)
            m = 0
            x = lhead[link]
            while x >= 0:
                if bport[x] >= 0:
                    rq[pos] = head[x]
                    rq_prev[pos] = pos - 1
                    pos += 1
                    m += 1
                x = bnext[x]
            lstart[link] = pos - 1
            lreq[link] = m
            several = 1
        allow[j] = True
    inc.nrq[0], inc.nrq[1] = pos, several
    return na


@njit(cache=True, inline="always")
def _unchanged(s, link, nvc, seg_cnt, seg_sent, seg_ovc, credit):
    """Whether request ``s``, which moved a flit over ``link`` (capacity 1), left the link's
    movable requests (so its count and oldest) and its buffer's request as they were: it
    still has flits (so it is still its buffer's front: a segment drains only empty), and
    goes into its destination or on a VC it held before the step (``seg_sent`` above 1: no
    VC taken now, so no other head's allocation changed) that still has a credit after
    the step's credits. A third of the allowed links on the port-model run."""
    if seg_cnt[s] <= 0:
        return False
    ovc = seg_ovc[s]
    return ovc == DEST or (seg_sent[s] > 1 and credit[vc_id(link, ovc, nvc)] > 0)


@njit(cache=True, error_model="numpy", _nrt=False)
def mark_moved(na, prm, segs, links, bufs, so, inc, c_cred, c_rel, c_local):
    """List what the step's moves may have changed, after ``settle`` and before the routing
    (a drained segment's buffer still readable): the buffers of the requests the ``na``
    allowed links were given (their flits left, a tail drained them) and those whose front
    segment received its first flits (a new head), flits when it had none, or under
    store-and-forward its last; the allowed links, and the links whose VC got
    credits back while below ``need`` or was released, to recount (a request that came or
    went, or a new front, lists its link in :func:`settle_buffers`). When every allowed
    link had capacity 1 (``inc.nrq[1]`` 0: link ``touched[j]``'s request is ``rq[j]``), a
    link whose request left it :func:`_unchanged` lists neither (its count and oldest are
    kept), and a request that still has flits does not list its buffer: it is still the
    buffer's front with the same request (a segment drains only empty), so reading it again
    found nothing (a sixth of the buffers read again on the port-model run)."""
    bflag, dbuf, ndb, flag, dirty, nd = inc.bflag, inc.dbuf, inc.ndb, inc.flag, inc.dirty, inc.nd
    touched, cnt, local, rq, head, seg_buf = so.touched, so.cnt, so.local, so.rq, bufs.head, \
        segs.buf  # fmt: skip
    cred_l, rel, credit, nvc, need = so.cred_l, so.rel, links.credit, prm.nvc, prm.need
    if inc.nrq[1]:  # some link got several requests
        for j in range(na):
            mark_link(touched[j], flag, dirty, nd)
        for i in range(inc.nrq[0]):
            list_once(seg_buf[rq[i]], bflag, dbuf, ndb)
    else:  # one request a link; listed without branches (list_if)
        seg_cnt, seg_sent, seg_ovc = segs.cnt, segs.sent, segs.ovc
        for j in range(na):
            s = rq[j]
            m = not _unchanged(s, touched[j], nvc, seg_cnt, seg_sent, seg_ovc, credit)
            list_if(m, touched[j], flag, dirty, nd)
            # with flits left, still its buffer's front with the same request
            list_if(m & (seg_cnt[s] <= 0), seg_buf[s], bflag, dbuf, ndb)
    saf, flits, nvcbuf = prm.mode == SAF, prm.flits, prm.nvcbuf
    seg_cnt, seg_recv = segs.cnt, segs.recv
    for i in range(cnt[c_local]):  # a front's first flits, or its last under store-and-forward
        s, n, b = local[i, LA_SEG], local[i, LA_N], local[i, LA_BUF]
        m = (head[b] == s) & ((seg_cnt[s] == n) | (seg_recv[s] == n)
                              | (saf & (b < nvcbuf) & (seg_recv[s] == flits)))  # fmt: skip
        list_if(m, b, bflag, dbuf, ndb)  # else: a request before and after (or none)
    for i in range(cnt[c_cred]):  # a buffer returns credits once a step: one row per VC
        k, n = cred_l[i, 0], cred_l[i, 1]  # applied by settle: the credits before were these
        list_if(credit[k] - n < need, k // nvc, flag, dirty, nd)
    for i in range(cnt[c_rel]):
        mark_link(rel[i] // nvc, flag, dirty, nd)


@njit(cache=True, error_model="numpy", _nrt=False)
def mark_injected(nnew, ni, prm, so, inc):
    """List the source queues of the step's ``ni`` injections (after the ``nnew`` heads in
    the routing's links, ``so.route[6]``)."""
    lk, nvcbuf = so.route[6], prm.nvcbuf
    for i in range(nnew, nnew + ni):
        list_once(nvcbuf + lk[i], inc.bflag, inc.dbuf, inc.ndb)


@njit(cache=True, error_model="numpy", _nrt=False)
def settle_buffers(prm, segs, bufs, inc):
    """The listed buffers read again (after the routing): a request that changed leaves its
    old link's list for its new one, and both links are listed to recount; an emptied buffer
    is listed in ``inc.emp`` for :func:`port_links` (while ``inc.hole[H_EMP]`` keeps them)."""
    saf, flits, nvcbuf, deg = prm.mode == SAF, prm.flits, prm.nvcbuf, prm.deg
    rdeg = 1.0 / deg
    head, seg_cnt, seg_recv, seg_out = bufs.head, segs.cnt, segs.recv, segs.out
    breq, bport, bnext, bprev, lhead = inc.breq, inc.bport, inc.bnext, inc.bprev, inc.lhead
    bflag, dbuf, ndb, flag, dirty, nd = inc.bflag, inc.dbuf, inc.ndb, inc.flag, inc.dirty, inc.nd
    emp, hole = inc.emp, inc.hole
    n = ndb[0]
    for i in range(n):
        if i + 16 < n:
            ahead(prm.far, head, dbuf[i + 16])
        if i + 8 < n:
            ahead(prm.far, seg_cnt, head[dbuf[i + 8]])
        b = dbuf[i]
        bflag[b] = 0
        link, code = _front(b, saf, flits, nvcbuf, deg, rdeg, head, seg_cnt, seg_recv, seg_out)
        old = breq[b]
        if link != old:  # a new front (or none): another list
            if old >= 0:
                _unlist(b, old, bnext, bprev, lhead)
                mark_link(old, flag, dirty, nd)
            _list(b, link, breq, bnext, bprev, lhead)
            mark_link(link, flag, dirty, nd)
        elif code != bport[b]:  # the front's request came or went
            mark_link(link, flag, dirty, nd)
        if code == EMPTY and bport[b] != EMPTY and hole[H_EMP] >= 0:  # once a step at most
            emp[hole[H_EMP]] = b
            hole[H_EMP] += 1
        bport[b] = code
    ndb[0] = 0


@njit(cache=True, error_model="numpy", _nrt=False)
def check(prm, segs, pkts, links, bufs, inc):
    """Check mode, before :func:`collect_port`: every active buffer's kept request against a
    fresh read, each link's list against the buffers that request it, the kept movable
    counts against fresh ones; ``inc.chk[1]`` steps checked, ``inc.chk[2]`` those that
    differed."""
    squeeze(bufs, inc)
    saf, flits, nvcbuf, deg, nvc, need = (prm.mode == SAF, prm.flits, prm.nvcbuf, prm.deg,
                                          prm.nvc, prm.need)  # fmt: skip
    head, act, seg_cnt, seg_recv, seg_out = bufs.head, bufs.act, segs.cnt, segs.recv, segs.out
    seg_ovc, seg_pkt, seg_vlo, seg_vhi, seg_hops = segs.ovc, segs.pkt, segs.vlo, segs.vhi, segs.hops
    nbt, held, credit, pkt_dst = links.nbt, links.held, links.credit, pkts.dst
    breq, bport, bnext, lhead, mc, cm = inc.breq, inc.bport, inc.bnext, inc.lhead, inc.mc, inc.cm
    pkt_inj, pkt_pid = pkts.inj, pkts.pid
    bad = False
    nreq = 0
    rdeg = 1.0 / deg
    for i in range(bufs.nact[0]):
        b = act[i]
        link, code = _front(b, saf, flits, nvcbuf, deg, rdeg, head, seg_cnt, seg_recv, seg_out)
        if breq[b] != link or bport[b] != code:
            bad = True
        if link >= 0:
            nreq += 1
            cm[link] += 1
    dem = inc.cdem
    dem[:] = 0
    listed = 0
    for link in range(lhead.shape[0]):
        m = 0
        c = 0
        best, bp, bh = -1, -1, -1  # the oldest movable request, read afresh
        x = lhead[link]
        while x >= 0:
            m += 1
            if breq[x] != link:
                bad = True
            elif bport[x] >= 0 and can_move(link, head[x], nvc, need, seg_ovc, seg_pkt,
                                            seg_vlo, seg_vhi, nbt, held, credit,
                                            pkt_dst):  # fmt: skip
                c += 1
                s = head[x]
                p = seg_pkt[s]
                if best < 0 or older(pkt_inj, pkt_pid, p, bp) or (p == bp and seg_hops[s] > bh):
                    best, bp, bh = s, p, seg_hops[s]
            x = bnext[x]
        if m != cm[link] or c != mc[link] or best != inc.best[link]:
            bad = True
        node, q = link // deg, link % deg
        if ((inc.bits[q * (inc.bits.shape[0] // deg) + (node >> 6)] >> (node & 63)) & 1) != (c > 0):
            bad = True
        cm[link] = 0
        listed += m
        dem[link % deg] += c
    if listed != nreq:
        bad = True
    for q in range(deg):
        if dem[q] != inc.dem[q]:
            bad = True
    inc.chk[1] += 1
    if bad:
        inc.chk[2] += 1
