"""Compiled inner loops of the engine: the serving stage of a step (selection, moves).

Why compiled: a step must cost O(packets that move + active links), not
O(backlog). numpy can only get there with a sort or a scatter over every
queued packet each step (the old engine: 0.13 M hops/s with 256 packets per
node on ms:3,2); a loop over the queue heads does it directly. Each loop has
one job; routing, exchange, injection and the reductions around them stay
vectorized numpy (:mod:`mpinet.engine.core`).

State of one rank (struct of arrays):

* the packet pool ``P``: one 64-byte record per slot, aligned on a cache
  line (``pid, src, dst, cur, inj, hops, key, port, up, adm``, the doubly
  linked queue pointers ``nxt`` / ``prv`` and a one-word header ``h``), so a
  move touches one cache line of its packet, not eleven arrays (measured:
  290 ns per move with a column per field on ms:3,2 with 64 packets per
  node); the router headers ``H`` (slots, w) are a view of ``h`` when w <= 1;
* one queue per (local link, buffer class): ``qhead`` / ``qtail``;
  ``lcount[link]`` packets in all classes of a link; ``act[:na]`` the links
  holding packets, each once; ``pcount[port]`` queued packets per port (the
  demand that fixes an sdc step's dimension). ``qhead``, ``qtail``,
  ``lcount``, ``nbt``, ``load``, ``credit`` and ``lstamp`` are strided views
  of one 32-byte record per link (:mod:`mpinet.engine.state`): what a hop
  touches at a link is one cache line;
* flow control (finite buffers): ``credit[link * C + c]`` free slots of class
  ``c`` in the input buffer the link feeds; ``up[slot]`` the buffer a packet
  occupies: ``global_link * C + c``, :data:`INJ_BUF` its node's injection
  buffer, :data:`NO_BUF` none (unbounded buffers).

Queues are ordered by (``key``, pid); that order and the kernels that put
packets on queues are :mod:`mpinet.engine.queue_kernels`, whose names this
module re-exports (``kn.enqueue``, ``kn.NO_BUF``). Here: ``select``, which
serves the heads of the active links, and ``movable_ports`` (sdc's demand).
``select`` inlines :func:`~mpinet.engine.queue_kernels.before` (an edit of
either file compiles it again: :mod:`mpinet.numba_cache`).
"""

from __future__ import annotations

from mpinet.engine.jit import inline, jit
from mpinet.engine.queue_kernels import (  # noqa: F401  (re-exported: kn.NO_BUF, kn.enqueue, ...)
    A_CUR,
    A_DST,
    A_HOPS,
    A_PID,
    A_SLOT,
    A_WIDTH,
    C_CRED_LOCAL,
    C_CRED_REMOTE,
    C_DELIV,
    C_LOCAL,
    C_MOVES,
    C_REMOTE,
    ERR_HOP_CLASS,
    ERR_NO_LINK,
    ERR_PORT,
    INJ_BUF,
    KIND_ALL,
    KIND_K,
    KIND_SDC,
    NO_BUF,
    TOUCH,
    W_ADM,
    W_CUR,
    W_DST,
    W_HOPS,
    W_INJ,
    W_PID,
    W_SRC,
    W_UP,
    W_WIDTH,
    admit,
    before,
    enqueue,
    source_push,
    unpack,
)


@inline
def _touch_heads(srv, j0, j1, qhead, ncls, P):
    """Load the head record of every link of ``srv[j0:j1]`` in a tight loop.

    Why: the records are scattered over the pool; touched one by one inside
    the long serving loop each costs a full memory latency, while loads in a
    short loop overlap (the CPU keeps many misses in flight). The sum only
    keeps the loads from being optimised away.
    """
    acc = 0
    for j in range(j0, j1):
        s = qhead[srv[j] * ncls]
        if s >= 0:
            acc += P[s].key
    return acc


@inline
def _movable(s, link, nbt, P, credit, ncls, use_cls, finite):
    """A head may cross its link: it is delivered there, or the next buffer has a slot."""
    if not finite or nbt[link] == P[s].dst:
        return True
    c = P[s].hops + 1 if use_cls else 0
    return credit[link * ncls + c] > 0


@inline
def _best_head(link, ncls, qhead, nbt, P, credit, use_cls, finite):
    """The oldest movable head among the class queues of ``link`` (-1: none)."""
    if ncls == 1:
        s = qhead[link]
        if s >= 0 and _movable(s, link, nbt, P, credit, ncls, use_cls, finite):
            return s
        return -1
    best = -1
    for c in range(ncls):
        s = qhead[link * ncls + c]
        if (
            s >= 0
            and _movable(s, link, nbt, P, credit, ncls, use_cls, finite)
            and (best < 0 or before(s, best, P))
        ):
            best = s
    return best


#: serve in link order when more than 1/DENSE of the links are active
DENSE = 8


@inline
def _link_order(act, n, mark, mark8):
    """Sort ``act[:n]`` (distinct links) in place with a zeroed byte map, left zeroed.

    ``mark8`` is the byte map, ``mark`` the same memory as words: the scan
    skips eight empty links per load (a byte loop cost 25 us per step on
    ms:3,2, as much as the moves of a small step).
    """
    for i in range(n):
        mark8[act[i]] = 1
    j = 0
    for w in range(mark.size):
        if mark[w]:
            mark[w] = 0
            for lk in range(8 * w, 8 * w + 8):
                if mark8[lk]:
                    mark8[lk] = 0
                    act[j] = lk
                    j += 1


@jit
def select(t, kind, k, sdc_port, caps, nbt, lo, hi, deg, ncls, use_cls, finite, fifo, P, H,
           qhead, qtail, lcount, pcount, act, na, credit, injret, load, nstamp, lstamp, srv,
           mark, mark8, free, nfree, record, count_load, out_link, out_del, out_mv, out_cl,
           out_cr, out_hop, cnt):  # fmt: skip
    """Choose and perform step ``t``'s transmissions on this rank.

    Every active link (``all-port``), the links of port ``sdc_port`` (``sdc``)
    or the ``k`` links of a node with the oldest movable heads (``k-port``)
    send up to their capacity, oldest movable head first; a packet that
    cannot get a slot downstream blocks its queue (FIFO). Moved packets go to
    ``out_link`` (the link used), and then to delivered records, arrival rows
    (still in their slot; from the front of ``out_mv``) or wire rows for
    another rank (slot freed; from the back of ``out_mv``: a move is one or
    the other, so they share one buffer); the buffers they leave are credited back in
    ``out_cl`` (local) / ``out_cr`` (global) / ``injret`` (injection buffers),
    for the next step.
    """
    nact = na[0]
    hw = H.shape[1]
    back = out_mv.shape[0] - 1
    # 1. the links that may send this step
    nsrv = 0
    if kind == KIND_ALL and nact > lcount.size // DENSE:
        # many active links: serve them in link order. Their records (and the
        # next nodes' ones, neighbours being close in id) are then read as a
        # stream, not at random; the results do not depend on the order links
        # are served in (queues are ordered by (key, pid), each link feeds its
        # own buffer). A byte map sorts them in O(links / 8 + active).
        _link_order(act, nact, mark, mark8)
        for i in range(nact):
            srv[i] = act[i]
        nsrv = nact
        nact = 0  # phase 1 is done
    for i in range(nact):
        link = act[i]
        if kind == KIND_ALL:
            srv[nsrv] = link
            nsrv += 1
        elif kind == KIND_SDC:
            if link % deg == sdc_port:
                srv[nsrv] = link
                nsrv += 1
        else:
            node = link // deg
            if nstamp[node] == t:  # this node was chosen for already
                continue
            nstamp[node] = t
            first = node * deg
            for _ in range(k):  # the k links with the oldest movable heads
                bl = -1
                bs = -1
                for p in range(deg):
                    lk = first + p
                    if lcount[lk] == 0 or lstamp[lk] == t:
                        continue
                    s = _best_head(lk, ncls, qhead, nbt, P, credit, use_cls, finite)
                    if s >= 0 and (bs < 0 or before(s, bs, P)):
                        bs = s
                        bl = lk
                if bl < 0:
                    break
                lstamp[bl] = t
                srv[nsrv] = bl
                nsrv += 1
    # 2. each sends up to its capacity
    m = 0
    lo_link = lo * deg
    nloc_cred = (hi * deg - lo_link) * ncls
    acc = 0
    for j in range(nsrv):
        if j % TOUCH == 0:
            acc += _touch_heads(srv, j, min(nsrv, j + TOUCH), qhead, ncls, P)
        link = srv[j]
        nxtnode = nbt[link]
        p = link % deg
        for _ in range(caps[p]):
            s = _best_head(link, ncls, qhead, nbt, P, credit, use_cls, finite)
            if s < 0:
                break
            # pop s, the head of its class queue
            q = link * ncls + (P[s].hops if use_cls else 0)
            a = P[s].nxt
            qhead[q] = a
            if a < 0:
                qtail[q] = -1
            lcount[link] -= 1
            pcount[p] -= 1
            if count_load:
                load[link] += 1
            out_link[m] = link
            if record:
                out_hop[m, 0] = t
                out_hop[m, 1] = P[s].pid
                out_hop[m, 2] = P[s].cur
                out_hop[m, 3] = nxtnode
                out_hop[m, 4] = p
            m += 1
            # the buffer it leaves is credited back for the next step
            b = P[s].up
            if b >= 0:
                g = b - lo_link * ncls
                if 0 <= g < nloc_cred:
                    out_cl[cnt[C_CRED_LOCAL]] = g
                    cnt[C_CRED_LOCAL] += 1
                else:
                    out_cr[cnt[C_CRED_REMOTE]] = b
                    cnt[C_CRED_REMOTE] += 1
            elif b == INJ_BUF:
                injret[link // deg] += 1
            h = P[s].hops + 1
            P[s].hops = h
            P[s].cur = nxtnode
            if nxtnode == P[s].dst:
                d = cnt[C_DELIV]
                out_del[d, 0] = P[s].pid
                out_del[d, 1] = P[s].src
                out_del[d, 2] = P[s].dst
                out_del[d, 3] = P[s].inj
                out_del[d, 4] = t
                out_del[d, 5] = h
                out_del[d, 6] = P[s].adm
                cnt[C_DELIV] = d + 1
                free[nfree[0]] = s
                nfree[0] += 1
                continue
            c = h if use_cls else 0
            if finite:
                credit[link * ncls + c] -= 1
                P[s].up = (lo_link + link) * ncls + c
            else:
                P[s].up = NO_BUF
            if lo <= nxtnode < hi:
                if fifo:
                    P[s].key = t
                r = cnt[C_LOCAL]
                out_mv[r, A_SLOT] = s
                out_mv[r, A_CUR] = nxtnode
                out_mv[r, A_DST] = P[s].dst
                out_mv[r, A_PID] = P[s].pid
                out_mv[r, A_HOPS] = h
                for x in range(hw):
                    out_mv[r, A_WIDTH + x] = H[s, x]
                cnt[C_LOCAL] = r + 1
            else:
                r = back - cnt[C_REMOTE]
                out_mv[r, W_PID] = P[s].pid
                out_mv[r, W_SRC] = P[s].src
                out_mv[r, W_DST] = P[s].dst
                out_mv[r, W_CUR] = nxtnode
                out_mv[r, W_INJ] = P[s].inj
                out_mv[r, W_HOPS] = h
                out_mv[r, W_UP] = P[s].up
                out_mv[r, W_ADM] = P[s].adm
                for x in range(hw):
                    out_mv[r, W_WIDTH + x] = H[s, x]
                cnt[C_REMOTE] += 1
                free[nfree[0]] = s
                nfree[0] += 1
    # 3. drop the links that emptied (a link is in act[:na] iff it holds packets)
    j = 0
    for i in range(na[0]):
        if lcount[act[i]] > 0:
            act[j] = act[i]
            j += 1
    na[0] = j
    cnt[C_MOVES] = m
    cnt[7] = acc  # keeps the touches (not a result)


@jit
def movable_ports(nbt, deg, ncls, use_cls, P, qhead, lcount, act, na, credit, out):
    """``out[p]`` = number of links of port ``p`` with a movable head (sdc, finite buffers)."""
    for i in range(na[0]):
        link = act[i]
        if lcount[link] and _best_head(link, ncls, qhead, nbt, P, credit, use_cls, True) >= 0:
            out[link % deg] += 1
