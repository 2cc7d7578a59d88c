"""sigma_c broadcasts on the SCC (paper 001 section 5) and the Table 2 baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpinet.engine.collective import run_collective
from mpinet.engine.core import CollectiveError
from mpinet.engine.models import parse_model
from mpinet.routing.tables import distances_from
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


# Paper 001 section 5, written out here (not imported from the code under test): the
# sigma_c sequence has d_star = floor(3(n-1)/2) lateral steps, each after floor(n/2)
# (one-port) or floor((n-1)/2) (multiple-port) local steps; B pipelined messages start
# every interval = floor((n+2)/2) resp. floor((n+1)/2) steps.
def paper_d_star(n: int) -> int:
    return math.floor(3 * (n - 1) / 2)


def paper_interval(n: int, multiport: bool) -> int:
    return math.floor((n + 1) / 2) if multiport else math.floor((n + 2) / 2)


def paper_steps(n: int, b: int, multiport: bool) -> int:
    """Eq. 12 / eq. 13 for B = 1, and their pipelined forms floor((n+2)/2) floor(B-1+3(n-1)/2)
    (one-port) and floor((n+1)/2) floor(B-1+3(n-1)/2) (multiple-port)."""
    return paper_interval(n, multiport) * math.floor(b - 1 + 3 * (n - 1) / 2)


def lower_bound(topo, source: int, ports: int = 1) -> int:
    """The source's eccentricity (BFS), and the steps t with (ports + 1)^t >= N: with that
    many ports a node informs at most that many others per step."""
    ecc = int(distances_from(topo, source).max())
    t = 0
    while (ports + 1) ** t < topo.num_nodes:
        t += 1
    return max(ecc, t)


def _run(topo, prog, model, comm=None):
    return run_collective(topo, prog, parse_model(model), comm)


def check_sigma_c(n: int, multiport: bool, source: int) -> None:
    """B = 1..4 messages against the paper's counts and errata E16: the schedule lasts exactly
    the paper's formula; lateral steps are exactly the paper's d_star + B - 1; the steps the
    engine measures are the formula's less the idle ones, which are all local, none for n = 4,
    and the same number for every B (a pipelined message adds exactly one interval)."""
    topo = from_spec(f"scc:{n}")
    cls, model = (SCCMultiPortBroadcast, "k-port:2") if multiport else (SCCOnePortBroadcast,
                                                                        "one-port")  # fmt: skip
    local_per_phase = (n - 1) // 2 if multiport else n // 2
    ports = 2 if multiport else 1
    lower = lower_bound(topo, source, ports)
    idle = set()
    for b in (1, 2, 3, 4):
        prog = cls(topo, source, messages=b)
        res = _run(topo, prog, model)
        assert res.complete and res.duplicates == 0
        assert res.transmissions == b * (topo.num_nodes - 1)  # every node informed once
        paper = paper_steps(n, b, multiport)
        assert prog.schedule_steps == paper  # idle steps included
        phases = paper_d_star(n) + b - 1
        assert res.class_steps["lateral"] == phases
        assert res.steps == res.class_steps["lateral"] + res.class_steps["local"]
        assert res.class_steps["local"] <= local_per_phase * phases
        assert res.steps == paper - prog.idle_steps
        idle.add(paper - res.steps)
        assert res.steps >= lower + math.ceil(b / ports) - 1  # the last message leaves late
    assert len(idle) == 1  # the same idle steps for every B
    assert (idle.pop() == 0) == (n == 4)  # E16: eq. 12/13 exact for n = 4 only


@pytest.mark.parametrize("n", [4, 5, 6])
def test_one_port(n):
    check_sigma_c(n, multiport=False, source=5)


@pytest.mark.parametrize("n", [4, 5, 6])
def test_multi_port(n):
    check_sigma_c(n, multiport=True, source=0)


@pytest.mark.parametrize("n", [4, 5, 6])
@pytest.mark.parametrize("b", [1, 2, 3, 4])
def test_multi_port_interval_one(n, b):
    topo = from_spec(f"scc:{n}")
    fast = SCCMultiPortBroadcast(topo, 0, messages=b, interval=1)
    res1 = _run(topo, fast, "all-port")
    assert res1.complete and res1.duplicates == 0
    # paper 001 sec. 5.2: floor((n+1)/2) floor(3(n-1)/2) + B - 1 with an interval of 1
    paper = paper_interval(n, True) * paper_d_star(n) + b - 1
    assert res1.steps <= fast.schedule_steps == paper
    assert fast.schedule_steps == multi_port_steps(n, b, interval=1)


def test_scc7_single_message():
    topo = from_spec("scc:7")
    for cls, model, formula in (
        (SCCOnePortBroadcast, "one-port", one_port_steps),
        (SCCMultiPortBroadcast, "k-port:2", multi_port_steps),
    ):
        prog = cls(topo, topo.identity)
        res = _run(topo, prog, model)
        assert res.complete and res.duplicates == 0
        paper = paper_steps(7, 1, cls is SCCMultiPortBroadcast)
        assert prog.schedule_steps == formula(7) == paper
        # E16: the schedule's idle steps are all local; lateral steps are d_star
        assert res.class_steps["lateral"] == paper_d_star(7) == d_star(7)
        assert res.steps == paper - prog.idle_steps < paper
        assert res.class_steps["local"] == res.steps - paper_d_star(7)
        assert res.steps >= lower_bound(topo, topo.identity, ports=2 if "k-port" in model else 1)


def test_running_time_in_lateral_steps():
    # Table 1 values from eq. 15 with the paper's counts
    assert lateral_time(4, 4, 8, False) == 8 and lateral_time(6, 7, 21, False) == 14
    assert lateral_time(4, 4, 4, True) == 8 and lateral_time(6, 7, 14, True) == 14


def test_model_enforced():
    topo = from_spec("scc:5")
    with pytest.raises(CollectiveError, match=r"model one-port violated in step 1 .* allows 1"):
        _run(topo, SCCMultiPortBroadcast(topo, 0), "one-port")
    with pytest.raises(CollectiveError, match=r"model one-port violated in step 2 .* allows 1"):
        _run(topo, SCCOnePortBroadcast(topo, 0, messages=3, interval=1), "one-port")
    with pytest.raises(CollectiveError, match=r"model k-port:2 violated in step 3 .* allows 2"):
        _run(topo, SCCMultiPortBroadcast(topo, 0, messages=3, interval=1), "k-port:2")


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_ccc(n):
    topo = from_spec(f"ccc:{n}")
    res = _run(topo, CCCBroadcast(topo, 7), "one-port")
    assert res.complete and res.duplicates == 0
    assert res.steps == ccc_steps(n) == math.ceil(5 * n / 2) - 1  # paper 001 Table 2 [16]
    assert res.class_steps == {"cycle": (3 * n + 1) // 2 - 1, "cube": n}


@pytest.mark.parametrize("n", [3, 6, 9])
def test_hypercube(n):
    topo = from_spec(f"hypercube:{n}")
    res = _run(topo, HypercubeBroadcast(topo, 5), "one-port")
    assert res.complete and res.duplicates == 0 and res.steps == n


@pytest.mark.parametrize("n", [4, 5, 6])
def test_star_greedy(n):
    """No formula for a greedy schedule: between the one-port lower bound and, as errata
    E16 states, below Table 2's n-star counts (12, 16 for n = 5, 6)."""
    topo = from_spec(f"star:{n}")
    res = _run(topo, GreedyOnePortBroadcast(topo, 0), "one-port")
    assert res.complete and res.duplicates == 0
    assert res.transmissions == topo.num_nodes - 1
    assert res.steps >= lower_bound(topo, 0)
    if n in STAR_TABLE2:
        assert res.steps < STAR_TABLE2[n]  # Table 2, from its ref. [12]


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
