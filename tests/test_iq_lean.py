"""The iq router's lean path (docs/iq-router.md, "Session 18: the lean path"): on its keys
every record equals the general path's bit for bit (deliveries, counters, link loads, hop
rows, the deadlock report), it is chosen by itself and named, and every other run names why
it took the general path."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_flit_engine import Packets

from mpinet.engine.flit import iq_lean_run
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.iq_config import IQConfig
from mpinet.engine.models import parse_model
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec


def iq_model(topo, flits=1, vcs=4, vc_buffer=8, vc_policy="any", **keys):
    m = parse_model("all-port", dict.fromkeys(topo.port_classes, 1))
    return replace(m, flit=True, switching="wormhole", flits=flits, vcs=vcs, vc_buffer=vc_buffer,
                   router="iq", iq=IQConfig(**keys), vc_policy=vc_policy)  # fmt: skip


def traffic(n, count, span, seed, self_too=True):
    """``count`` packets between random nodes over ``span`` steps (ids in step order)."""
    g = np.random.default_rng(seed)
    src = g.integers(0, n, count)
    dst = g.integers(0, n, count)
    if not self_too:
        dst = np.where(dst == src, (dst + 1) % n, dst)
    step = np.sort(g.integers(0, max(span, 1), count))
    return np.stack([np.arange(count), src, dst, step], axis=1)


def both(spec, rname, rows, m, record_hops=False, max_steps=20000, **kw):
    """The run on the lean path and on the general path: ``(records, engines)``."""
    topo = from_spec(spec)
    out, engs = [], []
    for lean in (True, False):
        pol = make_vc_policy(m.vc_policy, topo, m.vcs)
        eng = FlitEngine(topo, make_router(rname, topo), m, pol, record_hops=record_hops,
                         max_steps=max_steps, seed=3, **kw)  # fmt: skip
        eng.iq_lean = lean
        out.append(eng.run(Packets(rows)))
        engs.append(eng)
    return out, engs


def same(a, b):
    assert a.steps == b.steps
    for f in ("counters", "packets", "injected_ids", "link_load"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.shape == y.shape and np.array_equal(x, y), f
    if a.hop_rows is not None or b.hop_rows is not None:
        assert np.array_equal(a.hop_rows, b.hop_rows)
    assert a.deadlock == b.deadlock
    assert a.stuck == b.stuck


CASES = [  # network, router, flits, VCs, slots, packets, steps
    ("mesh:4,2", "dor", 1, 4, 8, 300, 200),
    ("mesh:4,2", "dor", 4, 2, 4, 400, 100),
    ("mesh:5,2", "dor", 3, 1, 2, 300, 60),
    ("torus:4,2", "dor", 2, 2, 4, 300, 100),
    ("hypercube:4", "hypercube-ecube", 5, 4, 3, 500, 100),
    ("hypercube:6", "anynet-min", 2, 1, 2, 3000, 30),
    ("mesh:4,2", "dor", 2, 2, 2, 3000, 40),
    ("ms:3,2", "ms-two-phase", 3, 2, 4, 800, 100),
    ("star:4", "star-greedy", 2, 3, 4, 600, 100),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100),
    ("ms:3,2", "anynet-min", 4, 4, 4, 1500, 150),
    ("ms:2,2", "anynet-min", 16, 2, 8, 300, 200),
]


POLICIES = [  # network, router, VC policy, flits, VCs, slots, packets, steps
    ("torus:4,2", "dor", "dateline", 4, 4, 4, 600, 100),
    ("torus:5,2", "dor", "dateline", 2, 2, 3, 800, 60),
    ("mesh:4,2", "dor", "hops", 2, 8, 2, 500, 80),
    ("hypercube:4", "hypercube-ecube", "hops", 3, 5, 4, 400, 100),
    ("star:4", "star-greedy", "negative-hop", 4, 4, 2, 500, 100),
]


@pytest.mark.parametrize("case", POLICIES, ids=[f"{c[0]}-{c[2]}" for c in POLICIES])
def test_lean_vc_policies(case):
    """The VC policies' ranges (``route_head``'s) on the lean path, as the general path's."""
    spec, rname, pol, fl, vcs, bs, count, span = case
    topo = from_spec(spec)
    rows = traffic(topo.num_nodes, count, span, seed=fl, self_too=False)
    m = iq_model(topo, flits=fl, vcs=vcs, vc_buffer=bs, vc_policy=pol)
    (a, b), (ea, eb) = both(spec, rname, rows, m, record_hops=True)
    assert ea.steps_path == iq_lean_run.LEAN_PATH
    same(a, b)


MESHC = {"routing_delay": 0, "credit_delay": 2, "wait_for_tail_credit": 1}  # meshconfig's
WIDE = [  # network, router, flits, VCs, slots, packets, steps, keys
    ("mesh:4,2", "dor", 1, 16, 8, 400, 200, MESHC),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, MESHC),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, MESHC),
    ("mesh:5,2", "dor", 3, 2, 2, 800, 60, MESHC),
    ("torus:4,2", "dor", 2, 2, 4, 800, 100, MESHC),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, MESHC),
    ("ms:2,2", "anynet-min", 6, 2, 8, 600, 100, MESHC),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, {"routing_delay": 0}),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, {"credit_delay": 3}),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, {"wait_for_tail_credit": 1}),
    ("torus:4,2", "dor", 3, 2, 3, 1500, 100, {"credit_delay": 1, "wait_for_tail_credit": 1}),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, alloc_iters=2)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, alloc_iters=2)),
    ("mesh:4,2", "dor", 2, 4, 2, 3000, 100, {"alloc_iters": 3}),
    ("hypercube:5", "anynet-min", 2, 4, 4, 2000, 60, {"alloc_iters": 2}),
    ("ms:2,2", "anynet-min", 1, 8, 8, 1500, 100, dict(MESHC, alloc_iters=2)),
]


def _ids(cases: list) -> list[str]:
    """A keyed case's test id: network, router, flits, VCs, packets and its iq keys."""
    return [f"{c[0]}-{c[1]}-L{c[2]}-V{c[3]}-{c[5]}-" + ",".join(f"{k}{v}" for k, v in c[7].items())
            for c in cases]  # fmt: skip


@pytest.mark.parametrize("case", WIDE, ids=_ids(WIDE))
def test_lean_widened_keys(case):
    """Lookahead routing, ``credit_delay``, ``wait_for_tail_credit`` and ``alloc_iters``
    (meshconfig's keys) on the lean path, as the general path's, light to saturated."""
    _lean_as_general(case)


def _lean_as_general(case: tuple) -> None:
    """``case`` (network, router, flits, VCs, slots, packets, steps, keys) on the lean path,
    every packet delivered, the record the general path's."""
    spec, rname, fl, vcs, bs, count, span, keys = case
    topo = from_spec(spec)
    rows = traffic(topo.num_nodes, count, span, seed=fl + vcs, self_too=False)
    m = iq_model(topo, flits=fl, vcs=vcs, vc_buffer=bs, **keys)
    (a, b), (ea, eb) = both(spec, rname, rows, m, record_hops=True)
    assert ea.steps_path == iq_lean_run.LEAN_PATH
    assert (a.packets[:, 4] >= 0).all()
    same(a, b)


ISP = [  # input speedup (mesh88_lat's 2): network, router, flits, VCs, slots, packets, steps, keys
    ("mesh:4,2", "dor", 20, 8, 8, 60, 200, dict(MESHC, input_speedup=2)),  # light
    ("mesh:4,2", "dor", 20, 8, 8, 600, 200, dict(MESHC, input_speedup=2)),  # saturated
    ("mesh:4,2", "dor", 1, 8, 8, 3000, 150, dict(MESHC, input_speedup=2, alloc_iters=2)),
    ("mesh:4,2", "dor", 4, 3, 4, 1500, 100, {"input_speedup": 2}),  # VCs not a multiple
    ("mesh:5,2", "dor", 3, 1, 2, 800, 60, {"input_speedup": 2}),  # more inputs than VCs
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, {"input_speedup": 3}),
    ("torus:4,2", "dor", 5, 4, 4, 800, 100, dict(MESHC, input_speedup=2)),
    ("hypercube:4", "hypercube-ecube", 2, 4, 3, 1500, 100, {"input_speedup": 2}),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(MESHC, input_speedup=2)),
    ("ms:2,2", "anynet-min", 6, 4, 8, 600, 100, {"input_speedup": 2, "alloc_iters": 2}),
]


@pytest.mark.parametrize("case", ISP, ids=_ids(ISP))
def test_lean_input_speedup(case):
    """Input speedup (a port's ``isp`` crossbar inputs, VC ``v`` on input ``v % isp``, a VC
    pointer each) on the lean path, as the general path's, light to saturated."""
    _lean_as_general(case)


SP = {"speculative": 1}
SPEC = [  # speculation: network, router, flits, VCs, slots, packets, steps, keys
    ("mesh:4,2", "dor", 1, 4, 8, 100, 200, SP),  # light
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, SP),  # saturated
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **SP)),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, alloc_iters=2, **SP)),
    ("mesh:5,2", "dor", 3, 1, 2, 800, 60, SP),
    ("torus:4,2", "dor", 2, 2, 4, 800, 100, dict(MESHC, **SP)),
    ("torus:4,2", "dor", 16, 4, 4, 300, 100, SP),
    ("hypercube:4", "hypercube-ecube", 5, 4, 3, 500, 100, SP),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(MESHC, **SP)),
    ("ms:2,2", "anynet-min", 6, 4, 8, 600, 100, dict(SP, alloc_iters=2)),
    ("mesh:4,2", "dor", 20, 8, 8, 600, 200, dict(MESHC, input_speedup=2, **SP)),
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, dict(SP, input_speedup=3)),
]


@pytest.mark.parametrize("case", SPEC, ids=_ids(SPEC))
def test_lean_speculative(case):
    """Speculation (a head in VC allocation bids for the switch below the others, its grant
    held only if VC allocation gave it a VC with a credit in the same cycle) on the lean
    path, as the general path's, light to saturated."""
    _lean_as_general(case)


OS = {"output_speedup": 2}
OSPS = dict(OS, speculative=1)
OSP = [  # output speedup (and speculation): network, router, flits, VCs, slots, packets, steps
    ("mesh:4,2", "dor", 4, 4, 4, 100, 200, OS),  # light
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, OS),  # saturated
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, dict(MESHC, **OSPS)),  # bench_iq's mesh4-osp2
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, dict(MESHC, alloc_iters=2, **OSPS)),
    ("mesh:5,2", "dor", 3, 1, 2, 800, 60, OS),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, dict(OS, output_speedup=3)),
    ("torus:4,2", "dor", 2, 2, 4, 800, 100, dict(MESHC, **OS)),
    ("torus:4,2", "dor", 16, 4, 4, 300, 100, OSPS),
    ("hypercube:4", "hypercube-ecube", 5, 4, 3, 500, 100, OSPS),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, dict(MESHC, **OS)),
    ("ms:2,2", "anynet-min", 6, 4, 8, 600, 100, dict(OS, alloc_iters=2)),
    ("ms:2,2", "anynet-min", 2, 4, 4, 1500, 100, dict(MESHC, **OSPS)),
    ("mesh:4,2", "dor", 20, 8, 8, 600, 200, dict(MESHC, input_speedup=2, **OSPS)),
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, dict(OS, input_speedup=2)),
]


@pytest.mark.parametrize("case", OSP, ids=_ids(OSP))
def test_lean_output_speedup(case):
    """Output speedup (``osp`` crossbar outputs a port, output queues filled in switch
    allocation's queue order, one flit a cycle sent) on the lean path, with and without
    speculation, as the general path's, light to saturated."""
    _lean_as_general(case)


def test_lean_output_speedup_deadlock():
    """A run that deadlocks under output speedup and speculation (``anynet-min`` on ms:2,2
    with 2 VCs: it does without them too) stops moving on the lean path; the general path
    runs it, and both report the same."""
    topo = from_spec("ms:2,2")
    rows = traffic(topo.num_nodes, 1500, 100, seed=4, self_too=False)
    m = iq_model(topo, flits=2, vcs=2, vc_buffer=4, **dict(MESHC, **OSPS))
    (a, b), (ea, _) = both("ms:2,2", "anynet-min", rows, m, record_hops=True)
    assert a.deadlock is not None
    assert ea.steps_path.endswith("general path (stopped moving)")
    same(a, b)


@pytest.mark.parametrize("keys", [{}, MESHC, dict(MESHC, **OSPS)], ids=["default", "meshc", "osp"])
def test_lean_in_flight_at_max_steps(keys):
    """A run cut at ``max_steps`` with packets in flight stays on the lean path: its live
    rows (where each head is) and stuck packets as the general path's."""
    _cut_as_general(keys)


def _cut_as_general(keys: dict) -> None:
    """A run cut at ``max_steps`` with ``keys`` (test_iq_lean_stages, test_iq_lean_speedup
    take it with their own keys: each file compiles its own copies)."""
    topo = from_spec("mesh:4,2")
    rows = traffic(topo.num_nodes, 3000, 100, seed=5, self_too=False)
    m = iq_model(topo, flits=3, vcs=2, vc_buffer=4, **keys)
    (a, b), (ea, _) = both("mesh:4,2", "dor", rows, m, max_steps=80, record_hops=True)
    assert ea.steps_path == iq_lean_run.LEAN_PATH
    assert (a.packets[:, 4] < 0).sum() > 100 and a.stuck
    same(a, b)


@pytest.mark.parametrize("hops", [False, True])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-L{c[2]}-V{c[3]}" for c in CASES])
def test_lean_equals_general(case, hops):
    spec, rname, fl, vcs, bs, count, span = case
    topo = from_spec(spec)
    rows = traffic(topo.num_nodes, count, span, seed=fl + vcs)
    m = iq_model(topo, flits=fl, vcs=vcs, vc_buffer=bs)
    (a, b), (ea, eb) = both(spec, rname, rows, m, record_hops=hops)
    assert ea.steps_path == iq_lean_run.LEAN_PATH
    assert "general path (asked for" in eb.steps_path
    assert (a.packets[:, 4] >= 0).all()
    same(a, b)


@pytest.mark.parametrize("name", ["ring-one-vc", "ring-two-vcs"])
def test_lean_deadlock_goes_to_the_general_path(name):
    """A run that deadlocks (the look while injecting, or the stall after) leaves the lean
    path: the general path runs it, names why, and reports as before."""
    from test_iq_deadlock import run_case

    rec, eng = run_case(name)
    assert rec.deadlock is not None
    assert eng.steps_path.endswith("general path (stopped moving)")
    s, prm, *_ = eng.iq_state  # the general path's own
    assert s.hv.shape[0] == prm.nnode * prm.nport * prm.nvc


@pytest.mark.parametrize("keys", [{}, OSPS], ids=["default", "osp-spec"])
def test_lean_look_while_injecting(keys):
    """The look while injecting finds the deadlock on the general path after the lean run
    stopped moving: the same report, found while injecting (output speedup too)."""
    topo = from_spec("torus:4,1")
    n = topo.num_nodes
    rows = [(i, i % n, (i % n + 2) % n, i // n) for i in range(4 * 40)]
    m = iq_model(topo, flits=8, vcs=1, vc_buffer=1, **keys)
    (a, b), (ea, eb) = both("torus:4,1", "dor", rows, m, record_hops=True)
    assert a.deadlock is not None and a.deadlock == b.deadlock
    assert a.deadlock["found"] == "check" and a.deadlock["step"] < 40  # while injecting
    same(a, b)
    assert "stopped moving" in ea.steps_path


def test_lean_state_rebuilt():
    """``eng.iq_state`` of a lean run is the general path's (rebuilt at its first read)."""
    topo = from_spec("mesh:3,2")
    rows = traffic(topo.num_nodes, 200, 50, seed=1)
    m = iq_model(topo, flits=2, vcs=2, vc_buffer=4)
    (a, b), (ea, eb) = both("mesh:3,2", "dor", rows, m)
    assert ea.steps_path == iq_lean_run.LEAN_PATH
    sa, pa, *_, ta = ea.iq_state
    sb, pb, *_, tb = eb.iq_state
    assert ta == tb == a.steps and pa == pb
    for f in sa._fields:
        assert np.array_equal(getattr(sa, f), getattr(sb, f)), f
    assert ea.steps_path == iq_lean_run.LEAN_PATH  # the rebuild leaves the engine's names


def test_json_names_the_path(run_mpinet):
    """``mpinet run --json`` names the path in switching.steps: the lean path on its keys
    (``jobs/switching/wormhole.toml``),
    the general path and why on others."""
    import json
    from pathlib import Path

    job = str(Path(__file__).resolve().parent.parent / "jobs" / "switching" / "wormhole.toml")
    base = ["run", job, "--set", "model.router=iq", "--json"]
    got = json.loads(run_mpinet(base).stdout)
    assert got["switching"]["steps"] == iq_lean_run.LEAN_PATH
    got = json.loads(run_mpinet([*base, "--set", "model.flits=65"]).stdout)
    assert "general path (65 flits a packet" in got["switching"]["steps"]


def test_lean_load_window_and_progress():
    """The load window's link loads and the progress lines are the general path's."""
    topo = from_spec("hypercube:5")
    rows = traffic(topo.num_nodes, 1500, 120, seed=7)
    m = iq_model(topo, flits=4, vcs=2, vc_buffer=4)
    lines = ([], [])
    out = []
    for i, lean in enumerate((True, False)):
        pol = make_vc_policy(m.vc_policy, topo, m.vcs)
        eng = FlitEngine(topo, make_router("anynet-min", topo), m, pol, max_steps=5000, seed=3,
                         load_window=(40, 90),
                         progress=lambda *a, i=i: lines[i].append(a))  # fmt: skip
        eng.iq_lean = lean
        out.append(eng.run(Packets(rows)))
    same(*out)
    assert lines[0] == lines[1] and len(lines[0]) == out[0].steps + 1  # cycles 0 ..
    assert 0 < out[0].link_load.sum() < out[0].counters[:, 0].sum()


def test_warmup_compiles_both_paths(run_mpinet):
    """``mpinet warmup``'s iq jobs take the lean path (six of its compiled blocks: plain,
    with speculation and output speedup, with the prefetches, with separable allocators, with
    stages of several cycles, with internal speedup) and the general one, so all compile."""
    import json

    from mpinet.cli.warmup import BASE, JOBS, big_hypercube

    paths = []
    for what, keys in JOBS:
        if "iq router" in what:
            keys = {k: v.format(big=big_hypercube(1)) if isinstance(v, str) else v
                    for k, v in keys.items()}  # fmt: skip
            sets = [a for k, v in {**BASE, **keys}.items() for a in ("--set", f"{k}={v}")]
            got = json.loads(run_mpinet(["run", *sets, "--json"]).stdout)
            paths.append(got["switching"]["steps"])
    assert paths[:6] == [iq_lean_run.LEAN_PATH] * 6 and len(paths) == 7
    assert paths[6].startswith("compiled steps (iq router): general path (65 flits a packet")
