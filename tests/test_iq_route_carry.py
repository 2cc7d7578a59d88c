"""Walked routes carried across ranks under the iq router (issue 35; mpinet/engine/flit/iq_ranks.py
and route_carry.py): a head that crosses to another rank carries the rest of its route in
the cycle's message, and the receiver writes it into free rows of its own table inside the
compiled block, so the block no longer returns to Python to walk the route again.

Under mpiexec (2, 3 and 4 ranks): every walked-route router family runs the one-rank run
row for row (counters, packets, link loads, hop rows, injected ids, stuck packets,
deadlock reports), in about as many compiled calls per run as one rank makes.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_ranks import Packets, gathered
from test_flit_route_carry import FAMILIES as ROUTE_CARRY_FAMILIES  # one list of walked families
from test_flit_route_carry import _id
from test_iq_ranks import same
from test_iq_router import iq_model

from mpinet.engine.flit import iq_ranks
from mpinet.engine.flit import route_carry as rc
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.flit.iq_blocks import BLOCK
from mpinet.engine.flit.rank_steps import BLOCKS
from mpinet.routing import make_router
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.route_tables import PATH_WALKED
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from tests.test_flit_chunk import random_rows

#: (network, router, options, walked by wrapping): every family the iq router walks (dor's
#: torus ties are drawn at injection instead); the two-phase and emulation routers take
#: translated tables on networks this small, so they are wrapped in walked rows here as
#: larger networks (ms:3,3, scc:8) walk them
FAMILIES = [f for f in ROUTE_CARRY_FAMILIES if f[1] != "dor"]


def run(comm, topo, case, m, rows, **kw):
    """The engine and its gathered run of ``rows`` on ``comm``."""
    _, name, opts, wrap = case
    router = make_router(name, topo, **opts)
    if wrap:
        router = SourceRouted(router, release="engine")
    eng = FlitEngine(topo, router, m, make_vc_policy(m.vc_policy, topo, m.vcs), comm,
                     record_hops=True, seed=7, **kw)  # fmt: skip
    return eng, gathered(comm, eng.run(Packets(rows)))


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("case", FAMILIES, ids=_id)
def test_walked_routes_ride_in_the_iq_blocks(case):
    """Congested traffic in two waves (the second on rows the first freed), BookSim's
    pipeline with lookahead on some: the one-rank run, in about one rank's calls."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    spec = case[0]
    topo = from_spec(spec)
    rows = comm.bcast(random_rows(np.random.default_rng(len(spec) + len(case[1])),
                                  topo.num_nodes, 300, 40))  # fmt: skip
    rows += [(300 + i, s, d, t + 90) for i, (_, s, d, t) in enumerate(rows[:120])]
    keys = {"routing_delay": 0} if len(case[1]) % 2 else {"speculative": 1}
    m = iq_model(topo, flits=4, vcs=2, vc_buffer=2, **keys)
    alone_eng, alone = run(MPI.COMM_SELF, topo, case, m, rows, max_steps=20000)
    eng, got = run(comm, topo, case, m, rows, max_steps=20000)
    assert isinstance(eng.router, SourceRouted) and (case[3] or eng.routes == PATH_WALKED)
    assert eng.calls_path == BLOCKS and comm.allreduce(eng.router.longest, op=MPI.MAX) > 0
    same(comm, alone, got)  # flits crossed ranks: heads carried their routes
    assert alone["packets"].shape[0] == 420  # delivered, or stuck in a deadlock reported
    assert (alone["packets"][:, 4] >= 0).all() or alone["deadlock"] or alone["stuck"]
    # calls: a block of cycles each, a few more where a rank returned for room (before, a
    # call returned at every cycle a head crossed: hundreds here)
    calls = comm.allreduce(eng.block_calls, op=MPI.MAX)
    assert got["steps"] // BLOCK <= calls <= 2 * alone_eng.block_calls + 2, (
        calls, alone_eng.block_calls)  # fmt: skip


@pytest.mark.mpi(min_size=2)
def test_rows_freed_and_grown_in_mid_block(monkeypatch):
    """A block that returns for rows in mid-block (a table nearly full when a block starts)
    keeps the rows of the packets on the rank and of the injections walked and not yet run:
    still the one-rank run."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    case = FAMILIES[1]
    topo = from_spec(case[0])
    rows = comm.bcast(random_rows(np.random.default_rng(1), topo.num_nodes, 2000, 300))
    m = iq_model(topo, flits=4, vcs=2, vc_buffer=2)
    _, alone = run(MPI.COMM_SELF, topo, case, m, rows, live_check=False)
    seen = []
    bundle = rc.CarriedRows.bundle

    def watched(self, later):
        seen[-1].append(self.rows.nfree < 2 * self.need)
        return bundle(self, later)

    monkeypatch.setattr(rc.CarriedRows, "bundle", watched)
    start = rc.CarriedRows.start

    def tight(self):  # a table nearly full: free rows for two cycles' arrivals and a few
        start(self)
        seen.append([])
        self.rows.nfree = min(self.rows.nfree, 2 * self.need + 4)  # the rest found by keep()

    monkeypatch.setattr(rc.CarriedRows, "start", tight)
    _, got = run(comm, topo, case, m, rows, live_check=False)
    same(comm, alone, got)
    mid = any(any(calls[1:]) for calls in seen)
    assert any(comm.allgather(mid)), seen  # rows freed in mid-block on some rank


@pytest.mark.mpi(min_size=2)
def test_a_walked_deadlock_is_the_one_rank_report():
    """One VC of one slot and 8-flit worms on scc:4 with random routes deadlock: the look
    while injecting (or the stall after) reports the same cycle on every rank count."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    case = FAMILIES[1]
    topo = from_spec(case[0])
    rows = comm.bcast(random_rows(np.random.default_rng(5), topo.num_nodes, 1500, 600))
    m = iq_model(topo, flits=8, vcs=1, vc_buffer=1)
    _, alone = run(MPI.COMM_SELF, topo, case, m, rows, max_steps=5000)
    _, got = run(comm, topo, case, m, rows, max_steps=5000)
    assert alone["deadlock"] is not None or alone["stuck"], "the run must deadlock"
    same(comm, alone, got)


def test_the_rows_layout_is_the_iq_models():
    """The columns route_carry reads in an iq message row (head flag, route word) are those
    the iq router writes when a head leaves the rank (iq_write._away)."""
    from mpinet.engine.flit import iq_state as iqs
    from mpinet.engine.flit import iq_write
    from mpinet.engine.iq_config import IQConfig

    prm = iqs.make_params(8, 2, 2, 2, 4, IQConfig(), False, 0, 4)
    z = np.zeros(8, np.int64)  # the rank's 4 nodes' links
    s = iqs.make_arrays(prm, z, z, z, 1, 8, iq_ranks.ROW + 1)
    pk = 5
    s.pk_hdr[pk, 0], s.pk_pid[pk] = 4242, 17
    iq_write._away(3, pk * prm.fl, 1, prm.fl, s)  # the head
    iq_write._away(3, pk * prm.fl + 1, 1, prm.fl, s)  # a body flit
    head, body = s.wo[0], s.wo[1]
    assert head[iq_ranks.ROW_HEAD] == 1 and head[iq_ranks.ROW] == 4242 and head[4] == 17
    assert body[iq_ranks.ROW_HEAD] == 0 and s.wn[0] == 2
