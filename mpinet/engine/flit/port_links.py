"""sdc's links of a step's port in the order of their first request in the active list.

The reference (:func:`~mpinet.engine.flit.kernels.collect`) lists a step's links in the
order of their first request in the active list, and :func:`port_links` must list them so
(the order of the moves). Reading every active buffer's kept request for it (one byte a
buffer, then the link of the chosen port's requests) cost about 140 of sdc's 300 ms of
``collect_port`` on the port-model run, under load (docs/performance.md, "sdc in session
8"); only 13 % of those buffers move. Without that read: the active list is in id order up
to its first descent (sorted every 8 steps, the buffers activated since appended after), a
link's requests are buffers of the link's own node, and VC buffers' ids (by node) come
before source queues' (by node). So the links whose first request is a VC buffer of the
sorted part come first, by node; then those whose first request is a source queue there,
by node; then the others, in the order of the tail's requests. The links with a movable
request are read in node order from the port's bitmap (``inc.bits``, kept by
:func:`~mpinet.engine.flit.kept_requests.recount`; testing every node's count cost a
mispredicted branch per node: docs/performance.md, "sdc in session 9"), each's kept list
walked for the rank of its first request; the list is still compacted (its empty buffers
dropped).
"""

from __future__ import annotations

from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from mpinet.prefetch import ahead

#: ``inc.bport`` of an empty buffer (dropped from the active list by :func:`port_links`)
#: and of a buffer without a request
EMPTY, NONE = -2, -1


@njit(cache=True, inline="always")
def _first_request(link, nvcbuf, lhead, bnext, bport, active):
    """The first request of ``link`` in the active list's order, as a rank: 0 (a VC
    buffer in the list's sorted part), 1 (a source queue there), 2 (only requests in its
    tail, ``active`` 2)."""
    best = 2
    x = lhead[link]
    while x >= 0:
        if bport[x] >= 0 and active[x] == 1:
            if x < nvcbuf:
                return 0
            best = 1
        x = bnext[x]
    return best


@njit(cache=True, inline="always")
def port_links(port, prm, bufs, lreq, inc, touched):
    """The active list compacted (empty buffers dropped) and the links of ``port`` with a
    movable request (``inc.bits``) listed in ``touched`` in the order of their first request
    in it; returns their number. Without reading every buffer's request: the list is in id
    order up to its first descent (sorted every 8 steps; the buffers activated since are
    appended), a link's requests are buffers of its node, and VC buffers' ids come before
    source queues': so the links whose first request is a VC buffer of the sorted part
    come first, by node, then those whose first request is a source queue there, by node,
    then the others in the order of the tail's requests."""
    act, active, nact = bufs.act, bufs.active, bufs.nact
    breq, bport, bnext, lhead, mc = inc.breq, inc.bport, inc.bnext, inc.lhead, inc.mc
    deg, nvcbuf = prm.deg, prm.nvcbuf
    k = 0
    n = nact[0]
    last = -1
    tail = n
    for i in range(n):  # compacted; the tail (from its first descent) marked active 2
        if i + 16 < n:
            ahead(prm.far, bport, act[i + 16])
        b = act[i]
        if bport[b] == EMPTY:
            active[b] = 0
            continue
        act[k] = b
        if b < last and tail == n:
            tail = k
        if tail < n:
            active[b] = 2
        last = b
        k += 1
    nact[0] = k
    tail = min(tail, k)
    na = 0
    top = touched.shape[0]  # the links of the sorted part's source queues, from the end
    bits = inc.bits
    words = bits.shape[0] // deg
    for i in range(words):  # the port's links with a movable request, in node order
        w = bits[port * words + i]
        while w != 0:  # its set bits: no branch per node without one
            link = ((i << 6) + trailing_zeros(w)) * deg + port
            w &= w - 1
            r = _first_request(link, nvcbuf, lhead, bnext, bport, active)
            if r == 0:
                lreq[link] = 1
                touched[na] = link
                na += 1
            elif r == 1:
                lreq[link] = 1
                top -= 1
                touched[top] = link
    for j in range(touched.shape[0] - 1, top - 1, -1):
        touched[na] = touched[j]
        na += 1
    for i in range(tail, k):  # the tail's, in its order
        b = act[i]
        active[b] = 1
        if bport[b] != port:
            continue
        link = breq[b]
        if lreq[link] != 0 or mc[link] == 0:
            continue
        lreq[link] = 1
        touched[na] = link
        na += 1
    return na
