"""The engine under mpiexec: identical packets, paths and counters for any rank count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpinet.engine.core import Engine
from mpinet.engine.models import parse_model
from mpinet.engine.report import gather_hops, gather_packets, summarize
from mpinet.netfile import load_topology
from mpinet.routing import make_router
from mpinet.workloads import Unicast

#: a network read from a file (per-destination tables, reverse ports that differ by node)
CUBIC40 = f"file:{Path(__file__).resolve().parent.parent / 'jobs' / 'networks' / 'cubic40.edges'}"

CASES = [
    ("scc:5", "all-port", dict(pattern="uniform", packets=3)),
    ("ms:3,2", "one-port", dict(pattern="permutation", packets=2)),
    ("star:5", "sdc", dict(pattern="hotspot", packets=1)),
    ("fccn:3", "k-port:2", dict(pattern="locality", packets=2, locality=0.5)),
    (
        "borel:47,2,1,7",
        "all-port",
        dict(pattern="uniform", injection="bernoulli", rate=0.2, steps=8),
    ),
    ("ccc:5", "all-port", dict(pattern="uniform", packets=2)),
    (CUBIC40, "one-port", dict(pattern="uniform", packets=3)),
]


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def _run(spec, model, wl, comm):
    topo = load_topology(spec)
    router = make_router("shortest", topo, tie="random")
    w = Unicast(topo, seed=11, **wl)
    eng = Engine(topo, router, parse_model(model), comm, seed=11, record_hops=True)
    rec = eng.run(w)
    pk, ids = gather_packets(rec, w.pid_space, eng.comm)
    hops = gather_hops(rec, w.pid_space, eng.comm)
    stats = summarize(rec, topo, pk, ids, eng.comm, distance=router.distance)
    return rec, pk, hops, stats


@pytest.mark.mpi
@pytest.mark.parametrize("spec,model,wl", CASES)
def test_identical_to_serial(comm, spec, model, wl):
    rec, pk, hops, stats = _run(spec, model, dict(wl), comm)
    srec, spk, shops, sstats = _run(spec, model, dict(wl), None)
    assert stats["ok"] and sstats["ok"]
    every_pk = np.concatenate(comm.allgather(pk))
    every_hop = np.concatenate(comm.allgather(hops))
    assert np.array_equal(every_pk, spk)  # packet rows, sorted by id across ranks
    assert np.array_equal(every_hop, shops)  # every hop of every packet
    assert np.array_equal(rec.counters[:, :3], srec.counters[:, :3])
    for key in ("steps", "latency", "hops", "stretch", "link_load", "injected", "delivered"):
        assert stats[key] == sstats[key], key
    loads = np.concatenate(comm.allgather(rec.link_load))
    assert np.array_equal(loads, srec.link_load)
    if comm.Get_size() > 1:
        assert rec.counters[:, 3].sum() > 0  # some hops really crossed ranks


@pytest.mark.mpi
@pytest.mark.parametrize("spec", ["scc:5", "ms:3,2", "borel:47,2,1,7", "fccn:3", CUBIC40])
def test_collectives_identical_to_serial(comm, spec):
    from mpinet.engine.collective import run_collective
    from mpinet.workloads.broadcast import FloodingBroadcast, TreeBroadcast

    topo = load_topology(spec)
    for prog, model in (
        (FloodingBroadcast(topo, 3), "all-port"),
        (TreeBroadcast(topo, 3), "one-port"),
    ):
        par = run_collective(topo, prog, parse_model(model), comm)
        ser = run_collective(topo, prog, parse_model(model))
        assert par.complete and par.as_dict() | {"seconds": 0} == ser.as_dict() | {"seconds": 0}
        assert np.array_equal(par.per_step, ser.per_step)


@pytest.mark.mpi
@pytest.mark.parametrize(
    "spec,router,wl",
    [
        ("scc:5", "shortest", dict(packets=4)),
        ("ms:2,2", "ms-two-phase", dict(packets=6)),
        ("fccn:3", "fccn-shortest", dict(injection="bernoulli", rate=0.3, steps=10)),
    ],
)
def test_departure_calendar_equals_link_queues(comm, spec, router, wl):
    """The calendar under MPI: the same packets, hops and loads as the per-link queues."""
    topo = load_topology(spec)
    out = []
    for queues in ("calendar", "links"):
        eng = Engine(topo, make_router(router, topo), parse_model("all-port"), comm, seed=3,
                     record_hops=True, queues=queues)  # fmt: skip
        w = Unicast(topo, seed=3, **wl)
        rec = eng.run(w)
        assert eng.use_calendar == (queues == "calendar")
        pk, _ = gather_packets(rec, w.pid_space, eng.comm)
        out.append((rec, np.concatenate(comm.allgather(pk)),
                    np.concatenate(comm.allgather(gather_hops(rec, w.pid_space, eng.comm))),
                    np.concatenate(comm.allgather(rec.link_load))))  # fmt: skip
    (a, *xa), (b, *xb) = out
    assert a.steps == b.steps
    np.testing.assert_array_equal(a.counters, b.counters)
    for x, y in zip(xa, xb, strict=True):
        np.testing.assert_array_equal(x, y)
    assert (xa[0][:, 4] >= 0).all()
