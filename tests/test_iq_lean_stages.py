"""Stages of several cycles on the lean iq path (docs/iq-router.md, "Session 22: stages of
several cycles on the lean path"): ``routing_delay > 1``, a crossbar of several cycles
(``st_prepare_delay + st_final_delay``), ``vc_alloc_delay > 1`` and ``sw_alloc_delay > 1``,
alone, together and with the other keys (output speedup and speculation too: "Session 24"),
each record the general path's bit for bit; the keys still refused named."""

from __future__ import annotations

import pytest
from test_flit_engine import Packets
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

from mpinet.engine.flit import iq_lean_run
from mpinet.engine.flit.engine import FlitEngine
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec

R2, R3 = {"routing_delay": 2}, {"routing_delay": 3}
X2, X3 = {"st_final_delay": 2}, {"st_prepare_delay": 1, "st_final_delay": 2}
RX = dict(R2, **X2)
V2, V3 = {"vc_alloc_delay": 2}, {"vc_alloc_delay": 3}
S2, S3 = {"sw_alloc_delay": 2}, {"sw_alloc_delay": 3}
DEEP = dict(R2, **X2, **V2, **S2)  # bench_iq's deep-m8-0.2
SP, SEP = {"speculative": 1}, {"sw_allocator": "separable_input_first"}

#: network, router, flits, VCs, slots, packets, steps, keys
RD = [
    ("mesh:4,2", "dor", 1, 4, 8, 100, 200, R2),  # light
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **R2)),  # saturated, meshconfig's
    ("mesh:4,2", "dor", 4, 2, 4, 1500, 100, R3),
    ("mesh:5,2", "dor", 3, 1, 2, 800, 60, R2),
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, dict(R2, input_speedup=2)),
    ("hypercube:4", "hypercube-ecube", 5, 4, 3, 500, 100, dict(R3, **SP)),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(MESHC, **R2)),
    ("ms:2,2", "anynet-min", 6, 4, 8, 600, 100, dict(R2, alloc_iters=2)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **R2, **SP, **SEP)),
]

XD = [
    ("mesh:4,2", "dor", 1, 4, 8, 100, 200, X2),  # light
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **X2)),  # saturated, meshconfig's
    ("mesh:4,2", "dor", 4, 2, 4, 1500, 100, X3),
    ("mesh:5,2", "dor", 3, 1, 2, 800, 60, X2),
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, dict(X2, input_speedup=2)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, output_speedup=2, **X2)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, output_speedup=2, **SP, **X3)),
    ("hypercube:4", "hypercube-ecube", 5, 4, 3, 500, 100, dict(X2, **SP)),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(MESHC, **X3)),
    ("ms:2,2", "anynet-min", 6, 4, 8, 600, 100, dict(X2, alloc_iters=2)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **X2, **SP, **SEP)),
]

BOTH = [
    ("mesh:4,2", "dor", 1, 4, 8, 100, 200, RX),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **RX)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **RX, **SP)),
    ("torus:4,2", "dor", 5, 4, 4, 800, 100, dict(MESHC, input_speedup=2, **R3, **X3)),
    ("ms:2,2", "anynet-min", 2, 4, 4, 1500, 100, dict(MESHC, **RX, **SP)),
]


VA = [
    ("mesh:4,2", "dor", 1, 4, 8, 100, 200, V2),  # light
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **V2)),  # saturated, meshconfig's
    ("mesh:4,2", "dor", 4, 2, 4, 1500, 100, V3),
    ("mesh:5,2", "dor", 3, 1, 2, 800, 60, V2),
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, dict(V2, input_speedup=2)),
    ("hypercube:4", "hypercube-ecube", 5, 4, 3, 500, 100, dict(V3, alloc_iters=2)),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(MESHC, **V2)),
    ("ms:2,2", "anynet-min", 6, 4, 8, 600, 100, dict(V2, vc_allocator="separable_input_first")),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **V2, **SEP)),
    # many heads granted in a batch, waiting in one row of the wheel (iq_lean_io.wait, its
    # rows 2-D since "Session 23"): a router's VCs in a word (hypercube:5, 48) and not
    # (mesh:2,2, 80), saturated
    ("hypercube:5", "anynet-min", 1, 8, 2, 3000, 100, dict(MESHC, **V3)),
    ("mesh:2,2", "dor", 1, 16, 2, 2000, 100, dict(DEEP, **V3)),
]

SA = [
    ("mesh:4,2", "dor", 1, 4, 8, 100, 200, S2),  # light
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **S2)),  # saturated, meshconfig's
    ("mesh:4,2", "dor", 4, 2, 4, 1500, 100, S3),
    ("mesh:5,2", "dor", 3, 1, 2, 800, 60, S2),
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, dict(S2, input_speedup=2)),
    ("hypercube:4", "hypercube-ecube", 5, 4, 3, 500, 100, dict(S3, alloc_iters=2)),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(MESHC, **S2)),
    ("ms:2,2", "anynet-min", 6, 4, 8, 600, 100, dict(S2, alloc_iters=2)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **S2, **SEP)),
]

ALLD = [
    ("mesh:4,2", "dor", 1, 16, 8, 100, 200, dict(MESHC, **DEEP)),  # light
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **DEEP)),  # saturated
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **DEEP)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(DEEP, **V3, **S3, **SEP)),
    ("torus:4,2", "dor", 5, 4, 4, 800, 100, dict(MESHC, input_speedup=2, **DEEP)),
    ("ms:2,2", "anynet-min", 2, 4, 4, 1500, 100, dict(MESHC, **DEEP)),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(V2, **S3)),
]


OS = {"output_speedup": 2}
PAIRS = [  # with output speedup (the queues' order after a batch) or speculation ("Session 24")
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **OS, routing_delay=2)),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **V2, **OS)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **S2, **OS)),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, dict(R3, input_speedup=2, **OS)),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, dict(MESHC, **V3, input_speedup=2, **OS)),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, dict(MESHC, **S3, input_speedup=2, **OS)),
    ("mesh:5,2", "dor", 3, 2, 2, 800, 60, dict(S3, **V2, output_speedup=3)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **V2, **SP)),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, **S2, **SP)),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(MESHC, **V3, **SP)),
    ("mesh:4,2", "dor", 3, 4, 4, 1500, 150, dict(MESHC, **DEEP, **SP, **OS)),
    ("ms:3,2", "anynet-min", 3, 1, 4, 400, 100, dict(MESHC, **R2, **V2, **S2, **OS)),
]


@pytest.mark.parametrize("case", PAIRS, ids=_ids(PAIRS))
def test_lean_stages_with_speedup_or_speculation(case):
    """Stages of several cycles with output speedup (each input VC's place in the stage
    queues after a batch) and the allocation delays with speculation (the bids while VC
    allocation's batch is in flight, the grants that hold)."""
    _lean_as_general(case)


def test_lean_stages_torus_dateline():
    """The pairs on torus:4,2 with the dateline classes, speculation and output speedup."""
    topo = from_spec("torus:4,2")
    rows = traffic(topo.num_nodes, 1500, 100, seed=6, self_too=False)
    keys = dict(MESHC, **V2, **S2, **OS, **SP)
    m = iq_model(topo, flits=2, vcs=4, vc_buffer=4, vc_policy="dateline", **keys)
    (a, b), (ea, _) = both("torus:4,2", "dor", rows, m, record_hops=True)
    assert ea.steps_path == iq_lean_run.LEAN_PATH
    assert (a.packets[:, 4] >= 0).all()
    same(a, b)


@pytest.mark.parametrize("case", VA, ids=_ids(VA))
def test_lean_vc_alloc_delay(case):
    """``vc_alloc_delay > 1``: a router's heads in VC allocation's batch (one every
    ``vc_alloc_delay`` cycles), granted VCs applied ``vc_alloc_delay - 1`` cycles on."""
    _lean_as_general(case)


@pytest.mark.parametrize("case", SA, ids=_ids(SA))
def test_lean_sw_alloc_delay(case):
    """``sw_alloc_delay > 1``: a router's VCs in switch allocation's batch, the winners
    moved at the batch's update, ``sw_alloc_delay - 1`` cycles on."""
    _lean_as_general(case)


@pytest.mark.parametrize("case", ALLD, ids=_ids(ALLD))
def test_lean_all_stages(case):
    """Every stage of several cycles (bench_iq's deep-m8-0.2 keys), and pairs."""
    _lean_as_general(case)


@pytest.mark.parametrize("case", RD, ids=_ids(RD))
def test_lean_routing_delay(case):
    """``routing_delay > 1``: a head's route computation in its router's batch (one every
    ``routing_delay`` cycles), as the general path's, light to saturated."""
    _lean_as_general(case)


@pytest.mark.parametrize("case", XD, ids=_ids(XD))
def test_lean_crossbar_delay(case):
    """A crossbar of several cycles: a flit in its router's crossbar batch, then its output
    queue (one flit a cycle), as the general path's, light to saturated."""
    _lean_as_general(case)


@pytest.mark.parametrize("case", BOTH, ids=_ids(BOTH))
def test_lean_both_stages(case):
    """Both stages of several cycles together, with the other keys."""
    _lean_as_general(case)


@pytest.mark.parametrize("keys", [R3, X3, dict(MESHC, output_speedup=2, **X3), DEEP], ids=str)
def test_stages_in_flight_at_max_steps(keys):
    """A run cut at ``max_steps`` with flits in route computation's and the crossbar's
    batches and in the output queues: its live rows and stuck packets the general path's."""
    _cut_as_general(keys)


@pytest.mark.parametrize(("keys", "why"), [
    (dict(R2, output_speedup=2, internal_speedup=2),
     "internal_speedup = 2 with output speedup and a stage of several cycles"),
    (dict(V2, output_speedup=2, internal_speedup=1.5),
     "internal_speedup = 1.5 with output speedup and a stage of several cycles"),
    (dict(V3, speculative=1, internal_speedup=3.0),
     "internal_speedup = 3.0 with speculation and a stage of several cycles"),
    (dict(S2, speculative=1, internal_speedup=2.5),
     "internal_speedup = 2.5 with speculation and a stage of several cycles"),
])  # fmt: skip
def test_stages_still_refused(keys, why):
    """The keys the lean path still refuses, each named as the general path's reason
    (internal speedup with a stage of several cycles and output speedup or speculation:
    the queues' keys of batches count cycles, not internal steps)."""
    topo = from_spec("mesh:3,2")
    rows = traffic(topo.num_nodes, 50, 20, seed=2)
    m = iq_model(topo, flits=2, vcs=2, vc_buffer=4, **keys)
    pol = make_vc_policy(m.vc_policy, topo, m.vcs)
    eng = FlitEngine(topo, make_router("dor", topo), m, pol, max_steps=5000)
    eng.run(Packets(rows))
    assert eng.steps_path == f"compiled steps (iq router): general path ({why})"


RANKS = [  # spec, router, VC policy, flits, VCs, VC buffer, keys, packets, their steps
    ("mesh:4,2", "dor", None, 4, 4, 2, dict(MESHC, **DEEP), 600, 40),
    ("mesh:4,2", "dor", None, 1, 8, 4, DEEP, 300, 100),
    ("mesh:4,2", "dor", None, 4, 4, 2, dict(X2, output_speedup=2), 600, 40),
    ("ms:2,2", "anynet-min", None, 6, 4, 8, dict(DEEP, input_speedup=2), 300, 50),
    ("torus:4,2", "dor", "dateline", 2, 4, 2, dict(R3, channel_latency=2), 400, 60),
    ("hypercube:4", "hypercube-ecube", None, 1, 8, 2, dict(MESHC, **V3, **S2), 400, 60),
    ("mesh:4,2", "dor", None, 3, 4, 2, dict(MESHC, **DEEP, **SP, **OS), 600, 40),
    ("torus:4,2", "dor", "dateline", 1, 4, 4, dict(V3, **S2, **SP, **OS), 400, 60),
]


@pytest.mark.mpi
@pytest.mark.parametrize("case", RANKS, ids=[f"{c[0]}-L{c[3]}-{i}" for i, c in enumerate(RANKS)])
def test_stages_on_several_ranks(case):
    """The stages of several cycles on R ranks (the same kernel, its ALL copy): the lean path
    on both, the one-rank run row for row."""
    from mpi4py import MPI
    from test_iq_lean_ranks import _rows, _runs, _same

    comm = MPI.COMM_WORLD
    topo = from_spec(case[0])
    (one, many), paths = _runs(comm, topo, case, _rows(topo, case[7], case[8]))
    assert paths == [iq_lean_run.LEAN_PATH] * 2, paths
    _same(one, many)
