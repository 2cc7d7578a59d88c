"""Finite buffers under mpiexec: the same packets, paths, counters and deadlock on any rank count.

Credits of a buffer live on the rank of the link feeding it, so a packet that
crosses ranks owes its credit to another rank when it moves on; the runs here
are compared with a serial run of the same job on every rank.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mpinet.engine.core import Engine
from mpinet.engine.models import parse_model
from mpinet.engine.report import gather_hops, gather_packets
from mpinet.routing import make_router
from mpinet.topology import from_spec
from mpinet.workloads import Unicast

BUFFERS = [(1, "none"), (1, "hops"), (2, "none"), (2, "hops")]
JOBS = [
    ("star:5", "p3", dict(packets=3)),
    ("ms:2,2", "p4", dict(packets=4)),
    ("scc:4", "bern", dict(injection="bernoulli", rate=1.0, steps=3)),
]
#: bernoulli at a low rate: some rank may have nothing queued in step 1
SPARSE = dict(injection="bernoulli", rate=0.03, steps=12)
#: per topology, each model with two buffer settings: every setting meets every topology
CASES = [
    pytest.param(spec, kind, b, cls, wl, id=f"{spec}-{kind}-B{b}{cls[0]}-{name}")
    for (spec, name, wl), (mi, kind), j in itertools.product(
        JOBS, enumerate(["all-port", "one-port", "sdc"]), range(2)
    )
    for b, cls in [BUFFERS[(mi + j) % len(BUFFERS)]]
] + [pytest.param("star:5", "all-port", 1, "none", SPARSE, id="star:5-all-port-B1n-sparse")]


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def _run(spec, kind, buffer, classes, wl, comm, seed=11, order="fifo", tie="random"):
    topo = from_spec(spec)
    model = parse_model(kind, buffer=buffer, buffer_classes=classes)
    w = Unicast(topo, seed=seed, **wl)
    router = make_router("shortest", topo, tie=tie)
    eng = Engine(topo, router, model, comm, seed=seed, order=order, record_hops=True)
    rec = eng.run(w)
    pk, _ = gather_packets(rec, w.pid_space, eng.comm)
    hops = gather_hops(rec, w.pid_space, eng.comm)
    if comm is not None:
        pk, hops = np.concatenate(comm.allgather(pk)), np.concatenate(comm.allgather(hops))
    return rec, pk, hops


def _assert_same(comm, par, ser):
    (rec, pk, hops), (srec, spk, shops) = par, ser
    assert np.array_equal(pk, spk)  # packet rows, sorted by id across ranks
    assert np.array_equal(hops, shops)  # every hop of every packet
    assert rec.steps == srec.steps
    assert np.array_equal(rec.counters[:, :3], srec.counters[:, :3])
    if comm.Get_size() > 1 and rec.counters.size:
        assert rec.counters[:, 3].sum() > 0  # some hops really crossed ranks


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("spec,kind,buffer,classes,wl", CASES)
def test_finite_buffers_identical_to_serial(comm, spec, kind, buffer, classes, wl):
    par = _run(spec, kind, buffer, classes, wl, comm)
    ser = _run(spec, kind, buffer, classes, wl, None)
    _assert_same(comm, par, ser)
    assert par[0].deadlock == ser[0].deadlock  # None, or the same report
    if classes == "hops":  # the structured buffer pool never deadlocks
        assert ser[0].deadlock is None and (ser[1][:, 4] >= 0).all()


#: jobs whose serial run deadlocks (asserted): 8 packets per node, one-slot buffers
DEADLOCKING = [("star:4", "all-port", "fifo", 0), ("ms:2,2", "one-port", "fifo", 3)]


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("spec,kind,order,seed", DEADLOCKING)
def test_deadlock_report_identical_to_serial(comm, spec, kind, order, seed):
    args = (spec, kind, 1, "none", dict(packets=8))
    par = _run(*args, comm, seed=seed, order=order, tie="first")
    ser = _run(*args, None, seed=seed, order=order, tie="first")
    assert ser[0].deadlock is not None  # why the job is in this list
    _assert_same(comm, par, ser)
    assert par[0].deadlock == ser[0].deadlock  # step, blocked packets, cycle, message
    undelivered = int((ser[1][:, 4] < 0).sum())
    assert par[0].deadlock["blocked_packets"] == undelivered > 0


#: bernoulli jobs that deadlock while still injecting (asserted): found by the periodic check
WHILE_INJECTING = [
    ("scc:4", "all-port", 2, 0.6, "fifo"),
    ("ms:2,2", "sdc", 1, 0.3, "oldest-first"),
    ("star:5", "one-port", 1, 0.6, "oldest-first"),
]


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("spec,kind,buffer,rate,order", WHILE_INJECTING)
def test_deadlock_while_injecting_identical_to_serial(comm, spec, kind, buffer, rate, order):
    wl = dict(injection="bernoulli", rate=rate, steps=150)
    args = (spec, kind, buffer, "none", wl)
    par = _run(*args, comm, seed=5, order=order, tie="first")
    ser = _run(*args, None, seed=5, order=order, tie="first")
    dl = ser[0].deadlock
    assert dl is not None and dl["found"] == "check" and dl["step"] < 149  # while injecting
    _assert_same(comm, par, ser)
    assert par[0].deadlock == dl  # step, closed step, counts, cycle, message
    assert dl["blocked_packets"] == int((ser[1][:, 4] < 0).sum()) > dl["dead_packets"] > 0
