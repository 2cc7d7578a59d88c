"""MNB (translated spanning trees) and TE (all pairs on the unicast engine), paper 004 sec. 4."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mpinet.engine.collective import run_collective
from mpinet.engine.core import CollectiveError
from mpinet.engine.models import parse_model
from mpinet.routing.tables import distances_from
from mpinet.topology import from_spec
from mpinet.workloads.checks import verdict
from mpinet.workloads.mnb_te import CHECKS, MNBError, TreeMNB, mnb_lower_bound
from mpinet.workloads.te import run_te, te_lower_bound

MODELS = ["sdc", "one-port", "all-port"]


@pytest.mark.parametrize("spec", ["star:4", "star:5", "ms:2,2", "ms:3,1"])
@pytest.mark.parametrize("model", MODELS)
def test_mnb_everyone_gets_everything_at_the_bound(spec, model):
    topo = from_spec(spec)
    n = topo.num_nodes
    res = run_collective(topo, TreeMNB(topo, model), parse_model(model))
    assert res.complete and res.missing == 0 and res.duplicates == 0
    assert res.per_step[:, 1].sum() == n * (n - 1)  # N(N-1) new (node, message) pairs
    assert res.transmissions == n * (n - 1)
    if model != "all-port":
        assert res.steps == n - 1 == mnb_lower_bound(topo, model)
        assert (res.per_step[:, 1] == n).all()  # every node gets one new message per step
    assert res.steps >= mnb_lower_bound(topo, model)
    if model == "all-port":  # the greedy tree meets ceil((N-1)/deg) on these graphs
        assert res.steps == mnb_lower_bound(topo, model) == math.ceil((n - 1) / topo.degree)


def test_mnb_schedule_breaks_the_wrong_model():
    """The all-port schedule uses several generators per step: sdc and one-port reject it."""
    topo = from_spec("star:4")
    for model in ("sdc", "one-port"):
        with pytest.raises(CollectiveError, match="violated"):
            run_collective(topo, TreeMNB(topo, "all-port"), parse_model(model))


def test_mnb_needs_a_cayley_graph():
    with pytest.raises(MNBError, match="needs a Cayley graph whose ports are generators"):
        TreeMNB(from_spec("scc:4"), "sdc")
    with pytest.raises(MNBError, match="model must be sdc, one-port or all-port, got 'k-port'"):
        TreeMNB(from_spec("star:4"), "k-port")


@pytest.mark.parametrize("spec", ["star:4", "ms:2,2"])
@pytest.mark.parametrize("model", MODELS)
def test_te_delivers_every_pair(spec, model):
    topo = from_spec(spec)
    n = topo.num_nodes
    res = run_te(topo, model, algorithm="routed")
    d = distances_from(topo, topo.identity).astype(np.int64)
    assert res.complete and res.delivered == res.expected == n * (n - 1)
    assert res.transmissions == res.min_transmissions == n * int(d.sum())  # minimal routes
    lb = te_lower_bound(topo, model)
    if model != "all-port":
        assert lb == int(d.sum())
    else:  # the weighted bound is at least the plain one
        assert lb >= -(-int(d.sum()) // topo.degree)
    assert lb <= res.steps <= 2 * lb


def test_te_one_port_star4_meets_the_bound():
    """One-port TE needs the sum of the distances from a node: each node sends one packet
    per step and its packets need that many hops (Akers-Harel-Krishnamurthy distances)."""
    topo = from_spec("star:4")

    def star_distance(p: tuple[int, ...]) -> int:
        seen, cycles, moved = set(), 0, 0
        for a in range(len(p)):
            x, length = a, 0
            while x not in seen:
                seen.add(x)
                x, length = p[x], length + 1
            if length > 1:
                cycles, moved = cycles + 1, moved + length
        return cycles + moved - (2 if p[0] != 0 else 0)

    bound = sum(star_distance(p) for p in itertools.permutations(range(4)))
    assert run_te(topo, "one-port", algorithm="routed").steps == bound
    assert te_lower_bound(topo, "one-port") == bound


def test_quick_checks_pass():
    quick = [c for c in CHECKS if c.quick]
    assert {c.model for c in quick} == set(MODELS)
    for c in quick:
        topo = from_spec(c.topology)
        model = parse_model(c.model)
        res = c.run(topo, model, None) if c.run else run_collective(topo, c.build(topo), model)
        paper = c.paper_steps(topo) if c.paper_steps else None
        v = verdict(res.steps, res.complete, paper, c.lower_bound(topo))
        assert v in ("equal", "within-bound"), (c.topology, c.collective, c.model, v)


@pytest.mark.mpi
def test_mnb_and_te_identical_to_serial():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = from_spec("star:5")
    for model in MODELS:
        par = run_collective(topo, TreeMNB(topo, model), parse_model(model), comm)
        ser = run_collective(topo, TreeMNB(topo, model), parse_model(model))
        assert par.complete and par.as_dict() | {"seconds": 0} == ser.as_dict() | {"seconds": 0}
        assert np.array_equal(par.per_step, ser.per_step)
    topo = from_spec("star:4")
    for model in MODELS:
        for algo in ("schedule", "routed"):
            par, ser = (
                run_te(topo, model, comm, algorithm=algo),
                run_te(topo, model, algorithm=algo),
            )
            skip = {"seconds": 0, "max_rss_mib": 0}
            assert par.complete and par.as_dict() | skip == ser.as_dict() | skip


@pytest.mark.parametrize("spec", ["scc:4", "hypercube:4", "ccc:3", "fccn:2", "star:4", "ms:2,2"])
@pytest.mark.parametrize("model", [*MODELS, "k-port:2"])
def test_routed_mnb_everyone_gets_everything_once(spec, model):
    from mpinet.routing import make_router
    from mpinet.workloads.mnb_routed import RoutedMNB, routed_mnb_lower_bound

    topo = from_spec(spec)
    n = topo.num_nodes
    mdl = parse_model(model)
    res = run_collective(topo, RoutedMNB(topo, make_router("shortest", topo), mdl), mdl)
    assert res.complete and res.duplicates == 0
    assert res.transmissions == n * (n - 1)  # one reception per (node, message): trees
    assert res.steps >= routed_mnb_lower_bound(topo, mdl)


@pytest.mark.mpi
def test_routed_mnb_identical_to_serial():
    from mpi4py import MPI

    from mpinet.routing import make_router
    from mpinet.workloads.mnb_routed import RoutedMNB

    comm = MPI.COMM_WORLD
    topo = from_spec("scc:4")
    for model in (*MODELS, "k-port:2"):
        mdl = parse_model(model)
        par = run_collective(topo, RoutedMNB(topo, make_router("shortest", topo), mdl), mdl, comm)
        ser = run_collective(topo, RoutedMNB(topo, make_router("shortest", topo), mdl), mdl)
        assert par.complete and par.as_dict() | {"seconds": 0} == ser.as_dict() | {"seconds": 0}
