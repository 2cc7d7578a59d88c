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
walked for the rank of its first request.

On one rank (``lazy``) the list is not compacted by a pass over it each step (12 us a step
over sdc's 10,900 active buffers, docs/performance.md "sdc in session 13"): the buffers
emptied since the last step (``inc.emp``, listed by
:func:`~mpinet.engine.flit.kept_requests.settle_buffers`) are found in the sorted part by
bisection and left there as holes (-1) until the next sort (:func:`sort_kept`), a look, a
return to Python or a step without room (:func:`squeeze`); the part after it is compacted.
The reference's count of active buffers is the list's length less its holes.
"""

from __future__ import annotations

from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from mpinet.engine.flit.state import bitmap_sort, sort_active
from mpinet.prefetch import ahead

#: ``inc.bport`` of an empty buffer (dropped from the active list by :func:`port_links`)
#: and of a buffer without a request
EMPTY, NONE = -2, -1
#: ``inc.hole``: the emptied buffers listed (-1: not kept), the holes, the sorted part's
#: end, the most flits a step moves (so the most buffers it activates, with its injections)
H_EMP, H_DEAD, H_SRT, H_CAP = 0, 1, 2, 3


@njit(cache=True, error_model="numpy", _nrt=False)
def squeeze(bufs, inc):
    """The holes dropped from the active list (one pass; none: nothing done)."""
    hole = inc.hole
    if hole[H_DEAD] == 0:
        return
    act = bufs.act
    k = 0
    for i in range(bufs.nact[0]):
        b = act[i]
        if b >= 0:
            act[k] = b
            k += 1
    bufs.nact[0] = k
    hole[H_SRT] -= hole[H_DEAD]  # every hole is in the sorted part
    hole[H_DEAD] = 0


@njit(cache=True, error_model="numpy", _nrt=False)
def sort_kept(bufs, inc, tmp):
    """The active list sorted (``state.sort_active``), its holes dropped; a list with holes
    and more buffers than a bitmap of every buffer has words sorted through that bitmap
    (``tmp``), the holes skipped: one pass, as ``sort_active`` sorts a dense list."""
    act, nact, hole = bufs.act, bufs.nact, inc.hole
    words = act.shape[0] // 64 + 1
    if hole[H_DEAD] and words <= nact[0]:
        tmp[:words] = 0
        nact[0] = bitmap_sort(act, nact[0], tmp)
        hole[H_DEAD] = 0
    else:
        squeeze(bufs, inc)
        sort_active(act, nact[0], tmp)
    hole[H_SRT] = nact[0]


@njit(cache=True, error_model="numpy", _nrt=False)
def room_need(ni, scratch, bufs, inc):
    """The reference's active buffers + 1 (the room test's); the holes dropped first when
    the list with them might outgrow the step's scratch or the list's array."""
    hole, n = inc.hole, bufs.nact[0]
    if hole[H_DEAD] and (n + 1 + ni > scratch or n + hole[H_CAP] + ni >= bufs.act.shape[0]):
        squeeze(bufs, inc)
    return bufs.nact[0] - hole[H_DEAD] + 1


@njit(cache=True, inline="always")
def _find(act, srt, b):
    """The position of ``b`` in the sorted part ``act[:srt]`` (holes -1 in it), or -1."""
    lo, hi = 0, srt
    while lo < hi:
        mid = (lo + hi) >> 1
        m = mid
        while m > lo and act[m] < 0:
            m -= 1
        v = act[m]
        if v < 0 or v < b:  # [lo, mid] holes, or b after m (the holes between)
            lo = mid + 1
        elif v == b:
            return m
        else:
            hi = m
    return -1


@njit(cache=True, inline="always")
def _compact(prm, bufs, inc):
    """The active list compacted (empty buffers and holes dropped) by a pass over it, the
    part from its first descent marked active 2; returns where that part starts."""
    act, active, nact, bport = bufs.act, bufs.active, bufs.nact, inc.bport
    squeeze(bufs, inc)
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
    return min(tail, k)


@njit(cache=True, inline="always")
def _drop_emptied(bufs, inc):
    """The buffers emptied since the last step dropped without a pass over the list: those
    of its sorted part left as holes, the part after it compacted and marked active 2;
    returns where that part starts."""
    act, active, nact, bport, emp, hole = bufs.act, bufs.active, bufs.nact, inc.bport, \
        inc.emp, inc.hole  # fmt: skip
    srt = hole[H_SRT]
    for i in range(hole[H_EMP]):
        b = emp[i]
        j = _find(act, srt, b)
        if j >= 0:
            act[j] = -1
            active[b] = 0
            hole[H_DEAD] += 1
    k = srt
    for i in range(srt, nact[0]):
        b = act[i]
        if bport[b] == EMPTY:
            active[b] = 0
            continue
        act[k] = b
        active[b] = 2
        k += 1
    nact[0] = k
    return srt


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
def port_links(port, prm, bufs, lreq, inc, touched, lazy):
    """The active list compacted (empty buffers dropped) and the links of ``port`` with a
    movable request (``inc.bits``) listed in ``touched`` in the order of their first request
    in it; returns their number. Without reading every buffer's request: the list is in id
    order up to its first descent (sorted every 8 steps; the buffers activated since are
    appended), a link's requests are buffers of its node, and VC buffers' ids come before
    source queues': so the links whose first request is a VC buffer of the sorted part
    come first, by node, then those whose first request is a source queue there, by node,
    then the others in the order of the tail's requests. ``lazy`` (one rank): the emptied
    buffers of the sorted part left as holes when they are listed (``inc.hole[H_EMP]``)."""
    act, active, nact = bufs.act, bufs.active, bufs.nact
    breq, bport, bnext, lhead, mc = inc.breq, inc.bport, inc.bnext, inc.lhead, inc.mc
    deg, nvcbuf = prm.deg, prm.nvcbuf
    if lazy and inc.hole[H_EMP] >= 0:
        tail = _drop_emptied(bufs, inc)
    else:
        tail = _compact(prm, bufs, inc)
        if lazy:  # the emptied buffers listed from now on
            inc.hole[H_SRT] = tail
    if lazy:
        inc.hole[H_EMP] = 0
    k = nact[0]
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
