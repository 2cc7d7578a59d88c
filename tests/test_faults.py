"""Faults: fault sets, the surviving graph, delivery and conservation on every family."""

from __future__ import annotations

import functools

import networkx as nx
import numpy as np
import pytest

from mpinet.engine.core import Engine
from mpinet.engine.faults import REASONS, counts
from mpinet.engine.models import parse_model
from mpinet.engine.report import gather_packets, summarize
from mpinet.errors import TopologyError
from mpinet.routing import make_router
from mpinet.routing.tables import distances_from
from mpinet.topology import from_spec
from mpinet.topology.faults import FaultSet, SurvivingGraph, make_faults
from mpinet.workloads import Unicast

FAMILIES = [
    "star:4",
    "star:5",
    "scc:4",
    "ms:2,2",
    "ims:1,2,2",
    "cms:3,2,2",
    "fccn:2",
    "borel:7,2,0,1",
    "hypercube:5",
    "ccc:4",
]
#: the family's own routers, which do not route around faults (the engine drops)
OTHER_ROUTER = {
    "star": "star-greedy",
    "scc": "scc-greedy",
    "ms": "ms-two-phase",
    "ims": "ims-two-phase",
    "cms": "cms-clusters",
    "fccn": "fccn-sroute",
    "borel": "borel-two-phase",
    "hypercube": "hypercube-ecube",
    "ccc": "ccc",
}


def graph(topo, faults: FaultSet | None = None) -> nx.Graph:
    """The (surviving) network as a networkx graph, failed nodes removed."""
    nb = topo.neighbors(np.arange(topo.num_nodes))
    g = nx.Graph()
    g.add_nodes_from(range(topo.num_nodes))
    g.add_edges_from((u, int(w)) for u in range(topo.num_nodes) for w in nb[u] if w >= 0)
    if faults is not None:
        deg = topo.degree
        g.remove_edges_from((int(x) // deg, int(nb[x // deg, x % deg])) for x in faults.links)
        g.remove_nodes_from(faults.nodes.tolist())
    return g


@functools.cache
def connected_faults(spec: str) -> FaultSet:
    """Random link and node faults whose surviving graph is connected (first such seed)."""
    topo = from_spec(spec)
    for seed in range(400):
        f = make_faults(topo, random_links=0.06, random_nodes=0.03, seed=seed)
        if f.num_links and nx.is_connected(graph(topo, f)):
            return f
    raise AssertionError(f"no connected fault set for {spec}")


def run(topo, router, faults, *, packets=2, seed=7, comm=None, record_hops=False):
    """One uniform run: (stats, drop counts, this rank's packet rows, record)."""
    from mpinet.engine.comm import resolve

    comm = resolve(comm)
    w = Unicast(topo, seed=seed, pattern="uniform", packets=packets)
    eng = Engine(topo, router, parse_model("all-port"), comm, seed=seed, faults=faults,
                 max_steps=5000, record_hops=record_hops)  # fmt: skip
    rec = eng.run(w)
    pk, ids = gather_packets(rec, w.pid_space, comm)
    stats = summarize(rec, topo, pk, ids, comm)
    return stats, counts(rec.drops), pk, rec


# ---------------------------------------------------------------- fault sets
def test_make_faults_by_label_both_directions():
    topo = from_spec("star:4")
    f = make_faults(topo, links=[["1234", "2134"]], nodes=["4321"])
    a, b, v = topo.parse_label("1234"), topo.parse_label("2134"), topo.parse_label("4321")
    assert f.nodes.tolist() == [v]
    assert f.link_down([a, b], [0, 0]).all()  # T2 both ways
    assert not f.link_down([a], [1]).any()
    nb = topo.neighbors([v])[0]
    assert f.link_down([v] * 3, [0, 1, 2]).all()  # a failed node fails all its links
    back = [topo.neighbors([w])[0].tolist().index(v) for w in nb]
    assert f.link_down(nb, back).all()
    assert f.num_links == 1 + 3 and f.node_down([v, a]).tolist() == [True, False]
    sg = SurvivingGraph(f).neighbors([a])[0]
    assert sg[0] == -1 and sg[1] >= 0


def test_random_faults_seeded():
    topo = from_spec("scc:4")
    a = make_faults(topo, random_links=0.1, random_nodes=0.05, seed=3)
    b = make_faults(topo, random_links=0.1, random_nodes=0.05, seed=3)
    c = make_faults(topo, random_links=0.1, random_nodes=0.05, seed=4)
    assert np.array_equal(a.links, b.links) and np.array_equal(a.nodes, b.nodes)
    assert not np.array_equal(a.links, c.links)
    assert a.links.size and a.links.size % 2 == 0  # every failed link in both directions


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(links=[["1234", "4321"]]), "not neighbours"),
        (dict(links=["1234"]), "pairs of node labels"),
        (dict(random_links=1.5), "probability"),
        (dict(random_nodes=-0.1), "probability"),
        (dict(step=-1), "step"),
        (dict(nodes=["12345"]), "label"),
    ],
)
def test_make_faults_errors(kw, match):
    topo = from_spec("star:4")
    with pytest.raises(TopologyError, match=match):
        make_faults(topo, **kw)


@pytest.mark.parametrize("spec", ["scc:4", "fccn:2", "borel:7,2,0,1", "ms:2,2"])
def test_surviving_distances_match_networkx(spec):
    topo = from_spec(spec)
    f = make_faults(topo, random_links=0.1, random_nodes=0.05, seed=1)
    g = graph(topo, f)
    sg = SurvivingGraph(f)
    for src in sorted(g.nodes)[:: max(1, topo.num_nodes // 6)]:
        ours = distances_from(sg, src)
        ref = nx.single_source_shortest_path_length(g, src)
        for v in range(topo.num_nodes):
            assert (int(ours[v]) if ours[v] >= 0 else None) == ref.get(v), (src, v)


# ---------------------------------------------------------------- the engine
def _conserved(stats, drops):
    assert stats["delivered"] + stats["dropped"] + stats["undelivered"] == stats["injected"]
    assert sum(drops.values()) == stats["dropped"] and set(drops) == set(REASONS.values())
    assert stats["undelivered"] == 0 and stats["ok"]


@pytest.mark.parametrize("spec", FAMILIES)
def test_conservation_every_family(spec):
    topo = from_spec(spec)
    f = make_faults(topo, random_links=0.15, random_nodes=0.05, seed=2)
    for name in ("shortest", OTHER_ROUTER[topo.family]):
        stats, drops, _, _ = run(topo, make_router(name, topo, faults=f), f)
        _conserved(stats, drops)
        assert stats["dropped"] > 0


@pytest.mark.parametrize("spec", FAMILIES)
def test_shortest_delivers_on_connected_surviving_graph(spec):
    topo = from_spec(spec)
    f = connected_faults(spec)
    g = graph(topo, f)
    stats, drops, pk, _ = run(topo, make_router("shortest", topo, faults=f), f)
    _conserved(stats, drops)
    dead = f.node_down(pk[:, 1]) | f.node_down(pk[:, 2])
    assert (pk[~dead, 4] >= 0).all()  # every packet between surviving nodes delivered
    assert (pk[dead, 4] < 0).all() and drops["no route"] == 0
    assert drops["source failed"] + drops["destination failed"] == int(dead.sum())
    dist = dict(nx.all_pairs_shortest_path_length(g))
    for _pid, s, d, _inj, _dl, hops, _adm in pk[~dead]:
        assert hops == dist[int(s)][int(d)]


DYNAMIC = [
    ("scc:4", "shortest"),
    ("ms:2,2", "ms-merged"),
    ("borel:7,2,0,1", "borel-cr"),
    ("star:5", "star-greedy"),
]


@pytest.mark.parametrize("spec,router", DYNAMIC)
def test_dynamic_faults_keep_conservation(spec, router):
    topo = from_spec(spec)
    f = make_faults(topo, random_links=0.1, random_nodes=0.05, seed=5, step=3)
    r = make_router(router, topo, faults=f)
    stats, drops, pk, _ = run(topo, r, f, packets=4)
    _conserved(stats, drops)
    assert stats["dropped"] > 0 and (pk[pk[:, 4] < 0, 4] == -1).all()


def test_a_second_run_of_the_engine_starts_without_the_dynamic_faults():
    """Faults change the run's link records, not the engine's table: a rerun is the same run."""
    topo = from_spec("star:5")
    f = make_faults(topo, random_links=0.1, random_nodes=0.05, seed=5, step=3)
    eng = Engine(topo, make_router("star-greedy", topo), parse_model("all-port"), seed=7,
                 faults=f, max_steps=5000)  # fmt: skip
    w = Unicast(topo, seed=7, pattern="uniform", packets=4)
    first, second = eng.run(w), eng.run(w)
    assert first.drops.shape[0] > 0
    assert np.array_equal(first.packets, second.packets)
    assert np.array_equal(first.drops, second.drops)
    assert np.array_equal(first.link_load, second.link_load)
