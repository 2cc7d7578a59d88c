"""Walked routes carried across ranks in the flit engine's compiled blocks (issue 33, items
2 and 4; mpinet/engine/flit/route_carry.py).

Serially: a head's remaining route packed into a message by the sender's rows and written
into the receiver's (rows of another width, chained, the drop marker kept) reads the ports
the router's own walk gives from that hop on; the rows a block frees and grows. Under
mpiexec (2 and 3 ranks): every walked-route router family (random ties, ``scc-random``,
``cms-clusters``, ``fccn-sroute``, ``borel-cr``; two-phase and emulation routers walked)
runs in blocks of steps, never one step per call, and its run equals the step-by-step run
on the same ranks and the one-rank run, row for row.
"""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.engine.flit import iq_ranks
from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import route_carry as rc
from mpinet.engine.flit.ranks import H_CRED, H_HEADS, H_ROWS, HEADER, Exchange
from mpinet.routing import make_router
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.source_routes import PORT_DROP, PORT_END, source_hop_one, walk_routes
from mpinet.topology import from_spec
from tests.test_flit_chunk import model, random_rows


def read_route(rows: SourceRouted, word: int) -> list[int]:
    """The ports a packet carrying ``word`` reads, hop after hop, to its route's end (the
    drop marker where the router dropped it)."""
    ta, tb, width = rows.table.reshape(-1), rows.links, np.int64(rows.width)
    out = []
    while True:
        port, word = source_hop_one(np.int64(word), width, ta, tb)
        if port == PORT_END:
            return out
        out.append(int(port) if port >= 0 else PORT_DROP)
        if port < 0:
            return out


def message(words: np.ndarray, credits: int, width: int, cols: tuple) -> np.ndarray:
    """A message's rows (head flag and word in columns ``cols``): a body row before each
    head (no route), ``credits`` credit pairs."""
    n = 2 * words.size
    m = np.zeros(HEADER + n * width + 2 * credits + words.size * 40, np.int64)
    m[H_ROWS], m[H_CRED], m[H_HEADS] = n, credits, words.size
    for i, w in enumerate(words):
        r = HEADER + (2 * i + 1) * width
        m[r + cols[0]], m[r + cols[1]] = 1, w
        m[HEADER + 2 * i * width + cols[1]] = -7  # a body row: nothing carried
    m[HEADER + n * width : HEADER + n * width + 2 * credits] = 99
    return m


#: a message row's head flag and route word: the ideal model's wire rows, the iq router's
LAYOUTS = {"ideal": (fk.W_HEAD, fk.W_WIDTH), "iq": (iq_ranks.ROW_HEAD, iq_ranks.ROW)}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("spec,name,w_send,w_recv", [
    ("scc:4", "scc-random", 4, 5), ("borel:47,2,1,7", "borel-cr", 32, 3),
    ("fccn:2", "fccn-sroute", 2, 7)])  # fmt: skip
def test_carried_routes_read_the_routers_own_ports(spec, name, w_send, w_recv, layout):
    topo = from_spec(spec)
    router = make_router(name, topo)
    rng = np.random.default_rng(len(spec))
    n, m, seed = topo.num_nodes, 60, 11
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    dst[dst == src] = (dst[dst == src] + 1) % n
    pid = rng.integers(0, 1 << 30, m)
    truth, nhops = walk_routes(router, src, dst, pid, seed, 0, 4 * n, True)
    hops = rng.integers(0, nhops)  # each head some hops into its route (at least one left)
    sender = SourceRouted(make_router(name, topo), width=w_send, release="engine")
    words = sender.rewalk(src, dst, pid, seed, 0, hops)
    cols = LAYOUTS[layout]
    wire = cols[1] + 1
    send = message(words, 3, wire, cols)[None, :]
    ex = Exchange(np.zeros(1, np.int64), np.zeros(2, np.int64), send,
                  np.array([HEADER + 2 * m * wire + 6], np.int64), send.copy(),
                  np.zeros(1, np.int64), np.int64(wire))  # fmt: skip
    rc.add_routes(ex, rc.of(sender, 0, cols))
    cells = nhops - hops
    assert ex.nsend[0] == HEADER + 2 * m * wire + 6 + sum(rc.words_per_head(c) for c in cells)
    assert (send[0, HEADER + 2 * m * wire : HEADER + 2 * m * wire + 6] == 99).all()
    receiver = SourceRouted(make_router(name, topo), width=w_recv, release="engine")
    receiver.grow(rc.rows_needed(m, sender.longest, w_recv))
    recv = send.copy()
    ex = ex._replace(recv=recv)
    cy = rc.of(receiver, 0, cols)
    free_before = receiver.nfree
    rc.take_routes(ex, cy)
    rc.give_back(receiver, cy)
    per = w_recv - 1
    assert free_before - receiver.nfree == sum(max(1, -(-int(c) // per)) for c in cells)
    body = HEADER + 2 * np.arange(m) * wire
    assert (recv[0, body + cols[1]] == -7).all()  # the body rows: untouched
    got_words = recv[0, body + wire + cols[1]]  # each head's word: the receiver's rows
    changed = np.flatnonzero(recv[0] != send[0])  # nothing else in the message
    assert np.isin(changed, body + wire + cols[1]).all()
    for i in range(m):
        got = read_route(receiver, int(got_words[i]))
        want = [int(p) for p in truth[i, hops[i] : nhops[i]]]
        assert got == want, (i, got, want)
    # the rows a block keeps: those of the words named, the others freed; then grown
    keep = got_words[:10]
    assert not rc.reserve(receiver, keep, 1)
    assert receiver.nfree == receiver.table.shape[0] - sum(
        max(1, -(-int(c) // per)) for c in cells[:10])  # fmt: skip
    big = receiver.table.shape[0]
    assert rc.reserve(receiver, keep, big) and receiver.nfree >= 2 * big
    for i in range(10):  # the rows kept still read their routes
        got = read_route(receiver, int(keep[i]))
        assert got == [int(p) for p in truth[i, hops[i] : nhops[i]]]


def test_message_room_for_the_longest_route():
    assert rc.words_per_head(0) == 1 and rc.words_per_head(8) == 2 and rc.words_per_head(9) == 3
    assert rc.rows_needed(10, 31, 32) == 10 and rc.rows_needed(10, 32, 32) == 20
    assert rc.rows_needed(0, 0, 4) == 1
    cy = rc.empty()
    assert cy.width == 0 and cy.ta.dtype == np.uint8 and cy.tb.dtype == np.int32


# -- under mpiexec ---------------------------------------------------------------------------
#: (network, router, options, walked by wrapping): every walked-route family; the two-phase
#: and emulation routers take translated tables on networks this small, so they are wrapped
#: in walked rows here as larger networks (ms:3,3, scc:8) walk them
FAMILIES = [
    ("star:4", "shortest", {"tie": "random"}, False),
    ("torus:4,3", "dor", {}, False),
    ("scc:4", "scc-random", {}, False),
    ("cms:2,2,2", "cms-clusters", {}, False),
    ("fccn:2", "fccn-sroute", {}, False),
    ("borel:47,2,1,7", "borel-cr", {}, False),
    ("ms:2,2", "ms-two-phase", {}, True),
    ("ms:2,2", "ms-star-emulation", {}, True),
    ("borel:47,2,1,7", "borel-two-phase", {}, True),
]


def _id(case) -> str:
    return f"{case[0]}-{case[1]}"


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("case", FAMILIES, ids=_id)
def test_walked_routes_run_in_blocks_on_ranks(case, monkeypatch):
    from mpi4py import MPI

    from mpinet.engine.flit.engine import FlitEngine
    from mpinet.engine.flit.rank_steps import BLOCKS, RankSteps
    from mpinet.routing.route_tables import PATH_WALKED
    from mpinet.routing.vc_policies import make_vc_policy
    from tests.test_flit_ranks import Packets, assert_equal_runs, gathered

    comm = MPI.COMM_WORLD
    spec, name, opts, wrap = case
    topo = from_spec(spec)
    rows = comm.bcast(random_rows(np.random.default_rng(len(spec) + len(name)),
                                  topo.num_nodes, 300, 40))  # fmt: skip
    # a second wave on rows the first freed
    rows += [(300 + i, s, d, t + 90) for i, (_, s, d, t) in enumerate(rows[:120])]
    m = model(topo, "wormhole", 4, 2, 2)

    def one(c, compiled):
        router = make_router(name, topo, **opts)
        if wrap and compiled:
            router = SourceRouted(router, release="engine")
        eng = FlitEngine(topo, router, m, make_vc_policy("any", topo, 2), c,
                         compiled_steps=compiled, record_hops=True, max_steps=4000,
                         load_window=(3, 50))  # fmt: skip
        return eng, gathered(c, eng.run(Packets(rows)))

    ref_eng, ref = one(comm, False)
    alone_eng, alone = one(MPI.COMM_SELF, True)

    def no_step(*a, **kw):
        raise AssertionError("one step per call ran")

    monkeypatch.setattr(RankSteps, "step", no_step)
    eng, got = one(comm, True)
    assert isinstance(eng.router, SourceRouted) and eng.calls_path == BLOCKS
    assert wrap or eng.routes == PATH_WALKED
    assert eng.router.longest > 0
    assert_equal_runs(comm, got, ref)
    assert_equal_runs(comm, got, alone, cross=False)
    assert got["counters"][:, 3].sum() > 0  # flits crossed ranks: heads carried routes
    assert (got["packets"][:, 4] >= 0).all() or got["deadlock"] is not None


@pytest.mark.mpi(min_size=2)
def test_rows_freed_and_grown_in_mid_block(monkeypatch):
    """A block that returns for rows in mid-block (the free rows a step's arrivals may take
    set to half those free when a block starts, at least what they may take) keeps the rows
    of the injections walked and not yet run: the run is still the one-rank run."""
    from mpi4py import MPI

    from mpinet.engine.flit.engine import FlitEngine
    from mpinet.routing.vc_policies import make_vc_policy
    from tests.test_flit_ranks import Packets, assert_equal_runs, gathered

    comm = MPI.COMM_WORLD
    topo = from_spec("scc:4")
    rows = comm.bcast(random_rows(np.random.default_rng(1), topo.num_nodes, 3000, 400))
    m = model(topo, "wormhole", 4, 2, 2)
    alone = FlitEngine(topo, make_router("scc-random", topo), m, make_vc_policy("any", topo, 2),
                       MPI.COMM_SELF, record_hops=True, live_check=False)  # fmt: skip
    alone = gathered(MPI.COMM_SELF, alone.run(Packets(rows)))
    seen = []
    bundle = rc.CarriedRows.bundle

    def watched(self, later):  # a call's rows; k: the block's calls before it
        seen[-1].append(self.rows.nfree < 2 * self.need)
        return bundle(self, later)

    monkeypatch.setattr(rc.CarriedRows, "bundle", watched)
    start = rc.CarriedRows.start

    def tight(self):
        start(self)
        seen.append([])
        self.need = max(self.need, self.rows.nfree // 2 - 1)

    monkeypatch.setattr(rc.CarriedRows, "start", tight)
    eng = FlitEngine(topo, make_router("scc-random", topo), m, make_vc_policy("any", topo, 2),
                     comm, record_hops=True, live_check=False)  # fmt: skip
    got = gathered(comm, eng.run(Packets(rows)))
    assert_equal_runs(comm, got, alone, cross=False)
    mid = any(any(calls[1:]) for calls in seen)
    assert any(comm.allgather(mid)), seen  # rows freed in mid-block on some rank


@pytest.mark.mpi(min_size=2)
def test_the_plan_counts_the_carried_routes(monkeypatch):
    """The plan's exchange arrays with walked routes (jobs/plans_flit: routes up to twice the
    mean hops carried per wire row) against RankSteps' own after the run (grown to the
    longest route walked), and its walked rows (free rows kept for two steps' arrivals
    included) against the table's."""
    import math

    from mpi4py import MPI

    from mpinet.engine.flit.engine import FlitEngine
    from mpinet.engine.flit.rank_steps import RankSteps
    from mpinet.jobs import plans_flit as pf
    from mpinet.jobs.estimate import mean_hops
    from mpinet.routing.vc_policies import make_vc_policy
    from tests.test_flit_ranks import Packets

    comm = MPI.COMM_WORLD
    seen = []
    close = RankSteps.close

    def record(self):
        arrays = [*self.ex, *self.blocks.net]
        seen.append(sum(a.nbytes for a in arrays if isinstance(a, np.ndarray)))
        close(self)

    monkeypatch.setattr(RankSteps, "close", record)
    for spec, name in (("scc:4", "scc-random"), ("fccn:2", "fccn-sroute")):
        topo = from_spec(spec)
        rows = comm.bcast(random_rows(np.random.default_rng(3), topo.num_nodes, 200, 20))
        eng = FlitEngine(topo, make_router(name, topo), model(topo, "wormhole", 4, 2, 2),
                         make_vc_policy("any", topo, 2), comm)  # fmt: skip
        eng.run(Packets(rows))
        real = comm.allreduce(seen[-1], op=MPI.MAX)
        carried = rc.words_per_head(math.ceil(2 * mean_hops(topo) + 1))
        assert rc.words_per_head(comm.allreduce(eng.router.longest, op=MPI.MAX)) <= carried
        plan = pf.exchange_bytes(topo, comm.Get_size(), 2, 1, 1, carried)
        assert real <= plan <= 1.1 * real + 256, (spec, real, plan)
        # the walked rows: this rank's routes and the free rows kept for two steps' arrivals
        sr = eng.router
        table = sum(a.nbytes for a in (sr.table, sr.links, sr.head, sr.last, sr.free))
        table = comm.allreduce(table, op=MPI.MAX)
        # the rank's own packets (random sources: not len(rows) / R on every rank)
        lo, hi = int(eng.bounds[comm.Get_rank()]), int(eng.bounds[comm.Get_rank() + 1])
        own = comm.allreduce(sum(lo <= r[1] < hi for r in rows), op=MPI.MAX)
        routes = own + 2 * pf.cut_links(topo, comm.Get_size())
        plan = pf.route_rows_bytes(routes, mean_hops(topo))
        assert table <= plan <= 8 * table, (spec, table, plan)


@pytest.mark.mpi(min_size=2)
def test_the_run_says_which_calls_ran(monkeypatch):
    """``mpinet run --json``'s ``switching.calls``: blocks of steps for a walked router on
    several ranks; one step per call (the route walked again on arrival) where the MPI
    library's calls cannot be had from compiled code: the same run."""
    from pathlib import Path

    from mpi4py import MPI

    from mpinet.engine.flit import mpi_native
    from mpinet.engine.flit.rank_steps import BLOCKS, ONE_STEP
    from mpinet.jobs import load_job
    from mpinet.jobs.execute import execute, plan

    comm = MPI.COMM_WORLD
    job = str(Path(__file__).resolve().parent.parent / "jobs" / "switching" / "wormhole.toml")
    sets = [(["topology"], "scc:4"), (["router", "name"], "scc-random"),
            (["workload", "steps"], 60), (["workload", "rate"], 0.05), (["model", "flits"], 4),
            (["trace", "level"], "none")]  # fmt: skip
    res = execute(plan(load_job(job, sets), ranks=comm.Get_size()), comm)
    sw = res["switching"]
    assert (sw["routes"], sw["steps"], sw["calls"]) == ("walked rows", "compiled steps", BLOCKS)
    monkeypatch.setattr(mpi_native, "native", lambda comm: None)
    off = execute(plan(load_job(job, sets), ranks=comm.Get_size()), comm)
    assert off["switching"]["calls"].startswith(ONE_STEP + ": the MPI library")
    assert off["stats"] == res["stats"] and res["stats"]["delivered"] > 100
