"""The flit engine's compiled runs of many steps against its step-by-step path.

:mod:`mpinet.engine.flit.chunk` routes inside the compiled loop with the router's compiled
hop and the policy's compiled rule; the step-by-step path calls the router and the policy
(vectorized). Both must give the same run, row for row: every counter, every packet row
in order, link loads, hop rows, injected ids, deadlock reports and errors.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest

from mpinet.deadlock.vc_need import vcs_needed
from mpinet.engine.flit import chunk
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.models import parse_model
from mpinet.engine.run import CollectiveError
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from mpinet.workloads.unicast import Unicast

MODES = ("store-and-forward", "cut-through", "wormhole")
#: networks whose routers have a compiled hop (translated tables, fccn, anynet-min)
NETS = [("star:4", "shortest"), ("ms:2,2", "shortest"), ("scc:4", "shortest"),
        ("fccn:2", "fccn-shortest"), ("ms:2,2", "anynet-min"),
        ("hypercube:4", "anynet-min")]  # fmt: skip


class Packets:
    """Given packets ``(pid, src, dst, inject step)``, some injected at their destination."""

    def __init__(self, rows) -> None:
        self.rows = np.array(rows, dtype=np.int64).reshape(-1, 4)
        self.pid_space = int(self.rows[:, 0].max()) + 1
        self.last_injection_step = int(self.rows[:, 3].max())

    def injections(self, lo, hi, step):
        r = self.rows
        r = r[(r[:, 3] == step) & (r[:, 1] >= lo) & (r[:, 1] < hi)]
        return r[:, 0], r[:, 1], r[:, 2]


def model(topo, mode, flits, vcs, buf, policy="any", cap=1, kind="all-port"):
    m = parse_model(kind, dict.fromkeys(topo.port_classes, cap))
    return replace(m, flit=True, switching=mode, flits=flits, vcs=vcs, vc_buffer=buf,
                   vc_policy=policy)  # fmt: skip


def both(topo, router, m, workload, **kw):
    """The run compiled in chunks and step by step; the first asserted to use the chunks."""
    out = []
    for compiled_steps in (True, False):
        pol = make_vc_policy(m.vc_policy, topo, m.vcs)
        eng = FlitEngine(topo, router, m, pol, compiled_steps=compiled_steps, **kw)
        assert chunk.usable(eng) == compiled_steps
        out.append(eng.run(workload))
    return out


def assert_identical(a, b) -> None:
    assert a.steps == b.steps
    assert np.array_equal(a.counters, b.counters)
    assert np.array_equal(a.packets, b.packets)  # the same rows in the same order
    assert np.array_equal(a.link_load, b.link_load)
    assert np.array_equal(a.injected_ids, b.injected_ids)
    assert (a.hop_rows is None) == (b.hop_rows is None)
    if a.hop_rows is not None:
        assert np.array_equal(a.hop_rows, b.hop_rows)
    assert a.deadlock == b.deadlock
    assert a.stuck == b.stuck


def random_rows(rng, n, npk, horizon):
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(horizon)))
            for i in range(npk)]  # fmt: skip
    return rows  # some with source = destination: delivered at once


@pytest.mark.parametrize("spec,rname", NETS)
@pytest.mark.parametrize("mode", MODES)
def test_chunks_equal_the_steps(spec, rname, mode):
    topo = from_spec(spec)
    router = make_router(rname, topo)
    rng = np.random.default_rng(len(spec) * 7 + MODES.index(mode))
    for policy in ("any", "hops", "negative-hop"):
        flits = int(rng.choice([1, 3, 6]))
        buf = flits if mode != "wormhole" else int(rng.choice([1, 2, 4]))
        vcs = vcs_needed(make_vc_policy(policy, topo, 16), router) if policy != "any" else 2
        m = model(topo, mode, flits, vcs, buf, policy, cap=int(rng.choice([1, 2])))
        rows = random_rows(rng, topo.num_nodes, int(rng.integers(50, 400)), 40)
        a, b = both(topo, router, m, Packets(rows), record_hops=True, load_window=(5, 60))
        assert_identical(a, b)


@pytest.mark.parametrize("seed", range(4))
def test_deadlocks_found_alike(seed):
    """``any`` with one VC under heavy wormhole traffic: deadlocks while injecting (the live
    search) and after (the stall), the same step and cycle both ways."""
    topo = from_spec("star:4")
    router = make_router("shortest", topo)
    rng = np.random.default_rng(seed)
    m = model(topo, "wormhole", 8, 1, int(rng.choice([1, 2])))
    rows = random_rows(rng, 24, 600, 200 if seed % 2 else 10)
    a, b = both(topo, router, m, Packets(rows), max_steps=5000)
    assert_identical(a, b)
    assert a.deadlock is not None


def test_bernoulli_run_with_growing_pools():
    """A longer uniform run: the pools and scratch arrays grow during the compiled calls."""
    topo = from_spec("ms:2,3")
    router = make_router("anynet-min", topo)
    m = model(topo, "wormhole", 16, 2, 4)
    w = Unicast(topo, injection="bernoulli", rate=0.01, steps=300, seed=3)
    a, b = both(topo, router, m, w)
    assert_identical(a, b)
    assert a.counters[:, 0].sum() > 100_000


def test_dateline_policy_on_scc():
    topo = from_spec("scc:4")
    router = make_router("shortest", topo)
    vcs = vcs_needed(make_vc_policy("dateline", topo, 16), router)
    m = model(topo, "wormhole", 4, vcs, 2, "dateline")
    rows = random_rows(np.random.default_rng(9), topo.num_nodes, 300, 30)
    a, b = both(topo, router, m, Packets(rows))
    assert_identical(a, b)


def test_too_few_vcs_is_the_same_error():
    topo = from_spec("star:4")
    router = make_router("shortest", topo)
    m = model(topo, "wormhole", 4, 2, 2, "hops")
    rows = random_rows(np.random.default_rng(1), 24, 100, 5)
    errors = []
    for compiled_steps in (True, False):
        pol = make_vc_policy("hops", topo, 2)
        with pytest.raises(CollectiveError, match=r"'hops' needs VC 2 .*raise model\.vcs$") as exc:
            FlitEngine(topo, router, m, pol, compiled_steps=compiled_steps).run(Packets(rows))
        errors.append(str(exc.value))
    assert errors[0] == errors[1] and "raise model.vcs" in errors[0]


@pytest.mark.parametrize("kind", ["one-port", "k-port:2", "k-port:3", "sdc"])
@pytest.mark.parametrize("mode", MODES)
def test_port_models_compiled_equal_the_steps(kind, mode):
    """Every port model runs compiled on one rank, row for row as step by step; the hop rows
    obey the model (a node's heads leave by at most K ports a step; under sdc all by one
    port index)."""
    rng = np.random.default_rng(len(kind) * 3 + MODES.index(mode))
    nets = (("star:4", "shortest"), ("ms:2,2", "anynet-min"), ("fccn:2", "fccn-shortest"))
    for spec, rname in nets:
        topo = from_spec(spec)
        router = make_router(rname, topo)
        for policy in ("any", "hops"):
            flits = int(rng.choice([1, 3, 6]))
            buf = flits if mode != "wormhole" else int(rng.choice([1, 2, 4]))
            vcs = vcs_needed(make_vc_policy(policy, topo, 16), router) if policy != "any" else 2
            m = model(topo, mode, flits, vcs, buf, policy, cap=int(rng.choice([1, 2])),
                      kind=kind)  # fmt: skip
            rows = random_rows(rng, topo.num_nodes, int(rng.integers(100, 400)), 40)
            a, b = both(topo, router, m, Packets(rows), record_hops=True)
            assert_identical(a, b)
            h = a.hop_rows  # step, packet, from, to, port: a head's hop
            assert h.shape[0] > 0
            if kind == "sdc":
                for t in np.unique(h[:, 0]):
                    assert np.unique(h[h[:, 0] == t, 4]).size == 1
            else:
                k = 1 if kind == "one-port" else int(kind.split(":")[1])
                ports = np.unique(h[:, [0, 2, 4]], axis=0)  # the ports a node used in a step
                _, per = np.unique(ports[:, :2], axis=0, return_counts=True)
                assert per.max() <= k


@pytest.mark.parametrize(
    "spec,rname",
    [
        ("scc:4", "scc-greedy"),
        ("ms:2,2", "ms-merged"),
        ("star:4", "star-greedy"),
        ("scc:4", "scc-optimal"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_routers_by_their_tables_equal_their_own_steps(spec, rname, mode):
    """A router without a compiled hop routes in the compiled steps by its translated route
    table: the same run as its own ``next_port`` step by step."""
    topo = from_spec(spec)
    router = make_router(rname, topo)
    rng = np.random.default_rng(len(rname) + MODES.index(mode))
    flits = int(rng.choice([1, 3, 6]))
    buf = flits if mode != "wormhole" else int(rng.choice([1, 2, 4]))
    m = model(topo, mode, flits, 2, buf, cap=int(rng.choice([1, 2])), kind="k-port:2")
    rows = random_rows(rng, topo.num_nodes, int(rng.integers(100, 400)), 40)
    a, b = both(topo, router, m, Packets(rows), record_hops=True)
    assert_identical(a, b)
    eng = FlitEngine(topo, router, m, make_vc_policy("any", topo, 2))
    assert eng.routes == "translated table" and eng.router is not router


def test_the_path_and_why():
    """The path that runs the steps, and why not compiled where it is not (no silent
    fallback): what ``mpinet run --json`` reports as ``switching.steps``."""
    topo = from_spec("star:4")
    m = model(topo, "wormhole", 4, 2, 2)
    pol = make_vc_policy("any", topo, 2)
    greedy = FlitEngine(topo, make_router("shortest", topo, tie="random"), m, pol)
    assert chunk.usable(greedy)  # no compiled hop, no table (random ties): walked rows
    assert greedy.routes == "walked rows" and "random" in greedy.routes_why
    ruleless = copy.copy(pol)
    ruleless.compiled = None  # a policy without a compiled rule: the rows are not walked
    slow = FlitEngine(topo, make_router("shortest", topo, tie="random"), m, ruleless)
    assert chunk.path(slow).startswith("step by step: vc_policy") and slow.routes == "next_port"
    for kind in ("one-port", "k-port:2", "sdc"):
        mk = model(topo, "wormhole", 4, 2, 2, kind=kind)
        eng = FlitEngine(topo, make_router("shortest", topo), mk, pol)
        assert chunk.path(eng) == chunk.COMPILED
        eng.run(Packets([(0, 0, 5, 0), (1, 3, 7, 1)]))
        assert eng.steps_path == chunk.COMPILED
    off = FlitEngine(topo, make_router("shortest", topo), m, pol, compiled_steps=False)
    assert chunk.path(off) == "step by step: asked for (compiled_steps=False)"


def test_sort_active_sorts_any_list():
    from mpinet.engine.flit.state import SHORT_TAIL, sort_active

    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 5, 40, 100, 3000):  # tails by insertion and by heapsort, either side
        for pre in {0, n // 2, n, max(n - SHORT_TAIL, 0), max(n - SHORT_TAIL - 1, 0)}:
            # ids below the list's size (the buffers); in 10 n + 10 buffers the list is dense
            # (a bitmap of them has fewer words than n: sorted through it), in 100 n + 100 not
            for size in (10 * n + 10, 100 * n + 100):
                ids = rng.choice(size, size=n, replace=False).astype(np.int32)
                ids[:pre] = np.sort(ids[:pre])  # a sorted prefix, then anything
                act = np.full(size, -7, np.int32)  # past n: untouched
                act[:n] = ids
                tmp = np.full(n + 1, 5, np.int64)  # scratch: anything in it
                sort_active(act, n, tmp)
                assert np.array_equal(act[:n], np.sort(ids)) and (act[n:] == -7).all()


def test_more_heads_than_the_routing_scratch_holds(monkeypatch):
    """1,200 packets injected in one step: more than the routing scratch's first size (1,024),
    so the compiled steps size it for the step's injections before the call (they allocate
    nothing: no reference counts); the same run as step by step."""
    topo = from_spec("star:4")
    router = make_router("shortest", topo)
    m = model(topo, "wormhole", 4, 2, 2)
    rows = [(i, i % 24, (i * 7 + 5) % 24, 1) for i in range(1200)]
    widths = []
    scratch = FlitEngine._scratch

    def recorded(self, n):
        so = scratch(self, n)
        widths.append(so.route.shape[1])
        return so

    monkeypatch.setattr(FlitEngine, "_scratch", recorded)
    a, b = both(topo, router, m, Packets(rows))
    assert_identical(a, b)
    assert a.packets.shape[0] == 1200
    # the run's set-up and its first call, step 0's, size it for no packets in flight; the
    # call of step 1 is sized for the step's heads before it runs
    assert widths[0] == 1024 and max(widths[1:]) >= 1200


def test_step_0_runs_in_the_compiled_call(monkeypatch):
    """Step 0's packets (four of them injected at their destination) are routed and queued
    by the compiled call, not by route_heads.inject, whose kernels a fresh run would load
    only for that step; the same run as step by step, which injects them there."""
    from mpinet.engine.flit import route_heads

    topo = from_spec("hypercube:4")
    rows = [(i, i % 16, (5 * i + i % 3) % 16, 0 if i < 40 else 3) for i in range(60)]
    assert sum(r[1] == r[2] and r[3] == 0 for r in rows) == 4
    steps, real = [], route_heads.inject
    monkeypatch.setattr(route_heads, "inject", lambda e, w, t: steps.append(t) or real(e, w, t))
    a, b = both(topo, make_router("shortest", topo), model(topo, "wormhole", 4, 2, 2),
                Packets(rows))  # fmt: skip
    assert_identical(a, b)
    assert a.packets.shape[0] == 60
    assert steps[0] == 0 and steps.count(0) == 1  # the step-by-step run's step 0 alone
