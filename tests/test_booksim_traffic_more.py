"""BookSim's hotspot lists, on_off's start states, and mpinet sweep with on_off and with
loads in flits, against implementations written here from src/traffic.cpp and
src/injection.cpp (BookSim's walk over the cumulative rates, its on/off chain).

The draws are mpinet's (keyed by seed and packet or node and step), so the references
take the same uniform numbers from :mod:`mpinet.rng` and restate what BookSim does with
them; the frequencies are also checked against the rates alone.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from test_flit_engine import check_on_every_rank

from mpinet import rng
from mpinet.errors import JobError, WorkloadError
from mpinet.jobs import load_job
from mpinet.jobs.execute import plan
from mpinet.jobs.sweep import check_plan, sweep
from mpinet.jobs.sweep_settings import Settings, parse_rates
from mpinet.topology import from_spec
from mpinet.workloads.unicast import Unicast

STREAM_ONOFF, STREAM_HOTSPOT = 21, 23  # booksim_traffic's streams (mpinet.rng)


def booksim_hotspot(pct: int, nodes: list[int], rates: list[int]) -> int:
    """HotSpotTrafficPattern::dest after its RandomInt: walk the rates down."""
    for node, limit in zip(nodes[:-1], rates[:-1], strict=True):
        if limit > pct:
            return node
        pct -= limit
    assert rates[-1] > pct
    return nodes[-1]


def all_injections(w: Unicast, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = [w.injections(0, n, t) for t in range(w.steps)]
    return tuple(np.concatenate([r[i] for r in rows]) for i in range(3))


def test_hotspot_list_is_booksims_weighted_walk():
    topo = from_spec("mesh:4,2")
    nodes, rates = [3, 9, 14], [2, 5]  # BookSim resizes the rates with the last: 2, 5, 5
    w = Unicast(topo, "booksim-hotspot", injection="bernoulli", rate=1.0, steps=500, seed=4,
                hotspots=(nodes, rates))  # fmt: skip
    pid, src, dst = all_injections(w, 16)
    assert pid.size == 16 * 500 and set(src.tolist()) == set(range(16))
    full = [2, 5, 5]
    pct = rng.integers(4, pid, sum(full), 0, STREAM_HOTSPOT)
    want = [booksim_hotspot(int(p), nodes, full) for p in pct]
    assert dst.tolist() == want
    for node, r in zip(nodes, full, strict=True):  # and the shares are the rates'
        p = r / 12
        share = np.mean(dst == node)
        assert abs(share - p) < 5 * math.sqrt(p * (1 - p) / pid.size)


def test_one_hotspot_takes_every_packet_and_a_negative_one_is_drawn_from_the_seed():
    topo = from_spec("torus:4,2")
    w = Unicast(topo, "booksim-hotspot", hotspots=([7], None))
    assert (w.injections(0, 16, 0)[2] == 7).all()
    drawn = [Unicast(topo, "booksim-hotspot", seed=s, hotspots=([-1], None)).target.nodes[0]
             for s in range(40)]  # fmt: skip
    assert all(0 <= d < 16 for d in drawn) and len(set(drawn)) > 4
    again = Unicast(topo, "booksim-hotspot", seed=3, hotspots=([-1], None)).target.nodes[0]
    assert again == drawn[3]


@pytest.mark.parametrize("hot,match", [
    (([1, 2], [1, 2, 3]), "3 entries for 2 hotspot"),
    (([1, 2], [1, 0]), r"hotspot_rates\[1\] must be an integer in \[1,"),
    (([1, 16], None), r"hotspot_nodes\[1\] must be a node id in \[0, 15\]"),
    (([], None), "at least one node"),
])  # fmt: skip
def test_hotspot_lists_refused(hot, match):
    with pytest.raises(WorkloadError, match=match):
        Unicast(from_spec("mesh:4,2"), "booksim-hotspot", hotspots=hot)


def test_hotspot_list_and_target_together_refused():
    with pytest.raises(WorkloadError, match="target and workload.hotspot_nodes"):
        Unicast(from_spec("mesh:4,2"), "booksim-hotspot", target=2, hotspots=([1], None))


def chain(n, steps, seed, alpha, beta, r1, initial):
    """OnOffInjectionProcess::test for every node and step, from ``initial``."""
    state = [bool(initial[min(v, len(initial) - 1)]) for v in range(n)]
    out = []
    for t in range(steps):
        u = rng.uniform(seed, np.arange(n), t, STREAM_ONOFF)
        fire = rng.uniform(seed, t * n + np.arange(n), 0, rng.STREAM_INJECT)
        for v in range(n):
            state[v] = (u[v] >= beta) if state[v] else (u[v] < alpha)
            if state[v] and fire[v] < r1:
                out.append(t * n + v)
    return out


def test_on_off_start_states_are_the_given_list_resized_with_its_last():
    topo = from_spec("mesh:3,2")
    burst, init = (0.1, 0.3, -1.0), [1, 0, 0, 1]  # nodes 3..8 start on, as node 3
    w = Unicast(topo, "booksim-uniform", injection="on_off", rate=0.1, steps=60, seed=2,
                burst=burst, burst_initial=init)  # fmt: skip
    pid, _, _ = all_injections(w, 9)
    r1 = 0.1 * (0.1 + 0.3) / 0.1
    assert sorted(pid.tolist()) == chain(9, 60, 2, 0.1, 0.3, r1, init)


def test_on_off_nodes_that_start_off_and_never_turn_on_never_send():
    # beta = 0 derives alpha = 0: a node stays in its start state for ever
    w = Unicast(from_spec("mesh:4,2"), "booksim-uniform", injection="on_off", rate=0.1,
                steps=400, burst=(-1.0, 0.0, 0.5), burst_initial=[0, 1, 0])  # fmt: skip
    _, src, _ = all_injections(w, 16)
    assert set(src.tolist()) == {1}
    assert abs(src.size / 400 - 0.5) < 5 * math.sqrt(0.25 / 400)


def test_on_off_start_states_refused():
    with pytest.raises(WorkloadError, match=r"burst_initial\[1\] must be 0 \(off\) or 1"):
        Unicast(from_spec("mesh:4,2"), injection="on_off", rate=0.1, steps=5,
                burst_initial=[1, 2])  # fmt: skip
    with pytest.raises(WorkloadError, match="17 entries for 16 nodes"):
        Unicast(from_spec("mesh:4,2"), injection="on_off", rate=0.1, steps=5,
                burst_initial=[1] * 17)  # fmt: skip


ONOFF = {"workload.kind": "booksim-uniform", "workload.injection": "on_off",
         "workload.rate": 0.1, "workload.steps": 10, "workload.burst_alpha": 0.2,
         "workload.rate_uses_flits": 1, "model.switching": "wormhole", "model.flits": 4,
         "model.vcs": 2, "seed": 5}  # fmt: skip


def _plan(spec: str, **keys):
    sets = [(["topology"], spec), (["router", "name"], "dor"), (["trace", "level"], "none")]
    return plan(load_job(None, sets + [(k.split("."), v) for k, v in keys.items()]))


def test_sweep_runs_on_off_with_loads_in_flits():
    p = _plan("mesh:4,2", **ONOFF)
    s = Settings(warmup=50, measure=300, drain=300)
    res = sweep(p, parse_rates("0.2,0.6"), s, None)
    assert res["settings"]["injection"] == {
        "process": "on_off", "rate_unit": "flits", "burst_alpha": 0.2, "burst_beta": 0.5,
        "burst_r1": -1.0, "burst_initial": None}  # fmt: skip
    for pt, load in zip(res["points"], (0.2, 0.6), strict=True):
        rate = load / 4  # packets per node per step
        assert pt["offered"] == rate and pt["offered_flits"] == load
        # the window's packets are those of BookSim's chain at that rate (r1 derived
        # from it, alpha and beta given), counted independently
        r1 = rate * (0.2 + 0.5) / 0.2
        pids = np.array(chain(16, 350, 5, 0.2, 0.5, r1, _coins(5, 16)))
        win = pids[(pids // 16 >= 50) & (pids // 16 < 350)]
        assert pt["window_packets"] == win.size
        assert pt["injected"] == win.size / (16 * 300)
        assert pt["injected_flits"] == 4 * pt["injected"]
        assert pt["checks_ok"]


def _coins(seed, n):
    """on_off's fair start states (the default), drawn as booksim_traffic draws them."""
    return (rng.uniform(seed, np.arange(n), 0, 22) < 0.5).astype(int).tolist()


def test_sweep_bernoulli_in_flits_runs_at_load_over_l():
    keys = {k: v for k, v in ONOFF.items() if "burst" not in k}
    keys["workload.injection"] = "bernoulli"
    s = Settings(warmup=20, measure=200, drain=200)
    flits = sweep(_plan("mesh:4,2", **keys), parse_rates("0.4"), s, None)["points"][0]
    keys["workload.rate_uses_flits"] = 0
    packets = sweep(_plan("mesh:4,2", **keys), parse_rates("0.1"), s, None)["points"][0]
    # the same Bernoulli draws at 0.1 packets per node per step: the same window
    assert flits["offered"] == packets["offered"] == 0.1
    assert flits["window_packets"] == packets["window_packets"]
    assert flits["latency"] == packets["latency"]


def test_sweep_refuses_on_off_not_a_chain_at_a_load():
    # r1 = rate * (0.1 + 0.5) / 0.1 = 6 x rate: above 1 past 1/6 packets, 2/3 flit (L = 4)
    p = _plan("mesh:4,2", **(ONOFF | {"workload.burst_alpha": 0.1}))
    with pytest.raises(JobError, match=r"at load 0.8: workload.burst_r1 derived as"):
        check_plan(p, parse_rates("0.4,0.8"), Settings(), 1)
    check_plan(p, parse_rates("0.4,0.6"), Settings(), 1)  # 0.15 packets: r1 = 0.9


@pytest.mark.mpi
def test_on_off_sweep_in_flits_the_same_on_1_and_2_ranks():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    p = _plan("mesh:4,2", **ONOFF)
    s = Settings(warmup=50, measure=300, drain=300)
    many = sweep(p, parse_rates("0.2,0.9"), s, comm)
    one = sweep(p, parse_rates("0.2,0.9"), s, None)
    check_on_every_rank(comm, partial(_same, many, one))


def _same(many: dict, one: dict) -> None:
    keys = ("offered", "injected", "accepted", "window_packets", "latency", "hops")
    assert [[pt[k] for k in keys] for pt in many["points"]] == [
        [pt[k] for k in keys] for pt in one["points"]
    ]


@pytest.mark.parametrize("traffic,keys", [
    ("hotspot({{0,5},{2,1}})", {"hotspot_nodes": [0, 5], "hotspot_rates": [2, 1]}),
    ("hotspot({{3,9,1}})", {"hotspot_nodes": [3, 9, 1]}),
    ("hotspot(7)", {"hotspot_nodes": [7]}),  # one parameter, no braces: one hotspot
    ("hotspot({7})", {"hotspot_nodes": [7]}),  # tokenize_str: {7} is the list (7)
    ("hotspot", {"hotspot_nodes": [-1]}),  # BookSim's default: a node drawn at random
])  # fmt: skip
def test_booksim_hotspot_parameters_read_as_traffic_cpp_reads_them(tmp_path, traffic, keys):
    from mpinet.jobs.booksim_config import read_config
    from mpinet.jobs.booksim_map import to_job

    cfg = tmp_path / "c.cfg"
    cfg.write_text("topology = mesh; k = 4; n = 2; routing_function = dim_order;\n")
    raw, _, info = to_job(read_config(str(cfg), ["router=ideal", f"traffic={traffic}"]))
    assert info["traffic"] == "booksim-hotspot"
    assert {k: raw["workload"][k] for k in raw["workload"] if k.startswith("hotspot")} == keys
