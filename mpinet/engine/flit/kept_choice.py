"""One-port's choice kept between steps (numba), without listing any event.

:func:`~mpinet.engine.flit.kport_nodes.kport_deny` decides every node with more than one
link with requests afresh at every step: its links' oldest movable requests read, the
oldest kept. On one rank :func:`kept_deny` makes the same choice (``k = 1``) but keeps a
node's decision from the step before when nothing it rests on can have changed:

* a node's links that did not win (the *losers*) moved nothing, so their requests cannot
  leave them, their VCs' credits cannot fall and their ``held`` flags cannot change (only
  a link's own moves take a VC or release one with a tail): their request counts
  (``links.nreq``, each step's ``collect``) and their VCs' ``min(credit, max(need, 1))``
  only grow. Their sum (the node's *signature*) is therefore equal a step later only if
  none of them changed, and then every loser's oldest movable request is the one it had
  (no request came, none became movable: a body needs a credit, a head a VC free with
  ``need`` credits);
* the credits are read only where they can change the choice: if at the fresh decision the
  winner's packet was older than every loser's oldest request, movable or not (a bucket's
  first, ``collect`` sorts them), a loser can win again only by a new request, and the
  signature is the counts alone (stored times 2, plus 1 where it holds the credits too).
  Counted with callgrind, the credits were the largest part of the choice's instructions;
  the rule takes a fifth of them (docs/performance.md, "One-port in session 20");
* the winner's link is read again (its oldest movable request, as the fresh choice reads
  it): if that is still the winner's packet, which was older than every loser's, it wins.
  Told by its segment, not its packet's id (a packet record read per kept node spared,
  docs/performance.md "One-port in session 16"): the winner's segment moved at the step
  before (the oldest movable request of an allowed link moves), so it has a VC; a segment
  drained then and made again (the same id, another packet) has none until it moves, and
  nothing moves between the step's end and its choice.

So no event is listed (session 6's kept choice listed the losers' events and lost more to
the listing than it saved: docs/performance.md, "One-port and sdc in session 6"): a kept
node reads its ``deg`` links' counts, its losers' ``deg * V`` credits (two runs of adjacent
words) and one link's requests instead of every link's. The held flags were in the
signature until session 14, a read that could never change it (docs/performance.md, "One-port
in session 14"). A decision is
kept only from the step just before in the same compiled call (the call's first step
decides afresh). ``inc.nstep[node]``: the step of the node's last decision (-1: none), its
winning port, the winner's segment and the signature (its lowest bit: with the credits).
Check mode (``inc.chk[0]`` 1):
every kept node is also decided afresh and the fresh choice used; ``inc.chk[1]`` counts
the kept decisions compared, ``inc.chk[2]`` those the fresh one contradicts. 2: the same,
a decision kept without the signature's test, which the tests use to show that the check
catches a missed change.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit.kernels import older
from mpinet.engine.flit.kport_nodes import allowed_first, count_nodes
from mpinet.engine.flit.layout import NO_VC, quotient
from mpinet.engine.flit.port_choice import oldest_movable
from mpinet.prefetch import ahead


@njit(cache=True, inline="always")
def _signature(base, wq, deg, nvc, thr, lreq, credit, counts_only):
    """The node's losers' signature: their request counts and, unless ``counts_only``, their
    VCs' credits up to ``thr``, summed (every term only grows while they do not send); times
    2, plus 1 with the credits."""
    s = 0
    for q in range(deg):  # every link, then the winner's taken off: no branch per link
        s += lreq[base + q]
    s -= lreq[base + wq]
    if counts_only:
        return 2 * s
    for k in range(base * nvc, (base + deg) * nvc):
        s += min(credit[k], thr)
    for k in range((base + wq) * nvc, (base + wq + 1) * nvc):
        s -= min(credit[k], thr)
    return 2 * s + 1


@njit(cache=True, inline="always")
def _mark(node, seen, multi, nodes, nn):
    """A touched link's node into ``seen``, and into ``multi`` and ``nodes`` at its second
    link (no branch); returns the number of nodes listed."""
    w, m = node >> 5, np.uint32(1) << np.uint32(node & 31)
    s, u = seen[w], multi[w]
    nodes[nn] = node
    nn += ((s & ~u) & m) != 0
    multi[w] = u | (s & m)
    seen[w] = s | m
    return nn


@njit(cache=True, inline="always")
def choice_nodes(nt, deg, touched, bits, nodes):
    """The nodes with more than one touched link into ``nodes`` (-1 ended), in the order of
    their second touched link, as ``count_nodes`` lists them; their number returned, -1 if
    ``bits`` (``inc.ncnt`` as 32-bit words) has not room for the two bit sets (then
    ``count_nodes``). Two bit sets of the nodes, ``seen`` and ``multi``, zero between steps
    (cleared whole at the end, a few hundred words), in place of a count per node reset
    through each touched link's node: no per-link list of nodes and no second random write
    per link."""
    nw = (bits.shape[0] + 31) >> 5
    if 2 * nw > bits.shape[0]:
        return -1
    seen, multi = bits[:nw], bits[nw : 2 * nw]
    sh = 0
    while (1 << sh) < deg:
        sh += 1
    nn = 0
    if (1 << sh) == deg:
        for j in range(nt):
            nn = _mark(touched[j] >> sh, seen, multi, nodes, nn)
    else:
        rdeg = 1.0 / deg
        for j in range(nt):
            nn = _mark(quotient(touched[j], deg, rdeg), seen, multi, nodes, nn)
    for w in range(2 * nw):
        bits[w] = 0
    nodes[nn] = -1  # the list's end, for the check after the moves (kport_nodes_ok)
    return nn


@njit(cache=True, error_model="numpy", _nrt=False)
def kept_deny(nt, t, t0, prm, segs, pkts, links, so, inc):
    """:func:`~mpinet.engine.flit.kport_nodes.kport_deny` for one-port (``prm.k == 1``) at
    step ``t`` of a compiled call that started after step ``t0``, its decisions kept
    between steps (the module docstring). The same outputs but the denied links' places:
    their ``nreq`` zeroed, the allowed links first in ``so.touched`` (``so.allow`` to match),
    their number returned; the denied are dropped (``allowed_first``'s ``denied`` False).
    Scratch: ``so.bufs`` (the nodes with a choice: :func:`choice_nodes`);
    ``inc.ncnt`` as its two bit sets (on a rank of very few nodes, as counts, and
    ``so.route[1]`` each touched link's node to reset them)."""
    nvc, need, deg = prm.nvc, prm.need, prm.deg
    thr = max(need, 1)
    touched, rq, nodes = so.touched, so.rq, so.bufs
    seg_ovc, seg_pkt, seg_vlo, seg_vhi = segs.ovc, segs.pkt, segs.vlo, segs.vhi
    nbt, held, credit, lstart, lreq = links.nbt, links.held, links.credit, links.start, links.nreq
    pkt_dst, pkt_inj, pkt_pid = pkts.dst, pkts.inj, pkts.pid
    ncnt, owner, kept, chk = inc.ncnt, so.route[1], inc.nstep, inc.chk
    bits = ncnt.view(np.uint32)
    nn = choice_nodes(nt, deg, touched, bits, nodes)
    counted = nn < 0  # too few nodes for the bit sets: counted per node
    if counted:
        nn = count_nodes(nt, deg, 1, touched, owner, ncnt, nodes)
    flat = kept.reshape(kept.size)  # a node's row of 4 (32 bytes) for the prefetch
    far = prm.far
    for i in range(nn):
        # the rows of the node 4 ahead (its decision, counts, buckets, credits): the nodes
        # come in no order, each a handful of misses (docs/performance.md, "One-port in
        # session 16": the decisions 11-12 us a step, 9.2-9.4 with these)
        if i + 4 < nn:
            n4 = nodes[i + 4]
            ahead(far, flat, n4 * 4)
            ahead(far, lreq, n4 * deg)
            ahead(far, lstart, n4 * deg)
            ahead(far, credit, n4 * deg * nvc)
        node = nodes[i]
        base = node * deg
        wq = -1  # the winning port: kept, else decided afresh
        if kept[node, 0] == t - 1 and t - 1 > t0:
            q = kept[node, 1]
            link = base + q
            sg = kept[node, 3]
            if lreq[link] > 0 and (chk[0] == 2 or _signature(
                    base, q, deg, nvc, thr, lreq, credit, (sg & 1) == 0) == sg):  # fmt: skip
                f = oldest_movable(link, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt, seg_vlo,
                                   seg_vhi, nbt, held, credit, pkt_dst)  # fmt: skip
                if f >= 0 and rq[f] == kept[node, 2] and seg_ovc[rq[f]] != NO_VC:
                    wq = q
        if wq < 0 or chk[0]:  # afresh: each link's oldest movable request, the oldest
            best, bp, bs = -1, -1, -1
            for q in range(deg):  # ports in order, older strictly: of one packet, the lower link
                link = base + q
                if lreq[link] > 0:
                    f = oldest_movable(link, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt,
                                       seg_vlo, seg_vhi, nbt, held, credit, pkt_dst)  # fmt: skip
                    if f >= 0:
                        p = seg_pkt[rq[f]]
                        if best < 0 or older(pkt_inj, pkt_pid, p, bp):
                            best, bp, bs = q, p, rq[f]
            if wq >= 0:  # check mode: a kept decision, compared with the fresh one
                chk[1] += 1
                chk[2] += best != wq
            if best >= 0 and best != wq:
                dom = True  # the winner older than every request of the others, movable or not
                for q in range(deg):
                    link = base + q
                    if q != best and lreq[link] > 0:  # a bucket's first is its oldest
                        dom &= older(pkt_inj, pkt_pid, bp, seg_pkt[rq[lstart[link]]])
                kept[node, 2] = bs
                kept[node, 3] = _signature(base, best, deg, nvc, thr, lreq, credit, dom)
            wq = best
        kept[node, 0] = t if wq >= 0 else -1  # nothing can move: decided afresh next time
        kept[node, 1] = wq
        for q in range(deg):
            if q != wq:
                lreq[base + q] = 0  # denied (or not touched: already 0)
    if counted:
        return allowed_first(nt, nn, touched, owner, ncnt, lreq, so, False)
    na = 0  # the allowed links first, in order; the denied dropped (allowed_first's way)
    for j in range(nt):
        link = touched[j]
        touched[na] = link
        na += lreq[link] > 0
    so.allow[:na] = True
    return na
