"""Waiting buffers parked off the active list, brought back by what they wait for.

A buffer whose front cannot request (no flits here yet; a store-and-forward packet not
wholly received; a body whose VC has no credit) is dropped from ``bufs.act`` by
:func:`~mpinet.engine.flit.kernels.collect` and parked (``bufs.active[b] == PARKED``), so
``collect`` does not read it again step after step (one-port: some 820 of 3,000 active
buffers a step wait from step to step; docs/performance.md "One-port in session 17"). Not
under sdc, whose compiled steps read the list's order (``port_links``).

* A front without flits comes back with flits: every arrival activates its buffer
  (:func:`activate`: local arrivals, those from other ranks, injections).
* A body waiting for credits marks its VC's credit word: ``credit - BIG`` (the kernels that
  read credits test ``<= 0``, ``> 0`` or ``>= need``, which the mark keeps; a marked VC is
  held by the parked packet, so nothing else reads it), and ``bufs.pwait[vc]`` names the
  buffer. Every place that returns credits goes through :func:`credit_back` (the step's
  local credits, those from other ranks in the compiled exchange, :func:`credits_in` on the
  step-by-step path), which reads the line it writes anyway and wakes the buffer when the
  mark is there.

The lists: ``act[:nact[0]]`` the listed buffers, ``park[:nact[1]]`` the park list (entries
go stale when a buffer comes back, ``STALE`` in its flag, and are dropped by
:func:`compact` when they outnumber the parked), ``nact[2]`` the buffers parked. The
reference's active buffers are the listed and the parked (``nact[0] + nact[2]``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: ``bufs.active``: 0 not listed, 1 listed, PARKED, STALE (or'ed: an old park-list entry)
PARKED, STALE = 4, 8
#: a marked credit word is the credits less BIG; a word below -HALF is marked
BIG, HALF = 1 << 30, 1 << 29


@njit(cache=True, inline="always")
def park(b, a, active, plist, nact):
    """Buffer ``b`` (flag ``a``, listed) parked; its park-list entry reused if it has one."""
    if a == 1:
        plist[nact[1]] = b
        nact[1] += 1
    active[b] = PARKED
    nact[2] += 1


@njit(cache=True, inline="always")
def activate(b, active, act, nact):
    """Buffer ``b`` into the active list (once), from the park list if it is parked."""
    a = active[b]
    if a & 3 == 0:
        act[nact[0]] = b
        nact[0] += 1
        if a == 0:
            active[b] = 1
        else:
            active[b] = STALE | 1
            if a == PARKED:
                nact[2] -= 1


@njit(cache=True, inline="always")
def credit_back(k, n, credit, pwait, active, act, nact):
    """``n`` credits back to VC ``k``; its parked body woken if the word is marked."""
    c = credit[k]
    if c < -HALF:  # marked: a body parked for these credits
        credit[k] = c + BIG + n
        b = pwait[k]
        if active[b] == PARKED:
            act[nact[0]] = b
            nact[0] += 1
            active[b] = STALE | 1
            nact[2] -= 1
    else:
        credit[k] = c + n


@njit(cache=True, error_model="numpy", _nrt=False)
def credits_in(keys, credit, pwait, active, act, nact):
    """One credit back to each VC of ``keys`` (the step-by-step path's exchange)."""
    for i in range(keys.shape[0]):
        credit_back(keys[i], 1, credit, pwait, active, act, nact)


@njit(cache=True, error_model="numpy", _nrt=False)
def compact(active, plist, nact):
    """The park list's stale entries dropped (their flags' STALE cleared)."""
    k = 0
    for i in range(nact[1]):
        b = plist[i]
        if active[b] == PARKED:
            plist[k] = b
            k += 1
        else:
            active[b] = active[b] & 3
    nact[1] = k


def waiting(bufs) -> np.ndarray:
    """The parked buffers (Python: the deadlock walk, tests)."""
    plist = bufs.park[: int(bufs.nact[1])]
    return plist[bufs.active[plist] == PARKED]
