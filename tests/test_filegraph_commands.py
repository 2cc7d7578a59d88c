"""Every command on networks read from files, checked against the built-in families.

Item 4 of the issue: a family exported and read back has the same distances,
diameter, average distance, channel-load bound and run results; an imported
network exported and imported again gives the same ``info --json`` and run; the
flit engine, faults, deadlock analysis and traces work on a network whose
reverse ports differ from node to node.
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from test_flit_engine import assert_same, bfs_distances, random_case, reference, run
from test_sweep import count_routes

from mpinet.cli import main
from mpinet.engine import fault_info as fi
from mpinet.engine.core import Engine
from mpinet.engine.info import network_info
from mpinet.engine.models import parse_model
from mpinet.netfile import load_topology
from mpinet.routing import make_router
from mpinet.routing.base import HopContext
from mpinet.routing.channel_load import uniform_load
from mpinet.topology import export, from_spec
from mpinet.workloads import Unicast

FAMILIES = ["star:4", "scc:4", "ms:2,2", "fccn:2", "hypercube:4", "ccc:3", "borel:7,3,2,1"]


def imported(tmp_path, topo, fmt="edgelist"):
    p = tmp_path / f"{topo.family}{topo.num_nodes}.{fmt}"
    with open(p, "w") as fh:
        export.write(topo, fmt, fh)
    return load_topology(f"file:{fmt}:{p}")


def irregular(tmp_path):
    """A random 3-regular graph plus a pendant path: ports' reverses differ by node."""
    G = nx.random_regular_graph(3, 30, seed=2)
    G.add_edges_from([(0, 30), (30, 31)])
    p = tmp_path / "irr.edges"
    p.write_text("".join(f"{u} {v}\n" for u, v in G.edges()))
    g = load_topology(f"file:{p}")
    assert not g.uniform_reverse
    return g, G


def unicast_run(topo, wl, seed=4, tie="random"):
    router = make_router("shortest", topo, tie=tie)
    eng = Engine(topo, router, parse_model("all-port"), None, seed=seed, record_hops=True)
    rec = eng.run(Unicast(topo, seed=seed, **wl))
    return rec


@pytest.mark.parametrize("spec", FAMILIES)
def test_imported_family_has_the_same_metrics_bound_and_runs(tmp_path, spec):
    topo = from_spec(spec)
    g = imported(tmp_path, topo)
    a, b = network_info(topo), network_info(g)
    assert a["diameter"] == b["diameter"]
    assert a["avg_distance"] == pytest.approx(b["avg_distance"], rel=1e-12)
    per = 1 if a["histogram_counts"] == "ordered pairs" else topo.num_nodes
    assert [c * per for c in a["histogram"]] == b["histogram"]
    ra, rb = make_router("shortest", topo), make_router("shortest", g)
    la, lb = uniform_load(topo, ra), uniform_load(g, rb)
    assert np.allclose(la.load, lb.load)
    wl = dict(pattern="uniform", packets=3)
    x, y = unicast_run(topo, wl), unicast_run(g, wl)
    assert x.steps == y.steps
    assert np.array_equal(x.packets, y.packets) and np.array_equal(x.hop_rows, y.hop_rows)
    assert np.array_equal(x.link_load, y.link_load)


def test_imported_graph_exported_again_round_trips(tmp_path):
    g, _ = irregular(tmp_path)
    again = imported(tmp_path, g, "edgelist")
    ids = np.arange(g.num_nodes)
    assert np.array_equal(again.neighbors(ids), g.neighbors(ids))
    assert np.array_equal(again.reverse_ports(ids), g.reverse_ports(ids))
    assert again.labels(ids) == g.labels(ids)
    a, b = network_info(g), network_info(again)
    for key in ("diameter", "avg_distance", "histogram", "nodes", "degree", "edges"):
        assert a[key] == b[key], key
    wl = dict(pattern="uniform", packets=4)
    x, y = unicast_run(g, wl), unicast_run(again, wl)
    assert np.array_equal(x.packets, y.packets) and np.array_equal(x.hop_rows, y.hop_rows)
    assert np.array_equal(x.link_load, y.link_load)


def test_info_distances_match_networkx(tmp_path):
    g, G = irregular(tmp_path)
    info = network_info(g)
    assert info["diameter"] == nx.diameter(G)
    lengths = dict(nx.all_pairs_shortest_path_length(G))
    hist = np.bincount([d for row in lengths.values() for d in row.values()])
    assert info["histogram"] == hist.tolist()


def test_sampled_sources_are_an_estimate(tmp_path):
    g, G = irregular(tmp_path)
    info = network_info(g, sources=5, seed=1)
    assert info["estimate"] and info["sampled_sources"] == 5 and info["diameter"] is None
    assert "ESTIMATE" in info["scope"]
    assert sum(info["histogram"]) == 5 * g.num_nodes
    assert info["diameter_lower_bound"] <= nx.diameter(G)


#: the six draws per seed (two heavy wormhole, four mixed) and which deadlock, measured once:
#: seed 19 deadlocks a wormhole run and a store-and-forward one (2 flits, 1 VC of 2)
FILE_DEADLOCKS = [(19, (0, 1, 0, 1, 0, 0)), (13, (1, 0, 0, 0, 0, 0)), (0, (0,) * 6)]


@pytest.mark.parametrize("seed,verdicts", FILE_DEADLOCKS)
def test_flit_engine_on_per_node_reverse_ports_matches_the_reference(tmp_path, seed, verdicts):
    g, _ = irregular(tmp_path)
    router = make_router("shortest", g)
    rng = np.random.default_rng(seed)
    for heavy, dead in zip((True, True, False, False, False, False), verdicts, strict=True):
        m, rows = random_case(rng, g, heavy=heavy)
        rec, ref = run(g, router, rows, m), reference(g, router, rows, m)
        assert (rec.deadlock is not None) == bool(dead) == (ref.deadlock_step is not None)
        assert (ref.packets[:, 4] < 0).any() == bool(dead)  # undelivered exactly when dead
        assert_same(rec, ref, g)


def test_fault_diameter_on_a_file_network(tmp_path):
    g, G = irregular(tmp_path)
    r = fi.fault_diameter(g, 1, "links")
    assert r["diameter"] is None  # the pendant path's links disconnect it
    core = tmp_path / "core.edges"
    H = nx.random_regular_graph(3, 12, seed=1)
    core.write_text("".join(f"{u} {v}\n" for u, v in H.edges()))
    h = load_topology(f"file:{core}")
    worst = 0
    for e in H.edges():
        K = H.copy()
        K.remove_edge(*e)
        worst = max(worst, nx.diameter(K))
    assert fi.fault_diameter(h, 1, "links")["diameter"] == worst


def cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def dependency_graph(topo, router) -> nx.DiGraph:
    """The channel dependencies of every route, followed one packet at a time: link (u, p)
    -> the next link of the route, where a link's buffer is taken by every hop but the
    last (the hop into the destination takes none), as docs/deadlock-analysis.md counts them."""
    nb = topo.neighbors(np.arange(topo.num_nodes)).tolist()
    deps = nx.DiGraph()
    for s in range(topo.num_nodes):
        for d in range(topo.num_nodes):
            hdr, u, hops, prev = router.init_headers(np.array([s]), np.array([d])), s, 0, None
            while u != d:
                ctx = HopContext(step=hops, pids=np.array([0]), hops=np.array([hops]))
                ports, hdr = router.next_port(np.array([u]), np.array([d]), hdr, ctx)
                link, u, hops = (u, int(ports[0])), nb[u][int(ports[0])], hops + 1
                if u == d:
                    break
                deps.add_node(link)
                if prev is not None:
                    deps.add_edge(prev, link)
                prev = link
    return deps


def test_cli_commands_on_a_file_network(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    g, G = irregular(tmp_path)
    spec = "file:irr.edges"
    code, out, _ = cli(capsys, "info", spec, "--json")
    assert code == 0 and json.loads(out)["diameter"] == nx.diameter(G)
    code, out, err = cli(capsys, "info", spec, "--sources", "4")
    assert code == 0 and "ESTIMATE from 4 sampled sources" in out
    job = tmp_path / "job.toml"
    job.write_text(
        f'topology = "{spec}"\nseed = 2\n[workload]\nkind = "uniform"\npackets = 2\n'
        '[router]\nname = "shortest"\ntie = "random"\n[model]\nkind = "all-port"\n'
    )
    code, out, err = cli(capsys, "run", str(job), "--out", "run.h5", "--set", "trace.level=hops",
                         "--json")  # fmt: skip
    assert code == 0, err
    res = json.loads(out)
    assert res["stats"]["delivered"] == 2 * g.num_nodes
    code, out, err = cli(capsys, "analyze", "run.h5")
    assert code == 0, err
    assert "stretch         mean 1.0000" in out
    faults = ("--set", "model.buffer=2", "--set", "faults.random_links=0.05")
    code, out, err = cli(capsys, "run", str(job), *faults, "--out", "f.h5", "--json")
    assert code == 0, err
    deps = dependency_graph(g, make_router("shortest", g))
    assert not nx.is_directed_acyclic_graph(deps)  # so the verdict must be CYCLIC, exit 1
    code, out, err = cli(capsys, "deadlock", spec, "--router", "shortest")
    assert code == 1 and "CYCLIC" in out and "ACYCLIC" not in out and "irr.edges" in out
    code, out, err = cli(capsys, "deadlock", spec, "--router", "shortest", "--json")
    rep = json.loads(out)
    assert code == 1 and rep["acyclic"] is False
    assert (rep["channels"], rep["dependencies"]) == (
        deps.number_of_nodes(),
        deps.number_of_edges(),
    )
    cyc = [(g.parse_label(c["node"]), g.ports.index(c["port"])) for c in rep["cycle"]]
    assert len(cyc) == rep["cycle_length"] >= 2
    assert all(deps.has_edge(a, b) for a, b in zip(cyc, cyc[1:] + cyc[:1], strict=True))
    code, out, err = cli(capsys, "routes", spec, "--router", "shortest")
    assert code == 0, err
    code, out, err = cli(capsys, "export", spec, "--format", "graphml", "--out", "irr.graphml")
    assert code == 0, err
    code, out, err = cli(capsys, "sweep", str(job), "--rates", "0.1:0.3:2")
    assert code == 0, err
    assert "of the bound" in out
    with open("irr.edges", "a") as fh:  # the file changes: the trace no longer matches it
        fh.write("0 31\n")
    code, out, err = cli(capsys, "analyze", "run.h5")
    assert code == 0 and "missing or changed since the run" in out


def test_cli_refusals_are_one_line(tmp_path, capsys):
    p = tmp_path / "two.edges"
    p.write_text("0 1\n2 3\n")
    code, out, err = cli(capsys, "info", f"file:{p}")
    assert code == 2 and err.count("\n") == 1 and "--allow-disconnected" in err
    code, out, err = cli(capsys, "info", f"file:{p}", "--allow-disconnected")
    assert code == 0 and "components         2" in out
    code, out, err = cli(capsys, "info", "star:4", "--sources", "3")
    assert code == 2 and "vertex-transitive" in err


def _expected_by_paths(topo, dist):
    """Expected link loads of uniform traffic under uniform random ties, by enumerating
    every shortest path with its probability (plain Python, independent of the kernel)."""
    n, deg = topo.num_nodes, topo.degree
    nb = topo.neighbors(np.arange(n))
    load = np.zeros((n, deg))

    def walk_from(v, d, prob):
        if v == d:
            return
        best = [p for p in range(deg) if nb[v, p] >= 0 and dist[nb[v, p], d] == dist[v, d] - 1]
        for p in best:
            load[v, p] += prob / len(best)
            walk_from(int(nb[v, p]), d, prob / len(best))

    for s in range(n):
        for d in range(n):
            walk_from(s, d, 1.0)
    return load / (n - 1)


@pytest.mark.parametrize("spec", ["file:jobs/networks/cubic40.edges", "fccn:2"])
def test_channel_load_flows_are_exact(spec):
    """The flows pushed down each destination's shortest-path DAG are the routes themselves,
    counted by the test's own hop loop; under random ties, the expectation over every
    shortest path, with distances from a plain BFS (not the router's tables)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    topo = load_topology(spec.replace("file:", f"file:{root}/"))
    n = topo.num_nodes
    first = make_router("shortest", topo)
    flows = uniform_load(topo, first)
    assert flows.exact and flows.method == "all-pairs"
    s, d = np.divmod(np.arange(n * n), n)
    walked, hops = count_routes(topo, first, s[s != d], d[s != d])
    assert np.allclose(flows.load * (n - 1), walked, rtol=0, atol=1e-9)
    assert flows.mean_hops == pytest.approx(hops / (n * (n - 1)), rel=1e-12)
    dist = np.array([bfs_distances(topo, v) for v in range(n)])
    assert hops == dist.sum()  # the routes are shortest
    rnd = make_router("shortest", topo, tie="random")
    got = uniform_load(topo, rnd)
    assert np.allclose(got.load, _expected_by_paths(topo, dist))
    assert got.mean_hops == pytest.approx(dist.sum() / (n * (n - 1)))
