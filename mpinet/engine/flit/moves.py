"""The moves of a flit step (numba): :func:`move_links`, the loop of
:func:`~mpinet.engine.flit.kernels.move`, and :func:`push_segment`, the one way a segment
is made.

Per allowed link, its requests in (age, id) order, a router's stages: VC allocation (a head
only), the switch (``min(flits present, credits, capacity left)`` flits cross), credits and
VC releases, and the hand-over (delivered, into a buffer of this rank, or onto the wire),
all written to the step's lists and applied after the moves
(:func:`~mpinet.engine.flit.step_end.finish`). Why apart from ``kernels``: the loop is a
module's worth on its own; ``kernels.move`` takes the bundles apart and calls it with their
arrays (taken from the bundles inside it, LLVM optimised the loop less).
"""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit.layout import (
    C_CRED_L,
    C_CRED_R,
    C_CROSS,
    C_DELIV,
    C_DRAIN,
    C_FLITS,
    C_HOPS,
    C_LOCAL,
    C_REL,
    C_WIRE,
    DEST,
    LA_BUF,
    LA_N,
    LA_SEG,
    NO_VC,
    W_ADM,
    W_BUF,
    W_DST,
    W_HEAD,
    W_HOPS,
    W_INJ,
    W_N,
    W_PID,
    W_SRC,
    W_STATE,
    W_WIDTH,
    allocate_vc,
    link_node,
    link_port,
    vc_id,
)
from mpinet.prefetch import ahead


@njit(cache=True, inline="always")
def push_segment(p, b, hops, seg_free, nfree, seg_pkt, seg_cnt, seg_recv, seg_sent, seg_next,
                 seg_buf, seg_out, seg_ovc, seg_hops, bhead, btail, seg_age, age):  # fmt: skip
    """A new, empty segment of packet ``p`` (injected at step ``age``) at the back of buffer
    ``b`` (its flits, its next port and its VC come later); returns it. The one way a
    segment is made."""
    nfree[0] -= 1
    s = seg_free[nfree[0]]
    seg_pkt[s] = p
    seg_age[s] = age
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


@njit(cache=True, error_model="numpy", _nrt=False)
def move_links(far, t, nt, in_window, flits, nvc, need, deg, lo, nvcbuf, record_hops, nloc, gbase,
          seg_cnt, seg_sent, seg_ovc, seg_vlo, seg_vhi, seg_pkt, seg_buf, seg_hops, seg_next,
          seg_recv, seg_out, seg_free, nfree, pkt_pid, pkt_src, pkt_dst, pkt_inj, pkt_adm,
          pkt_state, pkt_hdr, pkt_nseg, nbt, lcap, down, credit, held, load, lflits, lreq,
          lstart, bocc, bhead, btail, ucred, touched, allow, rq, cnt, local, wire, deliv,
          cred_l, cred_r, rel, drain, hop, seg_age):  # fmt: skip
    """:func:`.kernels.move`'s loop on the arrays as arguments: taken from the bundles inside the
    kernel, LLVM optimised the loop less (measured: the switching run 15-25 % slower)."""
    hw = pkt_hdr.shape[1]
    for j in range(nt):
        # ahead of use: the link's bucket, its first request's segment, the receiving buffer
        if j + 16 < nt:
            ahead(far, lstart, touched[j + 16])
        if j + 8 < nt:
            l8 = touched[j + 8]
            ahead(far, seg_cnt, rq[lstart[l8]])
            ahead(far, btail, down[l8])
        if not allow[j]:
            continue
        link = touched[j]
        capl = lcap[link]
        a = lstart[link]
        for x in range(a, a + lreq[link]):
            if capl <= 0:
                break
            s = rq[x]
            p = seg_pkt[s]
            ovc = seg_ovc[s]
            # -- VC allocation (a head) ---------------------------------------------
            first = ovc == NO_VC
            if first:
                ovc = allocate_vc(link, s, p, nvc, need, nbt, pkt_dst, seg_vlo, seg_vhi, held,
                                  credit)  # fmt: skip
                if ovc == NO_VC:
                    continue
            n = min(seg_cnt[s], capl)
            if ovc >= 0:
                n = min(n, credit[vc_id(link, ovc, nvc)])
            if n <= 0:
                continue
            # -- switch: n flits cross the link ---------------------------------------
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
                    held[vc_id(link, ovc, nvc)] = 1
                if b >= nvcbuf:  # the head leaves its source
                    pkt_adm[p] = t - 1
                cnt[C_HOPS] += 1
                if record_hops:
                    h = cnt[C_HOPS] - 1
                    hop[h, 0], hop[h, 1] = t, pkt_pid[p]
                    hop[h, 2], hop[h, 3] = link_node(link, lo, deg), nbt[link]
                    hop[h, 4] = link_port(link, deg)
            # -- credits ----------------------------------------------------------------
            tail = seg_sent[s] == flits
            if ovc >= 0:
                credit[vc_id(link, ovc, nvc)] -= n
                if tail:  # the tail releases the VC (applied at the step's end)
                    rel[cnt[C_REL]] = vc_id(link, ovc, nvc)
                    cnt[C_REL] += 1
            if b < nvcbuf:  # the flits left a VC buffer: credits to its sender
                bocc[b] -= n
                k = ucred[b]
                if 0 <= k < nloc:
                    i = cnt[C_CRED_L]
                    cred_l[i, 0], cred_l[i, 1] = k, n
                    cnt[C_CRED_L] += 1
                else:
                    i = cnt[C_CRED_R]
                    cred_r[i, 0], cred_r[i, 1] = k + gbase, n
                    cnt[C_CRED_R] += 1
            if tail and seg_cnt[s] == 0:
                drain[cnt[C_DRAIN]] = s
                cnt[C_DRAIN] += 1
            # -- hand-over ----------------------------------------------------------------
            if ovc == DEST:  # delivered with its tail
                if tail:
                    i = cnt[C_DELIV]
                    deliv[i, 0], deliv[i, 1], deliv[i, 2] = pkt_pid[p], pkt_src[p], pkt_dst[p]
                    deliv[i, 3], deliv[i, 4] = pkt_inj[p], t
                    deliv[i, 5], deliv[i, 6] = seg_hops[s] + 1, pkt_adm[p]
                    cnt[C_DELIV] += 1
                continue
            b2 = down[link] + ovc
            if 0 <= b2 < nloc:  # into a buffer of this rank
                if first:  # a new segment at the back of buffer b2, flits added at the end
                    s2 = push_segment(p, b2, seg_hops[s] + 1, seg_free, nfree, seg_pkt, seg_cnt,
                                      seg_recv, seg_sent, seg_next, seg_buf, seg_out, seg_ovc,
                                      seg_hops, bhead, btail, seg_age, pkt_inj[p])  # fmt: skip
                    pkt_nseg[p] += 1
                else:
                    s2 = btail[b2]
                i = cnt[C_LOCAL]
                local[i, LA_SEG], local[i, LA_N], local[i, LA_BUF] = s2, n, b2
                cnt[C_LOCAL] += 1
                continue
            cnt[C_CROSS] += n  # onto the wire: a head carries its packet's record
            i = cnt[C_WIRE]
            wire[i, W_HEAD], wire[i, W_PID] = 1 if first else 0, pkt_pid[p]
            wire[i, W_BUF], wire[i, W_N] = b2 + gbase, n
            if first:
                wire[i, W_SRC], wire[i, W_DST] = pkt_src[p], pkt_dst[p]
                wire[i, W_INJ], wire[i, W_ADM] = pkt_inj[p], pkt_adm[p]
                wire[i, W_HOPS], wire[i, W_STATE] = seg_hops[s] + 1, pkt_state[p]
                for c in range(hw):
                    wire[i, W_WIDTH + c] = pkt_hdr[p, c]
            cnt[C_WIRE] += 1
    for j in range(nt):  # nreq is this step's bucket count: zero what this step set
        lreq[touched[j]] = 0
