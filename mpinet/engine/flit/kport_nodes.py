"""k-port's and one-port's choice by node counts, the allowed links first (numba).

:func:`~mpinet.engine.flit.port_choice.kport_choice` (the step-by-step path's) chains every
touched link by node, walks the chains (their length, then the choice) and resets their
heads, and a pass then moved the allowed links to the front of ``so.touched``: on the ms:3,2
one-port run of docs/performance.md the two were a quarter of the step (94-102 ms of a
385-437 ms run, stage clocks). :func:`kport_deny` makes the same choice without chains:

* a node's count of touched links (``inc.ncnt``, zero between steps: each touched link's
  node is kept in scratch and its count reset in the last pass) is added to without a
  branch, and the nodes without a choice are not visited again. The counts were stamped
  with the step before (nothing reset), but the stamp's test compiled to a branch that
  mispredicted at random: the count took 12.4 us a step on the port-model run, 6.0 without
  it; the last pass likewise (7.1 to 4.3 us; docs/performance.md, "One-port in session 9");
* a node's links are ``node * deg + q``: a node with a choice reads its ``deg`` links'
  request counts (``links.nreq``, > 0 exactly on the step's touched links) in one place;
* a denied link gets ``links.nreq = 0`` (``move`` serves a link's ``nreq`` requests and
  zeroes those of the links it visits; the denied ones are not visited, and the next step's
  ``collect`` needs them zero), which is how the last pass tells the allowed
  links apart, moving them first in their order (the order of the moves, which fixes the
  order of the deliveries, arrivals and heads, is the same).

Kept between steps instead (each node's winners re-read, the choice voided by the losers'
listed events), the choice was exact but slower on that run: listing the events cost more
than the reads it spared (docs/performance.md, "One-port and sdc in session 6").
"""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit.kernels import older
from mpinet.engine.flit.layout import POS, quotient
from mpinet.engine.flit.port_choice import oldest_movable


@njit(cache=True, inline="always")
def count_nodes(nt, deg, kk, touched, owner, ncnt, nodes):
    """Each touched link's node into ``owner`` and its count into ``ncnt``; the nodes with
    more than ``kk`` touched links (a choice) into ``nodes`` (-1 ended), their number
    returned. No branch: a stamp's test compiled to one, mispredicted. A degree that is a
    power of two (ms:3,2, hypercubes) takes a link's node by a shift, in a loop of its own
    (a test per link in one loop took 3.2 us a step): ``quotient``'s multiplies were half
    the count's 5.4 us a step on the port-model run, 2.5 with the shift
    (docs/performance.md, "One-port in session 13")."""
    sh = 0
    while (1 << sh) < deg:
        sh += 1
    nn = 0
    if (1 << sh) == deg:
        for j in range(nt):
            node = touched[j] >> sh
            owner[j] = node
            c = ncnt[node] + 1
            ncnt[node] = c
            nodes[nn] = node
            nn += c == kk + 1
    else:
        rdeg = 1.0 / deg
        for j in range(nt):
            node = quotient(touched[j], deg, rdeg)
            owner[j] = node
            c = ncnt[node] + 1
            ncnt[node] = c
            nodes[nn] = node
            nn += c == kk + 1
    nodes[nn] = -1  # the list's end, for the check after the moves (kport_nodes_ok)
    return nn


@njit(cache=True, inline="always")
def allowed_first(nt, nn, touched, owner, ncnt, lreq, so, denied=True):
    """After a choice (the denied links' ``lreq`` zeroed): the nodes' counts reset, the
    allowed links moved to the front of ``touched`` in their order and the denied after
    them (``so.allow`` to match); returns the allowed links' number. ``nn`` 0 (no node
    had a choice): every link allowed, in order. ``denied`` False (one-port's one-rank
    steps, where nothing reads past the allowed): the denied links dropped, not kept after
    them (one pass: 3.1-3.3 us a step -> 1.9-2.0 on the port-model run, docs/performance.md
    "One-port in session 16")."""
    if nn == 0:
        for j in range(nt):
            ncnt[owner[j]] = 0
        so.allow[:nt] = True
        return nt
    allow, rest = so.allow, so.route[0]
    na = 0
    if not denied:  # the denied links dropped (one rank: nothing reads them)
        for j in range(nt):
            ncnt[owner[j]] = 0
            link = touched[j]
            touched[na] = link
            na += lreq[link] > 0
        allow[:na] = True
        return na
    for j in range(nt):  # move visits only the allowed (no branch)
        ncnt[owner[j]] = 0
        link = touched[j]
        touched[na] = link  # na <= j: touched[j] is read before it is written
        rest[j - na] = link
        na += lreq[link] > 0
    for i in range(nt - na):
        touched[na + i] = rest[i]
    allow[:na] = True
    allow[na:nt] = False
    return na


@njit(cache=True, error_model="numpy", _nrt=False)
def kport_deny(nt, t, prm, segs, pkts, links, so, inc):
    """The k-port (one-port) choice of :func:`~mpinet.engine.flit.port_choice.kport_choice`
    at step ``t`` (not read): a node with at most ``k`` links with requests sends on all of
    them (a link none of whose requests can move moves nothing in ``move``); a node with
    more allows the ``k`` links whose oldest movable requests are the oldest (an older
    packet; one packet on two links: the lower link), and its other links get
    ``links.nreq = 0``. The allowed
    links are moved to the front of ``so.touched`` in their order (the others after them,
    in theirs; ``so.allow`` to match); returns their number. Scratch: ``so.bufs`` (the
    nodes with a choice), ``so.rq_prev`` (a node's links' oldest movable requests;
    ``collect`` is done with it), ``so.route[0]`` (the denied links), ``so.route[1]`` (each
    touched link's node, to reset ``inc.ncnt``)."""
    nvc, need, deg, kk = prm.nvc, prm.need, prm.deg, prm.k
    touched, rq, nodes, firsts = so.touched, so.rq, so.bufs, so.rq_prev
    seg_ovc, seg_pkt, seg_vlo, seg_vhi = segs.ovc, segs.pkt, segs.vlo, segs.vhi
    nbt, held, credit, lstart, lreq = links.nbt, links.held, links.credit, links.start, links.nreq
    pkt_dst, pkt_inj, pkt_pid = pkts.dst, pkts.inj, pkts.pid
    ncnt, owner = inc.ncnt, so.route[1]
    nn = count_nodes(nt, deg, kk, touched, owner, ncnt, nodes)
    for i in range(nn):
        base = nodes[i] * deg
        for q in range(deg):  # each link's oldest movable request (-1: none, or idle)
            link = base + q
            f = -1
            if lreq[link] > 0:
                f = oldest_movable(link, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt,
                                    seg_vlo, seg_vhi, nbt, held, credit, pkt_dst)  # fmt: skip
            firsts[q] = f
        for _ in range(kk):  # the k oldest; a chosen link's entry becomes -2
            best, bp = -1, -1
            for q in range(deg):  # ports in order, older strictly: of one packet, the lower link
                f = firsts[q]
                if f >= 0:
                    p = seg_pkt[rq[f]]
                    if best < 0 or older(pkt_inj, pkt_pid, p, bp):
                        best, bp = q, p
            if best < 0:
                break
            firsts[best] = -2
        for q in range(deg):
            if firsts[q] != -2:
                lreq[base + q] = 0  # denied (or not touched: already 0)
    return allowed_first(nt, nn, touched, owner, ncnt, lreq, so)


@njit(cache=True, error_model="numpy", _nrt=False)
def kport_nodes_ok(na, kk, deg, nodes, touched, lflits, lcap):
    """The k-port model check after the moves of a choice by :func:`count_nodes` (``nodes``:
    its nodes with more than ``kk`` touched links, -1 ended; ``touched[:na]``: the allowed
    links): True if none of those nodes sent on more than ``kk`` links and no allowed link
    carried more flits than its capacity (``lflits`` of the allowed links then reset);
    False changes nothing and leaves :func:`~mpinet.engine.flit.step_end.settle`'s check to
    name the first violation. Only those nodes can send on more than ``kk`` links (a link
    sends only if touched), whatever the choice allowed. Why: ``settle``'s own check
    (``kport_sent_ok``) counts every allowed link's node, a random read and write per link
    and a pass to reset the counts: 7 us of one-port's 124-129 us step on the port-model run;
    here the 469 nodes a step with a choice read their ``deg`` adjacent flit counts
    (docs/performance.md, "One-port in session 13")."""
    bad = False
    for i in range(nodes.shape[0]):
        node = nodes[i]
        if node < 0:
            break
        c = 0
        base = (node * deg) & POS  # indices known not negative: no wraparound code
        for q in range(deg):  # no branch per link
            c += lflits[(base + q) & POS] > 0
        bad |= c > kk
    for j in range(na):
        link = touched[j] & POS
        bad |= lflits[link] > lcap[link]
    if bad:
        return False
    for j in range(na):
        lflits[touched[j] & POS] = 0
    return True
