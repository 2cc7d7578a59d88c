"""Collectives as node programs: copy semantics, model checks, measured steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpinet.engine.collective import Holdings, run_collective
from mpinet.engine.core import CollectiveError
from mpinet.engine.models import parse_model
from mpinet.routing.tables import distances_from
from mpinet.topology import from_spec
from mpinet.workloads.broadcast import FloodingBroadcast, TreeBroadcast

SPECS = ["scc:4", "ms:2,2", "ms:3,2", "star:5", "hypercube:6", "ccc:4", "fccn:2", "borel:47,2,1,7"]


@pytest.mark.parametrize("spec", SPECS)
def test_flooding_takes_the_eccentricity(spec):
    topo = from_spec(spec)
    for src in (0, topo.num_nodes // 2):
        res = run_collective(topo, FloodingBroadcast(topo, src), parse_model("all-port"))
        assert res.complete and res.missing == 0
        assert res.steps == int(distances_from(topo, src).max())
        # every node but the source is informed exactly once; the rest are duplicates
        assert res.per_step[:, 1].sum() == topo.num_nodes - 1
        assert res.transmissions == res.per_step[:, 1].sum() + res.duplicates


@pytest.mark.parametrize("spec", SPECS)
def test_one_port_tree_broadcast(spec):
    topo = from_spec(spec)
    prog = TreeBroadcast(topo, 0)
    res = run_collective(topo, prog, parse_model("one-port"))
    assert res.complete and res.duplicates == 0
    assert res.steps == prog.finish_time
    lower = max(int(distances_from(topo, 0).max()), math.ceil(math.log2(topo.num_nodes)))
    assert res.steps >= lower
    assert res.transmissions == topo.num_nodes - 1


def test_hypercube_tree_broadcast_is_optimal():
    for n in range(2, 9):
        topo = from_spec(f"hypercube:{n}")
        assert run_collective(topo, TreeBroadcast(topo, 0), parse_model("one-port")).steps == n


class TwoPorts:
    """Sends on two ports at once from the source: breaks one-port."""

    name = "two-ports"
    messages = 1

    def start(self, lo, hi):
        return (np.array([0]), np.array([0])) if lo == 0 else (np.empty(0, int),) * 2

    def transmissions(self, step: int, held: Holdings):
        if step > 1 or held.lo != 0:
            return (np.empty(0, int),) * 3
        return np.array([0, 0]), np.array([0, 1]), np.array([0, 0])

    def wanted(self, lo, hi):
        return np.zeros((hi - lo, 1), dtype=bool)


def test_one_port_violation_is_reported():
    with pytest.raises(CollectiveError, match="model one-port violated in step 1 at node"):
        run_collective(from_spec("star:4"), TwoPorts(), parse_model("one-port"))
    with pytest.raises(CollectiveError, match="model sdc violated"):
        run_collective(from_spec("star:4"), TwoPorts(), parse_model("sdc"))
    res = run_collective(from_spec("star:4"), TwoPorts(), parse_model("all-port"))
    assert res.steps == 1 and res.transmissions == 2


def test_sending_what_a_node_does_not_hold_is_an_error():
    class Liar(TwoPorts):
        def start(self, lo, hi):
            return (np.empty(0, int),) * 2

    with pytest.raises(CollectiveError, match="which does not hold it"):
        run_collective(from_spec("star:4"), Liar(), parse_model("all-port"))
