"""The compiled flit engine against its specification (docs/switching.md).

Every case runs :class:`mpinet.engine.flit.engine.FlitEngine` and the plain reference of
``tests/reference_switching.py`` (written independently from the same page) on the same
packets and compares them flit for flit: every packet's injection, delivery, hops and
admission step, every link's flit count, the step count, and on a deadlock its step and
its wait-for cycle. Closed forms at zero load, conservation, and the same answers on 1-4
ranks (the MPI test) complete it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from reference_switching import simulate_switching

from mpinet.deadlock.vc_need import vcs_needed
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.models import parse_model
from mpinet.netfile import load_topology
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from mpinet.topology.colouring import colours

MODES = ("store-and-forward", "cut-through", "wormhole")


class Packets:
    """A workload of given packets ``(pid, src, dst, inject step)``."""

    def __init__(self, rows) -> None:
        self.rows = np.array(rows, dtype=np.int64).reshape(-1, 4)
        self.pid_space = int(self.rows[:, 0].max()) + 1 if len(self.rows) else 1
        self.last_injection_step = int(self.rows[:, 3].max()) if len(self.rows) else 0

    def injections(self, lo, hi, step):
        r = self.rows
        r = r[(r[:, 3] == step) & (r[:, 1] >= lo) & (r[:, 1] < hi)]
        return r[:, 0], r[:, 1], r[:, 2]


def model(topo, kind="all-port", cap=1, **switching):
    m = parse_model({"k-port": "k-port:2"}.get(kind, kind), dict.fromkeys(topo.port_classes, cap))
    return replace(m, flit=True, **switching)


def run(topo, router, rows, m, comm=None, max_steps=3000):
    policy = make_vc_policy(m.vc_policy, topo, m.vcs)
    return FlitEngine(topo, router, m, policy, comm, max_steps=max_steps).run(Packets(rows))


def reference(topo, router, rows, m, max_steps=3000):
    col = colours(topo, np.arange(topo.num_nodes)).tolist()
    return simulate_switching(
        topo, router, rows, switching=m.switching, flits=m.flits, vcs=m.vcs,
        vc_buffer=m.vc_buffer, vc_policy=m.vc_policy, model=m, colour=col.__getitem__,
        max_steps=max_steps,
    )  # fmt: skip


def by_pid(a: np.ndarray) -> np.ndarray:
    return a[np.argsort(a[:, 0], kind="stable")]


def assert_same(rec, ref, topo) -> None:
    assert rec.steps == ref.steps
    assert np.array_equal(by_pid(rec.packets), by_pid(ref.packets))
    assert np.array_equal(rec.link_load.ravel(), ref.load.ravel())
    assert np.array_equal(rec.counters[:, 0], ref.counters[:, 0])  # flits moved per step
    assert (rec.deadlock is None) == (ref.deadlock_step is None)
    if rec.deadlock is not None:
        assert rec.deadlock["step"] == ref.deadlock_step
        mine = [(c["node"], c["port"], c["vc"]) for c in rec.deadlock["cycle"]]
        want = [(topo.label(u), topo.ports[p], v) for u, p, v in ref.cycle]
        assert mine == want


# -- zero load: the closed forms -----------------------------------------------------------
def bfs_distances(topo, src: int) -> list[int]:
    """Hops from ``src`` to every node: a plain breadth-first search over the neighbour table
    (no router, no engine), the H of the closed forms for minimal routers."""
    nb = topo.neighbors(np.arange(topo.num_nodes)).tolist()
    dist, frontier = {src: 0}, [src]
    while frontier:
        nxt = []
        for u in frontier:
            for w in nb[u]:
                if w >= 0 and w not in dist:
                    dist[w] = dist[u] + 1
                    nxt.append(w)
        frontier = nxt
    return [dist[v] for v in range(topo.num_nodes)]


@pytest.mark.parametrize("spec", ["star:5", "scc:4", "ms:2,2", "hypercube:5", "fccn:2"])
@pytest.mark.parametrize("mode", MODES)
def test_zero_load_latency_is_the_closed_form(spec, mode):
    topo = from_spec(spec)
    router = make_router("shortest", topo)
    dist = bfs_distances(topo, 0)
    dsts = np.arange(1, topo.num_nodes, max(1, topo.num_nodes // 7))
    assert len({dist[d] for d in dsts}) >= 2  # routes of several lengths
    for flits in (1, 2, 4, 16):
        for cap in (1, 2):
            buf = 2 * cap if mode == "wormhole" else flits
            m = model(topo, cap=cap, switching=mode, flits=flits, vcs=2, vc_buffer=buf)
            for d in dsts:
                rec = run(topo, router, [(0, 0, int(d), 0)], m)
                (row,) = rec.packets
                h, per = dist[d], -(-flits // cap)  # shortest routes: H = the BFS distance
                want = h * per if mode == "store-and-forward" else h + per - 1
                assert row[4] - row[3] == want, (flits, cap, d, h)
                assert row[5] == h and row[6] == row[3]  # its hops; admitted at once


def test_one_flit_buffers_halve_the_wormhole_rate():
    topo = from_spec("hypercube:5")
    router = make_router("hypercube-ecube", topo)
    m = model(topo, switching="wormhole", flits=8, vcs=1, vc_buffer=1)
    dist = bfs_distances(topo, 0)
    for d in (1, 3, 7, 31):
        (row,) = run(topo, router, [(0, 0, d, 0)], m).packets
        h = dist[d]
        assert h == bin(d).count("1") and row[5] == h  # the bits to correct
        assert row[4] - row[3] == (8 if h == 1 else h + 2 * (8 - 1))


# -- the reference, flit for flit ----------------------------------------------------------
def random_case(rng, topo, heavy: bool = False):
    mode = "wormhole" if heavy else str(rng.choice(MODES))
    flits = int(rng.choice([4, 8] if heavy else [1, 2, 3, 5]))
    buf = int(rng.choice([1, 2, 4, 6]))
    if mode != "wormhole":
        buf = max(buf, flits)
    kind = "all-port" if heavy else str(rng.choice(["all-port", "one-port", "k-port", "sdc"]))
    m = model(topo, kind=kind, cap=int(rng.choice([1, 2])), switching=mode, flits=flits,
              vcs=1 if heavy else int(rng.choice([1, 2, 3])), vc_buffer=buf)  # fmt: skip
    n = topo.num_nodes
    npk, horizon = int(rng.integers(5, 200)), int(rng.integers(1, 8))
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(horizon)))
            for i in range(npk)]  # fmt: skip
    return m, rows


NETS = [("star:4", "shortest"), ("scc:4", "scc-greedy"), ("hypercube:4", "shortest"),
        ("ms:2,2", "ms-merged"), ("ccc:3", "shortest")]  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("spec,rname", NETS)
def test_agrees_with_the_reference(spec, rname, seed):
    topo = from_spec(spec)
    router = make_router(rname, topo)
    rng = np.random.default_rng(seed)
    for _ in range(4):
        m, rows = random_case(rng, topo)
        assert_same(run(topo, router, rows, m), reference(topo, router, rows, m), topo)


#: heavy wormhole draws (``random_case(rng(seed), heavy=True)``, four per seed) and whether
#: each deadlocks, measured once: 10 of 32 do. ``shortest`` on hypercube:4 fixes the lowest
#: differing dimension first (e-cube: an acyclic channel graph), so none of its draws can.
DEADLOCKS = [
    ("star:4", "shortest", 104, (0, 1, 0, 0)),
    ("star:4", "shortest", 116, (1, 0, 0, 0)),
    ("scc:4", "scc-greedy", 104, (0, 1, 1, 0)),
    ("scc:4", "scc-greedy", 109, (1, 0, 1, 0)),
    ("scc:4", "scc-greedy", 110, (1, 0, 0, 0)),
    ("ms:2,2", "ms-merged", 103, (0, 1, 0, 0)),
    ("ms:2,2", "ms-merged", 104, (0, 1, 1, 0)),
    ("hypercube:4", "shortest", 104, (0, 0, 0, 0)),
]


@pytest.mark.parametrize("spec,rname,seed,verdicts", DEADLOCKS)
def test_deadlocks_agree_with_the_reference(spec, rname, seed, verdicts):
    """Heavy wormhole traffic, one VC of 1-6 flits: the deadlocks are there, at the reference's
    step with its cycle, and the runs beside them deliver every packet as the reference does."""
    topo = from_spec(spec)
    router = make_router(rname, topo)
    rng = np.random.default_rng(seed)
    for dead in verdicts:
        m, rows = random_case(rng, topo, heavy=True)
        rec, ref = run(topo, router, rows, m), reference(topo, router, rows, m)
        assert (rec.deadlock is not None) == bool(dead) == (ref.deadlock_step is not None)
        if dead:  # a real deadlock: a cycle of held VCs and packets that never arrive
            assert len(rec.deadlock["cycle"]) >= 2 and (ref.packets[:, 4] < 0).any()
        else:
            assert (ref.packets[:, 4] >= 0).all()
        assert_same(rec, ref, topo)


@pytest.mark.parametrize("policy", ["hops", "negative-hop"])
@pytest.mark.parametrize("spec", ["star:4", "hypercube:4"])
def test_policies_agree_with_the_reference_and_never_deadlock(spec, policy):
    topo = from_spec(spec)
    router = make_router("shortest", topo)
    pol = make_vc_policy(policy, topo, 8)
    vcs = vcs_needed(pol, router)
    rng = np.random.default_rng(7)
    m = model(topo, switching="wormhole", flits=6, vcs=vcs, vc_buffer=1, vc_policy=policy)
    rows = [(i, int(rng.integers(topo.num_nodes)), int(rng.integers(topo.num_nodes)), i // 40)
            for i in range(400)]  # fmt: skip
    rec = run(topo, router, rows, m)
    assert rec.deadlock is None and (rec.packets[:, 4] >= 0).all()
    assert_same(rec, reference(topo, router, rows, m), topo)


def test_conservation_and_loads():
    """Every packet once; the flits that crossed links are L x the hops of every packet."""
    topo = from_spec("ms:2,2")
    router = make_router("shortest", topo)
    rng = np.random.default_rng(3)
    rows = [(i, int(rng.integers(120)), int(rng.integers(120)), int(rng.integers(30)))
            for i in range(900)]  # fmt: skip
    m = model(topo, switching="wormhole", flits=5, vcs=7, vc_buffer=3, vc_policy="hops")
    rec = run(topo, router, rows, m)
    p = by_pid(rec.packets)
    assert np.array_equal(p[:, 0], np.arange(900)) and (p[:, 4] >= p[:, 3]).all()
    assert rec.link_load.sum() == rec.counters[:, 0].sum() == 5 * p[:, 5].sum()
    assert rec.counters[:, 1].sum() == 900


# -- any number of ranks -------------------------------------------------------------------
@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


#: a network read from a file: its ports' reverses differ from node to node
CUBIC40 = f"file:{Path(__file__).resolve().parent.parent / 'jobs' / 'networks' / 'cubic40.edges'}"


def check_on_every_rank(comm, check) -> None:
    """Run ``check()`` on every rank; fail on every rank when it fails on any (so no rank is
    left waiting in a collective call while another one has left the test)."""
    try:
        check()
        err = None
    except AssertionError as exc:
        err = f"rank {comm.Get_rank()}: {exc!r}"[:1500]
    errors = [e for e in comm.allgather(err) if e]
    assert not errors, "\n".join(errors)


def assert_same_on_every_rank(comm, rec, ref, topo, rows) -> None:
    """Each rank's own part (its links' loads, the packets it injected, the rows it
    recorded) is the reference's, and the whole run gathered on each rank is its run."""
    packets, loads = comm.allgather(rec.packets), comm.allgather(rec.link_load)

    def check():
        lo, hi = rec.lo, rec.hi
        assert np.array_equal(rec.link_load, ref.load[lo:hi])
        r = np.array(rows, np.int64).reshape(-1, 4)
        assert np.array_equal(np.sort(rec.injected_ids), r[(r[:, 1] >= lo) & (r[:, 1] < hi), 0])
        mine = by_pid(rec.packets)
        assert np.array_equal(mine, ref.packets[np.isin(ref.packets[:, 0], mine[:, 0])])
        whole = replace(rec, packets=np.concatenate(packets), link_load=np.concatenate(loads))
        assert_same(whole, ref, topo)  # the steps, counters and deadlock this rank saw

    check_on_every_rank(comm, check)


@pytest.mark.mpi
@pytest.mark.parametrize("heavy", [False, True])
def test_same_answers_on_any_number_of_ranks(comm, heavy):
    for spec, rname in [*NETS[:4], (CUBIC40, "shortest")]:
        topo = load_topology(spec)
        router = make_router(rname, topo)
        rng = np.random.default_rng(11 + heavy)
        for _ in range(3):
            m, rows = random_case(rng, topo, heavy=heavy)
            rec = run(topo, router, rows, m, comm)
            ref = comm.bcast(reference(topo, router, rows, m) if comm.Get_rank() == 0 else None)
            assert_same_on_every_rank(comm, rec, ref, topo, rows)


@pytest.mark.mpi
@pytest.mark.parametrize("policy", ["hops", "negative-hop"])
def test_policies_same_answers_on_any_number_of_ranks(comm, policy):
    """The VC policies' runs (state carried in the head across ranks) as on one rank."""
    for spec in ("star:4", "ms:2,2"):
        topo = from_spec(spec)
        router = make_router("shortest", topo)
        vcs = vcs_needed(make_vc_policy(policy, topo, 16), router)
        m = model(topo, switching="wormhole", flits=5, vcs=vcs, vc_buffer=2, vc_policy=policy)
        rng = np.random.default_rng(5)
        n = topo.num_nodes
        rows = [(i, int(rng.integers(n)), int(rng.integers(n)), i // 30) for i in range(300)]
        rec = run(topo, router, rows, m, comm)
        ref = comm.bcast(reference(topo, router, rows, m) if comm.Get_rank() == 0 else None)
        check_on_every_rank(comm, lambda: assert_no_deadlock(rec, ref))  # noqa: B023
        assert_same_on_every_rank(comm, rec, ref, topo, rows)


def assert_no_deadlock(rec, ref) -> None:
    assert rec.deadlock is None and ref.deadlock_step is None
