"""Internal speedup on the lean iq path (docs/iq-router.md, "Session 23: internal speedup on
the lean path", "Session 24: internal speedup with stages of several cycles"):
``internal_speedup`` of 1.5 to 3, alone, with the other keys and with stages of several
cycles, each record the general path's bit for bit, on one rank and on several."""

from __future__ import annotations

import pytest
from test_iq_lean import (
    MESHC,
    _cut_as_general,
    _ids,
    _lean_as_general,
    both,
    iq_model,
    same,
    traffic,
)
from test_iq_lean_stages import DEEP, R2, R3, S2, V2, X2, X3

from mpinet.engine.flit import iq_lean_run
from mpinet.topology import from_spec

I15, I2, I25, I3 = ({"internal_speedup": x} for x in (1.5, 2.0, 2.5, 3.0))
SP, SEP = {"speculative": 1}, {"sw_allocator": "separable_input_first"}
VSEP = {"vc_allocator": "separable_output_first"}

#: network, router, flits, VCs, slots, packets, steps, keys
ALONE = [
    ("mesh:4,2", "dor", 1, 4, 8, 100, 200, I2),  # light
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **I2)),  # saturated, meshconfig's
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **I15)),
    ("mesh:4,2", "dor", 4, 2, 4, 1500, 100, I15),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 100, I25),
    ("mesh:5,2", "dor", 3, 1, 2, 800, 60, I3),
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, dict(MESHC, **I2)),
    ("torus:4,2", "dor", 5, 2, 3, 800, 100, I25),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(MESHC, **I3)),
    ("ms:2,2", "anynet-min", 6, 4, 8, 600, 100, I15),
    ("ms:3,2", "anynet-min", 4, 4, 4, 1500, 150, I2),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, dict(I2, routing_delay=1)),
    ("mesh:4,2", "dor", 3, 2, 3, 1500, 100, dict(I15, credit_delay=1, wait_for_tail_credit=1)),
]

WITH = [  # with input and output speedup, speculation, separable allocators, alloc_iters
    ("mesh:4,2", "dor", 20, 8, 8, 300, 200, dict(MESHC, input_speedup=2, **I2)),
    ("mesh:4,2", "dor", 1, 8, 8, 3000, 150, dict(MESHC, input_speedup=2, alloc_iters=2, **I15)),
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, dict(input_speedup=3, **I25)),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **SP, **I2)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 100, dict(MESHC, **SP, **I15)),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(MESHC, **SP, **I3)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, output_speedup=2, **I2)),
    ("mesh:4,2", "dor", 3, 4, 3, 1500, 100, dict(MESHC, output_speedup=2, **SP, **I15)),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, output_speedup=3, **I25)),
    ("ms:2,2", "anynet-min", 2, 4, 4, 1500, 100, dict(MESHC, output_speedup=2, **SP, **I2)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **SEP, **I2)),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **SEP, **VSEP, **SP, **I15)),
    ("ms:3,2", "anynet-min", 4, 4, 4, 1500, 150, dict(MESHC, **SEP, input_speedup=2, **I3)),
    ("mesh:4,2", "dor", 2, 4, 2, 3000, 100, dict(alloc_iters=3, **I2)),
]


@pytest.mark.parametrize("case", ALONE, ids=_ids(ALONE))
def test_lean_internal_speedup(case):
    """``internal_speedup`` alone and with meshconfig's keys: ``k`` passes of the routers a
    cycle, the output and credit queues between, as the general path's."""
    _lean_as_general(case)


@pytest.mark.parametrize("case", WITH, ids=_ids(WITH))
def test_lean_internal_speedup_with(case):
    """``internal_speedup`` with the other keys the lean path takes."""
    _lean_as_general(case)


#: stages of several cycles ("Session 24"): network, router, flits, VCs, slots, packets, steps,
#: keys (a VC policy under "vc_policy")
DEEPS = [
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **R2, **I2)),  # saturated
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 100, dict(V2, **I15)),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **S2, **I3)),
    ("mesh:4,2", "dor", 3, 4, 4, 1500, 100, dict(X3, **I2)),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(DEEP, **I2)),  # bench_iq's ispdeep-m8-0.2
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 100, dict(MESHC, **DEEP, **I15)),
    ("mesh:4,2", "dor", 2, 4, 3, 1500, 100, dict(DEEP, input_speedup=2, **SEP, **I3)),
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, dict(R3, vc_policy="dateline", **I25)),
    ("ms:3,2", "anynet-min", 4, 4, 4, 1500, 150, dict(DEEP, **I2)),
    ("mesh:4,2", "dor", 3, 4, 3, 1500, 100, dict(MESHC, **R2, **X2, **SP, **I15)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, output_speedup=2, **X3, **SP, **I2)),
]


@pytest.mark.parametrize("case", DEEPS, ids=_ids(DEEPS))
def test_lean_internal_speedup_deep(case):
    """``internal_speedup`` with stages of several cycles: a stage's batch is updated at
    its router's first step of the cycle its delay ends, and hands on at the step after."""
    *head, keys = case
    if "vc_policy" not in keys:
        _lean_as_general(case)
        return
    keys = dict(keys)
    pol = keys.pop("vc_policy")
    spec, rname, fl, vcs, bs, count, span = head
    rows = traffic(from_spec(spec).num_nodes, count, span, seed=fl + vcs, self_too=False)
    m = iq_model(from_spec(spec), flits=fl, vcs=vcs, vc_buffer=bs, vc_policy=pol, **keys)
    (a, b), (ea, _) = both(spec, rname, rows, m, record_hops=True)
    assert ea.steps_path == iq_lean_run.LEAN_PATH
    assert (a.packets[:, 4] >= 0).all()
    same(a, b)


@pytest.mark.parametrize("keys", [I2, dict(MESHC, output_speedup=2, **SP, **I15),
                                  dict(DEEP, **I2)], ids=str)  # fmt: skip
def test_speedup_in_flight_at_max_steps(keys):
    """A run cut at ``max_steps`` with flits in the output and credit queues: its live rows
    and stuck packets the general path's."""
    _cut_as_general(keys)


RANKS = [  # spec, router, VC policy, flits, VCs, VC buffer, keys, packets, their steps
    ("mesh:4,2", "dor", None, 1, 8, 4, dict(MESHC, **I2), 600, 40),
    ("mesh:4,2", "dor", None, 4, 4, 2, dict(MESHC, **I15), 600, 40),
    ("mesh:4,2", "dor", None, 4, 4, 4, dict(MESHC, output_speedup=2, **SP, **I25), 600, 40),
    ("ms:2,2", "anynet-min", None, 6, 4, 8, dict(input_speedup=2, **SEP, **I3), 300, 50),
    ("torus:4,2", "dor", "dateline", 2, 4, 2, dict(I2, channel_latency=2, routing_delay=1), 400,
     60),
    ("mesh:4,2", "dor", None, 4, 4, 2, dict(MESHC, **DEEP, **I2), 600, 40),  # "Session 24"
    ("ms:2,2", "anynet-min", None, 6, 4, 8, dict(DEEP, input_speedup=2, **I15), 300, 50),
]  # fmt: skip


@pytest.mark.mpi
@pytest.mark.parametrize("case", RANKS, ids=[f"{c[0]}-L{c[3]}-{i}" for i, c in enumerate(RANKS)])
def test_speedup_on_several_ranks(case):
    """Internal speedup on R ranks (the same kernel, its ALL copy; a flit may leave in its
    grant's cycle, so a cycle's messages carry the flits sent in it): the lean path there,
    the one-rank general path's record row for row."""
    from mpi4py import MPI
    from test_iq_lean_ranks import _rows, _runs, _same

    comm = MPI.COMM_WORLD
    topo = from_spec(case[0])
    (one, many), paths = _runs(comm, topo, case, _rows(topo, case[7], case[8]), (False, True))
    assert paths[1] == iq_lean_run.LEAN_PATH, paths
    _same(one, many)


@pytest.mark.mpi
def test_speedup_ranks_cut_at_max_steps():
    """A speedup run with stages of several cycles cut at ``max_steps`` on R ranks: every
    rank goes to the general path ("packets in flight at the end"); the record the one-rank
    run's."""
    from mpi4py import MPI
    from test_iq_lean_ranks import _rows, _runs, _same

    comm = MPI.COMM_WORLD
    topo = from_spec("mesh:4,2")
    case = ("mesh:4,2", "dor", None, 4, 4, 2, dict(MESHC, **DEEP, **I15), 0, 0)
    (one, many), paths = _runs(comm, topo, case, _rows(topo, 600, 40), max_steps=60)
    assert one["stuck"] and paths[0] == iq_lean_run.LEAN_PATH, paths
    if comm.Get_size() > 1:
        assert "general path (packets in flight at the end)" in paths[1], paths
    _same(one, many)
