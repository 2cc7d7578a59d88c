"""The flit engine's compiled step (numba): requests, VC allocation, arbitration, moves.

The data (:mod:`mpinet.engine.flit.state`, named by :mod:`~mpinet.engine.flit.layout`): per
local output link and VC the sender's credits and whether a packet holds the VC; per input
buffer (a VC of a link into a local node, or a node's source queue for one output port) a
FIFO of *segments*, the flits of one packet in that buffer; per segment its packet, its
flits, the output link its packet takes from this node and the VC it got there. A step
(docs/switching.md, "One step"):

* :func:`collect` turns the front segment of every active buffer into a request for its
  output link (flits present at the start of the step; store-and-forward: the whole
  packet) and sorts each link's requests by (injection step, packet id);
* :func:`movable` marks the links whose oldest request can move now (the port models
  choose among them: one-port, k-port, sdc);
* :func:`move` serves every allowed link: VC allocation, then ``min(available, credits,
  capacity left)`` flits per request in age order; arrivals, credits and VC releases are
  written to lists, applied after the moves (:func:`~mpinet.engine.flit.step_end.finish`),
  so nothing that moved in step ``t`` moves again in ``t``.

``error_model="numpy"`` on the per-request kernels: no check for a division by zero
(none divides by anything but the degree and the VC count), which numba's default adds
to every ``//`` and ``%``.

Why compiled: a step visits every active buffer and every request; in numpy that is a
sort and a dozen passes per step over arrays the size of the network (the packet engine's
measurements, docs/performance.md); here it is one pass over what is active.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit.layout import link_node, link_port, vc_id
from mpinet.prefetch import prefetch

#: ``seg_ovc`` before the head crossed the output link, and for a hop into the destination
NO_VC, DEST = -1, -2
#: switching codes
SAF, CUT, WORM = 0, 1, 2
#: port model codes
ALL, KPORT, SDC = 0, 1, 2
#: columns of a local arrival row: segment, flits, buffer
LA_SEG, LA_N, LA_BUF = 0, 1, 2
#: columns of a wire row (flits sent to another rank); then the router header
W_HEAD, W_PID, W_BUF, W_N, W_SRC, W_DST, W_INJ, W_ADM, W_HOPS, W_STATE, W_WIDTH = range(11)
#: columns of a delivery row (the run's packet rows)
D_WIDTH = 7
#: counters the step returns
C_FLITS, C_DELIV, C_LOCAL, C_WIRE, C_CRED_L, C_CRED_R, C_REL, C_HOPS, C_CROSS, C_DRAIN = range(10)
NCOUNT = 10


@njit(cache=True, inline="always")
def push_segment(p, b, hops, segs, bufs):
    """A new, empty segment of packet ``p`` at the back of buffer ``b`` (its flits, its
    next port and its VC come later); returns it. The one way a segment is made."""
    segs.nfree[0] -= 1
    s = segs.free[segs.nfree[0]]
    segs.pkt[s] = p
    segs.cnt[s] = 0
    segs.recv[s] = 0
    segs.sent[s] = 0
    segs.next[s] = -1
    segs.buf[s] = b
    segs.out[s] = -1
    segs.ovc[s] = NO_VC
    segs.hops[s] = hops
    if bufs.tail[b] >= 0:
        segs.next[bufs.tail[b]] = s
    else:
        bufs.head[b] = s
    bufs.tail[b] = s
    return s


@njit(cache=True, inline="always")
def _older(pkts, p, q):
    """Whether packet record ``p`` was injected before ``q`` (ties: the lower id)."""
    return pkts.inj[p] < pkts.inj[q] or (pkts.inj[p] == pkts.inj[q] and pkts.pid[p] < pkts.pid[q])


@njit(cache=True, error_model="numpy")
def collect(prm, segs, pkts, links, bufs, so):
    """Requests of the step, bucketed by output link and sorted by (age, pid) per link.

    Drops emptied buffers from the active list first (``bufs.nact[0]`` updated). Returns
    the number of touched links: the requests of link ``so.touched[j]`` are
    ``so.rq[links.start[l] : links.start[l] + links.nreq[l]]``. k-port: ``touched``
    ascending (it groups a node's links); else in first-request order (the order of links
    never changes a result). ``so.rq_prev``: scratch as ``so.rq``'s first half.
    """
    saf = prm.mode == SAF
    by_node = prm.kind == KPORT
    act, head, cnt, lreq, lstart = bufs.act, bufs.head, segs.cnt, links.nreq, links.start
    touched, rq, rq_prev = so.touched, so.rq, so.rq_prev
    k = 0
    n = 0
    nt = 0
    top = touched.shape[0]  # links with several requests, listed down from the end
    na = bufs.nact[0]
    for i in range(na):
        # the buffer's head, then its segment record, ahead of use: two misses in a chain
        if i + 16 < na:
            prefetch(head, act[i + 16])
        if i + 8 < na:
            prefetch(cnt, head[act[i + 8]])
        b = act[i]
        s = head[b]
        if s < 0:
            bufs.active[b] = 0
            continue
        act[k] = b
        k += 1
        if cnt[s] <= 0:
            continue
        if saf and b < prm.nvcbuf and segs.recv[s] < prm.flits:  # not wholly received yet
            continue
        link = segs.out[s]
        rq[n] = s
        if lreq[link] == 0:
            touched[nt] = link
            nt += 1
        elif lreq[link] == 1:  # nt + these <= n <= touched's size: no overlap
            top -= 1
            touched[top] = link
        rq_prev[n] = lstart[link]  # a link's requests chained, latest first
        lstart[link] = n  # a link with one request reads it where it was gathered
        lreq[link] += 1
        n += 1
    bufs.nact[0] = k
    if by_node:
        touched[:nt].sort()
    pos = n  # the buckets of links with several requests go after the n requests
    for j in range(top, touched.shape[0]):
        link = touched[j]
        m = lreq[link]
        x = lstart[link]
        for y in range(pos + m - 1, pos - 1, -1):  # the chain, back in gathering order
            rq[y] = rq[x]
            x = rq_prev[x]
        lstart[link] = pos
        for x in range(pos + 1, pos + m):  # insertion sort: few requests (a node's inputs)
            s = rq[x]
            p = segs.pkt[s]
            kh = segs.hops[s]
            y = x - 1
            while y >= pos:
                r = rq[y]
                q = segs.pkt[r]
                if _older(pkts, q, p):
                    break
                if q == p and segs.hops[r] > kh:  # one packet twice: nearer its head first
                    break
                rq[y + 1] = r
                y -= 1
            rq[y + 1] = s
        pos += m
    return nt


@njit(cache=True, inline="always")
def allocate_vc(link, s, p, prm, segs, pkts, links):
    """VC allocation for a head about to cross ``link``: ``DEST`` into its destination,
    else the lowest VC its policy allows that no packet holds and that has the credits a
    head needs (``need``), else ``NO_VC`` (start-of-step state: nothing moved this step
    changes the answer, as credits and releases are applied after the moves)."""
    if links.nbt[link] == pkts.dst[p]:
        return DEST
    for v in range(segs.vlo[s], segs.vhi[s]):
        k = vc_id(link, v, prm.nvc)
        if links.held[k] == 0 and links.credit[k] >= prm.need:
            return v
    return NO_VC


@njit(cache=True, inline="always")
def _can_move(s, link, prm, segs, pkts, links):
    """Whether request ``s`` can send a flit over ``link`` now (start-of-step state)."""
    ovc = segs.ovc[s]
    if ovc == DEST:
        return True
    if ovc >= 0:
        return links.credit[vc_id(link, ovc, prm.nvc)] > 0
    return allocate_vc(link, s, segs.pkt[s], prm, segs, pkts, links) != NO_VC


@njit(cache=True)
def movable(nt, prm, segs, pkts, links, so, first, demand):
    """Per touched link, the request index of its oldest movable request (-1: none);
    ``demand[port]`` counts the movable requests per port (sdc's choice)."""
    for j in range(nt):
        link = so.touched[j]
        first[j] = -1
        a = links.start[link]
        for x in range(a, a + links.nreq[link]):
            if _can_move(so.rq[x], link, prm, segs, pkts, links):
                if first[j] < 0:
                    first[j] = x
                demand[link_port(link, prm.deg)] += 1


@njit(cache=True)
def choose_links(nt, prm, segs, pkts, so, first, sdc_port):
    """``so.allow[j]``: touched link ``j`` may send this step under the port model."""
    touched, allow, deg = so.touched, so.allow, prm.deg
    for j in range(nt):
        allow[j] = first[j] >= 0
    if prm.kind == SDC:
        for j in range(nt):
            allow[j] = allow[j] and link_port(touched[j], deg) == sdc_port
    elif prm.kind == KPORT:
        j = 0
        while j < nt:  # the links of one node are contiguous (touched is sorted)
            node = touched[j] // deg
            e = j
            while e < nt and touched[e] // deg == node:
                e += 1
            used = 0
            while used < prm.k:  # the k oldest movable links of the node
                best = -1
                for x in range(j, e):
                    if not allow[x] or first[x] < 0:
                        continue
                    if best < 0 or _older(pkts, segs.pkt[so.rq[first[x]]],
                                          segs.pkt[so.rq[first[best]]]):  # fmt: skip
                        best = x
                if best < 0:
                    break
                first[best] = -2 - first[best]  # chosen (encoded; decoded below)
                used += 1
            for x in range(j, e):
                if first[x] <= -2:
                    first[x] = -2 - first[x]
                    allow[x] = True
                else:
                    allow[x] = False
            j = e


@njit(cache=True, error_model="numpy")
def port_model(nt, prm, segs, pkts, links, so, sdc_port):
    """The port model's choice of the links that send (``so.allow``): every touched link
    under all-port, else :func:`choose_links` on the movable requests; ``sdc_port`` the
    step's port under sdc (:func:`sdc_port`, or over all ranks; -1: none)."""
    if prm.kind == ALL:
        for j in range(nt):
            so.allow[j] = True
        return
    first = np.empty(nt, np.int64)
    demand = np.zeros(prm.deg, np.int64)
    movable(nt, prm, segs, pkts, links, so, first, demand)
    choose_links(nt, prm, segs, pkts, so, first, sdc_port)


@njit(cache=True, error_model="numpy")
def sdc_demand(nt, prm, segs, pkts, links, so):
    """The movable requests of the rank per port (sdc's choice, summed over the ranks)."""
    first = np.empty(nt, np.int64)
    demand = np.zeros(prm.deg, np.int64)
    movable(nt, prm, segs, pkts, links, so, first, demand)
    return demand


@njit(cache=True)
def sdc_port(demand):
    """sdc's port of the step: the one with the most movable requests (the lowest of
    equals), -1 if none can move."""
    best = -1
    for q in range(demand.shape[0]):
        if demand[q] > 0 and (best < 0 or demand[q] > demand[best]):
            best = q
    return best


@njit(cache=True, inline="always")
def switch(t, link, s, p, ovc, first, n, in_window, prm, segs, pkts, links, so):
    """``n`` flits of segment ``s`` cross ``link``; a head takes its VC (``held``), leaves
    its source (``adm``) and is counted as a hop (with its row if kept)."""
    cnt = so.cnt
    segs.cnt[s] -= n
    segs.sent[s] += n
    links.flits[link] += n
    cnt[C_FLITS] += n
    if in_window:
        links.load[link] += n
    if first:
        segs.ovc[s] = ovc
        if ovc >= 0:
            links.held[vc_id(link, ovc, prm.nvc)] = 1
        if segs.buf[s] >= prm.nvcbuf:  # the head leaves its source
            pkts.adm[p] = t - 1
        cnt[C_HOPS] += 1
        if prm.record_hops:
            h = cnt[C_HOPS] - 1
            so.hop[h, 0] = t
            so.hop[h, 1] = pkts.pid[p]
            so.hop[h, 2] = link_node(link, prm.lo, prm.deg)
            so.hop[h, 3] = links.nbt[link]
            so.hop[h, 4] = link_port(link, prm.deg)


@njit(cache=True, inline="always")
def credits(link, s, ovc, n, tail, nloc, prm, segs, links, bufs, so):
    """Credits of a move: the VC taken loses ``n`` (released at the tail), the buffer the
    flits left returns ``n`` to its sender (local, or owed to another rank); a segment
    whose tail left is drained (popped in :func:`~mpinet.engine.flit.step_end.finish`)."""
    cnt = so.cnt
    if ovc >= 0:
        k = vc_id(link, ovc, prm.nvc)
        links.credit[k] -= n
        if tail:
            so.rel[cnt[C_REL]] = k
            cnt[C_REL] += 1
    b = segs.buf[s]
    if b < prm.nvcbuf:  # the flits left a VC buffer: credits to its sender
        bufs.occ[b] -= n
        k = bufs.ucred[b]
        if 0 <= k < nloc:
            i = cnt[C_CRED_L]
            so.cred_l[i, 0] = k
            so.cred_l[i, 1] = n
            cnt[C_CRED_L] += 1
        else:
            i = cnt[C_CRED_R]
            so.cred_r[i, 0] = k + prm.lo * prm.deg * prm.nvc
            so.cred_r[i, 1] = n
            cnt[C_CRED_R] += 1
    if tail and segs.cnt[s] == 0:
        so.drain[cnt[C_DRAIN]] = s
        cnt[C_DRAIN] += 1


@njit(cache=True, inline="always")
def hand_over(t, link, s, p, ovc, first, n, tail, nloc, prm, segs, pkts, links, bufs, so):
    """Where the flits go: delivered (the tail into its destination), into a buffer of this
    rank (a head opens its segment there now, its flits added at the step's end), or onto
    the wire to the rank that owns the next node (a head carries its packet's record)."""
    cnt = so.cnt
    if ovc == DEST:
        if tail:
            i = cnt[C_DELIV]
            d = so.deliv
            d[i, 0], d[i, 1], d[i, 2] = pkts.pid[p], pkts.src[p], pkts.dst[p]
            d[i, 3], d[i, 4], d[i, 5], d[i, 6] = pkts.inj[p], t, segs.hops[s] + 1, pkts.adm[p]
            cnt[C_DELIV] += 1
        return
    b2 = links.down[link] + ovc
    if 0 <= b2 < nloc:
        if first:  # a new segment at the back of buffer b2, flits added in finish
            s2 = push_segment(p, b2, segs.hops[s] + 1, segs, bufs)
            pkts.nseg[p] += 1
        else:
            s2 = bufs.tail[b2]
        i = cnt[C_LOCAL]
        so.local[i, LA_SEG] = s2
        so.local[i, LA_N] = n
        so.local[i, LA_BUF] = b2
        cnt[C_LOCAL] += 1
        return
    cnt[C_CROSS] += n
    i = cnt[C_WIRE]
    w = so.wire
    w[i, W_HEAD] = 1 if first else 0
    w[i, W_PID] = pkts.pid[p]
    w[i, W_BUF] = b2 + prm.lo * prm.deg * prm.nvc
    w[i, W_N] = n
    if first:
        w[i, W_SRC], w[i, W_DST] = pkts.src[p], pkts.dst[p]
        w[i, W_INJ], w[i, W_ADM] = pkts.inj[p], pkts.adm[p]
        w[i, W_HOPS], w[i, W_STATE] = segs.hops[s] + 1, pkts.state[p]
        for c in range(pkts.hdr.shape[1]):
            w[i, W_WIDTH + c] = pkts.hdr[p, c]
    cnt[C_WIRE] += 1


@njit(cache=True, error_model="numpy")
def move(t, nt, in_window, prm, segs, pkts, links, bufs, so):
    """Serve every allowed link (see the module docstring); fill the step's lists.

    Per request, in (age, id) order on its link, a router's stages: VC allocation
    (:func:`allocate_vc`, a head only), the switch (:func:`switch`: ``min(flits present,
    credits, capacity left)`` flits), credits (:func:`credits`), the hand-over
    (:func:`hand_over`). Local head arrivals get their segment now, at the back of their
    buffer with 0 flits, so that the packet keeps a segment on this rank whatever drains
    this step.
    """
    nloc = (prm.hi - prm.lo) * prm.deg * prm.nvc  # VC buffers on this rank: ids 0..nloc - 1
    touched, lstart, rq = so.touched, links.start, so.rq
    for j in range(nt):
        # ahead of use: the link's bucket, its first request's segment, the receiving buffer
        if j + 16 < nt:
            prefetch(lstart, touched[j + 16])
        if j + 8 < nt:
            l8 = touched[j + 8]
            prefetch(segs.cnt, rq[lstart[l8]])
            prefetch(bufs.tail, links.down[l8])
        if not so.allow[j]:
            continue
        link = touched[j]
        capl = links.cap[link]
        a = lstart[link]
        for x in range(a, a + links.nreq[link]):
            if capl <= 0:
                break
            s = rq[x]
            p = segs.pkt[s]
            ovc = segs.ovc[s]
            first = ovc == NO_VC
            if first:
                ovc = allocate_vc(link, s, p, prm, segs, pkts, links)
                if ovc == NO_VC:
                    continue
            n = min(segs.cnt[s], capl)
            if ovc >= 0:
                n = min(n, links.credit[vc_id(link, ovc, prm.nvc)])
            if n <= 0:
                continue
            capl -= n
            switch(t, link, s, p, ovc, first, n, in_window, prm, segs, pkts, links, so)
            tail = segs.sent[s] == prm.flits
            credits(link, s, ovc, n, tail, nloc, prm, segs, links, bufs, so)
            hand_over(t, link, s, p, ovc, first, n, tail, nloc, prm, segs, pkts, links, bufs, so)
    for j in range(nt):  # nreq is this step's bucket count: zero what this step set
        links.nreq[touched[j]] = 0
