"""The injections of the one-rank compiled steps drawn inside them, step by step.

:func:`~mpinet.engine.flit.chunk.run_steps` takes its injections from
:class:`~mpinet.engine.flit.injection_blocks.Injections` drawn in Python before the call
(the workload's blocks: :func:`mpinet.rng.grid_below` for who injects, :func:`mpinet.rng.integers`
for where to). For the workload that offers its draws as numbers
(``compiled_injection()``: Bernoulli injection to uniform destinations, the BookSim
comparison's traffic) and a router whose headers start empty, the steps draw them here
instead, with the same keys, so the same packets in the same order. Why: those two draws were
two kernels loaded from numba's cache in every fresh run, a fifth of a fresh hypercube:8 run's
engine CPU (docs/performance.md, "A fresh run's fixed cost"); drawn in the steps, they are part
of the one kernel loaded.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np
from numba import njit

from mpinet import rng
from mpinet.engine.flit.injection_blocks import Injections
from mpinet.routing.base import Router

Draw = namedtuple("Draw", ["on", "x0", "xd", "thr", "n", "last", "lo", "km", "hit", "ids", "nid"])
Draw.__doc__ = """How :func:`draw_step` draws a step's injections (``on`` False: not at all,
the steps read the injections drawn before the call): the streams' keys ``x0`` (who
injects) and ``xd`` (destinations), the threshold ``thr`` (:func:`mpinet.rng.below_threshold`),
the network's ``n`` nodes, the ``last`` injection step, the rank's first node ``lo``; scratch
``km`` (each node's first mix, :func:`draw_keys`) and ``hit``; ``ids[:nid[0]]``: the ids
drawn in the call, for the engine's list of injected packets."""

#: the draws' ids a call keeps before it returns for room (grown on demand)
IDS = 4096


def make_draw(eng: Any, workload: Any, walked: bool) -> tuple[Draw, Injections | None]:
    """The draw of ``eng``'s steps and the injection arrays it fills (the step's packets in
    rows ``0 .. ni``); ``on`` False and None where the workload offers no compiled draw, the
    router's headers are not all zero at injection, or its routes are walked into rows."""
    rule = getattr(workload, "compiled_injection", None)
    got = rule() if rule is not None else None
    zeros_hdr = type(eng.router).init_headers is Router.init_headers
    z, u = np.zeros(0, np.int64), np.zeros(0, np.uint64)
    if got is None or walked or not zeros_hdr:
        off = Draw(False, np.uint64(0), np.uint64(0), np.uint64(0), 0, -1, 0, u,
                   np.zeros(0, np.uint8), z, np.zeros(1, np.int64))  # fmt: skip
        return off, None
    x0, xd, thr, n, last = got
    block = eng.hi - eng.lo
    drw = Draw(True, np.uint64(x0), np.uint64(xd), np.uint64(thr), int(n), int(last),
               int(eng.lo), np.zeros(block, np.uint64), np.zeros(block, np.uint8),
               np.zeros(IDS, np.int64), np.zeros(1, np.int64))  # fmt: skip
    one = np.zeros(1, np.int64)
    inj = Injections(one, np.zeros(block, np.int64), np.zeros(block, np.int64),
                     np.zeros(block, np.int64), np.zeros((block, eng.st.hw), np.int64),
                     one.copy(), z, z.copy(), z.copy())  # fmt: skip
    return drw, inj


@njit(cache=True, error_model="numpy", _nrt=False)
def draw_keys(drw):
    """Each node's first mix, once a call (the draws of every step start from it)."""
    rng.key_mixes(drw.x0, drw.lo, drw.km)


@njit(cache=True, error_model="numpy", _nrt=False)
def draw_step(t, drw, pid, src, dst):
    """The packets injected at step ``t`` into ``pid, src, dst`` (rows ``0 .. ni``, ids
    ascending), as :meth:`mpinet.workloads.unicast.Unicast.injections` draws them; returns
    ``ni``."""
    if t > drw.last or t < 0:
        return 0
    rng.hits_below(drw.km, t, drw.thr, drw.hit)
    ni = 0
    for c in range(drw.hit.size):
        if drw.hit[c]:
            pid[ni] = t * drw.n + drw.lo + c
            src[ni] = drw.lo + c
            ni += 1
    for i in range(ni):  # uniform over the other nodes
        d = rng.integer_below(drw.xd, pid[i], drw.n - 1)
        dst[i] = d + (d >= src[i])
    return ni
