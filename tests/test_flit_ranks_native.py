"""The flit engine's blocks of steps with MPI called from the compiled code
(mpinet/engine/flit/rank_loop.py, mpi_native.py) against the step-by-step path.

Run under mpiexec with 2-4 ranks (``-m mpi --with-mpi``): the counters folded into the
messages and, with every rank forced out of the fold, reduced beside them; the calls that
return to Python to wait (a wait of no time) and resume; a routing error found where a head
arrived from another rank. The runs gathered must be the same row for row.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_flit_ranks import Packets, assert_equal_runs, runs

from mpinet.engine.comm import WatchedComm
from mpinet.engine.core import CollectiveError
from mpinet.engine.flit import mpi_native, rank_loop
from mpinet.engine.models import parse_model
from mpinet.netfile import load_topology
from mpinet.routing import make_router


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.fixture
def blocks_run(monkeypatch):
    """Counts the calls of :meth:`rank_loop.Blocks.run` (the blocks did run)."""
    calls = []
    real = rank_loop.Blocks.run

    def counted(self, *a, **kw):
        calls.append(1)
        return real(self, *a, **kw)

    monkeypatch.setattr(rank_loop.Blocks, "run", counted)
    return calls


def _mpich_abi() -> bool:
    from mpi4py import MPI

    return MPI._sizeof(MPI.Comm) == 4


@pytest.mark.mpi
def test_native_calls_found_under_the_wrappers(comm):
    if not _mpich_abi():
        pytest.skip("an MPI whose handles are pointers: the exchange stays in mpi4py")
    nat = mpi_native.native(WatchedComm(comm))
    assert nat is not None
    assert mpi_native.unwrap(WatchedComm(comm)) is comm
    assert len(nat.fns) == 8 and nat.status_words >= 5


@pytest.mark.mpi
@pytest.mark.parametrize("kind", ["all-port", "one-port", "k-port:2", "sdc"])
@pytest.mark.parametrize("how", ["fold", "reduce", "wait"])
def test_blocks_equal_the_steps(comm, monkeypatch, blocks_run, kind, how):
    if comm.Get_size() == 1 or not _mpich_abi():
        pytest.skip("the blocks run on several ranks of an MPICH-ABI library")
    if how == "reduce":  # no rank folds: the counters travel by MPI_Iallreduce
        monkeypatch.setattr(rank_loop, "FOLD_MAX", 0)
    if how == "wait":  # every wait returns to Python first, then resumes mid-step
        monkeypatch.setattr(rank_loop, "SPIN", 0.0)
    rng = np.random.default_rng(["fold", "reduce", "wait"].index(how))
    for spec, rname, mode in (("star:4", "shortest", "wormhole"),
                              ("ms:2,2", "anynet-min", "cut-through")):  # fmt: skip
        topo = load_topology(spec)
        router = make_router(rname, topo)
        m = replace(parse_model(kind, dict.fromkeys(topo.port_classes, 2)), flit=True,
                    switching=mode, flits=4, vcs=2, vc_buffer=4, vc_policy="any")  # fmt: skip
        n = topo.num_nodes
        rows = [(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(80)))
                for i in range(400)]  # fmt: skip
        blocks_run.clear()
        a, b, one = runs(comm, topo, router, m, comm.bcast(rows), max_steps=4000)
        assert blocks_run, "the compiled blocks did not run"
        assert_equal_runs(comm, a, b)
        assert_equal_runs(comm, a, one, cross=False)
        assert a["packets"][:, 4].min() >= 0  # all delivered


@pytest.mark.mpi
def test_routing_error_after_a_hop_from_another_rank(comm, blocks_run):
    """vc_policy 'hops' with one VC: the second hop of a packet asks for VC 1. The error is
    found where a head arrived (often from another rank) and is the step-by-step path's on
    the same ranks (one rank alone may meet another packet first)."""
    from mpi4py import MPI

    from mpinet.engine.flit.engine import FlitEngine
    from mpinet.routing.vc_policies import make_vc_policy

    topo = load_topology("star:4")
    router = make_router("shortest", topo)
    m = replace(parse_model("all-port", dict.fromkeys(topo.port_classes, 1)), flit=True,
                switching="wormhole", flits=4, vcs=1, vc_buffer=4, vc_policy="hops")  # fmt: skip
    rows = [(i, i % 24, (i * 7 + 5) % 24, i // 24) for i in range(96)]
    got = []
    for c, compiled in ((comm, True), (comm, False), (MPI.COMM_SELF, True)):
        eng = FlitEngine(topo, router, m, make_vc_policy("hops", topo, 1), c,
                         compiled_steps=compiled)  # fmt: skip
        with pytest.raises(CollectiveError) as exc:
            eng.run(Packets(rows))
        got.append(str(exc.value))
    assert got[0] == got[1]
    assert "needs VC 1" in got[0] and "needs VC 1" in got[2]
    assert blocks_run or comm.Get_size() == 1 or not _mpich_abi()


def test_scaling_model_counts_the_compiled_exchange():
    """The projection's messages per step are the compiled exchange's: every other rank up
    to rank_loop.FOLD_MAX ranks (counters inside), else the partners and the reduction."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import scaling_model

    assert scaling_model.FOLD_MAX == rank_loop.FOLD_MAX
    assert [scaling_model.messages(r, 1) for r in (2, 4, 8)] == [1, 3, 7]
    assert scaling_model.messages(16, 3) == 3 + 2 * 4
    assert scaling_model.messages(1024, 455) == 455 + 2 * 10
