"""The deadlock look's search inside the one-rank compiled steps: whether a front is dead.

A look's scan (:func:`~mpinet.engine.flit.deadlock_live._scan`) lists the fronts blocked
since the last look; most looks on a lightly loaded network list a few (a worm waiting
behind another) and none is dead. Returning to Python for each such search cost a call's
return and, in a fresh process, loading :func:`mpinet.engine.waitfor.dead_one_rank` from
numba's cache (about 3.5 ms of a fresh hypercube:8 run's 25 ms of engine CPU,
docs/performance.md, "A fresh run's fixed cost"). :func:`any_dead` answers the same
question as :func:`~mpinet.engine.waitfor.dead_one_rank` (``.any()``) with the same pass,
:func:`mpinet.engine.waitfor_live.live_fronts`, in scratch arrays kept between looks, so
:func:`~mpinet.engine.flit.chunk.run_steps` (compiled without reference counts) calls it;
only a dead set returns to Python (the report: Python's search finds the same set and
names a cycle).

Unlike :func:`~mpinet.engine.waitfor_live.live_fronts` (any listing), :func:`any_dead`
takes the scan's listing as the scan writes it: every hold's front is listed, and the holds
follow their fronts' order (the scan lists a front, then what it holds, then its
pseudo-fronts, each followed by its hold). So a hold's front is found by walking the fronts
beside the holds, not in a hash table of the fronts, and the holds are already each front's
list (no counting sort): on sdc's looks (2,150 fronts and 3,100 holds) that was about a
third of the search (docs/performance.md, "The look and the active list in session 16").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine import waitfor_live as wl

#: :func:`any_dead`'s answers
NONE_DEAD, DEAD = 0, 1


@njit(cache=True, _nrt=False)
def any_dead(nf, nh, nc, fronts, waits, hf, hb, closed, scr, live):
    """:data:`DEAD` if some of the ``nf`` listed fronts is dead, else :data:`NONE_DEAD`.
    ``hf``/``hb``: the ``nh`` holds, ``closed[:nc]`` the closed buffers, as
    :func:`~mpinet.engine.waitfor.dead_fronts` takes them and in the scan's order (the
    module docstring); ``scr``, ``live``: :func:`scratch`."""
    dead = live_scanned(nf, nh, nc, fronts, waits, hf, hb, closed, scr, live)
    return DEAD if dead else NONE_DEAD


@njit(cache=True, _nrt=False)
def live_scanned(nf, nh, nc, fronts, waits, hf, hb, closed, scr, live):
    """:func:`~mpinet.engine.waitfor_live.live_fronts` (the same answer in ``live`` and the
    number dead) for a listing in the scan's order (the module docstring): every ``hf[e]``
    is a listed front, and the holds' fronts come in the order of ``fronts``."""
    bkey, bval = scr[wl.BKEY], scr[wl.BVAL]
    wgrp, gptr, glist, glive = scr[wl.WGRP], scr[wl.GPTR], scr[wl.GLIST], scr[wl.GLIVE]
    hptr, hlist, stack = scr[wl.HPTR], scr[wl.HLIST], scr[wl.STACK]
    size, shift, mask = wl._table_bits(nf)
    bkey[:size] = -1
    ng = wl.group_waits(nf, nc, waits, closed, live, wgrp, bkey, bval, gptr, glist, glive,
                        shift, mask)  # fmt: skip
    # per front the waited-for buffers it holds, hlist[hptr[j]:hptr[j + 1]]: the holds in
    # their fronts' order, each front found by walking the fronts beside them
    j, m = 0, 0
    hptr[0] = 0
    for e in range(nh):
        while j + 1 < nf and fronts[j] != hf[e]:
            j += 1
            hptr[j] = m
        i = wl._slot(hb[e], shift, mask, bkey)
        if bkey[i] != -1:
            hlist[m] = bval[i]
            m += 1
    while j < nf:
        j += 1
        hptr[j] = m
    return wl.spread(nf, ng, live, glive, hptr, hlist, gptr, glist, stack)


def scratch(fronts: np.ndarray, hf: np.ndarray) -> tuple:
    """:func:`any_dead`'s ``(scr, live)`` for a scan's outputs of these sizes."""
    n = fronts.shape[0]
    return wl.scratch(n, hf.shape[0]), np.empty(max(n, 1), np.int64)
