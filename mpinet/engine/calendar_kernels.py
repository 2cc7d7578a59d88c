"""Compiled loops of the departure calendar (:mod:`mpinet.engine.calendar`).

Under ``all-port`` with unbounded buffers and FIFO order a link serves its
queue at a fixed rate, so the step a packet will leave a link is known the
moment it joins the queue: ``max(t + 1, the link's last departure step)``, the
next of the link's ``capacity`` places in that step. Packets joining a link in
the same step are placed in id order (the (key, pid) order of
:mod:`mpinet.engine.queue_kernels`), whatever order they arrive in. Each packet is
then written into the bucket of its departure step, and a step is a stream
over one bucket: no queue heads, no linked list through the packets, no
random read of a packet's record.

Buckets are lists of chunks of :data:`CH` records (48 bytes each) taken from
one free stack. Per local link: ``nbt`` its neighbour, ``LS`` its last
departure step and the places used in it (8 bytes), ``G`` the head of this
step's group of arrivals. Separate arrays, so that the ones a loop reads at
random stay small enough for the caches (one 16-byte record cost scc:8 25%).
"""

from __future__ import annotations

import numpy as np

from mpinet.engine.jit import jit
from mpinet.engine.queue_kernels import (
    C_DELIV,
    C_LOCAL,
    C_MOVES,
    C_REMOTE,
    ERR_NO_LINK,
    ERR_PORT,
    NO_BUF,
    W_ADM,
    W_CUR,
    W_DST,
    W_HOPS,
    W_INJ,
    W_PID,
    W_SRC,
    W_UP,
    W_WIDTH,
)  # fmt: skip
from mpinet.routing.compiled import hop

#: records per chunk: a bucket holding one packet wastes CH - 1 places (1.5 KB)
CH = 32
#: links whose group heads and next pointers are gathered before use (see ``place``)
BATCH = 512

#: one record per packet in a bucket (48 bytes)
RECORD = np.dtype(
    [("pid", "i8"), ("h", "i8"), ("src", "i4"), ("dst", "i4"), ("cur", "i4"), ("inj", "i4"),
     ("hops", "i4"), ("adm", "i4"), ("port", "i4"), ("nxt", "i4")], align=True,
)  # fmt: skip
#: one record per local link (8 bytes): its last departure step, the places used in it
LINK = np.dtype([("last", "i4"), ("used", "i4")])


@jit
def route_chain(A, a0, a1, code, prm, ta, tb, lo, deg, nbt, G, gnext, gpid, touched, acc, err):
    """Route arrivals ``A[a0:a1]`` and chain each into its link's group of this step.

    With a compiled rule (``code``, :func:`mpinet.routing.compiled.hop`, routes read
    from rows included) the port and header after the hop are computed here, else ``A``
    holds the router's. Three tight passes, so that the random reads of one packet
    overlap with the next one's: the hops (tables), then the links (``nbt``,
    ``G``), then the chaining in order. Stops at the first bad port with
    ``err = (code, pid, node, hops, port)``; returns the arrivals kept.
    """
    if code:
        for i in range(a0, a1):
            A[i].port, A[i].h = hop(code, prm, ta, tb, A[i].cur, A[i].dst, A[i].h)
    warm = 0
    for i in range(a0, a1):
        p = A[i].port
        if 0 <= p < deg:
            lk = (A[i].cur - lo) * deg + p
            warm += nbt[lk] + G[lk]
    if a1 > a0:
        gnext[a0] = warm  # a use of the loads above (overwritten below)
    for i in range(a0, a1):
        p = A[i].port
        lk = (A[i].cur - lo) * deg + p
        if p < 0 or p >= deg or nbt[lk] < 0:
            err[0] = ERR_PORT if p < 0 or p >= deg else ERR_NO_LINK
            err[1], err[2], err[3], err[4] = A[i].pid, A[i].cur, A[i].hops, p
            return i
        A[i].nxt = nbt[lk]  # fire needs no look-up of its own
        g = G[lk]
        touched[acc[1]] = lk
        acc[1] += g < 0  # each link once; no branch on a load that may miss
        gnext[i] = g
        gpid[i] = A[i].pid  # a compact copy: the group sort in ``place`` reads it at random
        G[lk] = i
    return a1


@jit
def chain_rows(rows, ports, new, code, prm, ta, tb, lo, deg, nbt, G, A, gnext, gpid, touched,
               acc, err):  # fmt: skip
    """Append packets (wire rows) that reached a node to the step's arrivals ``A``, chained.

    Ports and headers from the compiled rule ``code`` or, with ``code == 0``,
    ``ports`` and ``new`` (the router's ``next_port``). ``A`` has room.
    """
    hw = rows.shape[1] - W_WIDTH
    a0 = acc[0]
    for i in range(rows.shape[0]):
        k = a0 + i
        A[k].pid = rows[i, W_PID]
        A[k].src = rows[i, W_SRC]
        A[k].dst = rows[i, W_DST]
        A[k].cur = rows[i, W_CUR]
        A[k].inj = rows[i, W_INJ]
        A[k].hops = rows[i, W_HOPS]
        A[k].adm = rows[i, W_ADM]
        if code:
            A[k].h = rows[i, W_WIDTH] if hw else 0
        else:
            A[k].port = ports[i]
            A[k].h = new[i, 0] if hw else 0
    _route_all(A, a0, a0 + rows.shape[0], code, prm, ta, tb, lo, deg, nbt, G, gnext, gpid,
               touched, acc, err)  # fmt: skip


@jit
def chain_injected(pid, src, dst, hdr, t, ports, new, code, prm, ta, tb, lo, deg, nbt, G, A,
                   gnext, gpid, touched, acc, err):  # fmt: skip
    """:func:`chain_rows` for packets injected at step ``t`` at their sources (no rows built).

    ``hdr`` their headers (the compiled rule's input), or ``ports`` and ``new``
    the router's choices (``code == 0``); both ``(M, 1)`` when headerless.
    """
    a0 = acc[0]
    for i in range(pid.size):
        k = a0 + i
        A[k].pid = pid[i]
        A[k].src = src[i]
        A[k].dst = dst[i]
        A[k].cur = src[i]
        A[k].inj = t
        A[k].hops = 0
        A[k].adm = t
        if code:
            A[k].h = hdr[i, 0]
        else:
            A[k].port = ports[i]
            A[k].h = new[i, 0]
    _route_all(A, a0, a0 + pid.size, code, prm, ta, tb, lo, deg, nbt, G, gnext, gpid, touched,
               acc, err)  # fmt: skip


@jit
def _route_all(A, a0, a1, code, prm, ta, tb, lo, deg, nbt, G, gnext, gpid, touched, acc, err):
    """:func:`route_chain` over ``A[a0:a1]`` in batches that stay in the caches."""
    for b0 in range(a0, a1, BATCH):
        acc[0] = route_chain(A, b0, min(a1, b0 + BATCH), code, prm, ta, tb, lo, deg, nbt, G,
                             gnext, gpid, touched, acc, err)  # fmt: skip
        if err[0]:
            return


@jit
def place(t, deg, caps, LS, G, gnext, gpid, dep, touched, nt):
    """Departure step ``dep[i]`` of each arrival of step ``t``; returns the latest.

    Per touched link, its group (chained by ``gnext`` from ``G``) takes the
    link's next places in id order.
    """
    top = t
    buf = np.empty(64, np.int64)
    gh = np.empty(BATCH, np.int64)
    nx = np.empty(BATCH, np.int64)
    ll = np.empty(BATCH, np.int64)
    lu = np.empty(BATCH, np.int64)
    # The group heads and next pointers of a batch are gathered in tight loops
    # first: their misses overlap, where a branch on each in the long loop would wait.
    for j0 in range(0, nt, BATCH):
        j1 = min(nt, j0 + BATCH)
        for j in range(j0, j1):
            lk = touched[j]
            gh[j - j0] = G[lk]
            ll[j - j0] = LS[lk].last
            lu[j - j0] = LS[lk].used
        for j in range(j0, j1):
            nx[j - j0] = gnext[gh[j - j0]]
        for j in range(j0, j1):
            lk = touched[j]
            g = gh[j - j0]
            G[lk] = -1
            cap = caps[lk % deg]
            last, used = ll[j - j0], lu[j - j0]
            if last <= t:
                last, used = t + 1, 0
            if nx[j - j0] < 0:  # one arrival: the common case
                if used >= cap:
                    last, used = last + 1, 0
                dep[g] = last
                used += 1
            else:
                k = 0
                while g >= 0:  # insertion by id (a group is at most in-degree x capacity)
                    if k == buf.size:
                        big = np.empty(2 * k, np.int64)
                        big[:k] = buf
                        buf = big
                    x = k
                    while x > 0 and gpid[buf[x - 1]] > gpid[g]:
                        buf[x] = buf[x - 1]
                        x -= 1
                    buf[x] = g
                    k += 1
                    g = gnext[g]
                for x in range(k):
                    if used >= cap:
                        last, used = last + 1, 0
                    dep[buf[x]] = last
                    used += 1
            LS[lk].last, LS[lk].used = last, used
            if last > top:
                top = last
    return top


@jit
def file_records(A, n, dep, C, cnext, cfree, nfree, bhead, btail, bfill, bcount):
    """Copy each arrival into the bucket of its departure step (chunks from the free stack).

    The caller has made room: at least ``n // CH + buckets touched`` free chunks.
    """
    for i in range(n):
        d = dep[i]
        f = bfill[d]
        if f == CH or btail[d] < 0:
            nfree[0] -= 1
            c = cfree[nfree[0]]
            cnext[c] = -1
            if btail[d] < 0:
                bhead[d] = c
            else:
                cnext[btail[d]] = c
            btail[d] = c
            f = 0
        C[btail[d] * CH + f] = A[i]
        bfill[d] = f + 1
        bcount[d] += 1


@jit
def fire(t, lo, hi, deg, nbt, load, count_load, record, C, cnext, cfree, nfree, bhead, btail,
         bfill, bcount, chunks, out_link, out_del, out_mv, out_hop, cnt, code, prm, ta, tb, G,
         A, gnext, gpid, touched, acc, err):  # fmt: skip
    """Move every packet of step ``t``'s bucket across its link.

    Outputs as :func:`mpinet.engine.kernels.select`: ``out_link``, delivered
    records, rows for other ranks from the back of ``out_mv`` (wire layout).
    Packets staying on this rank are appended to the arrivals ``A`` and, once the
    bucket is read, routed there by the compiled rule ``code`` in batches
    (:func:`_route_all`); with ``code == 0`` their wire rows go to the front of
    ``out_mv`` for the router.
    """
    hw = out_mv.shape[1] - W_WIDTH
    # the bucket's chunks first: the walk is the only dependent chain, and it is short
    nc = 0
    c = bhead[t]
    while c >= 0:
        chunks[nc] = c
        nc += 1
        c = cnext[c]
    back = out_mv.shape[0] - 1
    m = nd = nl = nr = 0
    a = acc[0]  # the next free arrival
    for ci in range(nc):
        c = chunks[ci]
        k = bfill[t] if ci == nc - 1 else CH
        for x in range(c * CH, c * CH + k):
            cur = C[x].cur
            port = C[x].port
            nxt = C[x].nxt  # read from nbt when the packet joined the link
            out_link[m] = (cur - lo) * deg + port
            if record:
                out_hop[m, 0] = t
                out_hop[m, 1] = C[x].pid
                out_hop[m, 2] = cur
                out_hop[m, 3] = nxt
                out_hop[m, 4] = port
            m += 1
            h = C[x].hops + 1
            if nxt == C[x].dst:
                out_del[nd, 0] = C[x].pid
                out_del[nd, 1] = C[x].src
                out_del[nd, 2] = C[x].dst
                out_del[nd, 3] = C[x].inj
                out_del[nd, 4] = t
                out_del[nd, 5] = h
                out_del[nd, 6] = C[x].adm
                nd += 1
                continue
            if lo <= nxt < hi:
                nl += 1
                if code:  # routed with the chunk's other arrivals, below
                    A[a] = C[x]
                    A[a].cur = nxt
                    A[a].hops = h
                    a += 1
                    continue
                r = nl - 1
            else:
                r = back - nr
                nr += 1
            out_mv[r, W_PID] = C[x].pid
            out_mv[r, W_SRC] = C[x].src
            out_mv[r, W_DST] = C[x].dst
            out_mv[r, W_CUR] = nxt
            out_mv[r, W_INJ] = C[x].inj
            out_mv[r, W_HOPS] = h
            out_mv[r, W_UP] = NO_BUF
            out_mv[r, W_ADM] = C[x].adm
            if hw:
                out_mv[r, W_WIDTH] = C[x].h
        cfree[nfree[0]] = c
        nfree[0] += 1
    if a > acc[0] and not err[0]:
        _route_all(A, acc[0], a, code, prm, ta, tb, lo, deg, nbt, G, gnext, gpid, touched, acc,
                   err)  # fmt: skip
    if count_load:  # in a loop of its own: the random increments overlap (20 -> 3 ns per hop)
        for i in range(m):
            load[out_link[i]] += 1
    bhead[t] = btail[t] = -1
    bfill[t] = bcount[t] = 0
    cnt[C_MOVES], cnt[C_DELIV], cnt[C_LOCAL], cnt[C_REMOTE] = m, nd, nl, nr


@jit
def gather(bhead, btail, bfill, cnext, C, out):
    """Every packet still in a bucket: rows (pid, src, dst, cur, inj, hops, adm) of ``out``."""
    m = 0
    for d in range(bhead.size):
        c = bhead[d]
        while c >= 0:
            k = bfill[d] if c == btail[d] else CH
            for x in range(c * CH, c * CH + k):
                out[m, 0], out[m, 1], out[m, 2] = C[x].pid, C[x].src, C[x].dst
                out[m, 3], out[m, 4] = C[x].cur, C[x].inj
                out[m, 5], out[m, 6] = C[x].hops, C[x].adm
                m += 1
            c = cnext[c]
    return m
