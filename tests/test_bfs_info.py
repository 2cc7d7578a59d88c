"""Exact metrics: BFS against networkx, the papers' formulas where exact, info()."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from mpinet import theory
from mpinet.engine.bfs import bfs_all_sources, bfs_from
from mpinet.engine.info import network_info
from mpinet.errors import ResourceError
from mpinet.topology import from_spec

SMALL = ["star:4", "scc:3", "scc:4", "ms:2,2", "ms:1,3", "hypercube:4", "ccc:3", "fccn:2"]


def to_networkx(topo) -> nx.Graph:
    nb = topo.neighbors(np.arange(topo.num_nodes))
    g = nx.Graph()
    g.add_nodes_from(range(topo.num_nodes))
    for p in range(topo.degree):
        ok = nb[:, p] >= 0
        g.add_edges_from(zip(np.flatnonzero(ok).tolist(), nb[ok, p].tolist(), strict=True))
    return g


def nx_histogram(g: nx.Graph, source: int) -> list[int]:
    d = nx.single_source_shortest_path_length(g, source)
    return np.bincount(list(d.values())).tolist()


@pytest.mark.parametrize("spec", SMALL)
def test_bfs_from_matches_networkx(spec):
    topo = from_spec(spec)
    g = to_networkx(topo)
    for src in {0, topo.num_nodes // 3, topo.num_nodes - 1}:
        assert bfs_from(topo, src).histogram.tolist() == nx_histogram(g, src)


@pytest.mark.parametrize("spec", ["fccn:1", "fccn:2", "scc:4", "ccc:3"])
def test_all_sources_matches_networkx(spec):
    topo = from_spec(spec)
    g = to_networkx(topo)
    want = np.zeros(64, dtype=np.int64)
    for src in range(topo.num_nodes):
        h = nx_histogram(g, src)
        want[: len(h)] += h
    got = bfs_all_sources(topo)
    assert got.histogram.tolist() == np.trim_zeros(want, "b").tolist()
    assert got.sources == topo.num_nodes


@pytest.mark.parametrize("spec", ["scc:4", "ms:2,2", "star:5", "hypercube:5"])
def test_vertex_transitive_single_source_equals_all_sources(spec):
    topo = from_spec(spec)
    single = bfs_from(topo, topo.identity).histogram
    assert (bfs_all_sources(topo).histogram == topo.num_nodes * single).all()


@pytest.mark.parametrize("n", range(3, 8))
def test_star_closed_forms_are_exact(n):
    topo = from_spec(f"star:{n}")
    d = bfs_from(topo, 0)
    assert d.diameter == theory.star_diameter(n)
    assert d.averages(topo.num_nodes)[0] == pytest.approx(theory.star_avg_distance(n), abs=1e-12)


def test_scc_diameter_formula_holds_only_up_to_n6_and_n8():
    measured = {n: bfs_from(from_spec(f"scc:{n}"), 0).diameter for n in range(3, 9)}
    assert measured == {3: 6, 4: 8, 5: 16, 6: 19, 7: 30, 8: 34}
    for n, d in measured.items():
        # paper 001 eq. 9 is right except for odd n >= 7 (docs/errata.md)
        assert (theory.scc_diameter(n) == d) == (n != 7)
    assert theory.scc_diameter(7) == 31


# paper 000 Table 1, last row; the exact BFS agrees to the printed 3 decimals
SCC_AVG_TABLE1 = {3: 3.000, 4: 5.306, 5: 8.808, 6: 12.121, 7: 16.517, 8: 20.802}


@pytest.mark.parametrize("n", sorted(SCC_AVG_TABLE1))
def test_scc_average_distance_matches_paper000_table1(n):
    topo = from_spec(f"scc:{n}")
    incl, _ = bfs_from(topo, 0).averages(topo.num_nodes)
    assert round(incl, 3) == SCC_AVG_TABLE1[n]
    assert incl <= theory.scc_avg_distance_bound(n) + 1e-12  # eq. 16 is a bound


def test_hypercube_and_ccc_closed_forms():
    for n in range(3, 8):
        d = bfs_from(from_spec(f"ccc:{n}"), 0)
        assert d.diameter == theory.ccc_diameter(n)
        h = from_spec(f"hypercube:{n}")
        assert bfs_from(h, 0).averages(h.num_nodes)[0] == pytest.approx(n / 2)


def test_network_info_keys_and_conventions():
    info = network_info(from_spec("scc:4"))
    keys = ["spec", "nodes", "degree", "diameter", "avg_distance"]
    keys += ["avg_distance_excl_source", "histogram", "vertex_transitive", "theory"]
    for key in keys:
        assert key in info
    assert info["nodes"] == 72 and info["degree"] == 3 and info["diameter"] == 8
    hist = np.array(info["histogram"])
    assert hist.sum() == 72
    total = float(np.dot(np.arange(hist.size), hist))
    assert info["avg_distance"] == pytest.approx(total / 72)
    assert info["avg_distance_excl_source"] == pytest.approx(total / 71)
    assert all(c["agrees"] for c in info["theory"])


def test_info_flags_the_wrong_scc7_diameter():
    info = network_info(from_spec("scc:7"))
    diam = [c for c in info["theory"] if c["quantity"] == "diameter"]
    assert diam and not any(c["agrees"] for c in diam)
    assert info["diameter"] == 30


def test_fccn_info_uses_all_sources_and_source_option():
    topo = from_spec("fccn:2")
    info = network_info(topo)
    assert info["vertex_transitive"] is False
    assert sum(info["histogram"]) == 64 * 64
    assert info["diameter"] == theory.fccn_diameter(2)
    one = network_info(topo, source=topo.parse_label("(0 7)"))
    assert one["diameter"] is None and sum(one["histogram"]) == 64
    assert one["eccentricity"] <= info["diameter"]


def test_memory_guard():
    with pytest.raises(ResourceError, match="GiB"):
        network_info(from_spec("star:14"))


def test_fccn_orbits_give_the_same_histogram_as_every_source():
    topo = from_spec("fccn:3")
    reps, weights = topo.source_orbits()
    assert weights.sum() == topo.num_nodes and reps.size < topo.num_nodes // 10

    class EverySource:  # the same graph without source_orbits
        num_nodes, degree = topo.num_nodes, topo.degree

        def neighbors(self, ids):
            return topo.neighbors(ids)

    plain = bfs_all_sources(EverySource())
    assert plain.histogram.tolist() == bfs_all_sources(topo).histogram.tolist()
