"""sigma_c broadcasts on the SCC (paper 001 section 5) and the Table 2 baselines."""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.engine.collective import run_collective
from mpinet.engine.core import CollectiveError
from mpinet.engine.models import parse_model
from mpinet.topology import from_spec
from mpinet.workloads.baseline_broadcast import (
    CHECKS as BASE_CHECKS,
)
from mpinet.workloads.baseline_broadcast import (
    STAR_TABLE2,
    CCCBroadcast,
    GreedyOnePortBroadcast,
    HypercubeBroadcast,
    ccc_steps,
)
from mpinet.workloads.checks import topology_of, verdict
from mpinet.workloads.scc_broadcast import (
    CHECKS as SCC_CHECKS,
)
from mpinet.workloads.scc_broadcast import (
    SCCMultiPortBroadcast,
    SCCOnePortBroadcast,
    d_star,
    lateral_time,
    multi_port_steps,
    one_port_steps,
)

# measured (engine) steps, B = 1..4: the sigma_c schedule without its idle steps
MEASURED_ONE = {4: [12, 15, 18, 21], 5: [17, 20, 23, 26], 6: [27, 31, 35, 39]}
MEASURED_MULTI = {4: [8, 10, 12, 14], 5: [17, 20, 23, 26], 6: [20, 23, 26, 29]}


def _run(topo, prog, model, comm=None):
    return run_collective(topo, prog, parse_model(model), comm)


@pytest.mark.parametrize("n", [4, 5, 6])
@pytest.mark.parametrize("b", [1, 2, 3, 4])
def test_one_port(n, b):
    topo = from_spec(f"scc:{n}")
    prog = SCCOnePortBroadcast(topo, 5, messages=b)
    res = _run(topo, prog, "one-port")
    assert res.complete and res.duplicates == 0
    assert res.transmissions == b * (topo.num_nodes - 1)  # every node informed exactly once
    assert prog.schedule_steps == one_port_steps(n, b)  # the paper's count, idle steps included
    assert res.steps == prog.schedule_steps - prog.idle_steps == MEASURED_ONE[n][b - 1]
    if b == 1:
        assert res.class_steps["lateral"] == d_star(n)


@pytest.mark.parametrize("n", [4, 5, 6])
@pytest.mark.parametrize("b", [1, 2, 3, 4])
def test_multi_port(n, b):
    topo = from_spec(f"scc:{n}")
    prog = SCCMultiPortBroadcast(topo, 0, messages=b)
    res = _run(topo, prog, "k-port:2")
    assert res.complete and res.duplicates == 0
    assert prog.schedule_steps == multi_port_steps(n, b)
    assert res.steps == prog.schedule_steps - prog.idle_steps == MEASURED_MULTI[n][b - 1]
    fast = SCCMultiPortBroadcast(topo, 0, messages=b, interval=1)
    res1 = _run(topo, fast, "all-port")
    assert res1.complete and res1.duplicates == 0
    assert res1.steps <= fast.schedule_steps == multi_port_steps(n, b, interval=1)


def test_scc7_single_message():
    topo = from_spec("scc:7")
    for cls, model, formula in (
        (SCCOnePortBroadcast, "one-port", one_port_steps),
        (SCCMultiPortBroadcast, "k-port:2", multi_port_steps),
    ):
        prog = cls(topo, topo.identity)
        res = _run(topo, prog, model)
        assert res.complete and res.duplicates == 0
        assert prog.schedule_steps == formula(7) == 36
        assert (res.steps, res.class_steps["lateral"], res.class_steps["local"]) == (33, 9, 24)


def test_running_time_in_lateral_steps():
    # Table 1 values from eq. 15 with the paper's counts
    assert lateral_time(4, 4, 8, False) == 8 and lateral_time(6, 7, 21, False) == 14
    assert lateral_time(4, 4, 4, True) == 8 and lateral_time(6, 7, 14, True) == 14


def test_model_enforced():
    topo = from_spec("scc:5")
    with pytest.raises(CollectiveError, match="one-port"):
        _run(topo, SCCMultiPortBroadcast(topo, 0), "one-port")
    with pytest.raises(CollectiveError):
        _run(topo, SCCOnePortBroadcast(topo, 0, messages=3, interval=1), "one-port")
    with pytest.raises(CollectiveError):
        _run(topo, SCCMultiPortBroadcast(topo, 0, messages=3, interval=1), "k-port:2")


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_ccc(n):
    topo = from_spec(f"ccc:{n}")
    res = _run(topo, CCCBroadcast(topo, 7), "one-port")
    assert res.complete and res.duplicates == 0
    assert res.steps == ccc_steps(n)
    assert res.class_steps == {"cycle": (3 * n + 1) // 2 - 1, "cube": n}


@pytest.mark.parametrize("n", [3, 6, 9])
def test_hypercube(n):
    topo = from_spec(f"hypercube:{n}")
    res = _run(topo, HypercubeBroadcast(topo, 5), "one-port")
    assert res.complete and res.duplicates == 0 and res.steps == n


@pytest.mark.parametrize("n,steps", [(4, 6), (5, 9), (6, 11)])
def test_star_greedy(n, steps):
    topo = from_spec(f"star:{n}")
    res = _run(topo, GreedyOnePortBroadcast(topo, 0), "one-port")
    assert res.complete and res.duplicates == 0 and res.steps == steps
    assert res.steps <= STAR_TABLE2.get(n, steps)


def test_quick_checks_pass():
    for c in [c for c in SCC_CHECKS + BASE_CHECKS if c.quick]:
        topo = topology_of(c)
        res = run_collective(topo, c.build(topo), parse_model(c.model))
        paper = c.paper_steps(topo) if c.paper_steps else None
        assert verdict(res.steps, res.complete, paper, c.lower_bound(topo)) != "FAIL", c


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.mpi
def test_identical_to_serial(comm):
    cases = [
        ("scc:5", lambda t: SCCOnePortBroadcast(t, 11, messages=3), "one-port"),
        ("scc:5", lambda t: SCCMultiPortBroadcast(t, 11, messages=3, interval=1), "all-port"),
        ("scc:4", lambda t: SCCMultiPortBroadcast(t, 2, messages=2), "k-port:2"),
        ("ccc:5", lambda t: CCCBroadcast(t, 3), "one-port"),
        ("star:5", lambda t: GreedyOnePortBroadcast(t, 3), "one-port"),
    ]
    for spec, build, model in cases:
        topo = from_spec(spec)
        par = _run(topo, build(topo), model, comm)
        ser = _run(topo, build(topo), model)
        assert par.complete
        assert par.as_dict() | {"seconds": 0} == ser.as_dict() | {"seconds": 0}
        assert np.array_equal(par.per_step, ser.per_step)
