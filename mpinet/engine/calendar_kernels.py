"""Compiled loops of the departure calendar (:mod:`mpinet.engine.calendar`).

Under ``all-port`` with unbounded buffers and FIFO order a link serves its
queue at a fixed rate, so the step a packet will leave a link is known the
moment it joins the queue: ``max(t + 1, the link's last departure step)``, the
next of the link's ``capacity`` places in that step. Packets joining a link in
the same step are placed in id order (the (key, pid) order of
:mod:`mpinet.engine.kernels`), whatever order they arrive in. Each packet is
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

import numba as nb
import numpy as np

from mpinet.engine.kernels import (
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

_jit = nb.njit(cache=True, nogil=True)

#: records per chunk: a bucket holding one packet wastes CH - 1 places (1.5 KB)
CH = 32
#: links whose group heads and next pointers are gathered before use (see ``place``)
BATCH = 512

#: one record per packet in a bucket (48 bytes)
RECORD = np.dtype(
    [("pid", "i8"), ("h", "i8"), ("src", "i4"), ("dst", "i4"), ("cur", "i4"), ("inj", "i4"),
     ("hops", "i4"), ("adm", "i4"), ("port", "i4"), ("pad", "i4")], align=True,
)  # fmt: skip
#: one record per local link (8 bytes): its last departure step, the places used in it
LINK = np.dtype([("last", "i4"), ("used", "i4")])


@_jit
def place(rows, ports, t, lo, deg, caps, nbt, LS, G, gnext, gpid, dep, touched, err):
    """Departure step ``dep[i]`` of each packet joining a queue in step ``t``.

    ``rows`` are wire rows (their node in column ``W_CUR``), ``ports`` the
    router's choices. Returns the latest departure step. Stops at the first
    bad port with ``err = (code, i)`` (a port outside ``[0, deg)`` or without
    a link).
    """
    n = rows.shape[0]
    # 1. chain each link's arrivals of this step (touched: each link once)
    nt = 0
    for i in range(n):
        p = ports[i]
        if p < 0 or p >= deg:
            err[0], err[1] = ERR_PORT, i
            return t
        lk = (rows[i, W_CUR] - lo) * deg + p
        if nbt[lk] < 0:
            err[0], err[1] = ERR_NO_LINK, i
            return t
        g = G[lk]
        touched[nt] = lk
        nt += g < 0  # no branch on a load that may miss
        gnext[i] = g
        gpid[i] = rows[i, W_PID]  # a compact copy: the group sort below reads it at random
        G[lk] = i
    # 2. per link, its group in id order takes the next places. The group heads
    # and next pointers of a batch are gathered in tight loops first: their
    # misses overlap, where a branch on each inside the long loop would wait.
    top = t
    buf = np.empty(64, np.int64)
    gh = np.empty(BATCH, np.int64)
    nx = np.empty(BATCH, np.int64)
    ll = np.empty(BATCH, np.int64)
    lu = np.empty(BATCH, np.int64)
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


@_jit
def file_rows(rows, ports, hdr, dep, C, cnext, cfree, nfree, bhead, btail, bfill, bcount):
    """Write each packet into the bucket of its departure step (chunks from the free stack).

    The caller has made room: at least ``rows // CH + buckets touched`` free chunks.
    """
    hw = hdr.shape[1]
    for i in range(rows.shape[0]):
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
        s = btail[d] * CH + f
        bfill[d] = f + 1
        bcount[d] += 1
        C[s].pid = rows[i, W_PID]
        C[s].src = rows[i, W_SRC]
        C[s].dst = rows[i, W_DST]
        C[s].cur = rows[i, W_CUR]
        C[s].inj = rows[i, W_INJ]
        C[s].hops = rows[i, W_HOPS]
        C[s].adm = rows[i, W_ADM]
        C[s].port = ports[i]
        C[s].h = hdr[i, 0] if hw else 0


@_jit
def fire(t, lo, hi, deg, hw, nbt, load, count_load, record, C, cnext, cfree, nfree, bhead,
         btail, bfill, bcount, chunks, out_link, out_del, out_mv, out_hop, cnt):  # fmt: skip
    """Move every packet of step ``t``'s bucket across its link.

    Outputs as :func:`mpinet.engine.kernels.select`: ``out_link``, delivered
    records, local arrivals from the front of ``out_mv`` and rows for other
    ranks from its back, both in wire layout (a calendar packet has no slot).
    """
    # the bucket's chunks first: the walk is the only dependent chain, and it is short
    nc = 0
    c = bhead[t]
    while c >= 0:
        chunks[nc] = c
        nc += 1
        c = cnext[c]
    back = out_mv.shape[0] - 1
    m = nd = nl = nr = 0
    nb = np.empty(CH, np.int64)
    for ci in range(nc):
        c = chunks[ci]
        k = bfill[t] if ci == nc - 1 else CH
        # the chunk's next nodes first, in a tight loop (their misses overlap; the
        # branches below on each would otherwise wait for it in turn)
        for x in range(k):
            nb[x] = nbt[(C[c * CH + x].cur - lo) * deg + C[c * CH + x].port]
        for x in range(c * CH, c * CH + k):
            cur = C[x].cur
            port = C[x].port
            link = (cur - lo) * deg + port
            nxt = nb[x - c * CH]
            out_link[m] = link
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
                r = nl
                nl += 1
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
    if count_load:  # in a loop of its own: the random increments overlap (20 -> 3 ns per hop)
        for i in range(m):
            load[out_link[i]] += 1
    bhead[t] = btail[t] = -1
    bfill[t] = bcount[t] = 0
    cnt[C_MOVES], cnt[C_DELIV], cnt[C_LOCAL], cnt[C_REMOTE] = m, nd, nl, nr


@_jit
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
