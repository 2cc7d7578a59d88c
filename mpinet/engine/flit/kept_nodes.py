"""One-port's requests kept between steps (numba): the choice read from sdc's kept lists.

On one rank, one-port's step re-read every active buffer's front (``collect``, 27 us a
step on the port-model run) and decided its 437 nodes with a choice (26 us), while 2,744 of
its 3,375 active buffers kept their front from one step to the next (docs/performance.md,
"One-port in session 14"). Here one-port keeps its requests as sdc does
(:mod:`~mpinet.engine.flit.kept_requests`: each buffer's request, each link's list, and per
link its movable requests ``inc.mc`` and oldest movable request ``inc.best``, recounted only
for the links the step's moves, arrivals, credits and injections may have changed), and
:func:`collect_nodes` makes the choice from them afresh every step: a node sends on the link
whose oldest movable request is the oldest (ports in order, older strictly), exactly what
:func:`~mpinet.engine.flit.kport_nodes.kport_deny` chooses (a node whose links have no
movable request moves nothing there either). A node with one link with a movable request
(most of them) is decided by the port bitmaps (``inc.bits``) alone.

The links are served in the reference's order (their first request in the active list), as
:func:`~mpinet.engine.flit.port_links.port_links` finds it for one port: with one link a
node, the links whose first request is a VC buffer of the list's sorted part come first, by
node, then those whose first request is a source queue there, then the others in the
order of the tail's requests.
"""

from __future__ import annotations

from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from mpinet.engine.flit.kernels import _buckets, older
from mpinet.engine.flit.port_links import (
    H_EMP,
    H_SRT,
    _compact,
    _drop_emptied,
    _first_request,
)


@njit(cache=True, error_model="numpy", _nrt=False)
def collect_nodes(prm, segs, pkts, links, bufs, so, inc, lazy):
    """One-port's allowed links of the step from the kept requests: the active list
    compacted as :func:`~mpinet.engine.flit.port_links.port_links` compacts it (``lazy``:
    with holes, one rank), each node's link with the oldest movable request listed in
    ``so.touched`` in the reference's order, all allowed, their requests given as
    :func:`~mpinet.engine.flit.kept_requests.collect_port` gives them (a link of capacity 1
    its oldest movable request; else all, bucketed and sorted); returns their number.
    ``so.bufs`` gets an empty node list (no node can send on two links:
    :func:`~mpinet.engine.flit.kport_nodes.kport_nodes_ok`)."""
    act, active, nact, head = bufs.act, bufs.active, bufs.nact, bufs.head
    breq, bport, bnext, lhead, lbest = inc.breq, inc.bport, inc.bnext, inc.lhead, inc.best
    deg, nvcbuf = prm.deg, prm.nvcbuf
    lcap, lreq, lstart = links.cap, links.nreq, links.start
    touched, allow, rq, rq_prev = so.touched, so.allow, so.rq, so.rq_prev
    seg_pkt, seg_hops, pkt_inj, pkt_pid = segs.pkt, segs.hops, pkts.inj, pkts.pid
    if lazy and inc.hole[H_EMP] >= 0:
        tail = _drop_emptied(bufs, inc)
    else:
        tail = _compact(prm, bufs, inc)
        if lazy:
            inc.hole[H_SRT] = tail
    if lazy:
        inc.hole[H_EMP] = 0
    bits = inc.bits
    words = bits.shape[0] // deg
    na = 0
    top = touched.shape[0]  # the links of the sorted part's source queues, from the end
    for i in range(words):
        w = 0
        for q in range(deg):  # the nodes with a movable request on some link
            w |= bits[q * words + i]
        while w != 0:
            j = trailing_zeros(w)
            w &= w - 1
            node = (i << 6) + j
            base = node * deg
            wq, bp, nq = -1, -1, 0
            for q in range(deg):  # ports in order, older strictly: one-port's choice
                if (bits[q * words + i] >> j) & 1:
                    nq += 1
                    if wq < 0:
                        wq = q
                    else:  # a second link with a movable request: the packets compared
                        if bp < 0:
                            bp = seg_pkt[lbest[base + wq]]
                        p = seg_pkt[lbest[base + q]]
                        if older(pkt_inj, pkt_pid, p, bp):
                            wq, bp = q, p
            link = base + wq
            r = _first_request(link, nvcbuf, lhead, bnext, bport, active)
            if r == 0:
                lreq[link] = 1
                touched[na] = link
                na += 1
            elif r == 1:
                lreq[link] = 1
                top -= 1
                touched[top] = link
            else:
                lreq[link] = -1  # listed at its first request in the tail
    for j in range(touched.shape[0] - 1, top - 1, -1):
        touched[na] = touched[j]
        na += 1
    for i in range(tail, nact[0]):  # the tail's, in its order
        b = act[i]
        active[b] = 1
        if bport[b] < 0:
            continue
        link = breq[b]
        if lreq[link] != -1:
            continue
        lreq[link] = 1
        touched[na] = link
        na += 1
    pos = several = 0
    for j in range(na):
        link = touched[j]
        if lcap[link] == 1:  # the oldest movable request, kept
            rq[pos] = lbest[link]
            lstart[link] = pos
            lreq[link] = 1
            pos += 1
        else:  # chained, latest first, then bucketed and sorted as collect sorts them
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
    if several:
        _buckets(na, touched, allow, lreq, lstart, rq, rq_prev, seg_pkt, seg_hops, pkt_inj,
                 pkt_pid)  # fmt: skip
    so.bufs[0] = -1
    return na
