"""The iq router's crossbar of one cycle with one internal step a cycle (``IQParams.dx``):
switch allocation's update puts the flit in its output queue at once, to be sent from the
next cycle on, where the crossbar's ring held it for its update at the next internal step;
and the internal step sends its credit messages at once, where the credit queue held each
for the write phase of the same cycle. The run's packets, counters, link loads and hop rows
are those of the ring and the queue, cycle for cycle (docs/iq-router.md "Speed", sessions 9
and 16)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mpinet.engine.flit import iq_state as iqs
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.iq_config import IQConfig
from mpinet.engine.models import parse_model
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from mpinet.workloads import Unicast

#: spec, router, flits, VCs, [model.iq] keys, packets per node per cycle
CASES = [
    ("mesh:4,2", "dor", 4, 4, {"routing_delay": 0, "credit_delay": 2}, 0.3),
    ("mesh:4,2", "dor", 1, 8, {"routing_delay": 0, "wait_for_tail_credit": 1}, 0.6),
    ("mesh:4,2", "dor", 5, 4, {"output_speedup": 2, "speculative": 1}, 0.2),
    ("hypercube:4", "shortest", 6, 2, {"input_speedup": 2, "sw_allocator": "islip"}, 0.15),
]


def _run(spec, rname, flits, vcs, keys, rate, steps=400):
    topo = from_spec(spec)
    m = parse_model("all-port", dict.fromkeys(topo.port_classes, 1))
    m = replace(m, flit=True, switching="wormhole", flits=flits, vcs=vcs, vc_buffer=4,
                router="iq", iq=IQConfig(**keys))  # fmt: skip
    w = Unicast(topo, "uniform", injection="bernoulli", rate=rate, steps=steps, seed=7)
    eng = FlitEngine(topo, make_router(rname, topo), m, make_vc_policy("any", topo, vcs),
                     seed=7, max_steps=40 * steps, record_hops=True)  # fmt: skip
    return eng.run(w)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_direct_output_queue_is_the_crossbar_ring(monkeypatch, case):
    params = []
    make = iqs.make_params

    def spy(*a, **k):
        prm = make(*a, **k)
        params.append(prm)
        return prm

    monkeypatch.setattr(iqs, "make_params", spy)
    got = _run(*case)
    assert params and all(p.dx == 1 for p in params)  # the direct path ran
    params.clear()
    monkeypatch.setattr(iqs, "make_params", lambda *a, **k: spy(*a, **k)._replace(dx=0))
    want = _run(*case)
    assert params
    assert got.packets.shape[0] > 0 and (got.packets[:, 4] >= 0).all()  # all delivered
    assert got.steps == want.steps
    for a, b in ((got.packets, want.packets), (got.counters, want.counters),
                 (got.link_load, want.link_load), (got.hop_rows, want.hop_rows)):  # fmt: skip
        assert np.array_equal(a, b)


def test_direct_path_only_where_the_crossbar_takes_one_cycle_and_one_step():
    def dx(**keys):
        return iqs.make_params(16, 4, 2, 4, 4, IQConfig(**keys), False).dx

    assert dx() == 1
    assert dx(st_final_delay=2) == 0
    assert dx(st_prepare_delay=1) == 0
    assert dx(internal_speedup=1.5) == 0
    assert dx(output_speedup=2) == 1
