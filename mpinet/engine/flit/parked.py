"""PROTOTYPE (session 12): one-port's losers parked between steps (numba).

A node's kept decision (:mod:`~mpinet.engine.flit.kept_choice`) leaves its losers' requests
unchanged; here those requests' buffers are *parked*: ``collect_parked`` skips them (no read
of their front), they are in no link's bucket, and their links (``links.nreq = -1``) are not
touched, counted or moved first. A parked link that gets a new request, or a kept node whose
signature or winner changed, is unparked and its node decided afresh. Links unparked are
appended to ``so.touched`` (not in first-request order: a prototype to clock).

State: ``inc.bflag[b]`` 1 while buffer ``b`` is parked, ``inc.lhead[link]`` /
``inc.bnext[b]`` the parked buffers of a link, ``inc.dirty`` the kept nodes (two halves,
by the step's parity), ``inc.nd[0]`` their number, ``inc.nstep`` as kept_choice's.
"""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit.kernels import _bucket, older
from mpinet.engine.flit.kport_nodes import allowed_first, count_nodes
from mpinet.engine.flit.layout import SAF
from mpinet.engine.flit.port_choice import oldest_movable
from mpinet.prefetch import ahead


@njit(cache=True, error_model="numpy", _nrt=False)
def collect_parked(t, prm, segs, pkts, links, bufs, so, inc):
    """:func:`~mpinet.engine.flit.kernels.collect` without the parked buffers; a new request
    on a parked link is chained there (``nreq = -1 - m``) and the link listed in
    ``so.route[2]`` (count in ``inc.nrq[1]``), its node's decision voided. Returns the
    touched links; ``inc.nrq[0]``: the end of the buckets in ``so.rq``."""
    saf, flits, nvcbuf, deg = prm.mode == SAF, prm.flits, prm.nvcbuf, prm.deg
    act, head, active, nact = bufs.act, bufs.head, bufs.active, bufs.nact
    seg_cnt, seg_recv, seg_out, seg_pkt, seg_hops = (segs.cnt, segs.recv, segs.out, segs.pkt,
                                                     segs.hops)  # fmt: skip
    pkt_inj, pkt_pid = pkts.inj, pkts.pid
    lreq, lstart = links.nreq, links.start
    touched, rq, rq_prev = so.touched, so.rq, so.rq_prev
    park, kept, inv = inc.bflag, inc.nstep, so.route[2]
    ninv = 0
    k = 0
    n = 0
    nt = 0
    top = touched.shape[0]
    na = nact[0]
    far = prm.far
    for i in range(na):
        if i + 16 < na:
            ahead(far, head, act[i + 16])
        if i + 8 < na:
            ahead(far, seg_cnt, head[act[i + 8]])
        b = act[i]
        if park[b]:  # waits on a kept loser: its front unchanged, not read
            act[k] = b
            k += 1
            continue
        s = head[b]
        if s < 0:
            active[b] = 0
            continue
        act[k] = b
        k += 1
        if seg_cnt[s] <= 0:
            continue
        if saf and b < nvcbuf and seg_recv[s] < flits:
            continue
        link = seg_out[s]
        rq[n] = s
        c = lreq[link]
        if c < 0:  # a parked link's new request: chained, the link unparked after the pass
            if c == -1:
                inv[ninv] = link
                ninv += 1
                kept[link // deg, 0] = -3
            lreq[link] = c - 1
        else:
            if c == 0:
                touched[nt] = link
                nt += 1
            elif c == 1:
                top -= 1
                touched[top] = link
            lreq[link] = c + 1
        rq_prev[n] = lstart[link]
        lstart[link] = n
        n += 1
    nact[0] = k
    pos = n
    for j in range(top, touched.shape[0]):
        link = touched[j]
        m = lreq[link]
        _bucket(rq, rq_prev, lstart[link], pos, m, seg_pkt, seg_hops, pkt_inj, pkt_pid)
        lstart[link] = pos
        pos += m
    inc.nrq[1] = ninv
    inc.nrq[0] = pos
    return nt


@njit(cache=True, inline="always")
def _unpark(link, pos, m, rq, rq_prev, lstart, lreq, head, seg_pkt, seg_hops, pkt_inj, pkt_pid,
            park, pnext, phead):  # fmt: skip
    """Link ``link``'s parked buffers' requests and its ``m`` chained new ones into one
    sorted bucket at ``rq[pos:]``; returns the bucket's end."""
    p = pos
    x = lstart[link]
    for _ in range(m):  # the new ones, from their chain
        rq[p] = rq[x]
        x = rq_prev[x]
        p += 1
    b = phead[link]
    while b >= 0:
        park[b] = 0
        rq[p] = head[b]
        p += 1
        b = pnext[b]
    phead[link] = -1
    # sorted as collect sorts a bucket (oldest packet first; of one packet the nearer head)
    for x in range(pos + 1, p):
        s = rq[x]
        pk = seg_pkt[s]
        kh = seg_hops[s]
        y = x - 1
        while y >= pos:
            r = rq[y]
            q = seg_pkt[r]
            if older(pkt_inj, pkt_pid, q, pk):
                break
            if q == pk and seg_hops[r] > kh:
                break
            rq[y + 1] = r
            y -= 1
        rq[y + 1] = s
    lstart[link] = pos
    lreq[link] = p - pos
    return p


@njit(cache=True, inline="always")
def _signature(base, wq, deg, nvc, thr, credit, held):
    """The non-winning links' VCs: credits up to ``thr`` minus held flags, summed (only
    grows while they do not send)."""
    s = 0
    for k in range(base * nvc, (base + deg) * nvc):
        s += min(credit[k], thr) - held[k]
    for k in range((base + wq) * nvc, (base + wq + 1) * nvc):
        s -= min(credit[k], thr) - held[k]
    return s


@njit(cache=True, error_model="numpy", _nrt=False)
def parked_deny(nt, t, t0, prm, segs, pkts, links, bufs, so, inc):
    """One-port's choice with the losers parked (module docstring); returns the allowed
    links' number (first in ``so.touched``)."""
    nvc, need, deg = prm.nvc, prm.need, prm.deg
    thr = max(need, 1)
    touched, rq, rq_prev, nodes = so.touched, so.rq, so.rq_prev, so.bufs
    seg_ovc, seg_pkt, seg_vlo, seg_vhi, seg_hops, seg_buf = (segs.ovc, segs.pkt, segs.vlo,
                                                             segs.vhi, segs.hops, segs.buf)  # fmt: skip
    nbt, held, credit, lstart, lreq = links.nbt, links.held, links.credit, links.start, links.nreq
    pkt_dst, pkt_inj, pkt_pid = pkts.dst, pkts.inj, pkts.pid
    head = bufs.head
    ncnt, owner, kept = inc.ncnt, so.route[1], inc.nstep
    park, pnext, phead, klist = inc.bflag, inc.bnext, inc.lhead, inc.dirty
    half = klist.shape[0] // 2
    kin = (t - 1) % 2 * half  # the kept nodes of the step before
    kout = t % 2 * half
    nk = inc.nd[0] if t - 1 > t0 else 0
    nkn = 0
    pos = inc.nrq[0]
    for j in range(inc.nrq[1]):  # parked links with new requests: one bucket each
        link = so.route[2][j]
        m = -1 - lreq[link]
        pos = _unpark(link, pos, m, rq, rq_prev, lstart, lreq, head, seg_pkt, seg_hops, pkt_inj,
                      pkt_pid, park, pnext, phead)  # fmt: skip
        touched[nt] = link
        nt += 1
    nn = count_nodes(nt, deg, 1, touched, owner, ncnt, nodes)
    for i in range(nk):  # the kept nodes: kept again, or their parked links unparked
        node = klist[kin + i]
        base = node * deg
        q = kept[node, 1]
        ok = kept[node, 0] == t - 1 and ncnt[node] <= 1 and lreq[base + q] > 0
        if ok:
            ok = _signature(base, q, deg, nvc, thr, credit, held) == kept[node, 3]
        if ok:
            f = oldest_movable(base + q, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt, seg_vlo,
                               seg_vhi, nbt, held, credit, pkt_dst)  # fmt: skip
            ok = f >= 0 and pkt_pid[seg_pkt[rq[f]]] == kept[node, 2]
        if ok:
            kept[node, 0] = t
            klist[kout + nkn] = node
            nkn += 1
            continue
        c0 = ncnt[node]
        for qq in range(deg):
            link = base + qq
            if lreq[link] < 0:
                pos = _unpark(link, pos, 0, rq, rq_prev, lstart, lreq, head, seg_pkt, seg_hops,
                              pkt_inj, pkt_pid, park, pnext, phead)  # fmt: skip
                touched[nt] = link
                owner[nt] = node
                nt += 1
                ncnt[node] += 1
        if c0 < 2 and ncnt[node] >= 2:
            nodes[nn] = node
            nn += 1
        kept[node, 0] = -1
    for i in range(nn):  # afresh: each link's oldest movable request, the oldest
        node = nodes[i]
        base = node * deg
        if kept[node, 0] == t:
            continue
        best, bp = -1, -1
        for q in range(deg):
            link = base + q
            if lreq[link] > 0:
                f = oldest_movable(link, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt,
                                   seg_vlo, seg_vhi, nbt, held, credit, pkt_dst)  # fmt: skip
                if f >= 0:
                    p = seg_pkt[rq[f]]
                    if best < 0 or older(pkt_inj, pkt_pid, p, bp):
                        best, bp = q, p
        if best < 0:  # nothing can move: every link denied, nothing parked
            kept[node, 0] = -1
            for q in range(deg):
                if lreq[base + q] > 0:
                    lreq[base + q] = 0
            continue
        for q in range(deg):  # the losers' buffers parked
            link = base + q
            m = lreq[link]
            if q == best or m <= 0:
                continue
            a = lstart[link]
            for x in range(a, a + m):
                b = seg_buf[rq[x]]
                park[b] = 1
                pnext[b] = phead[link]
                phead[link] = b
            lreq[link] = -1
        kept[node, 0] = t
        kept[node, 1] = best
        kept[node, 2] = pkt_pid[bp]
        kept[node, 3] = _signature(base, best, deg, nvc, thr, credit, held)
        klist[kout + nkn] = node
        nkn += 1
    inc.nd[0] = nkn
    inc.cdem[0] = kout  # where unpark_all finds them
    return allowed_first(nt, nn, touched, owner, ncnt, lreq, so)


@njit(cache=True, error_model="numpy", _nrt=False)
def unpark_all(deg, lreq, inc):
    """Every parked buffer and link released (a compiled call's end)."""
    park, pnext, phead, klist, kept = inc.bflag, inc.bnext, inc.lhead, inc.dirty, inc.nstep
    off = inc.cdem[0]
    if True:
        for i in range(inc.nd[0]):
            node = klist[off + i]
            for q in range(deg):
                link = node * deg + q
                b = phead[link]
                while b >= 0:
                    park[b] = 0
                    b = pnext[b]
                phead[link] = -1
                if lreq[link] < 0:
                    lreq[link] = 0
            kept[node, 0] = -1
    inc.nd[0] = 0
