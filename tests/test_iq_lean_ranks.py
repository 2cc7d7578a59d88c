"""The lean iq path on several ranks (docs/iq-router.md, "Session 19: the lean path on
several ranks") against its one-rank run: each rank runs the lean cycle on its routers and
the flits and credits bound for another rank go in an exchange a cycle; the gathered run
must be the one-rank run row for row (counters, packets, link loads, hop rows, injected
ids), and the flits that crossed ranks the general path's count on the same ranks. Run
under mpiexec with 2, 3 or 4 ranks (``-m mpi --with-mpi``)."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_flit_ranks import Packets, gathered
from test_iq_router import iq_model

from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.flit.iq_lean_run import LEAN_PATH
from mpinet.netfile import load_topology
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec

MESHC = {"routing_delay": 0, "credit_delay": 2, "wait_for_tail_credit": 1}
#: an irregular network in BookSim2's anynet format: a ring of 10 with three chords
ANYNET = "".join(
    f"router {i} node {i}"
    + "".join(f" router {j} 1" for j in sorted({(i + 1) % 10, (i - 1) % 10}
                                               | ({(i + 5) % 10} if i % 5 % 2 == 0 else set())))
    + "\n"
    for i in range(10)
)  # fmt: skip

#: spec, router, VC policy, flits, VCs, VC buffer, [model.iq] keys, packets, their steps
CASES = [
    ("mesh:4,2", "dor", None, 4, 4, 2, MESHC, 600, 40),  # meshconfig's keys, saturated
    ("mesh:4,2", "dor", None, 1, 8, 4, {}, 80, 400),  # light, 1 flit
    ("torus:4,2", "dor", "dateline", 2, 4, 2, {"channel_latency": 2}, 400, 60),
    ("hypercube:4", "hypercube-ecube", None, 3, 2, 4, {}, 300, 40),
    ("hypercube:5", "anynet-min", None, 1, 2, 8, dict(MESHC, alloc_iters=2), 800, 100),
    ("ms:2,2", "anynet-min", None, 16, 2, 4, {}, 200, 60),  # 16 flits: worms over ranks
    ("ms:2,2", "anynet-min", None, 6, 4, 8, {"input_speedup": 2, "alloc_iters": 2}, 300, 50),
    ("torus:8,1", "dor", "dateline", 5, 2, 3,
     {"channel_latency": 3, "credit_delay": 1, "wait_for_tail_credit": 1}, 200, 80),
    ("anynet", "anynet-min", None, 3, 2, 2, {}, 300, 40),
    # BookSim's separable allocators (docs/iq-router.md, "Session 20"), with speculation,
    # input and output speedup: the same kernel on R ranks
    ("mesh:4,2", "dor", None, 4, 4, 2, dict(MESHC, vc_allocator="separable_input_first",
                                            sw_allocator="separable_input_first"), 600, 40),
    ("ms:2,2", "anynet-min", None, 6, 4, 8,
     {"vc_allocator": "separable_output_first", "sw_allocator": "separable_input_first",
      "speculative": 1, "input_speedup": 2}, 300, 50),
    ("hypercube:4", "hypercube-ecube", None, 3, 2, 4,
     {"sw_allocator": "separable_output_first", "output_speedup": 2}, 300, 40),
]  # fmt: skip


def _topo(spec):
    if spec != "anynet":
        return from_spec(spec)
    path = Path(tempfile.mkdtemp()) / "net.anynet"  # each rank its copy
    path.write_text(ANYNET)
    return load_topology(f"file:anynet:{path}")


def _runs(comm, topo, case, rows, lean=(True, True), max_steps=20000):
    """The one-rank run and the run on ``comm``, gathered, and their paths."""
    from mpi4py import MPI

    _, rname, pol, flits, vcs, vb, keys, *_ = case
    m = iq_model(topo, flits=flits, vcs=vcs, vc_buffer=vb, **keys)
    if pol is not None:
        m = replace(m, vc_policy=pol)
    out, paths = [], []
    for c, on in zip((MPI.COMM_SELF, comm), lean, strict=True):
        policy = make_vc_policy(m.vc_policy, topo, m.vcs)
        eng = FlitEngine(topo, make_router(rname, topo), m, policy, c, record_hops=True,
                         max_steps=max_steps, seed=5)  # fmt: skip
        eng.iq_lean = on
        out.append(gathered(c, eng.run(Packets(rows))))
        paths.append(eng.steps_path)
    return out, paths


def _same(one: dict, many: dict, cross: bool = False) -> None:
    for key, a in one.items():
        b = many[key]
        if key == "counters" and not cross:
            assert np.array_equal(a[:, :3], b[:, :3]), key
        else:
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, key


def _rows(topo, n, steps, seed=3):
    rng = np.random.default_rng(seed)
    nn = topo.num_nodes
    return [(i, int(rng.integers(nn)), int(rng.integers(nn)), int(rng.integers(steps)))
            for i in range(n)]  # fmt: skip


@pytest.mark.mpi
def test_lean_ranks_fall_back_together():
    """A run that deadlocks (a ring of 8, one VC of one slot) stops moving on the lean path
    on every rank at the same cycle and runs again on the general path, which reports it:
    the one-rank run's record and stuck packets."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = from_spec("torus:8,1")
    case = ("torus:8,1", "dor", None, 8, 1, 1, {}, 0, 0)
    rows = [(i, i % 8, (i % 8 + 3) % 8, 0) for i in range(16)]
    (one, many), paths = _runs(comm, topo, case, rows, max_steps=2000)
    assert one["stuck"], "the ring must deadlock"
    assert all("general path (stopped moving)" in p for p in paths), paths
    _same(one, many)


@pytest.mark.mpi
def test_lean_ranks_hand_a_routing_error_to_the_general_path():
    """A router that returns a port with no link for one (node, destination) pair, at a node
    of the last rank: the lean path stops on every rank at the same cycle, the general path
    runs again and reports it; every rank raises the one-rank run's error, none hangs."""
    from mpi4py import MPI

    from mpinet.engine.run import CollectiveError

    comm = MPI.COMM_WORLD
    topo = from_spec("hypercube:4")
    n = topo.num_nodes
    a, b = n - 1, 0  # node 15 (the last rank's) towards node 0: port 5 of 4
    rows = _rows(topo, 300, 40) + [(300, a, b, 20)]
    m = iq_model(topo, flits=3, vcs=2, vc_buffer=4)
    got = []
    for c in (MPI.COMM_SELF, comm):
        router = make_router("anynet-min", topo)
        router.prepare()
        router._port[a * n + b] = 5
        eng = FlitEngine(topo, router, m, make_vc_policy("any", topo, 2), c, seed=5)
        with pytest.raises(CollectiveError) as err:
            eng.run(Packets(rows))
        assert "general path (a routing error)" in eng.steps_path, eng.steps_path
        got.append(str(err.value))
    assert "chose port 5" in got[0], got[0]
    assert got[1] == got[0]
    assert comm.allgather(got[1]) == [got[0]] * comm.Get_size()


@pytest.mark.mpi
def test_lean_ranks_cut_at_max_steps():
    """Packets in flight at ``max_steps``: every rank goes to the general path, whose stuck
    rows are listed once (by the head's rank); the record the one-rank run's."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = from_spec("mesh:4,2")
    case = CASES[0]
    rows = _rows(topo, 600, 40)
    (one, many), paths = _runs(comm, topo, case, rows, max_steps=60)
    assert one["stuck"]
    if comm.Get_size() > 1:
        assert "general path (packets in flight at the end)" in paths[1], paths
    _same(one, many)


@pytest.mark.mpi
@pytest.mark.parametrize("case", [CASES[0], CASES[5]], ids=["mesh", "ms-L16"])
def test_lean_ranks_return_for_room_with_a_cycles_messages_out(case, monkeypatch):
    """Packet slots kept short (4 at first, each block of 3 cycles grown to its need only):
    the compiled block returns for room while a cycle's messages are out (it ran before the
    last one's were in, docs/iq-router.md, "Session 21"), Python grows the slots, and the
    call goes on where it stopped; the record is the one-rank run's."""
    from mpi4py import MPI

    from mpinet.engine.flit import iq_blocks as ib
    from mpinet.engine.flit import iq_lean_ranks as ilr
    from mpinet.engine.flit import iq_lean_state as ils
    from mpinet.engine.flit import iq_step as ist

    comm = MPI.COMM_WORLD
    make, call, seen = ils.make_lean, ilr._call, []

    def few(prm, *args, **kw):
        return make(prm, *args[:-1], 4, **kw)

    def tight(s, away, need):
        s = ils.grow_packets(s, max(need - int(s.pk_nfree[0]), 1))
        return s, np.concatenate([away, np.zeros(s.pk_pid.size - away.size, np.int64)])

    def counted(eng, fns, args):
        code = call(eng, fns=fns, args=args)
        seen.append(code == ist.ROOM and args[15][ilr.G_PEND] > 0)
        return code

    monkeypatch.setattr(ils, "make_lean", few)
    monkeypatch.setattr(ib, "BLOCK", 3)
    monkeypatch.setattr(ib, "next_block", lambda *a, **k: 3)
    monkeypatch.setattr(ilr, "_grow", tight)
    monkeypatch.setattr(ilr, "_call", counted)
    topo = _topo(case[0])
    rows = _rows(topo, case[7], case[8])
    (one, many), paths = _runs(comm, topo, case, rows)
    assert paths == [LEAN_PATH, LEAN_PATH], paths
    _same(one, many)
    if comm.Get_size() > 1:
        assert comm.allreduce(sum(seen)) > 0  # the branch was taken


#: speculation, output speedup 2 and both (input speedup 2 too): the CASES' columns
SPEC, OSP2 = {"speculative": 1}, {"output_speedup": 2}
BOTH = {**SPEC, **OSP2}
OSP_CASES = [
    ("mesh:4,2", "dor", None, 4, 4, 4, dict(MESHC, **BOTH), 600, 60),  # mesh4-osp2's keys
    ("mesh:4,2", "dor", None, 4, 4, 2, dict(MESHC, **SPEC), 600, 40),  # saturated
    ("mesh:4,2", "dor", None, 1, 8, 4, dict(OSP2), 80, 400),  # light
    ("mesh:4,2", "dor", None, 3, 4, 4, dict(MESHC, input_speedup=2, **BOTH), 500, 40),
    ("torus:4,2", "dor", "dateline", 2, 4, 2, dict(channel_latency=2, **SPEC), 400, 60),
    ("torus:4,2", "dor", "dateline", 4, 4, 4, dict(input_speedup=2, **OSP2), 400, 60),
    ("torus:8,1", "dor", "dateline", 5, 2, 3,
     {"channel_latency": 3, "credit_delay": 1, "wait_for_tail_credit": 1, "output_speedup": 3,
      "speculative": 1}, 200, 80),
    ("hypercube:4", "hypercube-ecube", None, 3, 2, 4, dict(OSP2), 300, 40),
    ("hypercube:5", "anynet-min", None, 1, 2, 8, dict(MESHC, alloc_iters=2, **BOTH), 800, 100),
    ("ms:2,2", "anynet-min", None, 16, 2, 4, dict(OSP2), 200, 60),  # worms over ranks
    ("ms:2,2", "anynet-min", None, 6, 4, 8, dict(input_speedup=2, alloc_iters=2, **BOTH), 300, 50),
    ("anynet", "anynet-min", None, 3, 2, 2, dict(SPEC), 300, 40),
    ("anynet", "anynet-min", None, 2, 4, 4, dict(BOTH), 60, 200),  # light
    ("anynet", "anynet-min", None, 4, 2, 4, dict(input_speedup=2, **OSP2), 300, 40),
]  # fmt: skip


def _keys(keys: dict) -> str:
    short = {"speculative": "spec", "output_speedup": "osp", "input_speedup": "isp"}
    return "+".join(f"{v}{k}" for k, v in short.items() if keys.get(k, 0) > (k != "speculative"))


@pytest.mark.mpi
@pytest.mark.parametrize(
    "case",
    [*CASES, *OSP_CASES],
    ids=[f"{c[0]}-{c[1]}-L{c[3]}" + "-sep" * ("sw_allocator" in c[6]) for c in CASES]
    + [f"{c[0]}-L{c[3]}-{_keys(c[6])}-{c[7]}in{c[8]}" for c in OSP_CASES],
)
def test_lean_ranks_run_the_one_rank_run(case):
    """The lean path on R ranks: the one-rank run row for row, both on the lean path. With
    speculation and output speedup (``OSP_CASES``, docs/iq-router.md, "Session 20"), flits
    granted in one cycle that leave from their output queue in a later one cross ranks at
    the cycle they leave on one rank."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = _topo(case[0])
    rows = _rows(topo, case[7], case[8])
    (one, many), paths = _runs(comm, topo, case, rows)
    assert paths == [LEAN_PATH, LEAN_PATH], paths
    assert one["packets"].shape[0] == len(rows) and (one["packets"][:, 4] >= 0).all()
    _same(one, many)
    if comm.Get_size() > 1:
        assert many["counters"][:, 3].sum() > 0  # flits crossed ranks


@pytest.mark.mpi
@pytest.mark.parametrize(
    "case", [*CASES[:1], *CASES[5:6], *OSP_CASES[:1]], ids=["mesh", "ms-L16", "osp"]
)
def test_lean_ranks_count_the_general_paths_crossings(case):
    """On the same ranks, the lean and general paths' records equal, the flits that crossed
    ranks (the counters' last column) included; with output speedup and speculation ("osp")
    counted in the cycle they leave their output queue, as the general path counts them."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = _topo(case[0])
    rows = _rows(topo, case[7], case[8])
    general, lean = [], []
    for on, out in ((False, general), (True, lean)):
        (_, many), paths = _runs(comm, topo, case, rows, lean=(True, on))
        out.append(many)
    _same(general[0], lean[0], cross=True)


BOOKSIM = Path(__file__).resolve().parent / "data" / "booksim" / "mesh44.cfg"
#: ``mpinet booksim`` overrides on mesh44.cfg, and whether its run ends drained (lean path)
WATCHED = [
    (["injection_rate=0.3"], True),  # latency, drained step by step
    (["injection_rate=0.05", "packet_size=4", "seed=7"], True),  # light, 4 flits
    (["sample_period=10", "max_samples=4", "warmup_periods=1", "packet_size=16",
      "injection_rate=0.02"], True),  # worms over ranks
    (["sim_type=throughput", "injection_rate=0.2"], True),
    (["injection_rate=0.9", "latency_thres=100"], False),  # aborted: stopped at once
    (["injection_rate=0.1", "speculative=1", "output_speedup=2", "packet_size=3"], True),
    (["injection_rate=0.4", "output_speedup=2", "input_speedup=2", "packet_size=2"], True),
]  # fmt: skip


@pytest.mark.mpi
@pytest.mark.parametrize("case", WATCHED, ids=[" ".join(c[0]) for c in WATCHED])
def test_lean_ranks_take_a_watch(case, monkeypatch):
    """``mpinet booksim`` on R ranks: the lean path takes the measurement's watch (its blocks
    capped by the watch's steps, its deliveries and live packets handed to it by every rank
    at the same cycle) and prints exactly the one-rank output."""
    from mpi4py import MPI
    from test_booksim_onepass import printed

    from mpinet.engine.comm import SerialComm
    from mpinet.jobs import booksim_run as br

    engines = []
    made = br.make_engine

    def make(*a, **k):
        engines.append(made(*a, **k))
        return engines[-1]

    monkeypatch.setattr(br, "make_engine", make)
    comm = MPI.COMM_WORLD
    prep1 = br.prepare(str(BOOKSIM), ["router=iq", *case[0]])
    alone = br.run(prep1, SerialComm())
    prep = br.prepare(str(BOOKSIM), ["router=iq", *case[0]], comm.Get_size())
    many = br.run(prep, comm)
    assert printed(prep, many) == printed(prep1, alone)
    assert many["runs"] == alone["runs"] == 1
    path = engines[-1].steps_path
    if case[1]:
        assert path == LEAN_PATH, path
    else:  # packets in flight when the watch stops the run: the general path, all ranks
        assert path == LEAN_PATH or "general path (packets in flight" in path, path


class _Looker:
    """A watch that caps the blocks at 7 cycles and keeps, at each block's end, the cycle,
    the deliveries so far and the live packets, gathered over the ranks (by pid)."""

    def __init__(self, comm):
        self.comm, self.seen_at = comm, []

    def limit(self, t):
        return t + 7

    def seen(self, t, delivered, live, last, max_steps):
        rows = np.concatenate(self.comm.allgather(live()))
        got = self.comm.allreduce(sum(d.shape[0] for d in delivered))
        self.seen_at.append((t, got, rows[np.argsort(rows[:, 0], kind="stable")]))
        return last, max_steps


@pytest.mark.mpi
@pytest.mark.parametrize("case", [OSP_CASES[0], CASES[5], OSP_CASES[12], OSP_CASES[6]],
                         ids=["mesh4-osp2", "ms-L16", "anynet-both", "ring-osp3"])  # fmt: skip
def test_lean_ranks_hand_a_watch_what_one_rank_does(case):
    """A watch on R ranks sees, at every block's end, the one-rank run's cycle, deliveries so
    far and live packets (each listed once, by its head's rank, its hops as one rank's)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = _topo(case[0])
    rows = _rows(topo, case[7], case[8])
    _, rname, pol, flits, vcs, vb, keys, *_ = case
    m = iq_model(topo, flits=flits, vcs=vcs, vc_buffer=vb, **keys)
    if pol is not None:
        m = replace(m, vc_policy=pol)
    seen = []
    for c in (MPI.COMM_SELF, comm):
        policy = make_vc_policy(m.vc_policy, topo, m.vcs)
        eng = FlitEngine(topo, make_router(rname, topo), m, policy, c, record_hops=True,
                         max_steps=20000, seed=5)  # fmt: skip
        eng.watch = _Looker(c)
        eng.run(Packets(rows))
        assert eng.steps_path == LEAN_PATH, eng.steps_path
        seen.append(eng.watch.seen_at)
    one, many = seen
    assert len(one) == len(many) and any(r.shape[0] for *_, r in one)
    for (t1, d1, r1), (t2, d2, r2) in zip(one, many, strict=True):
        assert (t1, d1) == (t2, d2)
        assert np.array_equal(r1, r2), t1
