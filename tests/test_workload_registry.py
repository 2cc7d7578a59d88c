"""The workload registry: every kind builds and runs; a new kind needs no change to jobs/."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import mpinet.jobs.execute as ex
from mpinet.engine.comm import sum_op
from mpinet.engine.models import parse_model
from mpinet.errors import WorkloadError
from mpinet.jobs import load_job, parse_set
from mpinet.routing import make_router
from mpinet.topology import from_spec
from mpinet.workloads import registry
from mpinet.workloads.base import COLLECTIVE, UNICAST, WorkloadKind
from mpinet.workloads.broadcast import FloodingBroadcast
from mpinet.workloads.registry import WORKLOADS, make_workload, register

#: a minimal job for every registered kind: topology and extra ``--set`` items
MINIMAL = {
    "uniform": ("star:4", []),
    "permutation": ("star:4", []),
    "hotspot": ("scc:4", []),
    "all-to-identity": ("scc:4", []),
    "locality": ("fccn:2", []),
    "nearest-neighbour": ("fccn:2", []),
    "antipodal": ("scc:4", []),
    "reversal": ("ms:2,2", []),
    "transpose": ("star:4", []),
    "te": ("star:4", ["model.kind=sdc"]),
    "emulate-star": ("ms:2,2", []),
    "star-neighbour": ("ms:2,2", ["router.name=ms-star-emulation"]),
    "broadcast": ("scc:4", ["model.kind=one-port"]),
    "mnb": ("star:4", []),
    # BookSim's patterns (mpinet.workloads.booksim_traffic): 16 nodes, an even power of two
    **{k: ("mesh:4,2", []) for k in ("booksim-uniform", "booksim-transpose", "bitcomp", "bitrev",
                                     "shuffle", "tornado", "neighbor", "randperm")},
    "booksim-hotspot": ("torus:4,2", ["workload.injection=on_off", "workload.rate=0.2",
                                      "workload.steps=5"]),
}  # fmt: skip


def job_of(kind: str, topology: str, sets: list[str] = ()):
    items = [f"topology={topology}", f"workload.kind={kind}", "trace.level=none", *sets]
    return load_job(None, [parse_set(s) for s in items])


def test_every_kind_has_a_minimal_job():
    assert set(MINIMAL) == set(WORKLOADS)


@pytest.mark.parametrize("kind", sorted(MINIMAL))
def test_every_kind_builds_and_runs(kind):
    topology, sets = MINIMAL[kind]
    job = job_of(kind, topology, sets)
    topo = from_spec(topology)
    wk = make_workload(kind, job.workload, topo=topo, seed=job.seed)
    assert isinstance(wk, WORKLOADS[kind]) and wk.kind == kind
    wk.build(parse_model(job.model["kind"]), make_router("shortest", topo))
    assert wk.router is not None
    if wk.engine == UNICAST:
        t = wk.traffic
        assert t.pid_space > 0 and t.last_injection_step >= 0
        ids, src, dst = t.injections(0, topo.num_nodes, t.last_injection_step)
        assert ids.size == src.size == dst.size and (ids < t.pid_space).all()
    else:
        assert wk.engine == COLLECTIVE and wk.program is not None
    res = ex.execute(ex.plan(job), None)
    assert res["stats"]["ok"]


def test_execute_does_not_name_a_kind():
    source = inspect.getsource(ex)
    for name in WORKLOADS:
        assert f'"{name}"' not in source, name


def test_unknown_kind_lists_the_kinds():
    job = job_of("nope", "star:4")
    with pytest.raises(WorkloadError, match="workload.kind must be one of") as err:
        ex.plan(job)
    for name in WORKLOADS:
        assert name in str(err.value)
    assert "got 'nope'" in str(err.value)


# -- a new workload kind, registered here: jobs/execute.py is not touched ------------------------


class NeighbourTraffic:
    """Every node sends one packet to its neighbour on port 0, at step 0."""

    last_injection_step = 0

    def __init__(self, topo) -> None:
        self.topo, self.pid_space = topo, topo.num_nodes

    def injections(self, lo: int, hi: int, step: int):
        src = np.arange(lo, hi, dtype=np.int64) if step == 0 else np.empty(0, np.int64)
        dst = self.topo.neighbors(src)[:, 0] if src.size else src
        return src, src, dst


class NeighbourKind(WorkloadKind):
    """A unicast kind with its own result section, check and trace attribute."""

    names = ("neighbour",)

    def __init__(self, kind, workload, topo, seed=0) -> None:
        super().__init__(kind, workload, topo, seed)
        self.traffic = NeighbourTraffic(topo)

    def summarize(self, steps, packets, comm):
        hops = comm.allreduce(int(packets[:, 5].sum()), op=sum_op())
        n = self.topo.num_nodes
        check = {"name": "one hop each", "expected": n, "measured": hops, "ok": hops == n}
        return {"neighbour": {"hops": hops, "steps": steps}}, [check | {"detail": ""}]


class FloodKind(WorkloadKind):
    """A collective kind: flooding from the last node."""

    names = ("flood-last",)
    engine = COLLECTIVE

    def build(self, model, router) -> None:
        super().build(model, router)
        self.program = FloodingBroadcast(self.topo, self.topo.num_nodes - 1)


@pytest.fixture
def custom():
    """The registry with the two kinds above, restored afterwards (the same mapping: every
    module that imported ``WORKLOADS`` sees the kinds; its lazy entries stay lazy)."""
    before = list(registry.WORKLOADS)
    added = [n for cls in (NeighbourKind, FloodKind) for n in cls.names]
    register(NeighbourKind)
    register(FloodKind)
    yield registry.WORKLOADS
    for name in added:
        del registry.WORKLOADS[name]
    assert list(registry.WORKLOADS) == before


def test_a_registered_kind_runs_through_plan_and_execute(custom, tmp_path):
    from mpinet.trace import open_trace

    out = tmp_path / "n.h5"
    job = job_of("neighbour", "star:4", ["trace.level=summary"])
    res = ex.execute(ex.plan(job, out=str(out)), None)
    assert res["stats"]["ok"] and res["stats"]["delivered"] == 24
    assert res["neighbour"] == {"hops": 24, "steps": 1}
    assert res["stats"]["checks"][-1]["name"] == "one hop each"
    with open_trace(out) as t:
        assert t.attrs["workload"] == "neighbour" and t.attrs["neighbour_hops"] == 24
        assert t.checks[-1]["name"] == "one hop each"


def test_a_registered_collective_kind_runs(custom, tmp_path):
    from mpinet.trace import open_trace

    out = tmp_path / "f.h5"
    job = job_of("flood-last", "scc:4", ["trace.level=summary"])
    res = ex.execute(ex.plan(job, out=str(out)), None)
    assert res["stats"]["ok"] and res["stats"]["collective"] == "flooding broadcast"
    with open_trace(out) as t:
        assert t.attrs["collective"] == "flooding broadcast"


def test_register_refuses_taken_names_and_bad_engines(custom):
    class Clash(WorkloadKind):
        names = ("uniform",)

    class Nowhere(WorkloadKind):
        names = ("nowhere",)
        engine = "quantum"

    with pytest.raises(WorkloadError, match="'uniform' is already registered"):
        register(Clash)
    with pytest.raises(WorkloadError, match="engine must be one of unicast, collective"):
        register(Nowhere)
    assert register(NeighbourKind) is NeighbourKind  # the same class again is fine


@pytest.mark.mpi
def test_a_registered_kind_is_identical_on_any_ranks(custom):
    from mpi4py import MPI

    p = ex.plan(job_of("neighbour", "star:5"))
    par, ser = ex.execute(p, MPI.COMM_WORLD), ex.execute(p, None)
    assert par["neighbour"] == ser["neighbour"] == {"hops": 120, "steps": 1}
    assert par["stats"]["checks"] == ser["stats"]["checks"]
