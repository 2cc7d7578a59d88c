"""The deadlock look searched inside the compiled blocks on several ranks
(mpinet/engine/flit/rank_looks.py): every rank's listing gathered by MPI from the compiled
code and the one-rank pass run on the union there, Python's search only for a dead set.

Run under mpiexec with 2-4 ranks (``-m mpi --with-mpi``). Each run is held to the one-rank
run (``COMM_SELF``) of the same traffic: the searches, their steps (the counters) and the
pacing budget, the packets, the deadlock report. Which path searched is counted on
:meth:`LiveCheck.search` (Python's search).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_deadlock_live import DEADLOCKING, assert_same_searches, engine, traffic
from test_flit_engine import by_pid, check_on_every_rank

from mpinet.deadlock.vc_need import vcs_needed
from mpinet.engine.flit import mpi_native, rank_loop
from mpinet.engine.flit.deadlock_live import LiveCheck
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec


@pytest.fixture
def comm():
    from mpi4py import MPI

    if MPI.COMM_WORLD.Get_size() == 1 or mpi_native.native(MPI.COMM_WORLD) is None:
        pytest.skip("the blocks run on several ranks of an MPICH-ABI library")
    return MPI.COMM_WORLD


@pytest.fixture
def python_searches(monkeypatch):
    """The calls of Python's search (:meth:`LiveCheck.search`), by the communicator's size."""
    calls = []
    real = LiveCheck.search

    def counted(self, *a, **kw):
        calls.append(self.eng.size)
        return real(self, *a, **kw)

    monkeypatch.setattr(LiveCheck, "search", counted)
    return calls


def saturated(comm):
    """star:4 past saturation under negative-hop: looks list fronts, no deadlock."""
    topo = from_spec("star:4")
    vcs = vcs_needed(make_vc_policy("negative-hop", topo, 16), make_router("shortest", topo))
    eng, _ = engine("star:4", "shortest", "wormhole", 8, vcs, 2, "negative-hop", comm=comm)
    return eng, eng.run(traffic(topo, 0.5, steps=600))


@pytest.mark.mpi
def test_searched_inside_the_blocks(comm, python_searches):
    """Looks that list fronts and find none dead never return to Python: the same searches,
    steps and budget as one rank's run, whose compiled steps search inside their call too
    (mpinet/engine/flit/look_search.py)."""
    from mpi4py import MPI

    run1 = saturated(MPI.COMM_SELF)
    assert python_searches == []
    run = saturated(comm)
    assert_same_searches(comm, run, run1)
    assert [s for s in python_searches if s > 1] == []


@pytest.mark.mpi
def test_gathered_in_python_when_the_union_does_not_fit(comm, monkeypatch, python_searches):
    """A union larger than the block's gather buffer: every such look's search is Python's
    gathered one, with the same answers."""
    from mpi4py import MPI

    monkeypatch.setattr(rank_loop, "GATHER", 1)  # room for one word, never grown
    monkeypatch.setattr(rank_loop.Blocks, "_grow", lambda self: None)
    run1 = saturated(MPI.COMM_SELF)
    run = saturated(comm)
    assert_same_searches(comm, run, run1)
    assert len([s for s in python_searches if s > 1]) == run[0].live.searches


@pytest.mark.mpi
@pytest.mark.parametrize(
    "case", [DEADLOCKING[i] for i in (0, 4)], ids=lambda c: f"{c[0]}-{c[2]}-{c[4]}"
)
def test_deadlock_across_ranks_found_in_the_block(comm, monkeypatch, python_searches, case):
    """A deadlock whose dead worm pieces lie on several ranks: found by the search inside the
    block at the one-rank run's step, reported by Python's search (its one call), the
    one-rank run's report and packets."""
    monkeypatch.setattr(rank_loop, "GATHER", 1 << 16)  # every listing gathered in the block
    spec, rname, sw, flits, vcs, buf, rate = case
    eng1, topo = engine(spec, rname, sw, flits, vcs, buf)
    rec1 = eng1.run(traffic(topo, rate))
    python_searches.clear()
    eng, _ = engine(spec, rname, sw, flits, vcs, buf, comm=comm)
    rec = eng.run(traffic(topo, rate))
    holders = comm.allgather(eng.live.dead_pids.size)
    pids = np.unique(np.concatenate(comm.allgather(eng.live.dead_pids)))
    packets = np.concatenate(comm.allgather(rec.packets))

    def check():
        d, d1 = rec.deadlock, rec1.deadlock
        assert d is not None and d["found"] == "check"
        assert d["step"] == d1["step"] and d["message"] == d1["message"]
        assert sum(h > 0 for h in holders) >= 2  # the cycle crosses ranks
        assert np.array_equal(pids, eng1.live.dead_pids)
        assert python_searches == [comm.Get_size()]  # the dead look only
        assert eng.live.searches == eng1.live.searches
        assert np.array_equal(rec.counters[:, :3], rec1.counters[:, :3])
        assert np.array_equal(by_pid(packets), by_pid(rec1.packets))

    check_on_every_rank(comm, check)
