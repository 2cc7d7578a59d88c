"""The port models' choice of the links that send in a step (numba): one-port, k-port, sdc.

After :func:`~mpinet.engine.flit.kernels.collect` has bucketed the step's requests by
output link, :func:`movable` finds the links whose oldest request can move now and
:func:`choose_links` picks among them: at most ``k`` links of a node (k-port, one-port),
or the links of the port most in demand (sdc, :func:`sdc_port` over :func:`sdc_demand`,
summed over the ranks by the caller). All-port allows every touched link. A model's
choice reads only start-of-step state (docs/switching.md, "One step `t`", item 4).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit.layout import ALL, KPORT, SDC, can_move, quotient
from mpinet.prefetch import ahead


@njit(cache=True, error_model="numpy", _nrt=False)
def movable(nt, prm, segs, pkts, links, so, first, demand):
    """Per touched link whether a request can move: k-port, the request index of its oldest
    movable request (-1: none), the bucket read up to it; sdc, any movable request's index
    along its chain, and ``demand[port]`` counts the movable requests per port (the port's
    choice needs no order). A request can move if it has a VC with credits, or is a head
    into its destination, or a head for which ``allocate_vc`` finds a VC (``can_move``)."""
    nvc, need, deg = prm.nvc, prm.need, prm.deg
    sdc = prm.kind == SDC
    rdeg = 1.0 / deg
    seg_ovc, seg_pkt, seg_vlo, seg_vhi = segs.ovc, segs.pkt, segs.vlo, segs.vhi
    nbt, held, credit, lstart, lreq = links.nbt, links.held, links.credit, links.start, links.nreq
    pkt_dst, touched, rq, rq_prev = pkts.dst, so.touched, so.rq, so.rq_prev
    for j in range(nt):
        if j + 8 < nt:  # the link's bucket start, a miss, ahead of use
            ahead(prm.far, lstart, touched[j + 8])
        link = touched[j]
        first[j] = -1
        x = lstart[link]
        m = lreq[link]
        port = link - quotient(link, deg, rdeg) * deg if sdc else 0
        for i in range(m):
            if not sdc:
                x = lstart[link] + i  # k-port: the bucket, oldest first
            elif i > 0:
                x = rq_prev[x]  # sdc: the chain, any order
            s = rq[x]
            if can_move(link, s, nvc, need, seg_ovc, seg_pkt, seg_vlo, seg_vhi, nbt, held, credit,
                        pkt_dst):  # fmt: skip
                if first[j] < 0:
                    first[j] = x
                if not sdc:
                    break  # k-port: the oldest is all it needs
                demand[port] += 1


@njit(cache=True, error_model="numpy", _nrt=False)
def choose_links(nt, prm, segs, pkts, so, first, sdc_port):
    """``so.allow[j]``: touched link ``j`` may send this step under the port model.

    k-port: a node's touched links are chained per node (``so.node``, -1 between steps, as
    scratch per node; ``so.rq_prev`` the chains, ``so.bufs`` the nodes), so a step visits
    the nodes with a movable request, not every node, and sorts nothing."""
    touched, allow, deg, rq = so.touched, so.allow, prm.deg, so.rq
    seg_pkt, pkt_inj, pkt_pid = segs.pkt, pkts.inj, pkts.pid
    rdeg = 1.0 / deg
    if prm.kind == SDC:
        for j in range(nt):
            link = touched[j]
            allow[j] = first[j] >= 0 and link - quotient(link, deg, rdeg) * deg == sdc_port
        return
    if prm.kind != KPORT:
        for j in range(nt):
            allow[j] = first[j] >= 0
        return
    nhead, nxt, nodes = so.node, so.rq_prev, so.bufs
    nn = 0
    for j in range(nt):
        allow[j] = False
        if first[j] < 0:
            continue
        nn = _chain(j, quotient(touched[j], deg, rdeg), nhead, nxt, nodes, nn)
    for i in range(nn):
        node = nodes[i]
        for _ in range(prm.k):  # the k links of the node with the oldest movable requests
            best, bp, bl = -1, -1, -1
            x = nhead[node]
            while x >= 0:
                if not allow[x]:
                    p = seg_pkt[rq[first[x]]]
                    link = touched[x]
                    if best < 0 or pkt_inj[p] < pkt_inj[bp] or (pkt_inj[p] == pkt_inj[bp] and (
                            pkt_pid[p] < pkt_pid[bp] or (p == bp and link < bl))):  # fmt: skip
                        best, bp, bl = x, p, link  # older; one packet twice: the lower link
                x = nxt[x]
            if best < 0:
                break
            allow[best] = True
        nhead[node] = -1


@njit(cache=True, inline="always")
def _chain(j, node, nhead, nxt, nodes, nn):
    """Put touched link ``j`` on its node's chain (``nhead``/``nxt``); a node's first link
    lists the node in ``nodes``. Returns the count of nodes listed."""
    if nhead[node] < 0:
        nodes[nn] = node
        nn += 1
    nxt[j] = nhead[node]
    nhead[node] = j
    return nn


@njit(cache=True, inline="always")
def oldest_movable(link, nvc, need, lstart, lreq, rq, seg_ovc, seg_pkt, seg_vlo, seg_vhi, nbt,
                    held, credit, pkt_dst):  # fmt: skip
    """The index in ``rq`` of ``link``'s oldest request that can move (its bucket, oldest
    first, as :func:`movable` reads it under k-port), -1 if none."""
    a = lstart[link]
    for x in range(a, a + lreq[link]):
        if can_move(link, rq[x], nvc, need, seg_ovc, seg_pkt, seg_vlo, seg_vhi, nbt, held, credit,
                    pkt_dst):  # fmt: skip
            return x
    return -1


@njit(cache=True, error_model="numpy", _nrt=False)
def kport_choice(nt, prm, segs, pkts, links, so):
    """k-port's (and one-port's) ``so.allow``, the choice of :func:`movable` then
    :func:`choose_links` with the work only where a node has a choice.

    A node whose links with requests number at most ``k`` sends on all of them: its links
    are allowed without reading their requests, since a link none of whose requests can move
    moves nothing in :func:`~mpinet.engine.flit.kernels.move` (the same tests, credits and
    VC allocation, on the same start-of-step state) and so need not be told apart from one
    that can. Only the nodes with more than ``k`` (one-port on ms:3,2 at Bernoulli 0.003: a
    fifth of the nodes with requests; k-port:2 under 1 %) find their links' oldest movable
    requests and take the ``k`` oldest. The nodes' links are chained as in
    :func:`choose_links` (``so.node`` -1 between steps, ``so.rq_prev`` the chains,
    ``so.bufs`` the nodes)."""
    nvc, need, deg, kk = prm.nvc, prm.need, prm.deg, prm.k
    touched, allow, rq, nhead = so.touched, so.allow, so.rq, so.node
    nxt, nodes = so.rq_prev, so.bufs
    seg_ovc, seg_pkt, seg_vlo, seg_vhi = segs.ovc, segs.pkt, segs.vlo, segs.vhi
    nbt, held, credit, lstart, lreq = links.nbt, links.held, links.credit, links.start, links.nreq
    pkt_dst, pkt_inj, pkt_pid = pkts.dst, pkts.inj, pkts.pid
    rdeg = 1.0 / deg
    nn = 0
    for j in range(nt):
        allow[j] = True
        nn = _chain(j, quotient(touched[j], deg, rdeg), nhead, nxt, nodes, nn)
    for i in range(nn):
        node = nodes[i]
        m = 0
        x = nhead[node]
        while x >= 0:
            m += 1
            x = nxt[x]
        if m > kk:  # a choice: the links' oldest movable requests, the k oldest of them
            x = nhead[node]
            i = nn  # the chain's oldest movable requests, in scratch after the nodes
            while x >= 0:
                nodes[i] = oldest_movable(touched[x], nvc, need, lstart, lreq, rq, seg_ovc,
                                           seg_pkt, seg_vlo, seg_vhi, nbt, held, credit,
                                           pkt_dst)  # fmt: skip
                allow[x] = False
                i += 1
                x = nxt[x]
            _choose(nhead[node], nn, kk, touched, allow, nxt, nodes, rq, seg_pkt, pkt_inj,
                    pkt_pid)  # fmt: skip
        nhead[node] = -1


@njit(cache=True, inline="always")
def _choose(head, base, kk, touched, allow, nxt, firsts, rq, seg_pkt, pkt_inj, pkt_pid):
    """Allow the ``kk`` links of a node's chain (from ``head``) with the oldest movable
    requests (``firsts[base + i]``: the request of the chain's ``i``-th link, -1 none), as
    :func:`choose_links` picks them."""
    for _ in range(kk):
        best, bp, bl = -1, -1, -1
        x = head
        i = base
        while x >= 0:
            f = firsts[i]
            if f >= 0 and not allow[x]:
                p = seg_pkt[rq[f]]
                link = touched[x]
                if best < 0 or pkt_inj[p] < pkt_inj[bp] or (pkt_inj[p] == pkt_inj[bp] and (
                        pkt_pid[p] < pkt_pid[bp] or (p == bp and link < bl))):  # fmt: skip
                    best, bp, bl = x, p, link  # older; one packet twice: the lower link
            x = nxt[x]
            i += 1
        if best < 0:
            return
        allow[best] = True


@njit(cache=True, error_model="numpy")
def port_model(nt, prm, segs, pkts, links, so, sdc_port):
    """The port model's choice of the links that send (``so.allow``): every touched link
    under all-port, :func:`kport_choice` under k-port and one-port, else
    :func:`choose_links` on the movable requests; ``sdc_port`` the step's port under sdc
    (:func:`sdc_port`, or over all ranks; -1: none)."""
    if prm.kind == ALL:
        so.allow[:nt] = True
        return
    if prm.kind == KPORT:
        kport_choice(nt, prm, segs, pkts, links, so)
        return
    first = np.empty(nt, np.int64)
    demand = np.zeros(prm.deg, np.int64)
    movable(nt, prm, segs, pkts, links, so, first, demand)
    choose_links(nt, prm, segs, pkts, so, first, sdc_port)


@njit(cache=True, error_model="numpy")
def sdc_demand(nt, prm, segs, pkts, links, so, first):
    """The movable requests of the rank per port (sdc's choice, summed over the ranks);
    ``first`` as :func:`movable`'s, for :func:`choose_links` once the port is known."""
    demand = np.zeros(prm.deg, np.int64)
    movable(nt, prm, segs, pkts, links, so, first, demand)
    return demand


@njit(cache=True, _nrt=False)
def sdc_port(demand):
    """sdc's port of the step: the one with the most movable requests (the lowest of
    equals), -1 if none can move."""
    best = -1
    for q in range(demand.shape[0]):
        if demand[q] > 0 and (best < 0 or demand[q] > demand[best]):
            best = q
    return best
