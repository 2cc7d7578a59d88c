"""Faults under mpiexec: the same packets, drops, broadcasts and metrics on any rank count.

Run under ``mpiexec -n R python -m pytest --with-mpi tests/test_faults_mpi.py`` (R = 1, 2, 3).
"""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.engine import fault_info as fi
from mpinet.engine.collective import run_collective
from mpinet.engine.comm import sum_op
from mpinet.engine.core import Engine
from mpinet.engine.faults import counts
from mpinet.engine.models import parse_model
from mpinet.engine.report import gather_packets
from mpinet.routing import make_router
from mpinet.topology import from_spec
from mpinet.topology.faults import make_faults
from mpinet.workloads import Unicast
from mpinet.workloads.broadcast import FloodingBroadcast

CASES = [
    ("scc:4", "shortest", {}, 0),
    ("scc:5", "scc-random", {}, 0),
    ("ms:3,2", "ms-merged", {"choice": "random"}, 0),
    ("borel:47,2,1,7", "borel-cr", {"lookahead": 2}, 0),
    ("fccn:2", "shortest", {"tie": "random"}, 3),
    ("star:5", "star-greedy", {}, 2),
]


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def _run(spec, name, opts, step, comm):
    topo = from_spec(spec)
    f = make_faults(topo, random_links=0.08, random_nodes=0.02, seed=9, step=step)
    router = make_router(name, topo, faults=f, **opts)
    w = Unicast(topo, seed=9, pattern="uniform", packets=2)
    eng = Engine(topo, router, parse_model("all-port"), comm, seed=9, faults=f)
    rec = eng.run(w)
    pk, _ = gather_packets(rec, w.pid_space, eng.comm)
    drops = {k: eng.comm.allreduce(v, op=sum_op()) for k, v in counts(rec.drops).items()}
    return pk, drops


@pytest.mark.mpi
@pytest.mark.parametrize("spec,name,opts,step", CASES)
def test_faulty_runs_identical_to_serial(comm, spec, name, opts, step):
    pk, drops = _run(spec, name, opts, step, comm)
    spk, sdrops = _run(spec, name, opts, step, None)
    assert np.array_equal(np.concatenate(comm.allgather(pk)), spk)
    assert drops == sdrops and sum(drops.values()) > 0


@pytest.mark.mpi
def test_broadcast_under_faults_identical(comm):
    topo = from_spec("scc:4")
    f = make_faults(topo, random_links=0.15, random_nodes=0.05, seed=1)
    model = parse_model("all-port")
    par = run_collective(topo, FloodingBroadcast(topo, 5), model, comm, faults=f).as_dict()
    ser = run_collective(topo, FloodingBroadcast(topo, 5), model, faults=f).as_dict()
    par.pop("seconds"), ser.pop("seconds")
    assert par == ser and par["faults"]["lost"] > 0


@pytest.mark.mpi
@pytest.mark.parametrize("spec", ["ms:2,2", "fccn:2"])
def test_fault_metrics_identical(comm, spec):
    topo = from_spec(spec)
    f = make_faults(topo, random_links=0.1, seed=4)
    par, ser = fi.surviving_info(topo, f, comm), fi.surviving_info(topo, f)
    par.pop("seconds"), ser.pop("seconds")
    assert par == ser
    a, b = fi.fault_diameter(topo, 1, "links", comm), fi.fault_diameter(topo, 1, "links")
    a.pop("seconds"), b.pop("seconds")
    assert a == b
