"""The end of a flit step (numba): arrivals applied, VCs released, credits returned, the
model checked, and the flits that came from other ranks taken in.

After :func:`~mpinet.engine.flit.kernels.move` has written the step's lists
(:class:`~mpinet.engine.flit.layout.StepOut`), :func:`settle` makes the buffers that
received flits active, lists the heads that reached a node of the rank (to be routed),
applies the lists (:func:`finish`) and checks the model on what moved (:func:`check_step`),
in one compiled call: at a few thousand requests per step the fixed cost of a numpy call
(about a microsecond) and of a kernel's dispatch were a fifth of the engine's time
(docs/performance.md, "The flit engine"). :func:`receive` takes in the rows that came from
other ranks.
"""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit.layout import quotient
from mpinet.engine.flit.park import activate, credit_back
from mpinet.prefetch import ahead

#: :func:`check_step`'s codes (``out[0]``): a link over its capacity, a node over its k
#: ports, a port other than sdc's, a VC buffer over its size
CAPACITY, PORTS, SDC_PORT, BUFFER = 1, 2, 3, 4


@njit(cache=True, error_model="numpy", _nrt=False, forceinline=True)
def settle(nt, sdc_port, prm, segs, pkts, links, bufs, so):
    """The end of the step on this rank; returns the number of ``so.new`` heads.

    ``so.new``: the segments opened by heads that reached a local node (not routed yet:
    ``segs.out = -1``); ``so.bufs``: the buffers checked; ``so.out`` as :func:`check_step`.
    """
    cnt, local, seg_out, new, sbufs = so.cnt, so.local, segs.out, so.new, so.bufs
    active, act, nact = bufs.active, bufs.act, bufs.nact
    nloc = cnt[fk.C_LOCAL]
    nn = 0
    for i in range(nloc):
        if i + 8 < nloc:  # the arrivals' segments and buffers, scattered: ahead of use
            ahead(prm.far, seg_out, local[i + 8, fk.LA_SEG])
            ahead(prm.far, active, local[i + 8, fk.LA_BUF])
        s, b = local[i, fk.LA_SEG], local[i, fk.LA_BUF]
        if seg_out[s] == -1:
            new[nn] = s
            nn += 1
        sbufs[i] = b
        activate(b, active, act, nact)
    finish(segs, pkts, links, bufs, so)
    if prm.kind == fk.KPORT and kport_sent_ok(nt, prm, links, so.touched, so.node):
        nt = 0  # no link over its capacity, no node over k: only the buffers to check
    check_step(nt, sdc_port, prm, links, bufs, so.touched, nloc, so.bufs, so.out)
    return nn


@njit(cache=True, error_model="numpy", _nrt=False)
def finish(segs, pkts, links, bufs, so):
    """The step's lists applied: local arrivals, VC releases, credits, drained segments."""
    cnt, local, rel, cred_l, drain = so.cnt, so.local, so.rel, so.cred_l, so.drain
    seg_cnt, seg_recv, seg_buf, seg_next, seg_pkt = (
        segs.cnt,
        segs.recv,
        segs.buf,
        segs.next,
        segs.pkt,
    )
    seg_free, nfree, pkt_nseg, pkt_free, npfree = (
        segs.free,
        segs.nfree,
        pkts.nseg,
        pkts.free,
        pkts.nfree,
    )
    bocc, bhead, btail, held, credit = bufs.occ, bufs.head, bufs.tail, links.held, links.credit
    for i in range(cnt[fk.C_LOCAL]):
        s, n, b = local[i, fk.LA_SEG], local[i, fk.LA_N], local[i, fk.LA_BUF]
        seg_cnt[s] += n
        seg_recv[s] += n
        bocc[b] += n
    for i in range(cnt[fk.C_REL]):
        held[rel[i]] = 0
    active, act, nact, pwait = bufs.active, bufs.act, bufs.nact, bufs.pwait
    for i in range(cnt[fk.C_CRED_L]):
        credit_back(cred_l[i, 0], cred_l[i, 1], credit, pwait, active, act, nact)
    for i in range(cnt[fk.C_DRAIN]):
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


@njit(cache=True, error_model="numpy", _nrt=False)
def kport_sent_ok(nt, prm, links, touched, nsent):
    """k-port's check of :func:`check_step` on the ``nt`` touched links, without a pass over
    each sending link's node: True if no link carried more flits than its capacity and no
    node sent on more than ``k`` links (their ``links.flits`` then reset); False leaves
    everything to :func:`check_step`, which names the first violation. ``nsent``: per node,
    -1 between steps (``so.node``), its sending links counted from -1 and reset here. Why:
    one-port's check read every sending link's node's ``deg`` links, 6 us of a 155 us step
    on the port-model run; counting per node took 0.5 (docs/performance.md, "One-port in
    session 10")."""
    lflits, lcap, k, deg = links.flits, links.cap, prm.k, prm.deg
    rdeg = 1.0 / deg
    bad = False
    for j in range(nt):  # no branch but the loop's: a violation is looked at after
        link = touched[j]
        f = lflits[link]
        node = quotient(link, deg, rdeg)
        c = nsent[node] + (f > 0)
        nsent[node] = c
        bad |= (c >= k) | (f > lcap[link])
    for j in range(nt):
        nsent[quotient(touched[j], deg, rdeg)] = -1
    if bad:
        return False
    for j in range(nt):
        lflits[touched[j]] = 0
    return True


@njit(cache=True, error_model="numpy", _nrt=False)
def check_step(nt, sdc_port, prm, links, bufs, touched, nbuf, buf_ids, out):
    """The model, checked again on what moved (independent of the port model's choice):
    flits per link against its capacity, links per node, one port index under sdc, no
    buffer over its size.

    ``out = (code, where)``: :data:`CAPACITY`, :data:`PORTS`, :data:`SDC_PORT`,
    :data:`BUFFER`; 0 none. Resets ``links.flits`` of the touched links.
    """
    out[0] = 0
    lflits, lcap, bocc = links.flits, links.cap, bufs.occ
    kind, deg, k, bsize = prm.kind, prm.deg, prm.k, prm.bsize
    rdeg = 1.0 / deg  # the port of a link without a division (layout.quotient)
    for j in range(nt):
        link = touched[j]
        f = lflits[link]
        if f == 0:
            continue
        if kind != fk.KPORT:  # k-port reads the node's other links: reset after its check
            lflits[link] = 0
        if f > lcap[link] and out[0] == 0:
            out[0], out[1] = CAPACITY, link
        if kind == fk.ALL:  # no port rule: no divisions
            continue
        base = quotient(link, deg, rdeg) * deg  # the node's first link
        if kind == fk.SDC and link - base != sdc_port and out[0] == 0:
            out[0], out[1] = SDC_PORT, link
        if kind == fk.KPORT and out[0] == 0:  # the node's links that sent
            used = 0
            for q in range(base, base + deg):  # no branch: a branch per link mispredicted
                used += 1 if lflits[q] > 0 else 0  # (one-port: 60 % of settle, measured)
            if used > k:  # the link over k, in port order
                used = 0
                for q in range(base, base + deg):
                    if lflits[q] > 0:
                        used += 1
                        if used > k:
                            out[0], out[1] = PORTS, q
                            break
        if kind == fk.KPORT:  # a node over k is caught at its first link that sent, all its
            lflits[link] = 0  # links' flits still there; its later links then count fewer
    for i in range(nbuf):
        b = buf_ids[i]
        if bocc[b] > bsize and out[0] == 0:
            out[0], out[1] = BUFFER, b


@njit(cache=True, _nrt=False)
def receive(rows, prm, segs, pkts, bufs, new_seg, err):
    """Flits from other ranks: a head opens a packet record and a segment at the back of its
    buffer (``new_seg`` lists them, to be routed); later flits join that segment. Returns
    the number of heads; ``err = (1, pid)`` for flits whose head never came (a bug)."""
    pkt_hdr, pkt_free, npfree, pkt_pid, pkt_nseg = (
        pkts.hdr,
        pkts.free,
        pkts.nfree,
        pkts.pid,
        pkts.nseg,
    )
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
    hw = pkt_hdr.shape[1]
    base = prm.lo * prm.deg * prm.nvc
    nn = 0
    for i in range(rows.shape[0]):
        b = rows[i, fk.W_BUF] - base
        n = rows[i, fk.W_N]
        if rows[i, fk.W_HEAD]:
            npfree[0] -= 1
            p = pkt_free[npfree[0]]
            pkt_pid[p] = rows[i, fk.W_PID]
            pkts.src[p] = rows[i, fk.W_SRC]
            pkts.dst[p] = rows[i, fk.W_DST]
            pkts.inj[p] = rows[i, fk.W_INJ]
            pkts.adm[p] = rows[i, fk.W_ADM]
            pkts.state[p] = rows[i, fk.W_STATE]
            for c in range(hw):
                pkt_hdr[p, c] = rows[i, fk.W_WIDTH + c]
            pkt_nseg[p] = 1
            s = fk.push_segment(p, b, rows[i, fk.W_HOPS], seg_free, nfree, seg_pkt, seg_cnt,
                                seg_recv, seg_sent, seg_next, seg_buf, seg_out, seg_ovc, seg_hops,
                                bhead, btail, segs.age, rows[i, fk.W_INJ])  # fmt: skip
            new_seg[nn] = s
            nn += 1
        else:
            s = btail[b]
            if s < 0 or pkt_pid[seg_pkt[s]] != rows[i, fk.W_PID]:
                err[0] = 1
                err[1] = rows[i, fk.W_PID]
                continue
        seg_cnt[s] += n
        seg_recv[s] += n
        bocc[b] += n
    return nn
