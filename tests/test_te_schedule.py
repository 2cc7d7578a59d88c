"""Total exchange by one schedule of the identity (routing/cayley_te.py, workloads/te.py)."""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.engine.core import Engine
from mpinet.engine.models import parse_model
from mpinet.errors import RoutingError
from mpinet.routing import cayley_te
from mpinet.routing.cayley_te import (
    TEScheduleRouter,
    build_te_schedule,
    check_te_schedule,
    offsets,
    te_schedule,
)
from mpinet.routing.tables import distances_from
from mpinet.topology import from_spec
from mpinet.workloads.te import (
    ScheduledAllPairs,
    TEError,
    build_te,
    default_algorithm,
    run_te,
    te_lower_bound,
)

SPECS = ["star:4", "star:5", "ms:2,2", "ms:3,1", "ms:2,1"]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_schedule_is_valid_and_sequential_schedule_is_exact(spec, k):
    topo = from_spec(spec)
    if k > topo.degree:
        pytest.skip("more ports than the degree")
    s = build_te_schedule(topo, k)
    d = distances_from(topo, topo.identity).astype(np.int64)
    assert np.array_equal(s.length, d)
    assert ((s.words >= 0).sum(axis=1) == d).all()  # shortest words
    if k == 1:  # one letter per step: exactly the sum of the distances
        assert s.steps == int(d.sum())
    assert s.steps >= -(-int(d.sum()) // k)


def test_check_rejects_broken_schedules():
    topo = from_spec("star:4")
    good = build_te_schedule(topo, 2)
    s = build_te_schedule(topo, 2)
    h = int(np.flatnonzero(s.length == 3)[0])
    s.words[h, 0] = (s.words[h, 0] + 1) % topo.degree  # spells another offset
    with pytest.raises(RoutingError, match="spell"):
        check_te_schedule(topo, s)
    s = build_te_schedule(topo, 2)
    s.slots[h, 1] = s.slots[h, 0]  # two letters of a word in one step
    with pytest.raises(RoutingError, match="schedule letters not in increasing steps"):
        check_te_schedule(topo, s)
    s = build_te_schedule(topo, 2)  # a sound two-port schedule
    s.ports_per_step = 1  # claimed to use one port per step
    with pytest.raises(RoutingError, match="star:4: more than 1 generators in a step"):
        check_te_schedule(topo, s)
    check_te_schedule(topo, good)


def test_schedule_needs_a_permutation_cayley_graph():
    with pytest.raises(RoutingError, match="Cayley"):
        build_te_schedule(from_spec("scc:4"), 1)
    with pytest.raises(RoutingError, match="ports_per_step"):
        build_te_schedule(from_spec("star:4"), 4)
    assert default_algorithm(from_spec("scc:4")) == "routed"
    assert default_algorithm(from_spec("ms:2,2")) == "schedule"
    with pytest.raises(TEError, match="schedule, routed"):
        build_te(from_spec("star:4"), parse_model("sdc"), "magic")


def test_offsets_are_src_inverse_times_dst():
    topo = from_spec("star:5")
    rng = np.random.default_rng(1)
    src = rng.integers(0, topo.num_nodes, 200)
    h = rng.integers(0, topo.num_nodes, 200)
    # x * h by walking h's word from x equals the permutation product
    s = build_te_schedule(topo, 1)
    x = src.copy()
    for i in range(s.words.shape[1]):
        w = s.words[h, i]
        on = w >= 0
        x[on] = topo.neighbors(x[on])[np.arange(int(on.sum())), w[on]]
    assert np.array_equal(offsets(topo, src, x), h)


@pytest.mark.parametrize("spec", ["star:4", "star:5", "ms:2,2"])
@pytest.mark.parametrize("model", ["sdc", "one-port", "k-port:2", "all-port"])
def test_scheduled_te_runs_at_the_schedule_length(spec, model):
    topo = from_spec(spec)
    n = topo.num_nodes
    res = run_te(topo, model, algorithm="schedule")
    assert res.complete and res.delivered == n * (n - 1)
    assert res.transmissions == res.min_transmissions  # minimal routes
    sched = build_te_schedule(
        topo, {"sdc": 1, "one-port": 1, "k-port:2": 2}.get(model, topo.degree)
    )
    assert res.steps == sched.steps  # nothing waits for a link: the schedule is conflict-free
    lb = te_lower_bound(topo, model)
    assert res.steps >= lb
    if model in ("sdc", "one-port"):
        assert res.steps == lb


def test_injection_is_lazy():
    """Only the offsets under way are in the engine: under sdc about N packets."""
    topo = from_spec("star:5")
    model = parse_model("sdc")
    router, workload = build_te(topo, model, "schedule")
    assert isinstance(workload, ScheduledAllPairs) and isinstance(router, TEScheduleRouter)
    rec = Engine(topo, router, model).run(workload)
    in_flight = rec.counters[:, 2]
    assert in_flight.max() <= topo.num_nodes
    assert rec.counters[:, 0].max() == topo.num_nodes  # every node sends once per step


def test_weighted_bound_beats_the_plain_one_on_macro_star():
    """The class-weighted bound is tighter where generators are not interchangeable."""
    topo = from_spec("ms:2,2")
    d = distances_from(topo, topo.identity).astype(np.int64)
    plain = -(-int(d.sum()) // topo.degree)
    assert te_lower_bound(topo, "all-port") > plain
    assert te_lower_bound(topo, "sdc") == int(d.sum())


def test_bound_on_a_non_vertex_transitive_network():
    """FCCN: all sources; the routed TE measures at least the bound."""
    topo = from_spec("fccn:2")
    for model in ("one-port", "all-port"):
        res = run_te(topo, model, algorithm="routed")
        assert res.complete and res.steps >= te_lower_bound(topo, model)


@pytest.mark.mpi
def test_scheduled_te_identical_on_any_ranks():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = from_spec("ms:2,2")
    for model in ("sdc", "all-port"):
        par = run_te(topo, model, comm, algorithm="schedule").as_dict()
        ser = run_te(topo, model, algorithm="schedule").as_dict()
        skip = {"seconds": 0, "max_rss_mib": 0}
        assert par["complete"] and par | skip == ser | skip


def _waits(s):
    """Steps each packet waits between consecutive letters of its word."""
    gaps = np.diff(s.slots, axis=1) - 1
    return gaps[(s.slots[:, 1:] >= 0)]


@pytest.mark.parametrize("spec", ["star:5", "ms:2,2", "ms:3,1"])
@pytest.mark.parametrize("max_wait", [0, 1, 2])
def test_bounded_wait_schedules_are_valid_and_compact(spec, max_wait):
    topo = from_spec(spec)
    free = build_te_schedule(topo, topo.degree)
    s = build_te_schedule(topo, topo.degree, max_wait=max_wait)  # validated inside
    d = distances_from(topo, topo.identity).astype(np.int64)
    assert np.array_equal(s.length, d) and ((s.words >= 0).sum(axis=1) == d).all()
    assert _waits(s).max() <= max_wait
    assert s.packet_steps <= free.packet_steps  # the point of bounding the wait
    assert s.steps >= -(-int(d.sum()) // topo.degree)
    # one port per step: already contiguous, the bound is met either way
    assert build_te_schedule(topo, 1, max_wait=max_wait).steps == int(d.sum())


def test_packet_steps_counts_held_packets():
    topo = from_spec("star:4")
    s = build_te_schedule(topo, 1)
    rows = np.flatnonzero(s.length > 0)
    last = s.slots[rows, s.length[rows] - 1]
    # injected the step before the first letter, held through the last: span + 1 steps each
    assert s.packet_steps == int((last - s.slots[rows, 0] + 2).sum()) * topo.num_nodes
    with pytest.raises(RoutingError, match="max_wait"):
        build_te_schedule(topo, 1, max_wait=-1)


def test_te_schedule_bounds_the_wait_above_the_budget(monkeypatch):
    topo = from_spec("ms:2,2")
    assert te_schedule(topo, 3).packet_steps == build_te_schedule(topo, 3).packet_steps
    monkeypatch.setattr(cayley_te, "PACKET_STEP_BUDGET", 0)
    s = te_schedule(topo, 3)
    assert _waits(s).max() <= cayley_te.COMPACT_WAIT
    res = run_te(topo, "all-port", algorithm="schedule")  # the engine runs what was chosen
    assert res.complete and res.steps == s.steps
