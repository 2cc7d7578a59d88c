"""The iq router's arrays in the memory plan (:mod:`mpinet.jobs.plans_iq`) against the
arrays a run allocates (``nbytes`` of :func:`~mpinet.engine.flit.iq_state.make_arrays`'s,
as the run left them, and of a rank's share on several ranks)."""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_engine import Packets

from mpinet.engine.flit import iq_ranks
from mpinet.engine.flit import iq_state as iqs
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.models import parse_model, switching_model
from mpinet.jobs import plans_iq
from mpinet.jobs.estimate import Estimate
from mpinet.jobs.iq_job import iq_model
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec

MODELS = [
    {"router": "iq", "flits": 4, "vcs": 3, "vc_buffer": 2},
    {"router": "iq", "vcs": 16, "vc_buffer": 8,
     "iq": {"routing_delay": 0, "input_speedup": 2, "internal_speedup": 1.5}},
]  # fmt: skip


def _engine_model(topo, model):
    m = switching_model(parse_model("all-port", dict.fromkeys(topo.port_classes, 1)),
                        "wormhole", model.get("flits"), model.get("vcs"),
                        model.get("vc_buffer"), None)  # fmt: skip
    return iq_model(m, model)


@pytest.mark.parametrize("model", MODELS)
def test_the_plan_is_a_runs_arrays(model):
    topo = from_spec("mesh:5,2")
    n = topo.num_nodes
    m = _engine_model(topo, model)
    eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy("any", topo, m.vcs))
    rng = np.random.default_rng(1)
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), i // 3) for i in range(3000)]
    eng.run(Packets(rows))
    s = eng.iq_state[0]
    real = sum(a.nbytes for a in s)
    keys = plans_iq.iq_keys(model)
    assert plans_iq.iq_bytes(n, n, topo.degree, keys, 0, s.pk_pid.size) == real
    est = Estimate("run")
    plans_iq.iq_state(est, n, 1, topo.degree, model, 0, 1500)  # the run's slots: 2 x 1500
    assert est.parts["iq router arrays"] >= real


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("size", [2, 3])
def test_a_ranks_share_is_its_arrays(model, size):
    """On several ranks a rank keeps its nodes' arrays, the links' and its rows to the
    others."""
    topo = from_spec("torus:6,2")
    n, deg = topo.num_nodes, topo.degree
    flits, vcs, buf, iq = plans_iq.iq_keys(model)
    own = -(-n // size)
    prm = iqs.make_params(n, deg, vcs, buf, flits, iq, False, 0, own)
    z = np.zeros(own * deg, np.int64)  # the links' tables: the rank's rows
    arrays = iqs.make_arrays(prm, z, z, z, 1, 700, iq_ranks.ROW + 1)
    real = sum(a.nbytes for a in arrays)
    assert plans_iq.iq_bytes(n, own, deg, (flits, vcs, buf, iq), 1, 700) == real


def test_only_iq_jobs_are_counted():
    assert plans_iq.iq_keys({"switching": "wormhole"}) is None
    assert plans_iq.iq_keys({"router": "iq", "iq": {"routing_delay": -3}}) is None


@pytest.mark.parametrize("spec,hw", [("mesh:5,2", 0), ("torus:9,3", 2), ("hypercube:7", 1)])
@pytest.mark.parametrize("slots", [1024, 3000])
def test_the_lean_plan_is_the_lean_arrays(spec, hw, slots):
    """One rank on the lean path: the plan is the bytes make_lean allocates, for any size
    (the routers' bit set is not linear: 128 nodes need two words)."""
    from mpinet.engine.flit import iq_lean_state as ils

    topo = from_spec(spec)
    n, deg = topo.num_nodes, topo.degree
    keys = plans_iq.iq_keys({"router": "iq", "flits": 4, "vcs": 3, "vc_buffer": 2})
    flits, vcs, buf, iq = keys
    prm = iqs.make_params(n, deg, vcs, buf, flits, iq, False)
    z = np.zeros(n * deg, np.int64)
    real = sum(a.nbytes for a in ils.make_lean(prm, z, z, np.zeros(n, np.int64), z, hw, slots))
    assert plans_iq.lean_bytes(n, deg, keys, hw, slots) == real


def test_the_plan_counts_the_path_that_runs():
    """The lean arrays where the run takes the lean path (one rank, a compiled hop, the keys
    it takes), the general arrays elsewhere; the engine's own choice agrees."""
    topo = from_spec("mesh:5,2")
    n, deg = topo.num_nodes, topo.degree
    plain, slow = MODELS[0], {**MODELS[0], "iq": {"internal_speedup": 2}}

    def planned(model, size=1, walked=False):
        est = Estimate("run")
        plans_iq.iq_state(est, n, size, deg, model, 0, None, walked)
        return est.parts["iq router arrays"]

    lean_b = plans_iq.lean_bytes(n, deg, plans_iq.iq_keys(plain), 0, plans_iq.START_SLOTS)
    assert planned(plain) == lean_b
    assert planned(plain, walked=True) > lean_b  # a router that may walk: the general path
    keys = plans_iq.iq_keys(plain)
    assert planned(plain, size=2) == plans_iq.iq_bytes(n, 13, deg, keys, 0, 1024)  # general
    assert planned(slow) == plans_iq.iq_bytes(n, n, deg, plans_iq.iq_keys(slow), 0, 1024)
    for model, lean in ((plain, True), (slow, False)):
        assert plans_iq.lean(deg, plans_iq.iq_keys(model)) is lean
        m = _engine_model(topo, model)
        eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy("any", topo, m.vcs))
        eng.run(Packets([(i, i % n, (3 * i + 1) % n, i) for i in range(50)]))
        assert ("lean path" in eng.steps_path) is lean, eng.steps_path
