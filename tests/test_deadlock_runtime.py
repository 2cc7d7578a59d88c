"""Deadlocks found while traffic is still injected (engine/deadlock.py, engine/waitfor.py).

The engine's rule (every CHECK_EVERY steps, among the queues blocked with the same head
since the previous check; and, after the last injection, a step in which nothing moves)
against the plain-Python reference, which implements it apart (``tests/reference_engine.py``);
the report against the hop rows; permanence (a run without the checks never moves a packet
the check called dead); heavy deadlock-free traffic never reported; the generic wait-for
search against a brute force, on one rank and split over 1-4 ranks.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from reference_engine import simulate_reference
from test_buffers import by_id, by_packet, make_job, run_engine
from test_flit_engine import check_on_every_rank

from mpinet.engine import deadlock as dlk
from mpinet.engine.waitfor import dead_fronts, walk_cycle
from mpinet.routing import make_router

#: bernoulli jobs that deadlock before their last injection (step 149; checked below)
WHILE_INJECTING = [
    ("star:4", "all-port", 1, 0.6, "fifo"),
    ("scc:4", "all-port", 2, 0.6, "fifo"),  # paced: found at 72, at 48 without PACE
    ("ccc:3", "one-port", 2, 0.6, "fifo"),
    ("ms:2,2", "sdc", 1, 0.3, "oldest-first"),
    ("star:5", "one-port", 1, 0.6, "oldest-first"),
    ("scc:3", "k-port:2", 2, 0.6, "fifo"),
]
STEPS = 150


def _job(spec, kind, buffer, rate, seed=5):
    return make_job(spec, kind, buffer, seed=seed, injection="bernoulli", rate=rate, steps=STEPS)


@pytest.mark.parametrize("spec,kind,buffer,rate,order", WHILE_INJECTING)
def test_found_while_injecting_as_the_reference_finds_it(spec, kind, buffer, rate, order):
    topo, model, w = _job(spec, kind, buffer, rate)
    rec = run_engine(topo, model, w, order=order, seed=5)
    ref = simulate_reference(topo, make_router("shortest", topo), model, w, seed=5, order=order)
    dl = rec.deadlock
    assert dl is not None and dl["found"] == "check" and dl["step"] == ref.deadlock_step
    assert dl["step"] % dlk.CHECK_EVERY == 0 and dl["step"] < w.last_injection_step
    assert rec.steps == dl["step"] and (rec.counters[:, 1] > 0).any()
    np.testing.assert_array_equal(by_id(rec.packets), ref.packets)
    np.testing.assert_array_equal(by_packet(rec.hop_rows), ref.hops)
    assert dl["closed"] == ref.deadlock_closed and dl["dead_packets"] == len(ref.dead_ids) > 0
    cyc = [(topo.parse_label(c["node"]), topo.ports.index(c["port"]), c["class"])
           for c in dl["cycle"]]  # fmt: skip
    assert cyc == ref.deadlock_cycle and len(cyc) >= 2
    assert f"deadlock in step {dl['step']}: a wait-for cycle closed in step" in dl["message"]


@pytest.mark.parametrize("spec,kind,buffer,rate,order", WHILE_INJECTING[:4])
def test_the_report_agrees_with_the_hop_rows(spec, kind, buffer, rate, order):
    topo, model, w = _job(spec, kind, buffer, rate)
    rec = run_engine(topo, model, w, order=order, seed=5)
    dl = rec.deadlock
    hops = rec.hop_rows
    last = {}  # (node, port) -> the last step a packet crossed it
    for step, _, frm, _, port in hops.tolist():
        last[(frm, port)] = max(step, last.get((frm, port), 0))
    links = [(topo.parse_label(c["node"]), topo.ports.index(c["port"])) for c in dl["cycle"]]
    assert max(last[k] for k in links) == dl["closed"] < dl["step"]
    # a closed cycle of real links, each feeding a buffer that is full at the end
    left = {
        p: d
        for p, d in zip(rec.packets[:, 0].tolist(), rec.packets[:, 2].tolist(), strict=True)
        if p in set(rec.packets[rec.packets[:, 4] < 0, 0])
    }
    at = {}  # undelivered packet -> the (node, port) of its last hop
    for _, pid, frm, _, port in by_packet(hops).tolist():
        if pid in left:
            at[pid] = (frm, port)
    for i, (c, (node, port)) in enumerate(zip(dl["cycle"], links, strict=True)):
        assert topo.label(int(topo.neighbors([node])[0, port])) == c["next"]
        assert c["next"] == dl["cycle"][(i + 1) % len(links)]["node"]
        assert sum(1 for k in at.values() if k == (node, port)) == buffer


@pytest.mark.parametrize("spec,kind,buffer,rate,order", WHILE_INJECTING[:3])
def test_dead_packets_never_move_again(spec, kind, buffer, rate, order, monkeypatch):
    """Run on without the checks (the old rule only): no packet the check called dead
    moves again, whatever is injected after, and the old rule finds the deadlock only
    once injection stops."""
    topo, model, w = _job(spec, kind, buffer, rate)
    router = make_router("shortest", topo)
    ref = simulate_reference(topo, router, model, w, seed=5, order=order)
    late = simulate_reference(topo, router, model, w, seed=5, order=order, check_every=10**9)
    t, dead = ref.deadlock_step, set(ref.dead_ids)
    assert late.deadlock_step >= w.last_injection_step > t
    after = late.hops[late.hops[:, 0] > t]
    assert not dead & set(after[:, 1].tolist())
    undelivered = set(late.packets[late.packets[:, 4] < 0, 0].tolist())
    assert dead <= undelivered
    assert (late.packets[:, 3] > t).sum() > 0  # packets were injected after the check
    # the engine without its checks is the old engine: the same late deadlock
    monkeypatch.setattr(dlk, "CHECK_EVERY", 10**9)
    rec = run_engine(topo, model, w, order=order, seed=5)
    assert rec.deadlock["found"] == "stall" and rec.deadlock["step"] == late.deadlock_step


def _count_searches(monkeypatch) -> list:
    calls = []
    search = dlk.Watch._search

    def counted(self, t, in_flight, q, need, stall):
        calls.append(int(q.size))
        return search(self, t, in_flight, q, need, stall)

    monkeypatch.setattr(dlk.Watch, "_search", counted)
    return calls


@pytest.mark.parametrize(
    "spec,kind,router,pattern",
    [  # routes whose channel dependency graph is acyclic (docs/deadlock-analysis.md)
        ("hypercube:4", "all-port", "hypercube-ecube", "hotspot"),
        ("hypercube:5", "one-port", "shortest", "uniform"),
        ("cms:3,2,2", "all-port", "shortest", "hotspot"),
        ("hypercube:6", "all-port", "hypercube-ecube", "uniform"),
    ],
)
def test_heavy_deadlock_free_traffic_is_never_reported(spec, kind, router, pattern, monkeypatch):
    """One-slot buffers, no hop classes, every node injecting at every step: fronts stay
    blocked across checks and the search runs on them, and finds nothing."""
    from mpinet.engine.core import Engine

    calls = _count_searches(monkeypatch)
    topo, model, w = make_job(spec, kind, 1, "none", seed=2, injection="bernoulli", rate=1.0,
                              steps=200, pattern=pattern)  # fmt: skip
    rec = Engine(topo, make_router(router, topo), model, seed=2).run(w)
    assert rec.deadlock is None and (rec.packets[:, 4] >= 0).all()
    assert rec.packets.shape[0] == rec.injected_ids.size
    assert sum(1 for n in calls if n) >= 3  # not vacuous


@pytest.mark.parametrize("spec,kind", [("star:4", "all-port"), ("ms:2,2", "sdc"),
                                       ("ccc:3", "one-port")])  # fmt: skip
def test_hop_classes_are_never_searched(spec, kind, monkeypatch):
    """The structured buffer pool cannot deadlock (a front of class c waits for class
    c + 1): no check runs, and heavy traffic is delivered."""
    calls = _count_searches(monkeypatch)
    topo, model, w = _job(spec, kind, 1, 0.6)
    rec = run_engine(topo, model, w, seed=5, record_hops=False)
    assert rec.deadlock is not None and calls  # without the classes: a deadlock
    calls.clear()
    _, classes, _ = make_job(spec, kind, 1, "hops", seed=5, injection="bernoulli", rate=0.6,
                             steps=STEPS)  # fmt: skip
    rec = run_engine(topo, classes, w, seed=5, record_hops=False)
    assert rec.deadlock is None and (rec.packets[:, 4] >= 0).all() and calls == []


# -- the generic search -----------------------------------------------------------------------
def brute_force(fronts, waits, holds, closed):
    """The dead fronts by elimination: drop a front whose buffer is not closed or has a
    holder outside the set, until nothing changes."""
    listed = set(fronts)
    dead = {f for f, b in zip(fronts, waits, strict=True) if b >= 0}
    wait = dict(zip(fronts, waits, strict=True))
    holders: dict[int, set] = {}
    for f, b in holds:
        holders.setdefault(b, set()).add(f)
    while True:
        keep = {f for f in dead if wait[f] in closed
                and holders.get(wait[f], set()) <= (dead & listed)}  # fmt: skip
        if keep == dead:
            return dead
        dead = keep


def random_description(rng, nf=60, nb=40):
    fronts = rng.permutation(1000)[:nf].astype(np.int64)
    waits = np.where(rng.random(nf) < 0.15, -1, rng.integers(0, nb, nf)).astype(np.int64)
    holds = [(int(rng.choice(fronts)) if rng.random() > 0.05 else 5000 + i, int(b))
             for i, b in enumerate(rng.integers(0, nb, 3 * nb))]  # fmt: skip
    held = sorted({b for _, b in holds})  # a full buffer has an occupant, hence a holder
    closed = np.array([b for b in held if rng.random() < 0.8], dtype=np.int64)
    return fronts, waits, holds, closed


def _one_rank(ids):
    return np.zeros(np.asarray(ids).size, dtype=np.int64)


def test_small_descriptions():
    def run(f, w, h, c):
        hf, hb = np.array([x for x, _ in h]), np.array([b for _, b in h])
        return dead_fronts(None, np.array(f), np.array(w), hf, hb, np.array(c), _one_rank,
                           _one_rank).tolist()  # fmt: skip

    # two single-slot buffers, each held by the front waiting for the other: both dead
    assert run([1, 2], [20, 10], [(1, 10), (2, 20)], [10, 20]) == [True, True]
    # buffer 20 is not closed (a slot may free): nothing is dead
    assert run([1, 2], [20, 10], [(1, 10), (2, 20)], [10]) == [False, False]
    # a second packet of buffer 10 sits at front 3, which can move: a slot will free
    assert run([1, 2, 3], [20, 10, -1], [(1, 10), (2, 20), (3, 10)], [10, 20]) == [False] * 3
    # ... or at a front no rank lists (it counts as able to move)
    assert run([1, 2], [20, 10], [(1, 10), (2, 20), (9, 10)], [10, 20]) == [False, False]
    # a chain into the dead cycle is dead too; a front waiting for a free buffer is not
    assert run([1, 2, 4, 5], [20, 10, 10, 30], [(1, 10), (2, 20)], [10, 20]) == [
        True, True, True, False]  # fmt: skip


@pytest.mark.parametrize("seed", range(30))
def test_dead_fronts_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    fronts, waits, holds, closed = random_description(rng)
    hf = np.array([f for f, _ in holds], np.int64)
    hb = np.array([b for _, b in holds], np.int64)
    dead = dead_fronts(None, fronts, waits, hf, hb, closed, _one_rank, _one_rank)
    want = brute_force(fronts.tolist(), waits.tolist(), holds, set(closed.tolist()))
    assert set(fronts[dead].tolist()) == want
    cycle = walk_cycle(None, fronts, waits, dead, hf, hb)
    assert bool(cycle) == bool(want)
    for i, (f, b) in enumerate(cycle):  # each front waits for a buffer its successor holds
        nxt = cycle[(i + 1) % len(cycle)][0]
        assert f in want and dict(zip(fronts.tolist(), waits.tolist(), strict=True))[f] == b
        assert (nxt, b) in holds


@pytest.mark.parametrize("seed", range(40))
def test_one_rank_pass_equals_the_spread_by_messages(seed):
    """dead_fronts' compiled one-rank pass against the general path run on one rank."""
    from mpinet.engine.comm import resolve
    from mpinet.engine.waitfor import _dead_spread

    rng = np.random.default_rng(500 + seed)
    fronts, waits, holds, closed = random_description(rng)
    hf = np.array([f for f, _ in holds], np.int64)
    hb = np.array([b for _, b in holds], np.int64)
    fast = dead_fronts(None, fronts, waits, hf, hb, closed, _one_rank, _one_rank)
    slow = _dead_spread(resolve(None), fronts, waits, hf, hb, closed, _one_rank, _one_rank)
    assert np.array_equal(fast, slow)
    empty = np.empty(0, np.int64)
    assert dead_fronts(None, empty, empty, empty, empty, empty, _one_rank, _one_rank).size == 0


def _seeds_with_a_deadlock(n):
    out = []
    for s in itertools.count():
        rng = np.random.default_rng(1000 + s)
        f, w, h, c = random_description(rng)
        if brute_force(f.tolist(), w.tolist(), h, set(c.tolist())):
            out.append(1000 + s)
        if len(out) == n:
            return out


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("spread", ["scattered", "on rank 0"])
@pytest.mark.parametrize("seed", _seeds_with_a_deadlock(4) + [7, 8])
def test_dead_fronts_split_over_ranks_equal_one_rank(seed, spread):
    """Fronts, holds and closed buffers scattered over the ranks (holds and closed ones on
    arbitrary ranks), or all on rank 0 (the others pass nothing): the same dead set and
    the same cycle as on one rank."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    me, size = comm.Get_rank(), comm.Get_size()
    rng = np.random.default_rng(seed)
    fronts, waits, holds, closed = random_description(rng)
    hf = np.array([f for f, _ in holds], np.int64)
    hb = np.array([b for _, b in holds], np.int64)
    one = dead_fronts(None, fronts, waits, hf, hb, closed, _one_rank, _one_rank)
    one_cycle = walk_cycle(None, fronts, waits, one, hf, hb)

    k = size if spread == "scattered" else 1

    def fo(ids):
        return (np.asarray(ids) * 7 + 3) % k

    def bo(ids):
        return (np.asarray(ids) * 5 + 1) % k

    mine = fo(fronts) == me
    held = np.random.default_rng(seed + 1).integers(0, k, hf.size) == me
    cl = closed[np.random.default_rng(seed + 2).integers(0, k, closed.size) == me]
    dead = dead_fronts(comm, fronts[mine], waits[mine], hf[held], hb[held], cl, fo, bo)
    cycle = walk_cycle(comm, fronts[mine], waits[mine], dead, hf[held], hb[held])

    def check():  # after the collective calls: a failing rank leaves none waiting
        assert np.array_equal(dead, one[mine])
        assert cycle == one_cycle

    check_on_every_rank(comm, check)


@pytest.mark.slow
def test_the_command_line_stops_while_injecting_on_1_and_3_ranks(run_mpinet):
    """README's example: the report (step, closed, counts, cycle) is the same on 1 and 3
    ranks, found long before the last injection (step 2,999), and the run exits 1."""
    args = ["run", "--topology", "ms:3,2", "--injection", "bernoulli", "--rate", "0.4",
            "--steps", "3000", "--buffer", "2", "--trace-level", "none"]  # fmt: skip
    text = run_mpinet(args, ranks=1)
    assert text.returncode == 1, text.stderr
    assert "can never move" in text.stdout and "is full" in text.stdout
    one = json.loads(run_mpinet([*args, "--json"], ranks=1).stdout)["stats"]
    three = json.loads(run_mpinet([*args, "--json"], ranks=3).stdout)["stats"]
    dl = one["deadlock"]
    assert dl == three["deadlock"] and dl["found"] == "check"
    assert dl["closed"] < dl["step"] < 2999 and 0 < dl["dead_packets"] < dl["blocked_packets"]
    assert one["delivered"] + dl["blocked_packets"] == one["injected"]
    assert f"DEADLOCK in step {dl['step']:,}: its cycle closed in step" in text.stdout
