"""The injections of the one-rank compiled steps drawn inside them.

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

Draw = namedtuple("Draw", ["on", "x0", "xd", "thr", "n", "last", "lo", "km", "hit"])
Draw.__doc__ = """How :func:`draw_block` draws the injections of a call's steps (``on`` False: not
at all, the steps read the injections drawn before the call): the streams' keys ``x0`` (who
injects) and ``xd`` (destinations), the threshold ``thr`` (:func:`mpinet.rng.below_threshold`),
the network's ``n`` nodes, the ``last`` injection step, the rank's first node ``lo``; scratch
``km`` (each node's first mix) and ``hit``, a step's draws."""

#: the most injections a call's draws hold (a call whose steps would draw more runs fewer
#: steps): about the same memory as the workload's blocks (``unicast.BLOCK``)
MOST = 1 << 20


def make_draw(eng: Any, workload: Any, walked: bool, steps: int) -> tuple[Draw, Injections | None]:
    """The draw of ``eng``'s steps and the injection arrays it fills for up to ``steps``
    steps a call (:func:`draw_block`); ``on`` False and None where the workload offers no
    compiled draw, the router's headers are not all zero at injection, or its routes are
    walked into rows."""
    rule = getattr(workload, "compiled_injection", None)
    got = rule() if rule is not None else None
    zeros_hdr = type(eng.router).init_headers is Router.init_headers
    if got is None or walked or not zeros_hdr:
        off = Draw(False, np.uint64(0), np.uint64(0), np.uint64(0), 0, -1, 0,
                   np.zeros(0, np.uint64), np.zeros(0, np.uint8))  # fmt: skip
        return off, None
    x0, xd, thr, n, last = got
    block = eng.hi - eng.lo
    drw = Draw(True, np.uint64(x0), np.uint64(xd), np.uint64(thr), int(n), int(last),
               int(eng.lo), np.zeros(block, np.uint64), np.zeros(block, np.uint8))  # fmt: skip
    expect = float(thr) / 2.0**53 * block * steps  # the injections of a call, on average
    return drw, injections(eng, int(min(max(1.25 * expect + block, 1024), max(MOST, block))),
                           steps)  # fmt: skip


def injections(eng: Any, most: int, steps: int) -> Injections:
    """Arrays for ``most`` injections drawn over up to ``steps`` steps (none at their
    destination: uniform destinations exclude the source)."""
    z, one = np.zeros(0, np.int64), np.zeros(steps + 2, np.int64)
    return Injections(one, np.zeros(most, np.int64), np.zeros(most, np.int64),
                      np.zeros(most, np.int64), np.zeros((most, eng.st.hw), np.int64),
                      one.copy(), z, z.copy(), z.copy())  # fmt: skip


@njit(cache=True, error_model="numpy", _nrt=False)
def draw_block(t0, t_end, drw, off, pid, src, dst):
    """The packets injected at steps ``t0 + 1 .. t_end``, as
    :meth:`mpinet.workloads.unicast.Unicast.injections` draws them: step ``t0 + 1 + k``'s
    are rows ``off[k]:off[k + 1]`` of ``pid, src, dst`` (ids ascending). Stops before a step
    whose draws do not fit the arrays; returns the last step drawn, and the injections of
    the step that did not fit in ``off[k + 1]`` (``t0``: not even the first)."""
    for c in range(drw.km.size):  # each node's first mix, once a call
        drw.km[c] = rng.key_mix(drw.x0, drw.lo + c)
    ni = 0
    off[0] = 0
    for t in range(t0 + 1, t_end + 1):
        k = t - t0 - 1
        if t > drw.last or t < 0:
            off[k + 1] = ni
            continue
        rng.hits_below(drw.km, t, drw.thr, drw.hit)
        m = 0
        for c in range(drw.hit.size):
            m += drw.hit[c]
        if ni + m > pid.size:
            off[k + 1] = m
            return t - 1
        for c in range(drw.hit.size):
            if drw.hit[c]:
                pid[ni] = t * drw.n + drw.lo + c
                src[ni] = drw.lo + c
                d = rng.integer_below(drw.xd, pid[ni], drw.n - 1)  # uniform over the others
                dst[ni] = d + (d >= src[ni])
                ni += 1
        off[k + 1] = ni
    return t_end
