"""Settings that cannot take effect are refused before any work (issue 32 item 5).

- ``vc_policy = "dateline"`` orders the VCs of every network that is one ring (a file
  network of a cycle, star:3, scc:3, hypercube:2) as it does CCC's and SCC's, and is
  refused where there is no ring to cut; the run and ``mpinet deadlock`` agree;
- packet-engine buffer keys given to a flit job are refused, 0 as well as 4;
- packets that cannot arrive within ``max_steps`` are refused, naming both numbers.
"""

from __future__ import annotations

import re

import networkx as nx
import numpy as np
import pytest

from mpinet.deadlock.vc import analyze_vc
from mpinet.errors import JobError, RoutingError
from mpinet.jobs import load_job, parse_set, settings
from mpinet.jobs.execute import execute, plan
from mpinet.jobs.settings import check_settings
from mpinet.netfile import load_topology as from_spec
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.routing.walk import walk

RING = 8


def ring_file(tmp_path, n: int = RING, path: bool = False) -> str:
    """An edge list of the cycle 0-1-...-(n-1)-0 (or the path, without the last edge)."""
    f = tmp_path / ("path.edges" if path else "ring.edges")
    f.write_text("".join(f"{i} {(i + 1) % n}\n" for i in range(n - 1 if path else n)))
    return f"file:{f}"


def job(*items: str):
    return load_job(None, [parse_set(s) for s in items])


def flit_job(spec: str, *extra: str, seed: int = 1):
    return job(f"topology={spec}", "workload.packets=16", "model.switching=wormhole",
               "model.flits=8", f"seed={seed}", "trace.level=none", *extra)  # fmt: skip


# -- dateline ---------------------------------------------------------------------------------
def test_dateline_on_the_ring_is_deadlock_free_where_one_vc_per_hop_deadlocks(tmp_path):
    """The 8-ring of issue 32: dateline used VC 0 for every hop, the same as one VC; now
    every seed of 8 delivers every packet with 2 VCs, and every seed deadlocks with 1."""
    spec = ring_file(tmp_path)
    for seed in range(1, 9):
        one = execute(plan(flit_job(spec, "model.vcs=1", seed=seed)), None)["stats"]
        assert one.get("deadlock") is not None and not one["ok"], seed
        res = execute(plan(flit_job(spec, "model.vcs=2", "model.vc_policy=dateline",
                                    seed=seed)), None)["stats"]  # fmt: skip
        assert res.get("deadlock") is None and res["ok"], seed
        assert res["delivered"] == res["injected"] == 16 * RING


def _ring_vcs(n: int, cut: tuple[int, int], path: list[int]) -> list[int]:
    """The VC of each hop of a route, counted independently: crossings of the cut so far."""
    out, k = [], 0
    for a, b in zip(path[:-1], path[1:], strict=True):
        assert (b - a) % n in (1, n - 1)  # a ring hop
        k += {a, b} == set(cut)
        out.append(k)
    return out


@pytest.mark.parametrize("spec", ["ring", "star:3", "scc:3", "hypercube:2"])
def test_dateline_on_one_ring_cuts_it_at_node_0(tmp_path, spec):
    """Every network that is one ring: the VC of each hop is the dateline crossings so far
    (checked along each route against a cycle found by networkx), and the (link, VC)
    graph is acyclic with the 2 VCs the policy asks for (on the 8-ring ``any`` has a cycle)."""
    t = from_spec(ring_file(tmp_path) if spec == "ring" else spec)
    n = t.num_nodes
    nb = t.neighbors(np.arange(n))
    g = nx.Graph([(int(u), int(v)) for u in range(n) for v in nb[u] if v >= 0])
    order = [u for u, _ in nx.find_cycle(g, 0)]  # the ring, from node 0
    assert sorted(order) == list(range(n)) and all(d == 2 for _, d in g.degree)
    pos = {u: i for i, u in enumerate(order)}
    pol = make_vc_policy("dateline", t, 2)
    assert pol.cut == (0, int(nb[0, 0]))
    router = make_router("shortest", t)
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    paths = walk(t, router, src[keep], dst[keep], paths=True)["paths"]
    for row in paths:
        path = [int(x) for x in row if x >= 0]
        state = np.zeros((1, 1), np.int64)
        got = []
        for h, (a, b) in enumerate(zip(path[:-1], path[1:], strict=True)):
            lo, hi, state = pol.hop([a], [b], [h], state)
            assert hi[0] == lo[0] + 1
            got.append(int(lo[0]))
        want = _ring_vcs(n, (pos[0], pos[int(nb[0, 0])]), [pos[x] for x in path])
        assert got == want, path
    rep = analyze_vc(t, router, "dateline").report
    assert rep["acyclic"] and rep["smallest_vcs"] == 2
    if spec == "ring":  # an 8-ring's shortest routes close the cycle (star:3's do not)
        assert not analyze_vc(t, router, "any", vcs=2).report["acyclic"]


@pytest.mark.parametrize(
    ("spec", "why"),
    [("hypercube:3", "has nodes of degree 3, not one ring"),
     ("star:4", "has nodes of degree 3, not one ring"),
     ("ms:2,2", "has nodes of degree 3, not one ring"),
     ("path", r"has nodes of degree 1 \(a path\), not one ring")],
)  # fmt: skip
def test_dateline_without_a_ring_is_refused_by_run_and_by_deadlock(tmp_path, spec, why):
    """Refused in the plan, before the workload is built, and by the static analysis with
    the same words: it names where dateline applies and the policies that work here."""
    spec = ring_file(tmp_path, 4, path=True) if spec == "path" else spec
    t = from_spec(spec)
    msg = (rf"vc_policy 'dateline' orders nothing on {t.spec}: it {why}, so every hop would "
           r"take VC 0; dateline applies to ccc:N, scc:N \(N >= 4\) and networks that are one "
           r"ring .*; use vc_policy 'hops' or 'negative-hop' here")  # fmt: skip
    with pytest.raises(RoutingError, match=msg):
        plan(flit_job(spec, "model.vcs=2", "model.vc_policy=dateline"))
    with pytest.raises(RoutingError, match=msg):
        analyze_vc(t, make_router("shortest", t), "dateline")


def test_dateline_on_ccc_and_scc_is_unchanged():
    """CCC and SCC keep their own rule: the crossings of each ring's wrap-around link."""
    for spec in ("ccc:3", "scc:4"):
        pol = make_vc_policy("dateline", from_spec(spec), 2)
        assert pol.cut is None and pol.ring == 3


# -- packet-engine keys with the flit engine ---------------------------------------------------
MODES = ("store-and-forward", "cut-through", "wormhole")
#: each packet-engine key the flit engine would not read, with values that used to pass
PACKET_KEYS = [("model.buffer", "0"), ("model.buffer", "4"), ("model.buffer_classes", "none"),
               ("model.buffer_classes", "hops"), ("model.max_hops", "8"),
               ("model.order", "fifo"), ("model.queues", "auto")]  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("key", "value"), PACKET_KEYS)
def test_packet_keys_given_to_a_flit_job_are_refused_before_any_work(mode, key, value):
    """0 as well as 4: a key given is refused whatever its value, by the settings check
    that runs before the network's memory is planned or the workload built."""
    flits = "model.flits=4" if mode != "store-and-forward" else "model.vcs=2"
    j = job("topology=star:4", f"model.switching={mode}", flits, f"{key}={value}")
    with pytest.raises(JobError, match=rf"^<flags>: {re.escape(key)} has no effect with "
                                       r"model\.(flits|switching|vcs)"):  # fmt: skip
        check_settings(j)
    with pytest.raises(JobError, match=rf"{re.escape(key)} has no effect"):
        plan(j)


def test_packet_keys_stay_with_the_packet_engine_and_defaults_with_the_flit_engine():
    """Store-and-forward of one-flit packets given explicitly is the packet engine: its
    buffers apply; a flit job that does not give them runs with their defaults."""
    p = plan(job("topology=star:4", "model.switching=store-and-forward", "model.buffer=4",
                 "model.buffer_classes=hops", "model.order=oldest-first"))  # fmt: skip
    assert not p.model.flit and p.model.buffer == 4 and p.model.classes == "hops"
    p = plan(job("topology=star:4", "model.switching=wormhole", "model.flits=4"))
    assert p.model.flit and p.model.buffer == 0 and p.model.vc_buffer == 4


@pytest.mark.parametrize("key", ["model.buffer=0", "model.buffer=4"])
def test_the_refusal_says_what_to_use(key):
    msg = (r"model\.buffer has no effect with model\.flits: model\.buffer and "
           r"model\.buffer_classes are packet buffers of the store-and-forward engine; with "
           r"switching keys use model\.vc_buffer \(flit slots per virtual channel\) and "
           r"model\.vc_policy = 'hops' instead$")  # fmt: skip
    with pytest.raises(JobError, match=msg):
        check_settings(job("topology=star:4", "model.flits=4", key))


# -- packets that cannot arrive within max_steps --------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("flits", "cap"), [(8, 1), (8, 2), (9, 2), (1000, 1)])
def test_packets_that_cannot_arrive_are_refused_exactly_where_the_run_would_fail(
    mode, flits, cap, monkeypatch
):
    """hypercube:1 (two nodes, every route one hop): with max_steps = ceil(L / c) the run
    delivers every packet; one step fewer is refused naming both numbers, and the same run
    with the check switched off indeed delivers nothing (the bound is the engine's)."""
    need = -(-flits // cap)

    def j(steps: int):
        return job("topology=hypercube:1", f"model.switching={mode}", f"model.flits={flits}",
                   f"model.vc_buffer={flits}", f"model.capacity={{cube = {cap}}}",
                   f"max_steps={steps}", "trace.level=none")  # fmt: skip

    if flits <= 9:
        res = execute(plan(j(need)), None)["stats"]
        assert res["ok"] and res["delivered"] == res["injected"] == 2
    msg = (rf"model\.flits = {flits:,} cannot arrive within max_steps = {need - 1:,}: even "
           rf"over one link a packet needs ceil\(L / c\) = {need:,} steps \(L = {flits:,} "
           rf"flits, c = {cap} flit\(s\) per step")  # fmt: skip
    with pytest.raises(JobError, match=msg):
        check_settings(j(need - 1))
    if flits <= 9:
        monkeypatch.setattr(settings, "_check_arrival", lambda job: None)
        res = execute(plan(j(need - 1)), None)["stats"]
        assert not res["ok"] and res["delivered"] == 0


def test_one_flit_packets_are_never_refused_for_max_steps():
    check_settings(job("topology=star:4", "max_steps=1"))
    check_settings(job("topology=star:4", "model.switching=wormhole", "max_steps=1"))


@pytest.mark.parametrize(("mode", "flits", "cap"), [("wormhole", 8, 1), ("cut-through", 9, 2),
                                                    ("store-and-forward", 16, 2)])  # fmt: skip
def test_a_sweep_drain_no_late_window_packet_can_meet_is_refused(mode, flits, cap):
    """A window packet injected in its last step arrives ``ceil(L / c)`` steps later at the
    earliest: a drain shorter than that minus one is refused before any load runs."""
    from mpinet.jobs.sweep import check_plan
    from mpinet.jobs.sweep_settings import Settings, parse_rates

    need = -(-flits // cap)
    p = plan(job("topology=hypercube:1", f"model.switching={mode}", f"model.flits={flits}",
                 f"model.vc_buffer={flits}", f"model.capacity={{cube = {cap}}}",
                 "trace.level=none"))  # fmt: skip
    rates = parse_rates("0.01")
    check_plan(p, rates, Settings(warmup=10, measure=50, drain=need - 1))
    msg = (rf"sweep drain \(--drain\) = {need - 2} is too short for packets of {flits} flits: "
           rf"one needs at least ceil\(L / c\) = {need} steps \(c = {cap} flit\(s\) per step "
           rf".*raise --drain to at least {need - 1}$")  # fmt: skip
    with pytest.raises(JobError, match=msg):
        check_plan(p, rates, Settings(warmup=10, measure=50, drain=need - 2))
