"""Waiting buffers parked in place in the active list: skipped until what they wait for comes.

:func:`~mpinet.engine.flit.kernels.collect` walks the active list ``bufs.act[:nact[0]]``
every step. A buffer whose front has no flits here yet (its flits are upstream; under
store-and-forward, not wholly received) or is a body whose VC has no credit makes no request
and waits until flits arrive into the buffer or credits return to that VC. Outside sdc,
``collect`` *parks* such a buffer where it is: its entry becomes ``-b - 1``,
``bufs.active[b]`` :data:`PARKED` and ``bufs.park[b]`` what it waits for, the VC ``kv``
or :data:`EMPTY`. At the next steps ``collect`` reads that one word for it, not its head,
segment and credit, and reads the buffer again when

* flits or a head arrived into it: :func:`activate`, where every path lists a buffer that
  received flits (``settle``, the rows from other ranks, the injections), sets
  :data:`WOKEN`;
* or its VC ``kv`` has credits again (read there: the returns need no mark).

The entry stays where it was, so the list's order, and with it the order of the links, the
moves and the deadlock look's listing, is the order without parking (a buffer read again
and still waiting is parked again). The sorts every 8 steps sort the ids (:func:`unsign`,
:func:`resign` around them). Why: on the port-model run (ms:3,2, wormhole L = 16,
one-port) about 900 of the 3,000 active buffers a step wait so, 820 of them already at the
step before (docs/performance.md, "One-port in session 17"). A list of the parked apart,
tried first, cost more in ``move``, ``settle`` and the scan than ``collect`` saved: the
buffers brought back came at the list's end, out of order. sdc keeps its entries as they
are (its holes are the negative entries of its list, ``port_links``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

#: ``bufs.active`` of a parked buffer (its entry ``-b - 1``)
PARKED = 4
#: ``bufs.park`` of a parked front without flits here; of one that received some since
EMPTY, WOKEN = -1, -2


@njit(cache=True, inline="always")
def activate(b, active, act, nact, pk):
    """Buffer ``b`` received flits: into the list unless it is in it; parked: read again."""
    a = active[b]
    if a == 0:
        active[b] = 1
        act[nact[0]] = b
        nact[0] += 1
    elif a == PARKED:
        active[b] = 1
        pk[b] = WOKEN


@njit(cache=True, error_model="numpy", _nrt=False)
def unsign(act, n):
    """The parked entries of ``act[:n]`` as their ids (before a sort)."""
    for i in range(n):
        x = act[i]
        if x < 0:
            act[i] = -x - 1


@njit(cache=True, error_model="numpy", _nrt=False)
def resign(act, n, active):
    """The parked buffers' entries of ``act[:n]`` marked again (after a sort)."""
    for i in range(n):
        b = act[i]
        if active[b] == PARKED:
            act[i] = -b - 1


@njit(cache=True, inline="always")
def unmark(x):
    """The buffer of an active list's entry, parked or not (no branch: ``~x`` if negative)."""
    return x ^ (x >> 31)


def listed(st: Any) -> np.ndarray:
    """The active list's buffers in order, parked or not (``st``: a ``FlitState``)."""
    a = st.act[: int(st.nact[0])].astype(np.int64)
    return np.where(a < 0, -a - 1, a)
