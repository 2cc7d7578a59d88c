"""Every router: every ordered pair delivered without a loop, and runs on the engine under MPI."""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.engine.core import Engine
from mpinet.engine.models import parse_model
from mpinet.engine.report import gather_hops, gather_packets, summarize
from mpinet.routing import ROUTERS, exact_distance, make_router
from mpinet.routing.walk import walk
from mpinet.topology import from_spec
from mpinet.workloads import Unicast

#: one small instance per family (the families' own tests go further)
INSTANCE = {
    "star": "star:5",
    "scc": "scc:4",
    "ms": "ms:2,2",
    "ims": "ims:1,3,2",
    "cms": "cms:3,2,2",
    "fccn": "fccn:2",
    "borel": "borel:47,2,1,7",
    "hypercube": "hypercube:5",
    "ccc": "ccc:4",
    "mesh": "mesh:4,3",
    "torus": "torus:4,2",
}
CASES = [
    (name, INSTANCE[fam]) for name, cls in ROUTERS.items() for fam in (cls.families or ["scc"])
]


def all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    src, dst = np.divmod(np.arange(n * n), n)
    return src, dst


@pytest.mark.slow
@pytest.mark.parametrize("name,spec", CASES)
def test_every_ordered_pair(name, spec):
    topo = from_spec(spec)
    src, dst = all_pairs(topo.num_nodes)
    router = make_router(name, topo)
    res = walk(topo, router, src, dst, seed=3)
    assert res["ok"].all(), f"{name} left pairs undelivered on {spec}"
    exact = exact_distance(topo)(src, dst)
    assert (res["lengths"] >= exact).all()


@pytest.mark.slow
@pytest.mark.parametrize("lookahead", [1, 2, 3, 4])
def test_borel_cr_every_pair_of_the_paper_example_graphs(lookahead):
    for spec in ("borel:7,2,0,1", "borel:47,2,7,8"):
        topo = from_spec(spec)
        src, dst = all_pairs(topo.num_nodes)
        res = walk(topo, make_router("borel-cr", topo, lookahead=lookahead), src, dst)
        assert res["ok"].all()


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.mpi
@pytest.mark.parametrize("name,spec", CASES)
def test_router_on_the_engine_identical_to_serial(comm, name, spec):
    topo = from_spec(spec)

    def run(c):
        router = make_router(name, topo)
        w = Unicast(topo, "uniform", packets=2, seed=7)
        eng = Engine(topo, router, parse_model("all-port"), c, seed=7, record_hops=True)
        rec = eng.run(w)
        pk, ids = gather_packets(rec, w.pid_space, eng.comm)
        hops = gather_hops(rec, w.pid_space, eng.comm)
        stats = summarize(rec, topo, pk, ids, eng.comm)
        return pk, hops, stats

    pk, hops, stats = run(comm)
    spk, shops, sstats = run(None)
    assert stats["ok"] and stats["delivered"] == 2 * topo.num_nodes
    assert np.array_equal(np.concatenate(comm.allgather(pk)), spk)
    assert np.array_equal(np.concatenate(comm.allgather(hops)), shops)
