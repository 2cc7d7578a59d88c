"""The cut of mpinet's block partition, the exchange model and bench_scaling's smoke run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpinet.cli.bench_phases import TimedComm, split
from mpinet.engine.comm import SerialComm
from mpinet.engine.partition import block_bounds
from mpinet.errors import SpecError
from mpinet.topology import from_spec
from mpinet.topology.cut import block_cuts

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import scaling_model  # noqa: E402


def _owner(bounds: np.ndarray, v: int) -> int:
    r = 0
    while not bounds[r] <= v < bounds[r + 1]:
        r += 1
    return r


def _loop_cut(topo, bounds: np.ndarray) -> tuple[list[int], list[int], int]:
    """Out links and peers of every block, one link at a time."""
    size = len(bounds) - 1
    out, reach, links = [0] * size, [set() for _ in range(size)], 0
    for u in range(topo.num_nodes):
        for v in topo.neighbors([u])[0].tolist():
            if v < 0:
                continue
            links += 1
            a, b = _owner(bounds, u), _owner(bounds, v)
            if a != b:
                out[a] += 1
                reach[a].add(b)
    return out, [len(s) for s in reach], links


@pytest.mark.parametrize("spec", ["star:4", "scc:4", "ms:2,2", "fccn:2", "ccc:3"])
def test_cut_equals_a_loop_over_links(spec):
    topo = from_spec(spec)
    ranks = [1, 2, 3, 5, 7]
    got = block_cuts(topo, {r: block_bounds(topo.num_nodes, r) for r in ranks}, chunk=7)
    for r in ranks:
        out, peers, links = _loop_cut(topo, block_bounds(topo.num_nodes, r))
        assert got[r].out_links.tolist() == out
        assert got[r].peers.tolist() == peers
        assert got[r].links == links


@pytest.mark.parametrize(("d", "k"), [(6, 1), (6, 3), (8, 5)])
def test_hypercube_cut_has_its_closed_form(d, k):
    # blocks of 2^(d-k) ids fix the top k bits: each node has k links leaving its block,
    # one to each of k other blocks
    topo = from_spec(f"hypercube:{d}")
    r = 2**k
    c = block_cuts(topo, {r: block_bounds(topo.num_nodes, r)})[r]
    assert c.out_links.tolist() == [2 ** (d - k) * k] * r
    assert c.peers.tolist() == [k] * r
    assert c.fraction == pytest.approx(k / d)


def test_cut_refuses_bounds_that_are_not_a_partition():
    topo = from_spec("star:4")
    with pytest.raises(SpecError, match="bounds for 2 ranks must rise from 0 to 24"):
        block_cuts(topo, {2: np.array([0, 30, 24])})
    with pytest.raises(SpecError, match="chunk must be >= 1"):
        block_cuts(topo, {2: block_bounds(24, 2)}, chunk=0)


def test_step_model_by_hand():
    net = {"latency_s": 1.5e-6, "bandwidth_Bps": 1e10}
    exch, eff = scaling_model.step_model(100.0, 1e4, 10, net)
    assert exch == pytest.approx(15 + 1)  # 10 x 1.5 us + 10 kB / 10 GB/s
    assert eff == pytest.approx(100 / 116)


def test_compute_fit_recovers_a_plane():
    # compute per step = 0.2 us x nodes + 0.25 us x flit-hops, on two networks
    rows = [{"nodes": n, "hops": h * 10, "steps": 10, "compute_us_per_step": 0.2 * n + 0.25 * h}
            for n, h in ((5040, 3762), (3628800, 72924))]  # fmt: skip
    assert scaling_model.fit_compute(rows) == pytest.approx((0.2, 0.25))
    one = [{"nodes": 100, "hops": 4000, "steps": 10, "compute_us_per_step": 80}]
    assert scaling_model.fit_compute(one) == pytest.approx((0, 0.2))


def test_projection_by_hand():
    flit = scaling_model.FLIT
    data = {
        "measured": [
            {"engine": flit, "ranks": 1, "spec": "x", "nodes": 100, "hops": 4000, "steps": 10,
             "compute_us_per_step": 80, "cross": 0, "sent_bytes": [0]},
            {"engine": flit, "ranks": 2, "spec": "x", "nodes": 100, "hops": 4000, "steps": 10,
             "compute_us_per_step": 50, "cross": 100, "sent_bytes": [3000, 3000]},
        ],  # fmt: skip
        "cuts": {"x": {"nodes": 100, "links": 400, "ranks": {}},
                 "y": {"nodes": 1600, "links": 6400,
                       "ranks": {"16": {"out_max": 50, "out_total": 640, "peers_max": 3}}}},
        "shared_memory": {"latency_s": 1e-6, "bandwidth_Bps": 1e9},
    }  # fmt: skip
    p = scaling_model.project(data, ["y"], [16])
    m = p["inputs"]
    assert m["u"] == pytest.approx(1.0)  # 400 hops a step on 400 links
    assert m["bytes_per_cross_flit"] == pytest.approx(60)
    assert (m["t_node_us"], m["t_hop_us"]) == pytest.approx((0, 0.2))  # one 1-rank run
    row = p["rows"][0]
    assert row["compute_us"] == pytest.approx(0.2 * 6400 / 16)  # t_hop 0.2 us, 400 hops a rank
    assert row["bytes"] == pytest.approx(60 * 50)
    msgs = 3 + 2 * 4  # 3 peers + the reduction's 2 log2 16
    assert row["ib_exchange_us"] == pytest.approx(msgs * 1.5 + 3000 / 1e4)
    assert row["ib_all_exchange_us"] == pytest.approx((30 + 8) * 1.5 + 3000 / 1e4)
    assert row["shm_efficiency"] == pytest.approx(80 / (80 + msgs + 3))
    assert row["ib_flits_efficiency"] == row["ib_efficiency"]  # t_node = 0: the same
    assert row["cut_fraction"] == pytest.approx(0.1)


def test_phase_split_by_hand():
    enter = np.array([[0.0, 5.0], [2.0, 6.0]])
    leave = np.array([[3.0, 7.0], [3.0, 7.0]])
    ph = split(enter, leave, np.array([10.0, 10.0]))
    assert ph["wait"].tolist() == [3.0, 0.0]
    assert ph["exchange"].tolist() == [2.0, 2.0]
    assert ph["compute"].tolist() == [5.0, 8.0]
    # a broadcast's root left at 1.0, before rank 1 entered at 4.0: it waited 1.0, not 4.0,
    # and its phases still add up to its engine time
    ph = split(np.array([[0.0], [4.0]]), np.array([[1.0], [5.0]]), np.array([6.0, 6.0]))
    assert ph["wait"].tolist() == [1.0, 0.0] and ph["exchange"].tolist() == [0.0, 1.0]
    assert (ph["compute"] + ph["wait"] + ph["exchange"]).tolist() == [6.0, 6.0]


def test_timed_comm_notes_calls_and_bytes_and_passes_the_rest():
    tc = TimedComm(SerialComm())
    a, b = np.arange(4, dtype=np.int64), np.empty(4, dtype=np.int64)
    tc.Allreduce(a, b)
    tc.Alltoallv([a, (np.array([3]), np.array([0]))], [b, (np.array([3]), np.array([0]))])
    assert b[:3].tolist() == [0, 1, 2]
    assert [n[2:] for n in tc.notes] == [(32, "Allreduce"), (24, "Alltoallv")]
    assert tc.Get_size() == 1 and len(tc.notes) == 2  # not a communication call: not noted


@pytest.mark.slow
def test_bench_scaling_smoke_on_one_rank(tmp_path):
    out = tmp_path / "perf.md"
    out.write_text("bench_scaling.py\n<!-- BEGIN scripts/bench_scaling.py -->\n"
                   "<!-- END scripts/bench_scaling.py -->\ntail\n")  # fmt: skip
    js = tmp_path / "s.json"
    cmd = [sys.executable, str(ROOT / "scripts" / "bench_scaling.py"), "--ranks", "1",
           "--specs", "star:4", "--steps", "30", "--repeat", "1", "--project", "star:5",
           "--project-ranks", "16", "--out", str(out), "--json", str(js)]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=tmp_path)
    data = json.loads(js.read_text())
    rows = {r["engine"]: r for r in data["measured"]}
    assert set(rows) == {"wormhole L=16", "packet"}
    for r in rows.values():
        assert r["ranks"] == 1 and r["spec"] == "star:4"
        parts = r["compute"][0] + r["exchange"][0] + r["wait"][0]
        assert parts == pytest.approx(r["engine_seconds"], rel=1e-6)
    # the flit run moves what `mpinet run` moves for the same job
    sets = ["model.switching=wormhole", "model.flits=16", "model.vcs=2", "model.vc_buffer=4",
            "workload.rate=0.006", "workload.injection=bernoulli", "workload.steps=30"]  # fmt: skip
    run = [sys.executable, "-m", "mpinet", "run", "--topology", "star:4", "--json"]
    res = json.loads(subprocess.run(run + [x for s in sets for x in ("--set", s)],
                                    check=True, capture_output=True, text=True).stdout)  # fmt: skip
    assert rows["wormhole L=16"]["hops"] == res["stats"]["transmissions"]
    assert rows["wormhole L=16"]["steps"] == res["stats"]["steps"]
    c = data["cuts"]["star:5"]["ranks"]["16"]
    assert (
        c["out_total"]
        == block_cuts(from_spec("star:5"), {16: block_bounds(120, 16)})[16].out_links.sum()
    )
    text = out.read_text()
    assert text.endswith("tail\n") and "| `star:4` | packet | 1 |" in text
    assert "No projection" in text  # one rank: no exchange measured to project from


def test_measured_table_efficiency_and_refused_rows():
    import bench_scaling

    def row(ranks, rate):
        return {"spec": "x", "engine": "packet", "ranks": ranks, "steps": 10, "hops": 100,
                "engine_seconds": 1.0, "hops_per_second": rate, "compute_us_per_step": 5.0,
                "exchange_us_per_step": 2.0, "wait_us_per_step": 1.0,
                "sent_bytes": [800] * ranks, "loadavg": 1.0}  # fmt: skip

    refused = {"spec": "x", "engine": "packet", "ranks": 4, "error": "mpinet: error: needs",
               "loadavg": 2.0}  # fmt: skip
    lines = bench_scaling.measured_table([row(1, 10.0), row(2, 16.0), refused])
    assert "| 100 % |" in lines[2] and "| 80 % |" in lines[3]  # 16 / (2 x 10)
    assert "| 5 / 2 / 1 | 80 |" in lines[3]  # 800 bytes a rank over 10 steps
    assert "not run: mpinet: error: needs" in lines[4]


def _phases_plan(ranks: int, flit: bool):
    from mpinet.jobs import load_job, parse_set
    from mpinet.jobs.execute import plan

    sets = ["topology=star:5", "workload.injection=bernoulli", "workload.rate=0.01",
            "workload.steps=40", "seed=3"]  # fmt: skip
    if flit:
        sets += ["model.switching=wormhole", "model.flits=4", "model.vcs=2", "model.vc_buffer=4"]
    return plan(load_job(None, [parse_set(s) for s in sets]), ranks=ranks)


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("flit", [True, False])
def test_phases_on_every_rank_add_up_and_move_what_one_rank_moves(flit):
    from mpi4py import MPI

    from mpinet.cli.bench_phases import run_phases

    comm = MPI.COMM_WORLD
    par = run_phases(_phases_plan(comm.Get_size(), flit), comm)
    ser = run_phases(_phases_plan(1, flit), None)
    assert (par["hops"], par["steps"], par["delivered"]) == (
        ser["hops"], ser["steps"], ser["delivered"])  # fmt: skip
    if comm.Get_rank() == 0:
        parts = np.add(np.add(par["compute"], par["exchange"]), par["wait"])
        assert len(parts) == comm.Get_size()
        assert max(parts) == pytest.approx(par["engine_seconds"], rel=1e-6)
        if comm.Get_size() > 1:  # one rank still reduces its counters: bytes, no crossings
            assert min(par["sent_bytes"]) > 0
    assert (par["cross"] > 0) == (comm.Get_size() > 1)
