"""``mpinet routes``: route reports against exact distances, serial and under mpiexec."""

from __future__ import annotations

import json

import pytest

from mpinet.cli import main
from mpinet.engine.routes import engine_lengths, route_report
from mpinet.routing import make_router
from mpinet.topology import from_spec

KEYS = ["spec", "router", "pairs", "avg_length", "max_length", "avg_shortest", "pct_shortest"]


def test_report_keys_and_shortest_is_exact():
    topo = from_spec("scc:4")
    rep = route_report(topo, make_router("shortest", topo), "all")
    for key in [*KEYS, "histogram"]:
        assert key in rep
    assert rep["pairs"] == 72 * 71 and rep["pct_shortest"] == 100.0
    assert rep["histogram"] == rep["shortest_histogram"] and rep["histogram"][0] == 0
    assert rep["avg_length"] == rep["avg_shortest"]


def test_to_identity_matches_paper000_table1_split():
    # Table 1, n = 5: lat 3.683, loc 5.125, avg distance 8.808 (the exact BFS agrees)
    topo = from_spec("scc:5")
    rep = route_report(topo, make_router("shortest", topo), "to-identity")
    assert rep["pairs"] == 480 and rep["includes_self_pairs"]
    assert round(rep["avg_length"], 3) == 8.808
    assert round(rep["class_hops"]["lateral"], 3) == 3.683
    assert round(rep["class_hops"]["local"], 3) == 5.125


def test_ecube_on_sampled_pairs_and_engine_agreement():
    topo = from_spec("hypercube:7")
    router = make_router("hypercube-ecube", topo)
    rep = route_report(topo, router, "sample:3000", seed=4)
    assert rep["pairs"] == 3000 and rep["pct_shortest"] == 100.0
    eng = engine_lengths(topo, router, "sample:3000", seed=4)
    assert eng["histogram"] == rep["histogram"] and eng["checksum"] == rep["checksum"]


def test_random_router_engine_agreement():
    topo = from_spec("ms:2,2")
    router = make_router("shortest", topo, tie="random")
    rep = route_report(topo, router, "all", seed=3)
    assert engine_lengths(topo, router, "all", seed=3)["checksum"] == rep["checksum"]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["scc:4", "--router", "shortest", "--pairs", "some"],
            "to-identity, from-identity, all or sample:K",
        ),
        (["scc:4", "--router", "shortest", "--pairs", "sample:0"], "K >= 1"),
        (["scc:9", "--router", "shortest", "--pairs", "all"], "use --pairs sample:K"),
        (["scc:4", "--router", "nope"], "unknown router"),
        (["scc:4", "--router", "shortest", "--option", "tie=sideways"], "tie"),
    ],
)
def test_bad_arguments(args, message, capsys):
    assert main(["routes", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


@pytest.mark.slow
def test_cli_identical_on_1_2_3_ranks(run_mpinet):
    outs = []
    for ranks in (1, 2, 3):
        proc = run_mpinet(
            [
                "routes",
                "ms:3,2",
                "--router",
                "shortest",
                "--option",
                "tie=random",
                "--pairs",
                "sample:5000",
                "--engine",
                "--json",
            ],
            ranks=ranks,
        )
        assert proc.returncode == 0, proc.stderr
        rep = json.loads(proc.stdout)
        assert rep["engine"]["agrees"]
        outs.append({k: v for k, v in rep.items() if k not in ("ranks", "engine")})
    assert outs[0] == outs[1] == outs[2]
