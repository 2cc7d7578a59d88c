"""File networks under mpiexec: the same metrics, runs and flit runs on 1-4 ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_flit_engine import assert_same, random_case, reference, run

from mpinet.engine.core import Engine
from mpinet.engine.info import network_info
from mpinet.engine.models import parse_model
from mpinet.engine.report import gather_hops, gather_packets, summarize
from mpinet.netfile import load_topology
from mpinet.routing import make_router
from mpinet.workloads import Unicast

NETWORKS = Path(__file__).resolve().parent.parent / "jobs" / "networks"
SPEC = f"file:{NETWORKS / 'cubic40.edges'}"


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.mpi
def test_info_identical_to_serial(comm):
    topo = load_topology(SPEC)
    a, b = network_info(topo, comm=comm), network_info(topo)
    for key in ("diameter", "avg_distance", "histogram"):
        assert a[key] == b[key], key
    s, t = network_info(topo, comm=comm, sources=7, seed=3), network_info(topo, sources=7, seed=3)
    assert s["histogram"] == t["histogram"]


def _unicast(topo, comm):
    router = make_router("shortest", topo, tie="random")
    w = Unicast(topo, seed=5, pattern="uniform", packets=3)
    eng = Engine(topo, router, parse_model("one-port"), comm, seed=5, record_hops=True)
    rec = eng.run(w)
    pk, ids = gather_packets(rec, w.pid_space, eng.comm)
    hops = gather_hops(rec, w.pid_space, eng.comm)
    stats = summarize(rec, topo, pk, ids, eng.comm, distance=router.distance)
    return rec, pk, hops, stats


@pytest.mark.mpi
def test_run_identical_to_serial(comm):
    topo = load_topology(SPEC)
    rec, pk, hops, stats = _unicast(topo, comm)
    srec, spk, shops, sstats = _unicast(topo, None)
    assert stats["ok"] and sstats["ok"]
    assert np.array_equal(np.concatenate(comm.allgather(pk)), spk)
    assert np.array_equal(np.concatenate(comm.allgather(hops)), shops)
    for key in ("steps", "latency", "hops", "link_load", "delivered"):
        assert stats[key] == sstats[key], key


@pytest.mark.mpi
def test_flit_runs_identical_to_the_reference(comm):
    topo = load_topology(SPEC)
    router = make_router("shortest", topo)
    rng = np.random.default_rng(21)
    for heavy in (True, False, False):
        m, rows = random_case(rng, topo, heavy=heavy)
        rec = run(topo, router, rows, m, comm)
        packets = comm.gather(rec.packets, root=0)
        loads = comm.gather(rec.link_load, root=0)
        if comm.Get_rank() == 0:
            ref = reference(topo, router, rows, m)
            rec.packets, rec.link_load = np.concatenate(packets), np.concatenate(loads)
            assert_same(rec, ref, topo)
