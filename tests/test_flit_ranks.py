"""The flit engine's compiled steps on several ranks (mpinet/engine/flit/ranks.py) against its
step-by-step path on the same ranks and against the one-rank run.

Run under mpiexec with 1-4 ranks (``-m mpi --with-mpi``): every switching mode and port model,
routers with a compiled hop, light and deadlocking loads; the gathered runs must be the same
row for row (counters, packets, link loads, hop rows, injected ids, deadlock reports).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mpinet.engine.flit import chunk
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.models import parse_model
from mpinet.netfile import load_topology
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy

MODES = ("store-and-forward", "cut-through", "wormhole")
KINDS = ("all-port", "one-port", "k-port:2", "sdc")
CUBIC40 = f"file:{Path(__file__).resolve().parent.parent / 'jobs' / 'networks' / 'cubic40.edges'}"
#: routers with a compiled hop (translated tables, fccn, anynet-min; a file network's)
NETS = [("star:4", "shortest"), ("ms:2,2", "anynet-min"), ("fccn:2", "fccn-shortest"),
        ("hypercube:4", "anynet-min"), (CUBIC40, "anynet-min")]  # fmt: skip


class Packets:
    """Given packets ``(pid, src, dst, inject step)``."""

    def __init__(self, rows) -> None:
        self.rows = np.array(rows, dtype=np.int64).reshape(-1, 4)
        self.pid_space = int(self.rows[:, 0].max()) + 1
        self.last_injection_step = int(self.rows[:, 3].max())

    def injections(self, lo, hi, step):
        r = self.rows
        r = r[(r[:, 3] == step) & (r[:, 1] >= lo) & (r[:, 1] < hi)]
        return r[:, 0], r[:, 1], r[:, 2]


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def gathered(comm, rec) -> dict:
    """The run as the ranks together saw it (rows by id, hops by packet and step)."""
    pk = np.concatenate(comm.allgather(rec.packets))
    hops = np.concatenate(comm.allgather(rec.hop_rows))
    return {
        "steps": rec.steps,
        "counters": rec.counters,
        "packets": pk[np.lexsort((pk[:, 4], pk[:, 0]))],
        "load": np.concatenate(comm.allgather(rec.link_load)),
        "hops": hops[np.lexsort((hops[:, 0], hops[:, 1]))],
        "injected": np.sort(np.concatenate(comm.allgather(rec.injected_ids))),
        "deadlock": rec.deadlock,
        "stuck": rec.stuck,
    }


def assert_equal_runs(comm, a: dict, b: dict, cross: bool = True) -> None:
    """Every part of the runs equal (``cross``: the flits that crossed ranks too, which
    differ between rank counts)."""
    err = None
    try:
        for key in a:
            if key == "counters" and not cross:
                assert np.array_equal(a[key][:, :3], b[key][:, :3]), key
            elif isinstance(a[key], np.ndarray):
                assert np.array_equal(a[key], b[key]), key
            else:
                assert a[key] == b[key], key
    except AssertionError as exc:
        err = f"rank {comm.Get_rank()}: {exc!r}"[:1500]
    errors = [e for e in comm.allgather(err) if e]
    assert not errors, "\n".join(errors)


def runs(comm, topo, router, m, rows, **kw):
    """The run compiled, step by step, and compiled on one rank (every rank alone)."""
    from mpi4py import MPI

    out = []
    for c, compiled_steps in ((comm, True), (comm, False), (MPI.COMM_SELF, True)):
        pol = make_vc_policy(m.vc_policy, topo, m.vcs)
        eng = FlitEngine(topo, router, m, pol, c, compiled_steps=compiled_steps,
                         record_hops=True, **kw)  # fmt: skip
        rec = eng.run(Packets(rows))
        assert (eng.steps_path == chunk.COMPILED) == compiled_steps
        out.append(gathered(c, rec))
    return out


@pytest.mark.mpi
@pytest.mark.parametrize("kind", KINDS)
def test_compiled_ranks_equal_the_steps(comm, kind):
    rng = np.random.default_rng(KINDS.index(kind))
    for spec, rname in NETS:
        topo = load_topology(spec)
        router = make_router(rname, topo)
        for mode in MODES:
            flits = int(rng.choice([1, 3, 6]))
            buf = flits if mode != "wormhole" else int(rng.choice([1, 2, 4]))
            caps = dict.fromkeys(topo.port_classes, int(rng.choice([1, 2])))
            m = replace(parse_model(kind, caps), flit=True, switching=mode, flits=flits,
                        vcs=int(rng.choice([1, 2])), vc_buffer=buf, vc_policy="any")  # fmt: skip
            n = topo.num_nodes
            rows = [(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(60)))
                    for i in range(int(rng.integers(100, 500)))]  # fmt: skip
            rows = comm.bcast(rows)
            a, b, one = runs(comm, topo, router, m, rows, max_steps=4000, load_window=(3, 50))
            assert_equal_runs(comm, a, b)
            assert_equal_runs(comm, a, one, cross=False)


@pytest.mark.mpi
@pytest.mark.parametrize("seed", range(3))
def test_deadlocks_found_alike_on_any_ranks(comm, seed):
    """One VC under heavy wormhole traffic: the live search (injecting) and the stall find
    the same deadlock, step and cycle, compiled or not, on any rank count."""
    topo = load_topology("star:4")
    router = make_router("shortest", topo)
    rng = np.random.default_rng(seed)
    m = replace(parse_model("all-port", dict.fromkeys(topo.port_classes, 1)), flit=True,
                switching="wormhole", flits=8, vcs=1, vc_buffer=int(rng.choice([1, 2])),
                vc_policy="any")  # fmt: skip
    rows = [(i, int(rng.integers(24)), int(rng.integers(24)), int(rng.integers(200)))
            for i in range(600)]  # fmt: skip
    a, b, one = runs(comm, topo, router, m, comm.bcast(rows), max_steps=5000)
    assert_equal_runs(comm, a, b)
    assert_equal_runs(comm, a, one, cross=False)
    assert a["deadlock"] is not None
