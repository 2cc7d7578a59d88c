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

from mpinet.engine.flit.kernels import older_seg
from mpinet.engine.flit.layout import NO_VC, POS, quotient
from mpinet.engine.flit.port_choice import oldest_movable
from mpinet.prefetch import ahead


@njit(cache=True, inline="always")
def _signature(base, wq, deg, nvc, thr, lreq, credit, counts_only):
    """The node's losers' signature: their request counts and, unless ``counts_only``, their
    VCs' credits up to ``thr``, summed (every term only grows while they do not send); times
    2, plus 1 with the credits."""
    s = 0
    for q in range(deg):  # every link, then the winner's taken off: no branch per link
        s += lreq[(base + q) & POS]
    s -= lreq[(base + wq) & POS]
    if counts_only:
        return 2 * s
    for k in range(base * nvc, (base + deg) * nvc):
        s += min(credit[k], thr)
    for k in range((base + wq) * nvc, (base + wq + 1) * nvc):
        s -= min(credit[k], thr)
    return 2 * s + 1


#: a node's byte (``choice_nodes``) after its decision: WON + the winning port (WON - 1: none)
WON = 4
#: the most ports a node's byte can name: above every network's degree (topology.base's
#: MAX_DEGREE, 64; tests/test_flit_kport_nodes.py checks it), so no other way is kept
MAX_DEG = 255 - WON


@njit(cache=True, inline="always")
def choice_nodes(nt, deg, sh, touched, nb, nodes):
    """The nodes with more than one touched link into ``nodes`` (-1 ended), in the order of
    their second touched link, as ``count_nodes`` lists them; their number returned.
    ``nb``: a byte per node (``inc.ncnt``'s storage), zero between steps, 1 after the node's
    first touched link and 2 after its second, written without a branch; ``sh``: the shift
    that gives a link's node when the degree is a power of two, else -1. Why bytes: the
    rank's nodes fit in the first-level cache (ms:3,2: 5 KB); with :func:`allowed_links` 29
    instructions a touched link, 39 with session 20's two bit sets (callgrind,
    docs/performance.md "One-port in session 21")."""
    nn = 0
    if sh >= 0:
        for j in range(nt):
            node = (touched[j] >> sh) & POS
            c = nb[node]
            nodes[nn] = node
            nn += c == 1
            nb[node] = 1 + (c != 0)
    else:
        rdeg = 1.0 / deg
        for j in range(nt):
            node = quotient(touched[j], deg, rdeg) & POS
            c = nb[node]
            nodes[nn] = node
            nn += c == 1
            nb[node] = 1 + (c != 0)
    nodes[nn] = -1  # the list's end, for the check after the moves (kport_nodes_ok)
    return nn


@njit(cache=True, inline="always")
def allowed_links(nt, nn, deg, sh, touched, nodes, nb, nnode):
    """After the decisions (a node with a choice: ``nb`` = WON + its port): the allowed
    links first in ``touched``, in their order, the denied dropped; returns their number.
    A link is allowed if its node had one touched link (byte 1) or it is its node's winner:
    read in the nodes' bytes, in cache, where the links' ``nreq`` missed for one link in two
    (counted; a degree is at most ``MAX_DEG``). Then the bytes of the ``nnode`` nodes are
    zero again: all of them where they are few (a memset), else the allowed links' nodes and
    the nodes with a choice (every touched link's node is one)."""
    na = 0
    if sh >= 0:
        mask = deg - 1
        for j in range(nt):
            link = touched[j]
            c = nb[(link >> sh) & POS]
            touched[na] = link
            na += (c == 1) | (c == WON + (link & mask))
    else:
        rdeg = 1.0 / deg
        for j in range(nt):
            link = touched[j]
            node = quotient(link, deg, rdeg) & POS
            c = nb[node]
            touched[na] = link
            na += (c == 1) | (c == WON + link - node * deg)
    if nnode <= 8 * nt:
        nb[:nnode] = 0
    else:
        rdeg = 1.0 / deg
        for j in range(na):
            nb[quotient(touched[j], deg, rdeg)] = 0
        for i in range(nn):
            nb[nodes[i]] = 0
    return na


@njit(cache=True, error_model="numpy", _nrt=False)
def kept_deny(nt, t, t0, prm, segs, pkts, links, so, inc):
    """:func:`~mpinet.engine.flit.kport_nodes.kport_deny` for one-port (``prm.k == 1``) at
    step ``t`` of a compiled call that started after step ``t0``, its decisions kept
    between steps (the module docstring). The same outputs but the denied links' places:
    their ``nreq`` zeroed, the allowed links first in ``so.touched`` (``so.allow`` to match),
    their number returned; the denied are dropped (``allowed_first``'s ``denied`` False).
    Scratch: ``so.bufs`` (the nodes with a choice: :func:`choice_nodes`), ``inc.ncnt`` as
    a byte per node (:func:`choice_nodes`, :func:`allowed_links`; zero between steps)."""
    nvc, need, deg = prm.nvc, prm.need, prm.deg
    thr = max(need, 1)
    touched, rq, nodes = so.touched, so.rq, so.bufs
    seg_ovc, seg_pkt, seg_vlo, seg_vhi = segs.ovc, segs.pkt, segs.vlo, segs.vhi
    seg_age = segs.age
    nbt, held, credit, lstart, lreq = links.nbt, links.held, links.credit, links.start, links.nreq
    pkt_dst, pkt_pid = pkts.dst, pkts.pid
    kept, chk = inc.nstep, inc.chk
    nb = inc.ncnt.view(np.uint8)  # a byte per node (ncnt: 8 bytes per node)
    sh = 0
    while (1 << sh) < deg:
        sh += 1
    if (1 << sh) != deg:
        sh = -1
    nn = choice_nodes(nt, deg, sh, touched, nb, nodes)
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
        node = nodes[i] & POS
        base = (node * deg) & POS
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
            best, bs = -1, -1
            for q in range(deg):  # ports in order, older strictly: of one packet, the lower link
                link = base + q
                if lreq[link] > 0:
                    f = oldest_movable(link, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt,
                                       seg_vlo, seg_vhi, nbt, held, credit, pkt_dst)  # fmt: skip
                    if f >= 0:
                        s = rq[f]  # ages from the segments: a packet read only on a tie
                        if best < 0 or older_seg(seg_age, seg_pkt, pkt_pid, s, bs):
                            best, bs = q, s
            if wq >= 0:  # check mode: a kept decision, compared with the fresh one
                chk[1] += 1
                chk[2] += best != wq
            if best >= 0 and best != wq:
                dom = True  # the winner older than every request of the others, movable or not
                for q in range(deg):
                    link = base + q
                    if q != best and lreq[link] > 0:  # a bucket's first is its oldest
                        dom &= older_seg(seg_age, seg_pkt, pkt_pid, bs, rq[lstart[link]])
                kept[node, 2] = bs
                kept[node, 3] = _signature(base, best, deg, nvc, thr, lreq, credit, dom)
            wq = best
        kept[node, 0] = t if wq >= 0 else -1  # nothing can move: decided afresh next time
        kept[node, 1] = wq
        nb[node] = WON + wq
        # the denied get nreq 0 (move zeroes the allowed), without a branch per port
        wl = (base + max(wq, 0)) & POS
        keep = lreq[wl]
        for q in range(deg):
            lreq[(base + q) & POS] = 0
        lreq[wl] = keep if wq >= 0 else 0
    na = allowed_links(nt, nn, deg, sh, touched, nodes, nb, inc.ncnt.shape[0])
    so.allow[:na] = True
    return na
