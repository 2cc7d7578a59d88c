"""sdc's demand kept between steps on several ranks (mpinet/engine/flit/port_demand.py,
ranks.py, rank_loop.py; issue 33): each rank keeps its own links' movable requests between
steps, lists those that its moves, the flits and credits from other ranks and its routing
changed, and recounts only those. Run under mpiexec with 2-4 ranks (``-m mpi --with-mpi``):
at every step of random sdc runs every rank's kept counts equal a fresh count, and the runs
equal the step-by-step path on the same ranks and the one-rank run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_flit_ranks import Packets, assert_equal_runs, gathered

from mpinet.engine.flit import chunk
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.models import parse_model
from mpinet.netfile import load_topology
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy

NETS = (("star:4", "shortest"), ("ms:2,2", "anynet-min"), ("hypercube:4", "anynet-min"))
MODES = ("store-and-forward", "cut-through", "wormhole")


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def checked_run(monkeypatch, c, topo, router, m, rows, compiled):
    """The gathered run and this rank's demand state (None on the step-by-step path)."""
    made = []

    class Checked(chunk.Steps):
        def __init__(self, eng):
            super().__init__(eng)
            made.append(self)

    monkeypatch.setattr(chunk, "Steps", Checked)
    eng = FlitEngine(topo, router, m, make_vc_policy(m.vc_policy, topo, m.vcs), c,
                     compiled_steps=compiled, max_steps=4000, record_hops=True)  # fmt: skip
    eng.check_demand = True
    rec = eng.run(Packets(rows))
    monkeypatch.undo()
    return gathered(c, rec), (made[0].inc if made and compiled else None)


@pytest.mark.mpi
@pytest.mark.parametrize("seed", range(3))
def test_kept_demand_on_ranks_equals_a_fresh_count_every_step(comm, monkeypatch, seed):
    from mpi4py import MPI

    rng = np.random.default_rng(seed)
    spec, rname = NETS[seed]
    topo = load_topology(spec)
    router = make_router(rname, topo)
    mode = MODES[int(rng.integers(3))]
    flits = int(rng.integers(1, 6))
    buf = flits if mode != "wormhole" else int(rng.integers(1, 4))
    caps = dict.fromkeys(topo.port_classes, 1)
    m = replace(parse_model("sdc", caps), flit=True, switching=mode, flits=flits,
                vcs=int(rng.integers(1, 4)), vc_buffer=buf, vc_policy="any")  # fmt: skip
    n = topo.num_nodes
    rows = comm.bcast([(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(80)))
                       for i in range(int(rng.integers(200, 500)))])  # fmt: skip
    a, inc = checked_run(monkeypatch, comm, topo, router, m, rows, True)
    b, _ = checked_run(monkeypatch, comm, topo, router, m, rows, False)
    one, _ = checked_run(monkeypatch, MPI.COMM_SELF, topo, router, m, rows, True)
    assert_equal_runs(comm, a, b)
    assert_equal_runs(comm, a, one, cross=False)
    checked, bad = comm.allgather(int(inc.chk[1])), comm.allgather(int(inc.chk[2]))
    assert min(checked) >= a["steps"] - 5, checked  # every rank, every step
    assert sum(bad) == 0, f"steps that differed per rank: {bad} of {checked}"
    assert a["counters"][:, 0].sum() > 0
