"""Star algorithms emulated on macro-stars with real packets (workloads/emulate_star.py)."""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.emulation import allport_length, theorem_4_2_length
from mpinet.engine.core import CollectiveError
from mpinet.jobs.spec import JobError, load_job, parse_set
from mpinet.topology import from_spec
from mpinet.workloads.emulate_star import (
    EmulateStar,
    EmulationError,
    emulation_lower_bound,
    run_emulation,
)

CASES = [
    ("all-dims", "sdc"),
    ("all-dims", "all-port"),
    ("sweep", "sdc"),
    ("sweep", "consecutive"),
    ("sweep", "all-port"),
    ("broadcast", "sdc"),
    ("broadcast", "all-port"),
    ("mnb", "sdc"),
    ("mnb", "all-port"),
]


@pytest.mark.parametrize("spec", ["ms:2,2", "ms:3,1", "ms:2,1", "ms:1,3"])
@pytest.mark.parametrize(("algorithm", "mode"), CASES)
def test_every_packet_arrives_where_the_star_algorithm_sent_it(spec, algorithm, mode):
    topo = from_spec(spec)
    r = run_emulation(topo, algorithm, mode)
    assert r["ok"], r
    assert all(c["measured"] == 0 for c in r["checks"])
    assert r["ms_steps"] == r["schedule_steps"] <= r["paper_steps"]
    em = EmulateStar(topo, algorithm, mode)
    assert r["ms_steps"] >= emulation_lower_bound(em)


@pytest.mark.parametrize("spec", ["ms:2,2", "ms:3,2", "ms:2,3"])
def test_slowdowns_equal_the_theorems(spec):
    topo = from_spec(spec)
    l, n, k = topo.l, topo.n, topo.k
    far = k - 1 - n
    r = run_emulation(topo, "all-dims", "sdc")  # Thm 3.1: 1 per nucleus dim, 3 per far one
    assert r["ms_steps"] == n + 3 * far == r["paper_steps"]
    r = run_emulation(topo, "all-dims", "all-port")  # Thm 4.4: one star step
    assert r["ms_steps"] == allport_length(l, n) == max(2 * n, l + 1)
    r = run_emulation(topo, "sweep", "consecutive")  # Thm 4.2 (the exact count)
    assert r["ms_steps"] == theorem_4_2_length(n, 2, k - 1, exact=True)
    assert r["ms_steps"] < run_emulation(topo, "sweep", "sdc")["ms_steps"]


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["ims:1,2,2", "ims:1,3,2", "ims:2+1,3,2"])
@pytest.mark.parametrize("algorithm", ["all-dims", "sweep", "broadcast", "mnb"])
def test_incomplete_macro_stars_emulate_the_star_with_dilation_3(spec, algorithm):
    topo = from_spec(spec)
    if algorithm == "mnb" and topo.num_nodes > 1000:
        pytest.skip("MNB on the small ones")
    r = run_emulation(topo, algorithm, "sdc")
    assert r["ok"] and r["ms_steps"] == r["schedule_steps"]
    em = EmulateStar(topo, algorithm, "sdc")
    assert max(len(em._dim_word(j)[0]) for j in range(2, topo.k + 1)) <= 3  # dilation 3
    assert r["ms_steps"] <= 3 * sum(len(d) for d in em.algo.step_dims)
    with pytest.raises(EmulationError, match="sdc"):
        EmulateStar(topo, algorithm, "all-port")


def test_packets_carry_messages_their_senders_hold():
    """Broadcast and MNB check causality: a sender held the message when its star step began."""
    topo = from_spec("ms:2,2")
    for algorithm in ("broadcast", "mnb"):
        r = run_emulation(topo, algorithm, "sdc")
        names = [c["name"] for c in r["checks"]]
        assert any("held the message" in s for s in names)
    n = topo.num_nodes
    assert run_emulation(topo, "mnb", "sdc")["packets"] == n * (n - 1)
    assert run_emulation(topo, "broadcast", "sdc")["packets"] == n - 1


def test_a_wrong_word_is_caught():
    """Break one word: the engine stops (no link / word exhausted) or the checks fail."""
    topo = from_spec("ms:2,2")
    em = EmulateStar(topo, "all-dims", "sdc")
    far = int(np.flatnonzero(em.router.length == 3)[0])
    em.router.words[far, 2] = em.router.words[far, 1]  # S T T instead of S T S
    from mpinet.engine.core import Engine
    from mpinet.engine.models import parse_model

    with pytest.raises(CollectiveError, match="port -2"):
        Engine(topo, em.router, parse_model("sdc"), max_steps=50).run(em)


def test_sdc_emulation_breaks_under_the_wrong_schedule():
    """The all-port schedule uses several ports per MS step: the sdc model rejects it."""
    topo = from_spec("ms:2,2")
    em = EmulateStar(topo, "all-dims", "all-port")
    from mpinet.engine.core import Engine
    from mpinet.engine.models import parse_model

    rec = Engine(topo, em.router, parse_model("sdc"), max_steps=200).run(em)
    assert rec.steps > em.promised_steps()  # packets wait for their dimension's turn


def test_bad_requests_name_the_problem():
    with pytest.raises(EmulationError, match="ims:M,L,N"):
        EmulateStar(from_spec("star:5"), "all-dims", "sdc")
    with pytest.raises(EmulationError, match="sweep"):
        EmulateStar(from_spec("ms:2,2"), "all-dims", "consecutive")
    with pytest.raises(EmulationError, match="all-dims, sweep"):
        EmulateStar(from_spec("ms:2,2"), "nonsense", "sdc")
    with pytest.raises(EmulationError, match="sdc, consecutive, all-port"):
        EmulateStar(from_spec("ms:2,2"), "all-dims", "fast")


def test_job_model_must_match_the_emulation(tmp_path):
    from mpinet.jobs.execute import plan

    sets = [
        "topology=ms:2,2",
        "workload.kind=emulate-star",
        "workload.emulation=consecutive",
        "workload.algorithm=sweep",
        "model.kind=all-port",
    ]
    job = load_job(None, [parse_set(s) for s in sets])
    with pytest.raises(JobError, match="set model = 'sdc'"):
        plan(job)


@pytest.mark.mpi
def test_emulation_identical_on_any_ranks():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = from_spec("ms:2,2")
    for algorithm, mode in CASES:
        par = run_emulation(topo, algorithm, mode, comm)
        ser = run_emulation(topo, algorithm, mode)
        assert par == ser and par["ok"]
