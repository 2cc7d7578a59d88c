"""The packet engine's per-link queues: their order, and the kernels that fill them.

A queue is ordered by (``key``, pid): key = the step the packet joined the
node (``fifo``) or its injection step (``oldest-first``). Arrivals are
inserted from the tail: O(1) for FIFO, and the order in which a step's
arrivals are enqueued never matters (so neither does the number of ranks).
Here: that order (:func:`before`, :func:`insert`), the kernels that put
packets on queues (``enqueue``; ``source_push`` and ``admit`` for the source
queues of finite buffers; ``unpack`` for rows from other ranks) and the
column and code numbers every kernel shares. The state they work on, and the
step's serving stage (``select``), are in :mod:`mpinet.engine.kernels`, which
re-exports every name here.
"""

from __future__ import annotations

from mpinet.engine.jit import inline, jit

KIND_ALL, KIND_K, KIND_SDC = 0, 1, 2
NO_BUF, INJ_BUF = -2, -1
# enqueue errors
ERR_PORT, ERR_NO_LINK, ERR_HOP_CLASS = 1, 2, 3
# counters filled by select (indices into ``cnt``)
C_MOVES, C_DELIV, C_LOCAL, C_REMOTE, C_CRED_LOCAL, C_CRED_REMOTE = range(6)
# columns of the arrival rows (then the header) and of the wire rows (then the header)
A_SLOT, A_CUR, A_DST, A_PID, A_HOPS, A_WIDTH = range(6)
W_PID, W_SRC, W_DST, W_CUR, W_INJ, W_HOPS, W_UP, W_ADM, W_WIDTH = range(9)


@inline
def before(a, b, P):
    """Slot ``a`` is served before slot ``b``: (key, pid) order."""
    return P[a].key < P[b].key or (P[a].key == P[b].key and P[a].pid < P[b].pid)


@inline
def insert(s, q, qhead, qtail, P):
    """Insert slot ``s`` into list ``q`` in (key, pid) order, searching from the tail.

    The walk stops at the head itself: a head's ``prv`` is never read, so
    popping a head need not touch the next packet's record (one cache miss
    less per move).
    """
    t = qtail[q]
    while t >= 0 and before(s, t, P):
        t = -1 if t == qhead[q] else P[t].prv
    if t < 0:  # new head
        h = qhead[q]
        P[s].nxt = h
        P[s].prv = -1
        if h >= 0:
            P[h].prv = s
        else:
            qtail[q] = s
        qhead[q] = s
    else:
        a = P[t].nxt
        P[s].nxt = a
        P[s].prv = t
        P[t].nxt = s
        if a >= 0:
            P[a].prv = s
        else:
            qtail[q] = s


#: packets per batch whose records are touched ahead (about 256 KiB of records: fits L2)
TOUCH = 4096


@jit
def source_push(slots, lo, P, shead, stail, sact, nsact):
    """Queue injected packets at their source (finite buffers: they wait for a slot)."""
    n = nsact[0]
    for i in range(slots.size):
        s = slots[i]
        node = P[s].src - lo
        if shead[node] < 0:
            sact[n] = node
            n += 1
        insert(s, node, shead, stail, P)
    nsact[0] = n


@jit
def admit(injfree, shead, stail, P, sact, nsact, out):
    """Move source-queued packets into free injection-buffer slots; returns how many."""
    m = 0
    j = 0
    for i in range(nsact[0]):
        node = sact[i]
        s = shead[node]
        while s >= 0 and injfree[node] > 0:
            out[m] = s
            m += 1
            injfree[node] -= 1
            s = P[s].nxt
        shead[node] = s
        if s >= 0:
            sact[j] = node
            j += 1
        else:
            stail[node] = -1
    nsact[0] = j
    return m


@jit
def unpack(rows, slots, P, H, t, fifo):
    """Write packets received from other ranks (wire rows) into their new slots."""
    hw = H.shape[1]
    for i in range(slots.size):
        s = slots[i]
        P[s].pid = rows[i, W_PID]
        P[s].src = rows[i, W_SRC]
        P[s].dst = rows[i, W_DST]
        P[s].cur = rows[i, W_CUR]
        P[s].inj = rows[i, W_INJ]
        P[s].hops = rows[i, W_HOPS]
        P[s].up = rows[i, W_UP]
        P[s].adm = rows[i, W_ADM]
        P[s].key = t if fifo else rows[i, W_INJ]
        for j in range(hw):
            H[s, j] = rows[i, W_WIDTH + j]


@jit
def enqueue(slots, ports, hdr, write_hdr, nbt, lo, deg, ncls, use_cls, P, H,
            qhead, qtail, lcount, pcount, act, na, err):  # fmt: skip
    """Put packets ``slots`` on the queue of (their node, ``ports[i]``), in (key, pid) order.

    ``hdr[i]`` is the header packet ``i`` carries after its next hop (written
    when ``write_hdr``). Stops at the first bad packet, with ``err = (code,
    i)``: a port outside ``[0, deg)``, a port without a link, or (buffer
    classes) a packet whose next class would be ``>= ncls``.
    """
    n = na[0]
    hw = H.shape[1]
    acc = 0
    for i in range(slots.size):
        if i % TOUCH == 0:  # load this batch's records, then the records at its queues' tails
            i1 = min(slots.size, i + TOUCH)
            for x in range(i, i1):
                acc += P[slots[x]].key
            for x in range(i, i1):
                px = ports[x]
                if 0 <= px < deg:
                    t = qtail[((P[slots[x]].cur - lo) * deg + px) * ncls]
                    if t >= 0:
                        acc += P[t].key
        s = slots[i]
        p = ports[i]
        if p < 0 or p >= deg:
            err[0], err[1] = ERR_PORT, i
            break
        link = (P[s].cur - lo) * deg + p
        if nbt[link] < 0:
            err[0], err[1] = ERR_NO_LINK, i
            break
        c = 0
        if use_cls:
            c = P[s].hops
            if c >= ncls or (c + 1 >= ncls and nbt[link] != P[s].dst):
                err[0], err[1] = ERR_HOP_CLASS, i
                break
        P[s].port = p
        if write_hdr:
            for j in range(hw):
                H[s, j] = hdr[i, j]
        insert(s, link * ncls + c, qhead, qtail, P)
        lcount[link] += 1
        if lcount[link] == 1:
            act[n] = link
            n += 1
        pcount[p] += 1
    na[0] = n
    err[2] = acc  # keeps the touches (not a result)
