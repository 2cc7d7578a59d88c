"""Borel Cayley graphs against the paper (003, Tables 1-4) and an independent build."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpinet.errors import TopologyError
from mpinet.topology import from_spec
from mpinet.topology.borel import Borel

TABLE3 = [(1, 7), (7, 8), (1, 2), (3, 6)]  # p = 47, a = 2


def matrix_graph(p: int, a: int, t1: int, t2: int) -> nx.Graph:
    """Build the graph from Def. 3 with plain 2x2 matrix products, GCR-numbered."""
    k = next(n for n in range(1, p) if pow(a, n, p) == 1)

    def mul(x, y):
        return [[sum(x[r][m] * y[m][c] for m in range(2)) % p for c in range(2)] for r in range(2)]

    def inv(x):
        xi = pow(x[0][0], -1, p)
        return [[xi, -xi * x[0][1] % p], [0, 1]]

    gens = [[[pow(a, t, p), 1], [0, 1]] for t in (t1, t2)]
    gens += [inv(g) for g in gens]
    gid = {pow(a, t, p): t for t in range(k)}
    g = nx.Graph()
    for t in range(k):
        for y in range(p):
            x = [[pow(a, t, p), y], [0, 1]]
            for h in gens:
                z = mul(x, h)
                g.add_edge(t + k * y, gid[z[0][0]] + k * z[0][1])
    return g


def edges(topo: Borel) -> set[tuple[int, int]]:
    nb = topo.neighbors(np.arange(topo.num_nodes))
    src = np.repeat(np.arange(topo.num_nodes), topo.degree)
    return {(min(u, v), max(u, v)) for u, v in zip(src.tolist(), nb.ravel().tolist(), strict=True)}


def edges_of(g: nx.Graph) -> set[tuple[int, int]]:
    return {(min(u, v), max(u, v)) for u, v in g.edges}


def distances(topo: Borel, src: int = 0) -> np.ndarray:
    nb = topo.neighbors(np.arange(topo.num_nodes))
    d = np.full(topo.num_nodes, -1)
    d[src], front, lvl = 0, np.array([src]), 0
    while front.size:
        lvl += 1
        nxt = np.unique(nb[front].ravel())
        front = nxt[d[nxt] < 0]
        d[front] = lvl
    return d


def test_table1_gcr_constants():
    c = Borel(7, 2, 0, 1).gcr_constants()
    assert c["alpha"].tolist() == [3, 6, -9]
    assert c["alpha_inv"].tolist() == [-3, -6, 9]
    assert c["beta"].tolist() == [4, 7, 10]
    assert c["beta_inv"].tolist() == [-10, -4, -7]


def test_table1_cr_constants():
    gamma, lam = Borel(7, 2, 0, 1).cr_constants()
    assert gamma.tolist() == [-10, 7, 10, 6, 9, 5, -6]
    assert lam.tolist() == [6, -7, -6, -5, 10, -10, -9]


def test_table2_cr_routing_neighbours():
    g = Borel(7, 2, 0, 1)
    want = {0: [1, 6, 11, 20], 20: [0, 11, 14, 19], 14: [4, 13, 15, 20], 15: [1, 8, 14, 16]}
    for c, nbs in want.items():
        assert sorted(g.to_cr(g.neighbors(g.from_cr([c]))[0]).tolist()) == nbs


def test_two_phase_example_path_BAA():
    # Sec. 4.6: from 0, B then A, A reaches 16 (GCR numbering).
    g = Borel(7, 2, 0, 1)
    v = 0
    for port in ("B", "A", "A"):
        v = int(g.neighbors([v])[0, g.ports.index(port)])
    assert v == 16


@pytest.mark.parametrize("p,a,t1,t2", [(7, 2, 0, 1), (13, 2, 0, 5), (11, 3, 4, 0), (31, 3, 0, 7)])
def test_cr_is_a_chordal_ring(p, a, t1, t2):
    g = Borel(p, a, t1, t2)
    assert g.has_cr
    n = g.num_nodes
    c = np.arange(n)
    assert np.array_equal(g.to_cr(g.from_cr(c)), c)
    assert sorted(g.from_cr(c).tolist()) == c.tolist()
    gamma, lam = g.cr_constants()
    cr_nb = g.to_cr(g.neighbors(g.from_cr(c)).ravel()).reshape(n, 4)
    i = c % p
    want = np.stack([c + 1, c - 1, c + gamma[i], c + lam[i]], axis=1) % n
    assert np.array_equal(np.sort(cr_nb, axis=1), np.sort(want, axis=1))
    assert np.all(np.abs(gamma) <= n // 2) and np.all(np.abs(lam) <= n // 2)


def test_no_cr_raises():
    g = Borel(47, 2, 1, 7)
    assert not g.has_cr
    for call in (g.cr_constants, lambda: g.to_cr([0]), lambda: g.from_cr([0])):
        with pytest.raises(TopologyError, match="CR"):
            call()


def test_ccp_constants_congruent_mod_k():
    g = Borel(47, 2, 1, 7)
    c = g.gcr_constants()
    assert set((c["alpha"] % g.k).tolist()) == {1}
    assert set((c["beta_inv"] % g.k).tolist()) == {g.k - 7}
    assert np.all(np.abs(c["alpha"]) <= g.num_nodes // 2)


@pytest.mark.parametrize("p,a,t1,t2", [(7, 2, 0, 1), (7, 3, 2, 5), (47, 2, 1, 7), (13, 2, 0, 5)])
def test_symmetry_degree_labels(p, a, t1, t2):
    g = Borel(p, a, t1, t2)
    ids = np.arange(g.num_nodes)
    nb = g.neighbors(ids)
    assert nb.shape == (g.num_nodes, 4) and nb.min() >= 0
    assert np.all(np.sort(nb, axis=1)[:, 1:] != np.sort(nb, axis=1)[:, :-1])
    assert not np.any(nb == ids[:, None])
    for port, rev in enumerate(g.reverse_port):
        assert np.array_equal(g.neighbors(nb[:, port])[:, rev], ids)
    t, y = g.matrices(ids)
    assert np.array_equal(g.ids_from(t, y), ids)
    assert g.identity == 0 and g.matrices([0])[0][0] == 0 and g.matrices([0])[1][0] == 0
    for v in (0, 1, g.num_nodes - 1):
        assert g.parse_label(g.label(v)) == v
        assert g.parse_label(f"gcr:{v}") == v
        assert g.parse_label(f"#{v}") == v
    if g.has_cr:
        assert g.parse_label("cr:5") == int(g.from_cr([5])[0])


@pytest.mark.parametrize("p,a,t1,t2", [(7, 2, 0, 1)] + [(47, 2, *t) for t in TABLE3])
def test_matches_matrix_definition(p, a, t1, t2):
    g = Borel(p, a, t1, t2)
    ref = matrix_graph(p, a, t1, t2)
    assert ref.number_of_nodes() == g.num_nodes
    assert edges(g) == edges_of(ref)


def test_matches_matrix_definition_p307():
    g = Borel(307, 4, 2, 16)
    assert edges(g) == edges_of(matrix_graph(307, 4, 2, 16))


# Diameter and avg-bar of Tables 3 and 4, avg over the N-1 other nodes (vertex-transitive,
# so node 0 stands for all pairs). Counting the source too gives the same 2-digit values.
@pytest.mark.parametrize(
    "p,a,t1t2,diam,avg",
    [
        (47, 2, (1, 7), 7, 5.54),
        (47, 2, (7, 8), 8, 5.74),
        (47, 2, (1, 2), 8, 5.76),
        (47, 2, (3, 6), 9, 5.72),
        (307, 4, (2, 16), 10, 8.10),
        (307, 4, (1, 4), 11, 8.16),
        (307, 4, (4, 13), 12, 8.56),
        (307, 4, (1, 2), 15, 9.65),
    ],
)
def test_tables_3_4_diameter_and_average(p, a, t1t2, diam, avg):
    g = Borel(p, a, *t1t2)
    d = distances(g)
    assert d.min() == 0 and d.max() == diam
    assert round(d.sum() / (g.num_nodes - 1), 2) == avg
    assert round(d.sum() / g.num_nodes, 2) == avg


def test_table1_graph_diameter():
    assert distances(Borel(7, 2, 0, 1)).max() == 3


@pytest.mark.parametrize(
    "spec,match",
    [
        ("borel:8,2,1,7", r"P in borel:P,A,T1,T2 must be a prime"),
        ("borel:2,2,0,1", r"P in borel:P,A,T1,T2 must be in \[3,"),
        ("borel:7,1,0,1", r"A in borel:P,A,T1,T2 must be in \[2, 6\]"),
        ("borel:7,7,0,1", r"A in borel:P,A,T1,T2 must be in \[2, 6\]"),
        ("borel:7,2,0,3", r"T2 in borel:P,A,T1,T2 must be in \[0, 2\]"),
        ("borel:7,2,-1,1", r"T1 in borel:P,A,T1,T2 must be in \[0, 2\]"),
        ("borel:7,2,1,1", r"T1 and T2 .* must differ"),
        ("borel:7,3,0,3", r"T2 .* a\^T2 = -1"),
        ("borel:7,6,0,1", r"T2 .* a\^T2 = -1"),
        ("borel:13,2,2,4", r"gcd\(T1, T2, k\) = 1"),
        ("borel:7,x,0,1", r"A in borel:P,A,T1,T2 must be an integer"),
    ],
)
def test_validation(spec, match):
    with pytest.raises(TopologyError, match=match):
        from_spec(spec)


def test_bad_labels():
    g = Borel(47, 2, 1, 7)
    for bad, says in (
        ("abc", r"must be an integer in \[0, 1,080\], got 'abc'"),
        ("foo:3", r"must be a GCR number j, 'gcr:j' or 'cr:c' with j, c in \[0, 1080\]"),
        ("1081", r"must be in \[0, 1,080\], got 1081"),
        ("-1", r"must be in \[0, 1,080\], got -1"),
        ("cr:0", r"has no CR numbering here: it needs T1 = 0"),
    ):
        with pytest.raises(TopologyError, match=says):
            g.parse_label(bad)


@pytest.mark.slow
@pytest.mark.parametrize("p", [5, 7, 11, 13])
def test_connectivity_rule_exhaustive(p):
    # Independent check of the gcd(T1, T2, k) = 1 criterion on the matrix definition.
    for a in range(2, p):
        k = next(n for n in range(1, p) if pow(a, n, p) == 1)
        for t1 in range(k):
            for t2 in range(k):
                if t1 == t2 or p - 1 in (pow(a, t1, p), pow(a, t2, p)):
                    continue
                ref = nx.is_connected(matrix_graph(p, a, t1, t2))
                assert ref == (math.gcd(t1, t2, k) == 1)
                if ref:
                    assert edges(Borel(p, a, t1, t2)) == edges_of(matrix_graph(p, a, t1, t2))


PRIMES = [3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(PRIMES), st.integers(2, 78), st.integers(0, 77), st.integers(0, 77))
def test_random_params_valid_or_clean_error(p, a, t1, t2):
    # Fold the draws into the plausible range so most examples build a graph.
    a, t1, t2 = 2 + a % (p - 2), t1 % (p - 1), t2 % (p - 1)
    try:
        g = Borel(p, a, t1, t2)
    except TopologyError as e:
        assert "borel:P,A,T1,T2" in str(e) and "\n" not in str(e)
        return
    d = distances(g, int(np.random.default_rng(t1).integers(g.num_nodes)))
    assert d.min() >= 0  # connected
    if g.has_cr:
        c = np.arange(g.num_nodes)
        assert np.array_equal(g.to_cr(g.from_cr(c)), c)
