"""The flit engine's compiled step (numba): requests, VC allocation, arbitration, moves.

The data (:mod:`mpinet.engine.flit.state`, named by :mod:`~mpinet.engine.flit.layout`): per
local output link and VC the sender's credits and whether a packet holds the VC; per input
buffer (a VC of a link into a local node, or a node's source queue for one output port) a
FIFO of *segments*, the flits of one packet in that buffer; per segment its packet, its
flits, the output link its packet takes from this node and the VC it got there. A step
(docs/switching.md, "One step"):

* :func:`collect` turns the front segment of every active buffer into a request for its
  output link (flits present at the start of the step; store-and-forward: the whole
  packet; except under sdc, not a body whose VC has no credit: it cannot move) and sorts
  each link's requests by (injection step, packet id);
* :func:`~mpinet.engine.flit.port_choice.movable` marks the links whose oldest request can
  move now, and the port models choose among them (:mod:`~mpinet.engine.flit.port_choice`);
* :func:`move` serves every allowed link: VC allocation, then ``min(available, credits,
  capacity left)`` flits per request in age order; arrivals, credits and VC releases are
  written to lists, applied after the moves (:func:`~mpinet.engine.flit.step_end.finish`),
  so nothing that moved in step ``t`` moves again in ``t``.

``error_model="numpy"`` on the per-request kernels: no check for a division by zero
(none divides by anything but the degree and the VC count), which numba's default adds
to every ``//`` and ``%``. ``_nrt=False`` on the kernels that allocate nothing (here,
:mod:`~mpinet.engine.flit.step_end`, :mod:`~mpinet.engine.flit.route_io`,
:mod:`~mpinet.engine.flit.port_choice`): no reference counting of the arrays they take from
the bundles, which numba otherwise does with two atomic operations per array and call
(measured on hypercube:8 at 40 %: half of a step's time, docs/performance.md). Such a kernel
must not allocate; the bundles' arrays outlive every call.

Why compiled: a step visits every active buffer and every request; in numpy that is a
sort and a dozen passes per step over arrays the size of the network (the packet engine's
measurements, docs/performance.md); here it is one pass over what is active.
"""

from __future__ import annotations

from numba import njit

# the codes, the rows' columns, the port models' choice and the moves' loop are named where
# they are defined; the callers of the step read them here (fk.SDC, fk.C_DELIV, fk.port_model)
from mpinet.engine.flit.layout import (  # noqa: F401
    ALL,
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
    CUT,
    D_WIDTH,
    DEST,
    KPORT,
    LA_BUF,
    LA_N,
    LA_SEG,
    NCOUNT,
    NO_VC,
    SAF,
    SDC,
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
    WORM,
    allocate_vc,
    link_node,
    link_port,
    vc_id,
)
from mpinet.engine.flit.moves import move_links, push_segment  # noqa: F401
from mpinet.engine.flit.park import BIG, HALF, STALE, compact, park
from mpinet.engine.flit.port_choice import (  # noqa: F401
    choose_links,
    movable,
    port_model,
    sdc_demand,
    sdc_port,
)
from mpinet.prefetch import ahead


@njit(cache=True, inline="always")
def older(pkt_inj, pkt_pid, p, q):
    """Whether packet record ``p`` was injected before ``q`` (ties: the lower id)."""
    return pkt_inj[p] < pkt_inj[q] or (pkt_inj[p] == pkt_inj[q] and pkt_pid[p] < pkt_pid[q])


@njit(cache=True, inline="always")
def older_seg(seg_age, seg_pkt, pkt_pid, s, r):
    """:func:`older` of segments ``s`` and ``r``'s packets by the segments' ``age`` (their
    packets' injection steps): a packet record read only when the two are equal."""
    a, b = seg_age[s], seg_age[r]
    return a < b or (a == b and pkt_pid[seg_pkt[s]] < pkt_pid[seg_pkt[r]])


@njit(cache=True, inline="always")
def _bucket(rq, rq_prev, last, pos, m, seg_pkt, seg_hops, seg_age, pkt_pid):
    """Copy a link's ``m`` requests from their chain (``last``, back through ``rq_prev``) to
    ``rq[pos:pos + m]`` in gathering order, then sort them oldest packet first, and of one
    packet twice the segment nearer its head first (insertion sort: a node's few inputs).
    The ages are the segments' (``age``): a packet record is read only for two requests of
    one injection step (:func:`older_seg`)."""
    x = last
    for y in range(pos + m - 1, pos - 1, -1):
        rq[y] = rq[x]
        x = rq_prev[x]
    for x in range(pos + 1, pos + m):
        s = rq[x]
        ka = seg_age[s]
        y = x - 1
        while y >= pos:
            r = rq[y]
            ra = seg_age[r]
            if ra < ka:  # r's packet is older
                break
            if ra == ka:
                p, q = seg_pkt[s], seg_pkt[r]
                if q == p:  # one packet twice: the segment nearer its head first
                    if seg_hops[r] > seg_hops[s]:
                        break
                elif pkt_pid[q] < pkt_pid[p]:
                    break
            rq[y + 1] = r
            y -= 1
        rq[y + 1] = s


@njit(cache=True, error_model="numpy", _nrt=False, forceinline=True)
def collect(prm, segs, pkts, links, bufs, so):
    """Requests of the step, bucketed by output link and sorted by (age, pid) per link.

    Drops emptied buffers from the active list first (``bufs.nact[0]`` updated). A body
    (its VC taken) whose VC has no credit is no request: it cannot move (``can_move``,
    ``move``'s ``min`` with the credit), so no choice or move needs to read it (one-port
    waits on such bodies: 418 of its 2,500 links with requests a step on the port-model
    run, docs/performance.md "One-port in session 15"). Such a body, and a front with no
    flits here (or not wholly received under store-and-forward), is parked off the list
    until its credits or flits come (:mod:`~mpinet.engine.flit.park`). Not under sdc: its
    compiled steps list a link at its first request of any kind (``port_links``), the order
    this path must keep. Returns
    the number of touched links, in first-request order (the order of links never changes
    a result): the requests of link ``so.touched[j]`` are ``so.rq[links.start[l] :
    links.start[l] + links.nreq[l]]``. Under sdc a link with several requests keeps them
    chained (latest first: ``so.rq[links.start[l]]``, then ``so.rq[so.rq_prev[x]]``), and
    only the links of the step's port are bucketed and sorted, by :func:`move`: the other
    ports' requests (most of the waiting ones) are never sorted. ``so.rq_prev``: the chains,
    as ``so.rq``'s first half.
    """
    saf, flits, nvcbuf = prm.mode == SAF, prm.flits, prm.nvcbuf
    defer = prm.kind == SDC
    act, head, active, nact = bufs.act, bufs.head, bufs.active, bufs.nact
    seg_cnt, seg_recv, seg_out, seg_pkt, seg_hops = (
        segs.cnt,
        segs.recv,
        segs.out,
        segs.pkt,
        segs.hops,
    )
    seg_ovc, credit, nvc = segs.ovc, links.credit, prm.nvc
    seg_age, pkt_pid = segs.age, pkts.pid
    lreq, lstart = links.nreq, links.start
    touched, rq, rq_prev = so.touched, so.rq, so.rq_prev
    plist, pwait = bufs.park, bufs.pwait
    if not defer and nact[1] - nact[2] > nact[2] + 256:
        compact(active, plist, nact)
    k = 0
    n = 0
    nt = 0
    top = touched.shape[0]  # links with several requests, listed down from the end
    na = nact[0]
    far = prm.far
    for i in range(na):
        # the buffer's head, then its segment record, ahead of use: two misses in a chain
        if i + 16 < na:
            ahead(far, head, act[i + 16])
        if i + 8 < na:
            s8 = head[act[i + 8]]
            ahead(far, seg_cnt, s8)
            ahead(far, seg_ovc, s8)
        b = act[i]
        s = head[b]
        if s < 0:
            active[b] = active[b] & STALE
            continue
        act[k] = b
        k += 1
        if seg_cnt[s] <= 0 or (saf and b < nvcbuf and seg_recv[s] < flits):
            if not defer:
                k -= 1
                park(b, active[b], active, plist, nact)
            continue
        link = seg_out[s]
        ovc = seg_ovc[s]
        if ovc >= 0 and not defer:
            kv = vc_id(link, ovc, nvc)
            c = credit[kv]
            if c <= 0:
                if c > -HALF:
                    credit[kv] = c - BIG
                pwait[kv] = b
                k -= 1
                park(b, active[b], active, plist, nact)
                continue
        rq[n] = s
        if lreq[link] == 0:
            touched[nt] = link
            nt += 1
        elif not defer and lreq[link] == 1:  # several: sorted below (by the segments' ages)
            top -= 1  # nt + these <= n <= touched's size: no overlap
            touched[top] = link
        rq_prev[n] = lstart[link]  # a link's requests chained, latest first
        lstart[link] = n  # a link with one request reads it where it was gathered
        lreq[link] += 1
        n += 1
    nact[0] = k
    pos = n  # the buckets of links with several requests go after the n requests
    for j in range(top, touched.shape[0]):
        link = touched[j]
        m = lreq[link]
        _bucket(rq, rq_prev, lstart[link], pos, m, seg_pkt, seg_hops, seg_age, pkt_pid)
        lstart[link] = pos
        pos += m
    return nt


@njit(cache=True, error_model="numpy", _nrt=False, forceinline=True)
def move(t, nt, in_window, prm, segs, pkts, links, bufs, so):
    """Serve every allowed link (see the module docstring); fill the step's lists.

    Per request, in (age, id) order on its link, a router's stages: VC allocation
    (:func:`allocate_vc`, a head only), the switch (``min(flits present, credits, capacity
    left)`` flits cross; a head takes its VC, leaves its source, is counted as a hop),
    credits (the VC taken loses them, released at the tail; the buffer the flits left
    returns them to its sender, local or owed to another rank; a segment whose tail left
    is drained), the hand-over (delivered, into a buffer of this rank, or onto the wire).
    Local head arrivals get their segment now, at the back of their buffer with 0 flits,
    so that the packet keeps a segment on this rank whatever drains this step.

    The bundles' arrays are taken apart here, once: numba copies and reference-counts a
    whole bundle wherever one is handed to a function inlined in the loop (measured: 14x
    slower).
    """
    flits, nvc, need, deg, lo = prm.flits, prm.nvc, prm.need, prm.deg, prm.lo
    nvcbuf, record_hops = prm.nvcbuf, prm.record_hops
    nloc = (prm.hi - lo) * deg * nvc  # VC buffers on this rank: the relative ids 0..nloc - 1
    gbase = lo * deg * nvc  # the global id of the rank's first VC buffer
    seg_cnt, seg_sent, seg_ovc, seg_vlo, seg_vhi = segs.cnt, segs.sent, segs.ovc, segs.vlo, segs.vhi
    seg_pkt, seg_buf, seg_hops, seg_next, seg_recv = (
        segs.pkt,
        segs.buf,
        segs.hops,
        segs.next,
        segs.recv,
    )
    seg_out, seg_free, nfree = segs.out, segs.free, segs.nfree
    pkt_pid, pkt_src, pkt_dst, pkt_inj, pkt_adm = pkts.pid, pkts.src, pkts.dst, pkts.inj, pkts.adm
    pkt_state, pkt_hdr, pkt_nseg = pkts.state, pkts.hdr, pkts.nseg
    nbt, lcap, down, credit, held = links.nbt, links.cap, links.down, links.credit, links.held
    load, lflits, lreq, lstart = links.load, links.flits, links.nreq, links.start
    bocc, bhead, btail, ucred = bufs.occ, bufs.head, bufs.tail, bufs.ucred
    touched, allow, rq, cnt = so.touched, so.allow, so.rq, so.cnt
    local, wire, deliv, cred_l, cred_r = so.local, so.wire, so.deliv, so.cred_l, so.cred_r
    rel, drain, hop, rq_prev = so.rel, so.drain, so.hop, so.rq_prev
    if prm.kind == SDC:  # the chosen port's links with several requests: bucketed now
        _buckets(nt, touched, allow, lreq, lstart, rq, rq_prev, seg_pkt, seg_hops, segs.age,
                 pkt_pid)  # fmt: skip
    move_links(prm.far, t, nt, in_window, flits, nvc, need, deg, lo, nvcbuf, record_hops, nloc,
               gbase,
               seg_cnt, seg_sent, seg_ovc, seg_vlo, seg_vhi, seg_pkt, seg_buf, seg_hops, seg_next,
          seg_recv, seg_out, seg_free, nfree, pkt_pid, pkt_src, pkt_dst, pkt_inj, pkt_adm,
          pkt_state, pkt_hdr, pkt_nseg, nbt, lcap, down, credit, held, load, lflits, lreq,
          lstart, bocc, bhead, btail, ucred, touched, allow, rq, cnt, local, wire, deliv,
          cred_l, cred_r, rel, drain, hop, segs.age)  # fmt: skip


@njit(cache=True, error_model="numpy", _nrt=False)
def _buckets(nt, touched, allow, lreq, lstart, rq, rq_prev, seg_pkt, seg_hops, seg_age,
             pkt_pid):  # fmt: skip
    """sdc: the requests of each allowed link with several, from its chain (:func:`collect`)
    into a bucket after the step's requests (``rq``'s second half), sorted as collect sorts."""
    pos = rq_prev.shape[0]
    for j in range(nt):
        link = touched[j]
        m = lreq[link]
        if not allow[j] or m < 2:
            continue
        _bucket(rq, rq_prev, lstart[link], pos, m, seg_pkt, seg_hops, seg_age, pkt_pid)
        lstart[link] = pos
        pos += m
