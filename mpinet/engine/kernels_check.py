"""Kernels off the per-hop path: the independent model check, credits, draining failed links.

``check_moves`` is the engine's safety net: it re-checks every step's moves
against the model without sharing code or state with ``select``
(:mod:`mpinet.engine.kernels`); tests break ``select`` on purpose to prove
it catches violations.
"""

from __future__ import annotations

from mpinet.engine.jit import jit
from mpinet.engine.queue_kernels import KIND_K, KIND_SDC


@jit
def check_moves(links, deg, caps, kind, k, sdc_port, lcnt, ncnt):
    """Independent check of one step's transmissions against the model.

    Returns ``(i, reason)`` of the first violation (reason 1: over the link's
    capacity, 2: more than ``k`` links of a node, 3: not the sdc dimension),
    else ``(-1, 0)``. ``lcnt`` / ``ncnt`` are zeroed scratch arrays, left
    zeroed; ``lcnt`` may be uint8 when every capacity is below 255 (a quarter
    of the cache footprint: this check is a random access per move). Node
    counts are kept only for ``k-port``, the one model that limits them.
    """
    bad, why = -1, 0
    n = links.size
    one = caps[0]  # every port's capacity, when they are equal: no division per move
    for p in range(deg):
        if caps[p] != one:
            one = -1
    for i in range(n):
        lk = links[i]
        c = lcnt[lk] + 1
        lcnt[lk] = c
        if c > (one if one >= 0 else caps[lk % deg]):
            bad, why = i, 1
            n = i + 1
            break
        if kind == KIND_K:
            if c == 1:
                ncnt[lk // deg] += 1
            if ncnt[lk // deg] > k:
                bad, why = i, 2
                n = i + 1
                break
        elif kind == KIND_SDC and lk % deg != sdc_port:
            bad, why = i, 3
            n = i + 1
            break
    for i in range(n):  # only what the first loop touched
        lcnt[links[i]] = 0
        if kind == KIND_K:
            ncnt[links[i] // deg] = 0
    return bad, why


@jit
def apply_credits(idx, credit):
    """``credit[idx[i]] += 1`` for every returned slot (repeats allowed)."""
    for i in range(idx.size):
        credit[idx[i]] += 1


@jit
def drain(links, ncls, qhead, qtail, lcount, pcount, deg, rec, out):
    """Empty the queues of ``links`` (failed links); their slots go to ``out``, returns how many."""
    m = 0
    for i in range(links.size):
        link = links[i]
        for c in range(ncls):
            q = link * ncls + c
            s = qhead[q]
            while s >= 0:
                out[m] = s
                m += 1
                s = rec[s].nxt
            qhead[q] = -1
            qtail[q] = -1
        pcount[link % deg] -= lcount[link]
        lcount[link] = 0
    return m


@jit
def drain_sources(nodes, shead, stail, rec, out):
    """Empty the source queues of ``nodes`` (failed nodes); returns how many slots."""
    m = 0
    for i in range(nodes.size):
        s = shead[nodes[i]]
        while s >= 0:
            out[m] = s
            m += 1
            s = rec[s].nxt
        shead[nodes[i]] = -1
        stail[nodes[i]] = -1
    return m
