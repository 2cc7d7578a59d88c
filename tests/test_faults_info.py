"""Faults in ``mpinet info`` (surviving graph, fault diameter), collectives and --baseline."""

from __future__ import annotations

import itertools
import json

import networkx as nx
import numpy as np
import pytest
from test_faults import graph

from mpinet.cli import main
from mpinet.cli.info_faults import parse_faults
from mpinet.engine import fault_info as fi
from mpinet.errors import JobError, ResourceError
from mpinet.topology import from_spec
from mpinet.topology.faults import make_faults


# ------------------------------------------------------------- surviving graph
@pytest.mark.parametrize(
    "spec,kw",
    [
        ("scc:4", dict(nodes=["<2, 1234>", "<3, 1234>"], links=[["<4, 1234>", "<4, 4231>"]])),
        ("fccn:2", dict(random_links=0.2, seed=1)),
        ("borel:7,2,0,1", dict(random_links=0.3, random_nodes=0.1, seed=2)),
        ("ms:2,2", dict(random_links=0.05, nodes=["12345"], seed=3)),
    ],
)
def test_surviving_info_matches_networkx(spec, kw):
    topo = from_spec(spec)
    f = make_faults(topo, **kw)
    g = graph(topo, f)
    comps = sorted(nx.connected_components(g), key=lambda c: (-len(c), min(c)))
    info = fi.surviving_info(topo, f)
    assert info["components"] == len(comps) and info["largest_component"] == len(comps[0])
    assert info["cut_off"] == g.number_of_nodes() - len(comps[0])
    assert info["connected"] == (len(comps) == 1)
    big = g.subgraph(comps[0])
    assert info["diameter"] == nx.diameter(big)
    m = big.number_of_nodes()
    total = sum(d for _, row in nx.all_pairs_shortest_path_length(big) for d in row.values())
    assert info["avg_distance"] == pytest.approx(total / (m * m))
    assert info["avg_distance_excl_source"] == pytest.approx(total / (m * (m - 1)))


def test_scc_cut_off_node_named():
    topo = from_spec("scc:4")
    f = make_faults(topo, nodes=["<2, 1234>", "<3, 1234>"], links=[["<4, 1234>", "<4, 4231>"]])
    info = fi.surviving_info(topo, f)
    assert info["cut_off"] == 1 and info["cut_off_nodes"] == ["<4, 1234>"]


# ------------------------------------------------------------- fault diameter
def _brute(g: nx.Graph, k: int, kind: str) -> int | None:
    worst = 0
    items = list(g.nodes) if kind == "nodes" else list(g.edges)
    for sub in itertools.combinations(items, k):
        h = g.copy()
        (h.remove_nodes_from if kind == "nodes" else h.remove_edges_from)(sub)
        if not nx.is_connected(h):
            return None
        worst = max(worst, nx.diameter(h))
    return worst


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec,k", [("star:4", 2), ("borel:7,2,0,1", 2), ("fccn:2", 1), ("cms:3,2,2", 1)]
)
def test_fault_diameter_matches_brute_force(spec, k):
    topo = from_spec(spec)
    g = graph(topo)
    for j in range(1, k + 1):
        for kind in fi.KINDS:
            r = fi.fault_diameter(topo, j, kind)
            assert r["diameter"] == _brute(g, j, kind), (j, kind)
            assert (r["disconnecting"] > 0) == (r["diameter"] is None)


def test_fault_diameter_cases_use_symmetry():
    topo = from_spec("star:5")  # vertex-transitive: node 0 and one link per port
    assert fi.fault_cases(topo, 1, "nodes").tolist() == [[0]]
    assert fi.fault_cases(topo, 1, "links").shape == (4, 1)
    assert fi.fault_cases(topo, 2, "nodes").shape == (119, 2)
    assert fi.fault_cases(topo, 2, "links").shape == (4 * 239, 2)  # 240 links, minus the first


def test_fault_diameter_refuses_large():
    with pytest.raises(ResourceError, match="use a smaller K or network"):
        fi.plan_fault_diameter(from_spec("star:8"), 2)
    assert fi.plan_fault_diameter(from_spec("star:7"), 1) == 7


# ------------------------------------------------------------------ the CLI
def test_parse_faults():
    got = parse_faults("random_links=0.01,seed=3,nodes=<2, 1234>;<3, 1234>,links=1234-2134")
    assert got == {
        "random_links": 0.01,
        "seed": 3,
        "nodes": ["<2, 1234>", "<3, 1234>"],
        "links": [["1234", "2134"]],
    }
    for bad, says in (
        ("random=0.1", "--faults takes random_links=, random_nodes=, seed=, nodes=, links="),
        ("seed=x", r"--faults seed must be an integer in \[0, "),
        ("links=1234", "--faults links are A-B pairs joined by ';', got '1234'"),
        ("random_links=lots", r"--faults random_links must be a probability in \[0, 1\)"),
    ):
        with pytest.raises(JobError, match=says):
            parse_faults(bad)


def test_info_faults_cli(capsys, tmp_path):
    assert main(["info", "star:4", "--faults", "nodes=1234", "--fault-diameter", "1"]) == 0
    out = capsys.readouterr().out
    assert "surviving graph" in out and "1 component(s) of 23 surviving nodes" in out
    assert "1 node   5 (diameter +1)" in out
    job = tmp_path / "j.toml"
    job.write_text('topology = "star:4"\nseed = 3\n[faults]\nlinks = [["1234", "2134"]]\n')
    assert main(["info", "star:4", "--faults-file", str(job), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["surviving"]["failed_links"] == 1 and info["surviving"]["connected"]
    assert main(["info", "star:8", "--fault-diameter", "2"]) == 2
    assert "use a smaller K" in capsys.readouterr().err


# ------------------------------------------------------------- collectives
def _job(tmp_path, text: str) -> str:
    p = tmp_path / "job.toml"
    p.write_text(text)
    return str(p)


def test_broadcast_reports_unreached(tmp_path, capsys):
    job = _job(
        tmp_path,
        'topology = "star:5"\nseed = 3\n[workload]\nkind = "broadcast"\nalgorithm = "tree"\n'
        '[model]\nkind = "one-port"\n[faults]\nrandom_links = 0.05\n',
    )
    assert main(["run", job, "--json", "--baseline"]) == 0
    r = json.loads(capsys.readouterr().out)
    f = r["stats"]["faults"]
    assert f["unreached"] > 0 and len(f["unreached_nodes"]) == min(10, f["unreached"])
    assert f["lost"] > 0 and r["stats"]["missing"] == f["unreached"]
    assert r["fault_cost"]["transmissions"][0] < r["fault_cost"]["transmissions"][1]


def test_flooding_reaches_every_connected_node():
    from mpinet.engine.collective import run_collective
    from mpinet.engine.models import parse_model
    from mpinet.workloads.broadcast import FloodingBroadcast

    topo = from_spec("scc:4")
    f = make_faults(topo, nodes=["<2, 1234>", "<3, 1234>"], links=[["<4, 1234>", "<4, 4231>"]])
    res = run_collective(topo, FloodingBroadcast(topo, 5), parse_model("all-port"), faults=f)
    assert res.faults["unreached"] == 1 and res.faults["unreached_nodes"] == ["<4, 1234>"]
    assert res.missing == 1


def test_routed_mnb_around_faults_is_complete(tmp_path, capsys):
    job = _job(
        tmp_path,
        'topology = "scc:4"\nseed = 3\nrouter = "shortest"\n[workload]\nkind = "mnb"\n'
        '[faults]\nrandom_links = 0.05\nnodes = ["<2, 1234>"]\n',
    )
    assert main(["run", job]) == 0
    out = capsys.readouterr().out
    assert "complete         yes" in out and "1 message(s) started at failed nodes only" in out


# ------------------------------------------------------------- cost of faults
def test_baseline_cost(tmp_path, capsys):
    job = _job(
        tmp_path,
        'topology = "ms:2,2"\nseed = 3\n[workload]\nkind = "uniform"\npackets = 4\n'
        '[faults]\nrandom_links = 0.05\nnodes = ["12345"]\n',
    )
    assert main(["run", job, "--json", "--baseline"]) == 0
    r = json.loads(capsys.readouterr().out)
    c = r["fault_cost"]
    assert "_local" not in r
    assert c["delivered"] == [r["stats"]["delivered"], r["stats"]["injected"]]
    assert c["compared_packets"] == r["stats"]["delivered"]
    assert c["extra_hops_mean"] > 0 and c["longer_routes"] > 0  # shortest: never shorter
    assert 0 < c["load_shift"] < 1 and set(c["max_link_load"]) == {"nucleus", "intercluster"}
    assert main(["run", job, "--baseline"]) == 0
    assert "cost of faults" in capsys.readouterr().out
    plain = _job(tmp_path, 'topology = "ms:2,2"\n')
    assert main(["run", plain, "--baseline"]) == 2
    assert "has no [faults]" in capsys.readouterr().err
    assert np.isfinite(c["extra_latency_mean"])
