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
    :func:`~mpinet.engine.waitfor.dead_fronts` takes them; ``scr``, ``live``: :func:`scratch`."""
    dead = wl.live_fronts(nf, nh, nc, fronts, waits, hf, hb, closed, scr, live)
    return DEAD if dead else NONE_DEAD


def scratch(fronts: np.ndarray, hf: np.ndarray) -> tuple:
    """:func:`any_dead`'s ``(scr, live)`` for a scan's outputs of these sizes."""
    n = fronts.shape[0]
    return wl.scratch(n, hf.shape[0]), np.empty(max(n, 1), np.int64)
