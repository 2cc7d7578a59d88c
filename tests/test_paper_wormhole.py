"""The papers' wormhole statements (issue 23 item 4): the computed truths behind
scripts/wormhole_report.py, and the ``star-neighbour`` workload it runs.

Paper 000: alone in the network, a packet of L flits over H hops takes H + L - 1 steps
under wormhole and cut-through and H x L under store-and-forward, with every SCC router
(the source-routed optimal one included) and the macro-star's star emulation. Paper 004: on
MS(2,2) with one-flit packets under store-and-forward, one star step per dimension costs
the length of its Thm 3.1 word, and the dimensions in turn add up to the emulation's own
count (``emulate-star all-dims`` under sdc).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpinet.emulation.schedules import sdc_word
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.models import parse_model, switching_model
from mpinet.errors import WorkloadError
from mpinet.jobs import load_job, parse_set
from mpinet.jobs.execute import execute, plan
from mpinet.routing import make_router
from mpinet.routing.tables import distances_from
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from mpinet.workloads.registry import make_workload
from mpinet.workloads.star_neighbour import (
    StarNeighbourTraffic,
    parse_dimensions,
    star_neighbours,
)

ROOT = Path(__file__).resolve().parent.parent
MODES = ("store-and-forward", "cut-through", "wormhole")


def _script():
    spec = importlib.util.spec_from_file_location(
        "wormhole_report", ROOT / "scripts" / "wormhole_report.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class OneAtATime:
    """Packets from node 0, one per destination, each injected after the last is delivered."""

    def __init__(self, dests: list[int], gap: int) -> None:
        self.dests, self.gap = dests, gap
        self.pid_space = len(dests)
        self.last_injection_step = gap * (len(dests) - 1)

    def injections(self, lo: int, hi: int, step: int):
        i = step // self.gap
        if step % self.gap or i >= len(self.dests) or not lo <= 0 < hi:
            return (np.empty(0, np.int64),) * 3
        return np.array([i]), np.array([0]), np.array([self.dests[i]])


def one_per_distance(topo) -> list[int]:
    """The lowest node at every distance from node 0 (and a few more), as destinations."""
    dist = distances_from(topo, 0)
    picks = {int(np.flatnonzero(dist == d)[0]) for d in range(1, int(dist.max()) + 1)}
    picks |= {int(x) for x in np.linspace(1, topo.num_nodes - 1, 9).astype(int)}
    return sorted(picks)


# -- paper 000: zero-load latency per route length --------------------------------------
@pytest.mark.parametrize(
    "spec,router",
    [
        ("scc:4", "scc-optimal"),
        ("scc:4", "scc-random"),
        ("scc:5", "scc-greedy"),
        ("scc:5", "scc-nobacktrack"),
        ("ms:2,2", "ms-star-emulation"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_zero_load_latency_per_route_length(spec, router, mode):
    topo = from_spec(spec)
    r = make_router(router, topo)
    dests = one_per_distance(topo)
    for flits in (4, 32):
        m = switching_model(
            parse_model("all-port"), mode, flits, 2, 4 if mode == "wormhole" else flits, "any"
        )
        policy = make_vc_policy("any", topo, 2)
        gap = 40 * flits  # longer than any route's H x L here
        rec = FlitEngine(topo, r, m, policy, None, max_steps=gap * len(dests) + 1).run(
            OneAtATime(dests, gap)
        )
        pk = rec.packets
        assert len(pk) == len(dests) and (pk[:, 4] >= 0).all() and (pk[:, 4] - pk[:, 3] < gap).all()
        h = pk[:, 5]
        want = h * flits if mode == "store-and-forward" else h + flits - 1
        assert np.array_equal(pk[:, 4] - pk[:, 3], want), (flits, pk)
        # the report's binning gives the closed form as mean and min of every bin
        mod = _script()
        assert mod.zero_load_count(pk, mode, flits) == len(pk)
        assert mod.zero_load_count(pk + np.array([0, 0, 0, 0, 1, 0, 0]), mode, flits) == 0
        for hh, (count, mean, low) in mod.latency_by_hops(pk).items():
            f = hh * flits if mode == "store-and-forward" else hh + flits - 1
            assert count == int((h == hh).sum()) and mean == low == f


def test_report_slope_is_the_per_hop_cost():
    mod = _script()
    for per_hop in (1, 32):
        rows = np.array(
            [[i, 0, 1, 0, 31 + per_hop * h, h, 0] for i, h in enumerate([1, 2, 2, 5, 9])]
        )
        assert mod.slope(mod.latency_by_hops(rows)) == pytest.approx(per_hop)


# -- paper 004: the emulation's store-and-forward count ----------------------------------
def star_step(spec: str, dim: int, mode: str, flits: int) -> int:
    job = "star-step-star" if spec.startswith("star") else "star-step-ms"
    items = [
        f"topology={spec}",
        f"workload.algorithm=dimension:{dim}",
        f"model.switching={mode}",
        f"model.flits={flits}",
        f"model.vc_buffer={4 if mode == 'wormhole' else flits}",
        "trace.level=none",
    ]
    res = execute(
        plan(
            load_job(
                str(ROOT / "jobs/paper004-wormhole" / f"{job}.toml"), [parse_set(s) for s in items]
            )
        ),
        None,
    )
    assert res["stats"]["ok"] and res["stats"]["delivered"] == res["stats"]["injected"]
    return int(res["stats"]["steps"])


def test_ms22_store_and_forward_slowdown_is_the_emulation_count():
    topo = from_spec("ms:2,2")
    dims = range(2, topo.k + 1)
    em = execute(
        plan(
            load_job(
                None,
                [
                    parse_set(s)
                    for s in (
                        "topology=ms:2,2",
                        "workload.kind=emulate-star",
                        "workload.algorithm=all-dims",
                        "workload.emulation=sdc",
                        "model.kind=sdc",
                        "trace.level=none",
                    )
                ],
            )
        ),
        None,
    )["emulation"]
    for flits in (1, 4):
        ms = {j: star_step("ms:2,2", j, "store-and-forward", flits) for j in dims}
        star = {j: star_step("star:5", j, "store-and-forward", flits) for j in dims}
        assert all(star[j] == flits for j in dims)
        assert all(ms[j] == flits * len(sdc_word(2, 2, j)) for j in dims)  # Thm 3.1's words
        assert sum(ms.values()) == flits * em["ms_steps"]
        assert sum(star.values()) == flits * em["star_steps"]


def test_ms22_far_dimension_pipelines_towards_two():
    topo = from_spec("ms:2,2")
    far = range(topo.n + 2, topo.k + 1)
    for flits in (16, 64):
        ct = [star_step("ms:2,2", j, "cut-through", flits) for j in far]
        wh = [star_step("ms:2,2", j, "wormhole", flits) for j in far]
        # an S link carries two packets of L flits: no switching beats 2L; the overlap
        # of the hops keeps cut-through well below store-and-forward's 3L
        assert min(ct + wh) >= 2 * flits and max(ct + wh) <= 3 * flits
        assert max(ct) <= 2 * flits + 4


# -- the star-neighbour workload ---------------------------------------------------------
@pytest.mark.parametrize("spec", ["star:5", "ms:2,2", "ms:3,2", "ims:1,3,2"])
def test_star_neighbours_are_the_star_graphs(spec):
    topo = from_spec(spec)
    star = from_spec(f"star:{topo.k}")
    nodes = np.arange(topo.num_nodes)
    nb = star.neighbors(nodes)  # port T_j is column j - 2
    for j in range(2, topo.k + 1):
        assert np.array_equal(star_neighbours(topo.k, nodes, np.full(nodes.size, j)), nb[:, j - 2])


def test_star_neighbour_traffic_is_the_same_split_any_way():
    topo = from_spec("ms:2,2")
    t = StarNeighbourTraffic(topo, parse_dimensions("all-dims", topo.k), packets=2)
    whole = np.stack(t.injections(0, topo.num_nodes, 0), 1)
    parts = np.concatenate(
        [np.stack(t.injections(lo, lo + 7, 0), 1) for lo in range(0, topo.num_nodes, 7)]
    )
    assert np.array_equal(whole, parts)
    assert len(whole) == t.pid_space == topo.num_nodes * (topo.k - 1) * 2
    assert np.array_equal(np.sort(whole[:, 0]), np.arange(t.pid_space))
    assert t.injections(0, topo.num_nodes, 1)[0].size == 0
    per_dim = np.bincount(whole[:, 0] // 2 % (topo.k - 1))
    assert (per_dim == 2 * topo.num_nodes).all()


def test_star_neighbour_refusals():
    assert parse_dimensions(None, 5).tolist() == [2, 3, 4, 5]
    assert parse_dimensions("dimension:5", 5).tolist() == [5]
    for bad in ("dimension:1", "dimension:6", "dimension:x", "dims", "dimension:"):
        with pytest.raises(WorkloadError, match=r"'all-dims' or 'dimension:J' with J in 2\.\.5"):
            parse_dimensions(bad, 5)
    job = load_job(None, [parse_set(s) for s in ("topology=scc:4", "workload.kind=star-neighbour")])
    with pytest.raises(WorkloadError, match="permutations of the star graph"):
        make_workload("star-neighbour", job.workload, topo=from_spec("scc:4"))


@pytest.mark.parametrize(
    "sets,match",
    [
        (["workload.algorithm=dimension:9"], "J in 2..5"),
        (["workload.rate=0.1"], "workload.rate = 0.1 has no effect"),
        (["topology=hypercube:4"], "permutations of the star graph"),
    ],
)
def test_cli_refuses_bad_star_neighbour_jobs(sets, match):
    cmd = [
        sys.executable,
        "-m",
        "mpinet",
        "run",
        str(ROOT / "jobs/paper004-wormhole/star-step-ms.toml"),
        "--trace-level",
        "none",
    ] + [x for s in sets for x in ("--set", s)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpinet: error:") and match in lines[0]


# -- found while measuring: the CLI's summary of a deadlock found during injection -------
@pytest.mark.slow
def test_cli_prints_a_flit_deadlock_found_while_injecting():
    cmd = [
        sys.executable,
        "-m",
        "mpinet",
        "run",
        str(ROOT / "jobs/paper000-wormhole/scc-routers.toml"),
        "--trace-level",
        "none",
        "--set",
        "topology=scc:5",
        "--set",
        "workload.rate=0.005",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 1, out.stderr
    assert "DEADLOCK in step" in out.stdout and "Traceback" not in out.stderr
    assert "found while packets were injected" in out.stdout


# -- the same answers on any number of ranks --------------------------------------------
@pytest.mark.mpi
def test_star_neighbour_identical_on_any_ranks():
    from mpi4py import MPI

    for mode, flits in (("store-and-forward", 1), ("wormhole", 8)):
        items = [
            "topology=ms:2,3",
            "workload.algorithm=all-dims",
            f"model.switching={mode}",
            f"model.flits={flits}",
            f"model.vc_buffer={flits}",
            "trace.level=none",
        ]
        job = load_job(
            str(ROOT / "jobs/paper004-wormhole/star-step-ms.toml"), [parse_set(s) for s in items]
        )
        par = execute(plan(job), MPI.COMM_WORLD)["stats"]
        ser = execute(plan(job), None)["stats"]
        for s in (par, ser):
            s.pop("cross_rank_fraction")
        assert par == ser and par["ok"]
