"""Every registered router routes inside the flit engine's compiled steps (issue 33, item 2).

For each router on a small network it applies to, the compiled steps (its own compiled hop,
its translated table, or its routes walked at injection into rows) give the run of the
router's own ``next_port`` step by step, row for row: counters, packet rows, link loads, hop
rows. Wormhole and cut-through, V = 1 and 2, one rank; under mpiexec, random routers and a
router that is not translation-invariant, walked on 2-3 ranks, against their own steps and
one rank. Routers with headers several words wide (the papers' ``borel-two-phase``,
``ims-*``) route by tables whose rows carry their headers (tested on one rank).
"""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.engine.flit import chunk
from mpinet.engine.flit.engine import FlitEngine
from mpinet.routing import ROUTERS, available_routers, make_router
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.route_tables import PATH_COMPILED, PATH_TABLE, PATH_WALKED
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from tests.test_flit_chunk import Packets, assert_identical, model, random_rows

#: small networks, one per family a registered router needs
NETS = ("star:4", "scc:4", "ms:2,2", "ims:1,2,2", "cms:2,2,2", "fccn:2", "borel:47,2,1,7",
        "hypercube:4", "ccc:3", "torus:4,3", "mesh:3,3")  # fmt: skip
#: (network, router, options): every registered router, and random ties where they exist
CASES = [(s, r, {}) for s in NETS for r in available_routers(from_spec(s))
         if r not in ("shortest", "anynet-min") or s in ("ms:2,2", "torus:4,3")]  # fmt: skip
CASES += [("star:4", "shortest", {"tie": "random"}), ("mesh:3,3", "dor", {"tie": "random"})]


def _id(case) -> str:
    s, r, o = case
    return f"{s}-{r}" + "".join(f"-{k}={v}" for k, v in o.items())


def test_every_registered_router_is_covered():
    assert {r for _, r, _ in CASES} == set(ROUTERS)


def run(topo, router, m, rows, compiled_steps, comm=None):
    pol = make_vc_policy("any", topo, m.vcs)
    eng = FlitEngine(topo, router, m, pol, comm, compiled_steps=compiled_steps,
                     record_hops=True, load_window=(3, 50))  # fmt: skip
    return eng, eng.run(Packets(rows))


@pytest.mark.parametrize("case", CASES, ids=_id)
@pytest.mark.parametrize("mode,vcs", [("wormhole", 1), ("wormhole", 2), ("cut-through", 2)])
def test_compiled_steps_equal_the_routers_own_steps(case, mode, vcs):
    spec, name, opts = case
    topo = from_spec(spec)
    rng = np.random.default_rng(len(spec) * 31 + len(name) + vcs)
    flits = int(rng.choice([2, 5]))
    m = model(topo, mode, flits, vcs, 2 if mode == "wormhole" else flits)
    # a first wave, then packets that reuse the rows the first wave freed (walked rows)
    rows = random_rows(rng, topo.num_nodes, 160, 30)
    rows += [(160 + i, s, d, t + 120) for i, (_, s, d, t) in enumerate(rows[:80])]
    ref_eng, ref = run(topo, make_router(name, topo, **opts), m, rows, False)
    eng, got = run(topo, make_router(name, topo, **opts), m, rows, True)
    assert eng.steps_path == chunk.COMPILED, eng.steps_path
    assert eng.routes in (PATH_COMPILED, PATH_TABLE, PATH_WALKED)
    assert (eng.routes == PATH_WALKED) == isinstance(eng.router, SourceRouted)
    if eng.routes != PATH_COMPILED:
        assert eng.router.header_width == 1  # the router's own header rides in the rows
    assert ref_eng.router.name == name and ref.packets.shape[0] > 0
    assert (ref.packets[:, 4] >= 0).all() or ref.deadlock is not None  # V = 1 may deadlock
    assert_identical(got, ref)


def test_random_routers_are_walked_and_headers_several_words_wide_are_carried():
    """Which way the routers the issue names route: random ties walked, headers wider than
    one word (borel-two-phase, the papers' emulation routers) held by the rows."""
    topo = from_spec("star:4")
    m = model(topo, "wormhole", 4, 2, 2)
    pol = make_vc_policy("any", topo, 2)
    eng = FlitEngine(topo, make_router("shortest", topo, tie="random"), m, pol)
    assert (chunk.path(eng), eng.routes) == (chunk.COMPILED, PATH_WALKED)
    assert "random" in eng.routes_why
    borel = from_spec("borel:47,2,1,7")
    wide = make_router("borel-two-phase", borel)
    assert wide.header_width > 1
    eng = FlitEngine(
        borel, wide, model(borel, "wormhole", 4, 2, 2), make_vc_policy("any", borel, 2)
    )
    assert chunk.path(eng) == chunk.COMPILED and eng.routes != PATH_COMPILED
    off = FlitEngine(topo, make_router("shortest", topo, tie="random"), m, pol,
                     compiled_steps=False)  # fmt: skip
    assert chunk.path(off).startswith("step by step: asked for")


def test_rows_are_reused_not_grown():
    """Rows of delivered packets are freed when the next steps' injections are walked: a long
    run keeps the table at the size of the packets in flight and of the steps drawn at once
    (64 with a progress line)."""
    from mpinet.jobs.plans_flit import WALK_AHEAD

    assert WALK_AHEAD == chunk.ONE_RANK_CHUNK  # the plan counts the steps drawn at once
    topo = from_spec("scc:4")
    m = model(topo, "wormhole", 3, 2, 2)
    rng = np.random.default_rng(5)
    n = topo.num_nodes
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), i // 4) for i in range(6000)]
    eng = FlitEngine(topo, make_router("scc-random", topo), m, make_vc_policy("any", topo, 2),
                     progress=lambda *a: None)  # fmt: skip
    rec = eng.run(Packets(rows))
    assert eng.routes == PATH_WALKED
    assert (rec.packets[:, 4] >= 0).all()
    # 6,000 routes walked; about 40 in flight and 4 x 64 drawn at once
    assert chunk.MAX_CHUNK == 64 and eng.router.table.shape[0] <= 1024


def test_the_plan_counts_the_walked_rows():
    """The memory plan's walked rows (jobs/plans_flit) hold the table a run grew to: every
    packet in flight at once (all injected at step 0, then more in blocks)."""
    from mpinet.jobs import plans_flit as pf
    from mpinet.jobs.estimate import mean_hops

    for spec, name in (("scc:5", "scc-random"), ("borel:47,2,1,7", "borel-cr")):
        topo = from_spec(spec)
        n = topo.num_nodes
        rows = [(i, i % n, (7 * i + 3) % n, 0) for i in range(4 * n)]
        rows += [(4 * n + i, i % n, (5 * i + 1) % n, 1 + i // 8) for i in range(2 * n)]
        router = make_router(name, topo)
        assert pf.walked(router) and not pf.walked(make_router("shortest", topo))
        eng, rec = run(topo, router, model(topo, "wormhole", 4, 2, 2), rows, True)
        assert eng.routes == PATH_WALKED and rec.packets.shape[0] == len(rows)
        sr = eng.router
        real = sum(a.nbytes for a in (sr.table, sr.links, sr.head, sr.last, sr.free))
        plan = pf.route_rows_bytes(len(rows), mean_hops(topo))
        assert real <= plan <= 8 * real, (spec, real, plan)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name,opts", [("shortest", {"tie": "random"}),
                                       ("borel-cr", {}), ("scc-random", {})])  # fmt: skip
def test_walked_rows_on_ranks_equal_one_rank(name, opts):
    """Walked rows are rank-local: a head that crosses to another rank has its route walked
    again there. The run on 2-3 ranks equals its step-by-step run and the one-rank run."""
    from mpi4py import MPI

    from tests.test_flit_ranks import assert_equal_runs, runs

    comm = MPI.COMM_WORLD
    spec = {"shortest": "star:4", "borel-cr": "borel:47,2,1,7", "scc-random": "scc:4"}[name]
    topo = from_spec(spec)
    router = make_router(name, topo, **opts)
    rows = comm.bcast(random_rows(np.random.default_rng(9), topo.num_nodes, 300, 40))
    for mode, vcs in (("wormhole", 1), ("wormhole", 2), ("cut-through", 2)):
        m = model(topo, mode, 4, vcs, 2 if mode == "wormhole" else 4)
        a, b, one = runs(comm, topo, router, m, rows, max_steps=4000, load_window=(3, 50))
        assert_equal_runs(comm, a, b)
        assert_equal_runs(comm, a, one, cross=False)


@pytest.mark.mpi(min_size=2)
def test_the_plan_counts_the_exchange_buffers(monkeypatch):
    """The plan's exchange arrays (jobs/plans_flit.exchange_bytes) against RankSteps' own."""
    from mpi4py import MPI

    from mpinet.engine.flit.rank_steps import RankSteps
    from mpinet.jobs import plans_flit as pf

    comm = MPI.COMM_WORLD
    seen = []
    close = RankSteps.close

    def record(self):
        arrays = [*self.ex] + ([*self.blocks.net] if self.blocks is not None else [])
        seen.append(sum(a.nbytes for a in arrays if isinstance(a, np.ndarray)))
        close(self)

    monkeypatch.setattr(RankSteps, "close", record)
    for spec, vcs, cap in (("star:4", 2, 1), ("scc:4", 1, 2), ("hypercube:5", 3, 1)):
        topo = from_spec(spec)
        m = model(topo, "wormhole", 4, vcs, 2, cap=cap)
        rows = comm.bcast(random_rows(np.random.default_rng(3), topo.num_nodes, 50, 10))
        run(topo, make_router("shortest", topo), m, rows, True, comm)
        real = comm.allreduce(seen[-1], op=MPI.MAX)
        plan = pf.exchange_bytes(topo, comm.Get_size(), vcs, 1, cap)
        assert real <= plan <= 1.1 * real + 256, (spec, real, plan)
