"""Tests of the fully connected cubic network :mod:`mpinet.topology.fccn`.

The reference graph is built in plain Python straight from Def. 2.3 of paper
002 (recursively, on digit tuples), independent of the vectorized code.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpinet.errors import TopologyError
from mpinet.topology import from_spec
from mpinet.topology.fccn import FCCN, MAX_M, sroute_distance, sroute_path


def def23_edges(m: int) -> set[frozenset[tuple[int, ...]]]:
    """Edges of the m-FCCN on digit tuples (beta_m, ..., beta_1), by Def. 2.3."""
    if m == 1:
        return {frozenset({(b,), (b ^ (1 << i),)}) for b in range(8) for i in range(3)}
    edges = {
        frozenset((k,) + u for u in e) for k in range(8) for e in def23_edges(m - 1)
    }  # eight copies, copy kappa gets leading digit kappa
    for k in range(8):
        for v in range(8):
            if v != k:  # intercubic link (v kappa^{m-1}) -- (kappa v^{m-1})
                edges.add(frozenset({(v,) + (k,) * (m - 1), (k,) + (v,) * (m - 1)}))
    return edges


def tuple_id(t: tuple[int, ...]) -> int:
    return int("".join(map(str, t)), 8)


def reference_graph(m: int) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(8**m))
    g.add_edges_from(tuple(tuple_id(t) for t in e) for e in def23_edges(m))
    return g


def module_edges(t: FCCN) -> set[tuple[int, int]]:
    nb = t.neighbors(np.arange(t.num_nodes))
    return {(min(u, int(v)), max(u, int(v))) for u in range(t.num_nodes) for v in nb[u] if v >= 0}


def all_pairs_bfs(t: FCCN, sources: np.ndarray | None = None) -> np.ndarray:
    """Distances from ``sources`` (default all) by one frontier BFS for all at once."""
    n = t.num_nodes
    src = np.arange(n) if sources is None else np.asarray(sources)
    nb = t.neighbors(np.arange(n))
    nb = np.where(nb < 0, np.arange(n)[:, None], nb)  # missing port: harmless self loop
    dist = np.full((src.size, n), -1, dtype=np.int16)
    dist[np.arange(src.size), src] = 0
    front = dist == 0
    d = 0
    while front.any():
        d += 1
        nxt = front[:, nb[:, 0]] | front[:, nb[:, 1]] | front[:, nb[:, 2]] | front[:, nb[:, 3]]
        nxt &= dist < 0
        dist[nxt] = d
        front = nxt
    return dist


@pytest.mark.parametrize("m", [1, 2, 3])
def test_edges_match_definition_2_3(m):
    t = FCCN(m)
    ref = {(min(u, v), max(u, v)) for u, v in reference_graph(m).edges}
    assert module_edges(t) == ref
    assert len(ref) == (3 * 8**m + 8**m - 8) // 2


@pytest.mark.parametrize("m", [1, 2, 3])
def test_bfs_matches_networkx(m):
    t = FCCN(m)
    g = reference_graph(m)
    dist = all_pairs_bfs(t)
    for s in [0, 1, 8**m - 1, 8**m // 3, int(t.parse_label("7" * (m - 1) + "0"))]:
        ref = nx.single_source_shortest_path_length(g, s)
        assert [ref[v] for v in range(t.num_nodes)] == dist[s].tolist()


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_symmetry_and_ports(m):
    t = FCCN(m)
    ids = np.arange(t.num_nodes)
    nb = t.neighbors(ids)
    assert nb.shape == (t.num_nodes, 4) and t.degree == 4
    for p, rp in enumerate(t.reverse_port):
        ok = nb[:, p] >= 0
        assert (t.neighbors(nb[ok, p])[:, rp] == ids[ok]).all()
    # cube ports flip one bit of beta_1; only the eight UGNs (v^m) lack 'inter'
    for b in range(3):
        assert (nb[:, b] == ids ^ (1 << b)).all()
    missing = np.flatnonzero(nb[:, 3] < 0)
    assert missing.tolist() == t.ugns().tolist()
    assert t.labels(missing) == [f"({' '.join(str(v) * m)})" for v in range(8)]
    # the 1-FCCN is the 3-cube (no node has 'inter'): 3-regular and vertex-transitive
    assert t.regular == t.vertex_transitive == (m == 1) and t.identity == 0
    assert t.describe()["degree"] == (3 if m == 1 else 4)


def test_large_m_symmetry_on_samples():
    t = FCCN(MAX_M)
    ids = np.random.default_rng(1).integers(0, t.num_nodes, 5000)
    ids = np.concatenate([ids, t.ugns(), t.ugns() ^ 1])
    nb = t.neighbors(ids)
    for p, rp in enumerate(t.reverse_port):
        ok = nb[:, p] >= 0
        assert (t.neighbors(nb[ok, p])[:, rp] == ids[ok]).all()
    assert (nb[:, 3] < 0).sum() == 8


@pytest.mark.parametrize("m", [1, 2, 3])
def test_labels_round_trip(m):
    t = FCCN(m)
    for v in range(t.num_nodes):
        lab = t.label(v)
        assert t.parse_label(lab) == v
        digits = lab.strip("()").replace(" ", "")
        assert t.parse_label(digits) == v and t.parse_label(f"({digits})") == v


def test_label_forms_and_errors():
    t = FCCN(3)
    assert t.label(0o272) == "(2 7 2)"
    assert {t.parse_label(s) for s in ["(272)", "(2 7 2)", "272", " 2 7 2 ", "#186"]} == {0o272}
    for bad in ["(2 7)", "2728", "(2 7 2", "27a", "", "(0 0 0 0)"]:
        with pytest.raises(TopologyError, match="octal digits"):
            t.parse_label(bad)


def test_parameters_and_spec():
    assert from_spec("fccn:2").num_nodes == 64
    assert FCCN("3").spec == "fccn:3"
    for bad in [0, MAX_M + 1, "x", 2.5]:
        with pytest.raises(TopologyError, match=r"M in fccn:M"):
            FCCN(bad)


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_xor_all_digits_is_automorphism(m):
    # (beta_m..beta_1) -> (beta_m^c..beta_1^c) preserves Def. 2.3, so sources with
    # beta_1 = 0 represent all sources in the diameter check below.
    t = FCCN(m)
    edges = module_edges(t)
    rep = (8**m - 1) // 7
    for c in range(1, 8):
        assert {tuple(sorted((u ^ c * rep, v ^ c * rep))) for u, v in edges} == edges


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_diameter_theorem_5_1(m):
    dist = all_pairs_bfs(FCCN(m), np.arange(0, 8**m, 8))
    assert dist.min() >= 0 and dist.max() == 2 ** (m + 1) - 1


def test_paper_example_272_to_350():
    t = FCCN(3)
    a, b = t.parse_label("(272)"), t.parse_label("(350)")
    path = sroute_path(a, b, 3)
    assert t.labels(path) == [
        "(2 7 2)", "(2 7 3)", "(2 3 7)", "(2 3 3)", "(3 2 2)",
        "(3 2 3)", "(3 2 1)", "(3 2 5)", "(3 5 2)", "(3 5 0)",
    ]  # fmt: skip
    assert int(sroute_distance(a, b, 3)) == len(path) - 1 == 9
    assert all_pairs_bfs(t)[a, b] == 9


def test_paper_nonshortest_example_07_to_37():
    t = FCCN(2)
    a, b = t.parse_label("(07)"), t.parse_label("(37)")
    assert int(sroute_distance(a, b, 2)) == 5
    assert all_pairs_bfs(t)[a, b] == 4
    # the paper's 4-hop route (07) (70) (71) (73) (37) uses existing links
    hops = [t.parse_label(s) for s in ["07", "70", "71", "73", "37"]]
    for u, v in zip(hops, hops[1:], strict=False):
        assert v in t.neighbors([u])[0]
    # the same pair one level down, inside F_2(0) of a 3-FCCN (leading digits stripped)
    assert int(sroute_distance(0o007, 0o037, 3)) == 5


@pytest.mark.parametrize("m", [1, 2, 3])
def test_sroute_vs_bfs_all_pairs(m):
    t = FCCN(m)
    ids = np.arange(t.num_nodes)
    sr = sroute_distance(ids[:, None], ids[None, :], m)
    dist = all_pairs_bfs(t)
    assert sr.shape == dist.shape and (sr >= dist).all() and (np.diag(sr) == 0).all()
    assert sr.max() == 2 ** (m + 1) - 1
    # Table I, column 2, counts ordered pairs of distinct nodes: 81.55% (m=2), 84.12% (m=3)
    nonshortest = {1: 0, 2: 744, 3: 41544}[m]
    assert (sr > dist).sum() == nonshortest
    n = t.num_nodes
    assert round(100 * (1 - nonshortest / (n * (n - 1))), 2) == {1: 100.0, 2: 81.55, 3: 84.12}[m]


@pytest.mark.slow
@pytest.mark.parametrize("m", [2, 3])
def test_sroute_distance_is_path_length_all_pairs(m):
    t = FCCN(m)
    nb = t.neighbors(np.arange(t.num_nodes))
    for a in range(0, t.num_nodes, 7 if m == 3 else 1):
        d = sroute_distance(a, np.arange(t.num_nodes), m)
        for b in range(t.num_nodes):
            path = sroute_path(a, b, m)
            assert len(path) - 1 == d[b] and path[0] == a and path[-1] == b
            assert all(v in nb[u] for u, v in zip(path, path[1:], strict=False))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, MAX_M).flatmap(lambda m: st.tuples(
    st.just(m), st.integers(0, 8**m - 1), st.integers(0, 8**m - 1))))  # fmt: skip
def test_sroute_distance_matches_path_random(args):
    m, a, b = args
    path = sroute_path(a, b, m)
    assert int(sroute_distance(a, b, m)) == len(path) - 1 <= 2 ** (m + 1) - 1
    nb = FCCN(m).neighbors(path)
    assert all(v in nb[i] for i, v in enumerate(path[1:]))


def test_sroute_distance_validation_and_shapes():
    assert sroute_distance([[0], [1]], [0, 7, 63], 2).shape == (2, 3)
    with pytest.raises(TopologyError, match=r"\[0, 63\]"):
        sroute_distance(0, 64, 2)
    with pytest.raises(TopologyError, match="m in sroute_distance"):
        sroute_distance(0, 0, 0)
