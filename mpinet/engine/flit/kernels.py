"""The flit engine's compiled step (numba): requests, VC allocation, arbitration, moves.

The data (:mod:`mpinet.engine.flit.state`): per local output link and VC the sender's
credits and whether a packet holds the VC; per input buffer (a VC of a link into a local
node, or a node's source queue for one output port) a FIFO of *segments*, the flits of one
packet in that buffer; per segment its packet, its flits, the output link its packet
takes from this node and the VC it got there. A step (docs/switching.md, "One step"):

* :func:`collect` turns the front segment of every active buffer into a request for its
  output link (flits present at the start of the step; store-and-forward: the whole
  packet) and sorts each link's requests by (injection step, packet id);
* :func:`movable` marks the links whose oldest request can move now (the port models
  choose among them: one-port, k-port, sdc);
* :func:`move` serves every allowed link: VC allocation, then ``min(available, credits,
  capacity left)`` flits per request in age order; arrivals, credits and VC releases are
  written to lists, applied after the moves (:func:`finish`), so nothing that moved in
  step ``t`` moves again in ``t``.

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
def push_segment(p, b, hops, seg_free, nfree, seg_pkt, seg_cnt, seg_recv, seg_sent, seg_next,
                 seg_buf, seg_out, seg_ovc, seg_hops, bhead, btail):  # fmt: skip
    """A new, empty segment of packet ``p`` at the back of buffer ``b`` (its flits, its
    next port and its VC come later); returns it. The one way a segment is made."""
    nfree[0] -= 1
    s = seg_free[nfree[0]]
    seg_pkt[s] = p
    seg_cnt[s] = 0
    seg_recv[s] = 0
    seg_sent[s] = 0
    seg_next[s] = -1
    seg_buf[s] = b
    seg_out[s] = -1
    seg_ovc[s] = NO_VC
    seg_hops[s] = hops
    if btail[b] >= 0:
        seg_next[btail[b]] = s
    else:
        bhead[b] = s
    btail[b] = s
    return s


@njit(cache=True, error_model="numpy")
def collect(nact, act, inact, bhead, seg_cnt, seg_recv, seg_out, seg_pkt, seg_hops, pkt_inj,
            pkt_pid, saf, flits, nvcbuf, lreq, lstart, touched, rq_seg, rq_prev,
            by_node):  # fmt: skip
    """Requests of the step, bucketed by output link and sorted by (age, pid) per link.

    Drops emptied buffers from the active list first (``nact[0]`` updated). Returns the
    number of touched links: the requests of link ``touched[j]`` are ``rq_seg[lstart[l] :
    lstart[l] + lreq[l]]``. ``by_node``: ``touched`` ascending (k-port groups a node's
    links); else in first-request order (the order of links never changes a result).
    ``rq_prev``: scratch as ``rq_seg``'s first half.
    """
    k = 0
    n = 0
    nt = 0
    top = touched.shape[0]  # links with several requests, listed down from the end
    na = nact[0]
    for i in range(na):
        # the buffer's head, then its segment record, ahead of use: two misses in a chain
        if i + 16 < na:
            prefetch(bhead, act[i + 16])
        if i + 8 < na:
            prefetch(seg_cnt, bhead[act[i + 8]])
        b = act[i]
        s = bhead[b]
        if s < 0:
            inact[b] = 0
            continue
        act[k] = b
        k += 1
        if seg_cnt[s] <= 0:
            continue
        if saf and b < nvcbuf and seg_recv[s] < flits:  # not wholly received yet
            continue
        link = seg_out[s]
        rq_seg[n] = s
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
    nact[0] = k
    if by_node:
        touched[:nt].sort()
    pos = n  # the buckets of links with several requests go after the n requests
    for j in range(top, touched.shape[0]):
        link = touched[j]
        m = lreq[link]
        x = lstart[link]
        for y in range(pos + m - 1, pos - 1, -1):  # the chain, back in gathering order
            rq_seg[y] = rq_seg[x]
            x = rq_prev[x]
        lstart[link] = pos
        for x in range(pos + 1, pos + m):  # insertion sort: few requests (a node's inputs)
            s = rq_seg[x]
            p = seg_pkt[s]
            ki, kp, kh = pkt_inj[p], pkt_pid[p], seg_hops[s]
            y = x - 1
            while y >= pos:
                r = rq_seg[y]
                q = seg_pkt[r]
                if pkt_inj[q] < ki or (pkt_inj[q] == ki and pkt_pid[q] < kp):
                    break
                if q == p and seg_hops[r] > kh:  # one packet twice: nearer its head first
                    break
                rq_seg[y + 1] = r
                y -= 1
            rq_seg[y + 1] = s
        pos += m
    return nt


@njit(cache=True, inline="always")
def _can_move(s, link, nvc, need, seg_ovc, seg_vlo, seg_vhi, seg_pkt, pkt_dst, nbt, credit, held):
    """Whether request ``s`` can send a flit over ``link`` now (start-of-step state)."""
    ovc = seg_ovc[s]
    if ovc == DEST:
        return True
    if ovc >= 0:
        return credit[link * nvc + ovc] > 0
    if nbt[link] == pkt_dst[seg_pkt[s]]:
        return True
    for v in range(seg_vlo[s], seg_vhi[s]):
        k = link * nvc + v
        if held[k] == 0 and credit[k] >= need:
            return True
    return False


@njit(cache=True)
def movable(nt, touched, lreq, lstart, rq_seg, nvc, need, seg_ovc, seg_vlo, seg_vhi, seg_pkt,
            pkt_dst, pkt_inj, pkt_pid, nbt, credit, held, deg, first, demand):  # fmt: skip
    """Per touched link, the request index of its oldest movable request (-1: none);
    ``demand[port]`` counts the movable requests per port (sdc's choice)."""
    for j in range(nt):
        link = touched[j]
        first[j] = -1
        a = lstart[link]
        for x in range(a, a + lreq[link]):
            s = rq_seg[x]
            if _can_move(s, link, nvc, need, seg_ovc, seg_vlo, seg_vhi, seg_pkt, pkt_dst, nbt,
                         credit, held):  # fmt: skip
                if first[j] < 0:
                    first[j] = x
                demand[link % deg] += 1


@njit(cache=True)
def choose_links(nt, touched, first, rq_seg, seg_pkt, pkt_inj, pkt_pid, kind, k, sdc_port,
                 deg, allow):  # fmt: skip
    """``allow[j]``: touched link ``j`` may send this step under the port model."""
    for j in range(nt):
        allow[j] = first[j] >= 0
    if kind == SDC:
        for j in range(nt):
            allow[j] = allow[j] and touched[j] % deg == sdc_port
    elif kind == KPORT:
        j = 0
        while j < nt:  # the links of one node are contiguous (touched is sorted)
            node = touched[j] // deg
            e = j
            while e < nt and touched[e] // deg == node:
                e += 1
            used = 0
            while used < k:  # the k oldest movable links of the node
                best = -1
                for x in range(j, e):
                    if allow[x] and first[x] >= 0:
                        p = seg_pkt[rq_seg[first[x]]]
                        if best < 0:
                            best = x
                        else:
                            q = seg_pkt[rq_seg[first[best]]]
                            if pkt_inj[p] < pkt_inj[q] or (
                                pkt_inj[p] == pkt_inj[q] and pkt_pid[p] < pkt_pid[q]
                            ):
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
def move(t, nt, in_window, touched, allow, lreq, lstart, rq_seg, mode, flits, nvc, need, deg,
         lo, hi, nvcbuf, lcap, down, ucred, nbt, credit, held, load, seg_cnt, seg_sent, seg_ovc,
         seg_vlo, seg_vhi, seg_pkt, seg_buf, seg_hops, bocc, bhead, btail, seg_next, seg_recv,
         seg_out, seg_free, nfree, pkt_pid, pkt_src, pkt_dst, pkt_inj, pkt_adm, pkt_state,
         pkt_hdr, pkt_nseg, lflits, local, wire, deliv, cred_l, cred_r, rel, drain, hop,
         record_hops, cnt):  # fmt: skip
    """Serve every allowed link (see the module docstring); fill the step's lists.

    Local head arrivals get their segment now, at the back of their buffer with 0 flits
    (its flits are added by :func:`finish`), so that the packet keeps a segment on this
    rank whatever drains this step. ``lcap``, ``down``, ``ucred``: the per-link and
    per-buffer tables of :class:`~mpinet.engine.flit.state.FlitState`.
    """
    hw = pkt_hdr.shape[1]
    span = deg * nvc
    nloc = (hi - lo) * span  # VC buffers on this rank: the relative ids 0..nloc - 1
    for j in range(nt):
        # ahead of use: the link's bucket, its first request's segment, the receiving buffer
        if j + 16 < nt:
            prefetch(lstart, touched[j + 16])
        if j + 8 < nt:
            l8 = touched[j + 8]
            prefetch(seg_cnt, rq_seg[lstart[l8]])
            prefetch(btail, down[l8])
        if not allow[j]:
            continue
        link = touched[j]
        capl = lcap[link]
        a = lstart[link]
        for x in range(a, a + lreq[link]):
            if capl <= 0:
                break
            s = rq_seg[x]
            p = seg_pkt[s]
            ovc = seg_ovc[s]
            first = ovc == NO_VC
            if first:
                if nbt[link] == pkt_dst[p]:
                    ovc = DEST
                else:
                    for v in range(seg_vlo[s], seg_vhi[s]):
                        k = link * nvc + v
                        if held[k] == 0 and credit[k] >= need:
                            ovc = v
                            break
                    if ovc == NO_VC:
                        continue
            n = min(seg_cnt[s], capl)
            if ovc >= 0:
                n = min(n, credit[link * nvc + ovc])
            if n <= 0:
                continue
            # -- commit ------------------------------------------------------------
            capl -= n
            seg_cnt[s] -= n
            seg_sent[s] += n
            lflits[link] += n
            cnt[C_FLITS] += n
            if in_window:
                load[link] += n
            b = seg_buf[s]
            if first:
                seg_ovc[s] = ovc
                if ovc >= 0:
                    held[link * nvc + ovc] = 1
                if b >= nvcbuf:  # the head leaves its source
                    pkt_adm[p] = t - 1
                cnt[C_HOPS] += 1
                if record_hops:
                    h = cnt[C_HOPS] - 1
                    hop[h, 0] = t
                    hop[h, 1] = pkt_pid[p]
                    hop[h, 2] = link // deg + lo
                    hop[h, 3] = nbt[link]
                    hop[h, 4] = link % deg
            if ovc >= 0:
                credit[link * nvc + ovc] -= n
            tail = seg_sent[s] == flits
            if tail and ovc >= 0:
                rel[cnt[C_REL]] = link * nvc + ovc
                cnt[C_REL] += 1
            if b < nvcbuf:  # the flits left a VC buffer: credits to its sender
                bocc[b] -= n
                k = ucred[b]
                if 0 <= k < nloc:
                    i = cnt[C_CRED_L]
                    cred_l[i, 0] = k
                    cred_l[i, 1] = n
                    cnt[C_CRED_L] += 1
                else:
                    i = cnt[C_CRED_R]
                    cred_r[i, 0] = k + lo * span
                    cred_r[i, 1] = n
                    cnt[C_CRED_R] += 1
            if tail and seg_cnt[s] == 0:
                drain[cnt[C_DRAIN]] = s
                cnt[C_DRAIN] += 1
            if ovc == DEST:
                if tail:
                    i = cnt[C_DELIV]
                    deliv[i, 0] = pkt_pid[p]
                    deliv[i, 1] = pkt_src[p]
                    deliv[i, 2] = pkt_dst[p]
                    deliv[i, 3] = pkt_inj[p]
                    deliv[i, 4] = t
                    deliv[i, 5] = seg_hops[s] + 1
                    deliv[i, 6] = pkt_adm[p]
                    cnt[C_DELIV] += 1
                continue
            b2 = down[link] + ovc
            if 0 <= b2 < nloc:
                if first:  # a new segment at the back of buffer b2, flits added in finish
                    s2 = push_segment(p, b2, seg_hops[s] + 1, seg_free, nfree, seg_pkt, seg_cnt,
                                      seg_recv, seg_sent, seg_next, seg_buf, seg_out, seg_ovc,
                                      seg_hops, bhead, btail)  # fmt: skip
                    pkt_nseg[p] += 1
                else:
                    s2 = btail[b2]
                i = cnt[C_LOCAL]
                local[i, LA_SEG] = s2
                local[i, LA_N] = n
                local[i, LA_BUF] = b2
                cnt[C_LOCAL] += 1
            else:
                cnt[C_CROSS] += n
                i = cnt[C_WIRE]
                wire[i, W_HEAD] = 1 if first else 0
                wire[i, W_PID] = pkt_pid[p]
                wire[i, W_BUF] = b2 + lo * span
                wire[i, W_N] = n
                if first:
                    wire[i, W_SRC] = pkt_src[p]
                    wire[i, W_DST] = pkt_dst[p]
                    wire[i, W_INJ] = pkt_inj[p]
                    wire[i, W_ADM] = pkt_adm[p]
                    wire[i, W_HOPS] = seg_hops[s] + 1
                    wire[i, W_STATE] = pkt_state[p]
                    for c in range(hw):
                        wire[i, W_WIDTH + c] = pkt_hdr[p, c]
                cnt[C_WIRE] += 1
    for j in range(nt):  # lreq is this step's bucket count: zero what this step set
        lreq[touched[j]] = 0


@njit(cache=True, error_model="numpy")
def finish(nloc, local, nrel, rel, held, ncl, cred_l, credit, ndrain, drain, seg_cnt, seg_recv,
           seg_next, seg_buf, seg_pkt, bhead, btail, bocc, seg_free, nfree, pkt_nseg, pkt_free,
           npfree):  # fmt: skip
    """End of the step: local arrivals, VC releases, credits, drained segments popped."""
    for i in range(nloc):
        s, n, b = local[i, LA_SEG], local[i, LA_N], local[i, LA_BUF]
        seg_cnt[s] += n
        seg_recv[s] += n
        bocc[b] += n
    for i in range(nrel):
        held[rel[i]] = 0
    for i in range(ncl):
        credit[cred_l[i, 0]] += cred_l[i, 1]
    for i in range(ndrain):
        s = drain[i]
        b = seg_buf[s]
        bhead[b] = seg_next[s]  # a drained segment is its buffer's front
        if bhead[b] < 0:
            btail[b] = -1
        p = seg_pkt[s]
        pkt_nseg[p] -= 1
        if pkt_nseg[p] == 0:
            pkt_free[npfree[0]] = p
            npfree[0] += 1
        seg_free[nfree[0]] = s
        nfree[0] += 1


@njit(cache=True)
def receive(rows, lo, deg, nvc, seg_cnt, seg_recv, seg_sent, seg_next, seg_buf, seg_out,
            seg_ovc, seg_hops, seg_pkt, bhead, btail, bocc, seg_free, nfree, pkt_pid, pkt_src,
            pkt_dst, pkt_inj, pkt_adm, pkt_state, pkt_hdr, pkt_nseg, pkt_free, npfree,
            new_seg, err):  # fmt: skip
    """Flits from other ranks: a head opens a packet record and a segment at the back of its
    buffer (``new_seg`` lists them, to be routed); later flits join that segment."""
    hw = pkt_hdr.shape[1]
    nn = 0
    for i in range(rows.shape[0]):
        b = rows[i, W_BUF] - lo * deg * nvc
        n = rows[i, W_N]
        if rows[i, W_HEAD]:
            npfree[0] -= 1
            p = pkt_free[npfree[0]]
            pkt_pid[p] = rows[i, W_PID]
            pkt_src[p] = rows[i, W_SRC]
            pkt_dst[p] = rows[i, W_DST]
            pkt_inj[p] = rows[i, W_INJ]
            pkt_adm[p] = rows[i, W_ADM]
            pkt_state[p] = rows[i, W_STATE]
            for c in range(hw):
                pkt_hdr[p, c] = rows[i, W_WIDTH + c]
            pkt_nseg[p] = 1
            s = push_segment(p, b, rows[i, W_HOPS], seg_free, nfree, seg_pkt, seg_cnt, seg_recv,
                             seg_sent, seg_next, seg_buf, seg_out, seg_ovc, seg_hops, bhead,
                             btail)  # fmt: skip
            new_seg[nn] = s
            nn += 1
        else:
            s = btail[b]
            if s < 0 or pkt_pid[seg_pkt[s]] != rows[i, W_PID]:
                err[0] = 1  # flits of a packet whose head never came: a bug, reported
                err[1] = rows[i, W_PID]
                continue
        seg_cnt[s] += n
        seg_recv[s] += n
        bocc[b] += n
    return nn


@njit(cache=True, error_model="numpy")
def check_step(nt, touched, lflits, lcap, deg, kind, k, sdc_port, nbuf_touched, buf_touched,
               bocc, bsize, out):  # fmt: skip
    """The model, checked again on what moved (independent of ``choose_links``): flits per
    link (``lcap``: the capacity of each link), links per node, one port index under sdc,
    no buffer over its size.

    ``out = (code, where)``: 1 capacity, 2 ports per node, 3 sdc, 4 buffer; 0 none.
    Resets ``lflits`` of the touched links.
    """
    out[0] = 0
    node, used = -1, 0
    for j in range(nt):
        link = touched[j]
        f = lflits[link]
        if f == 0:
            continue
        lflits[link] = 0
        if f > lcap[link] and out[0] == 0:
            out[0], out[1] = 1, link
        if kind == ALL:  # no port rule: no divisions
            continue
        if kind == SDC and link % deg != sdc_port and out[0] == 0:
            out[0], out[1] = 3, link
        if link // deg != node:
            node, used = link // deg, 0
        used += 1
        if kind == KPORT and used > k and out[0] == 0:
            out[0], out[1] = 2, link
    for i in range(nbuf_touched):
        b = buf_touched[i]
        if bocc[b] > bsize and out[0] == 0:
            out[0], out[1] = 4, b


def empty_rows(n: int, width: int) -> np.ndarray:
    """An int64 scratch of ``n`` rows."""
    return np.empty((max(n, 1), width), dtype=np.int64)
