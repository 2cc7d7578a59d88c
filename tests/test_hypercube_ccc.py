"""Tests of :mod:`mpinet.topology.hypercube` and :mod:`mpinet.topology.ccc`.

References are networkx's hypercube and a CCC built in plain Python from its
definition, independent of the vectorized code.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpinet.errors import TopologyError
from mpinet.topology import from_spec
from mpinet.topology.base import Topology
from mpinet.topology.ccc import CCC, ccc_diameter
from mpinet.topology.hypercube import MAX_N, Hypercube


def module_graph(t: Topology) -> nx.Graph:
    nb = t.neighbors(np.arange(t.num_nodes))
    g = nx.Graph()
    g.add_nodes_from(range(t.num_nodes))
    g.add_edges_from((u, int(v)) for u in range(t.num_nodes) for v in nb[u] if v >= 0)
    return g


def eccentricities(t: Topology, sources: np.ndarray | None = None) -> np.ndarray:
    """Eccentricities of ``sources`` (default all) by one frontier BFS from all at once."""
    n = t.num_nodes
    src = np.arange(n) if sources is None else np.asarray(sources)
    nb = t.neighbors(np.arange(n))
    seen = np.zeros((src.size, n), dtype=bool)
    seen[np.arange(src.size), src] = True
    front = seen.copy()
    ecc = np.zeros(src.size, dtype=np.int64)
    d = 0
    while front.any():
        d += 1
        nxt = np.zeros_like(front)
        for p in range(t.degree):
            nxt |= front[:, nb[:, p]]
        nxt &= ~seen
        seen |= nxt
        ecc[nxt.any(axis=1)] = d
        front = nxt
    assert seen.all()
    return ecc


def check_symmetry(t: Topology, ids: np.ndarray) -> None:
    nb = t.neighbors(ids)
    assert nb.shape == (ids.size, t.degree) and (nb >= 0).all()
    for p, rp in enumerate(t.reverse_port):
        assert (t.neighbors(nb[:, p])[:, rp] == ids).all()
    assert (nb != ids[:, None]).all()  # no self loops


# --- hypercube -------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_hypercube_matches_networkx(n):
    t = Hypercube(n)
    assert t.num_nodes == 2**n and t.ports == tuple(f"dim{d}" for d in range(n))
    check_symmetry(t, np.arange(t.num_nodes))
    q = nx.hypercube_graph(n)  # nodes are bit tuples (plain ints 0/1 for n = 1)
    ref = nx.relabel_nodes(q, {v: int("".join(map(str, np.atleast_1d(v))), 2) for v in q})
    g = module_graph(t)
    assert {frozenset(e) for e in g.edges} == {frozenset(e) for e in ref.edges}
    dist = nx.single_source_shortest_path_length(g, 0b1 if n > 1 else 0)
    assert all(d == bin(v ^ (0b1 if n > 1 else 0)).count("1") for v, d in dist.items())
    assert (eccentricities(t) == n).all()


def test_hypercube_ports_flip_bits():
    t = Hypercube(5)
    nb = t.neighbors([0b10110])[0]
    assert nb.tolist() == [0b10111, 0b10100, 0b10010, 0b11110, 0b00110]
    assert t.port_classes == ("cube",) * 5 and t.reverse_port == tuple(range(5))


def test_hypercube_large_n():
    t = Hypercube(MAX_N)
    top = 2**MAX_N - 1
    check_symmetry(t, np.array([0, top, 12345678901]))
    assert t.label(top) == "1" * MAX_N and t.parse_label("1" * MAX_N) == top


@given(st.integers(1, MAX_N).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, 2**n - 1))))
def test_hypercube_labels_round_trip(args):
    n, v = args
    t = Hypercube(n)
    lab = t.label(v)
    assert len(lab) == n and int(lab, 2) == v and t.parse_label(lab) == v


def test_hypercube_label_errors_and_params():
    t = Hypercube(4)
    assert t.label(6) == "0110" and t.parse_label(" 0110 ") == 6
    for bad in ["110", "01101", "0120", "(0110)", ""]:
        with pytest.raises(TopologyError, match="exactly 4 bits"):
            t.parse_label(bad)
    assert from_spec("hypercube:3").degree == 3
    for bad in [0, MAX_N + 1, "x"]:
        with pytest.raises(TopologyError, match=r"N in hypercube:N"):
            Hypercube(bad)


# --- cube-connected cycles -------------------------------------------------


def ccc_reference(n: int) -> nx.Graph:
    """CCC_n on ids i + n*x, straight from the definition."""
    g = nx.Graph()
    for x in range(2**n):
        for i in range(n):
            g.add_edge(i + n * x, (i + 1) % n + n * x)  # ring
            g.add_edge(i + n * x, i + n * (x ^ (1 << i)))  # cube link in dimension i
    return g


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_ccc_matches_definition(n):
    t = CCC(n)
    assert t.num_nodes == n * 2**n and t.degree == 3
    check_symmetry(t, np.arange(t.num_nodes))
    g, ref = module_graph(t), ccc_reference(n)
    assert {frozenset(e) for e in g.edges} == {frozenset(e) for e in ref.edges}
    for s in [0, t.num_nodes - 1, t.num_nodes // 3]:
        assert nx.single_source_shortest_path_length(g, s) == (
            nx.single_source_shortest_path_length(ref, s)
        )


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_ccc_diameter_formula(n):
    t = CCC(n)
    ecc = eccentricities(t, None if n < 8 else np.arange(0, t.num_nodes, 37))
    # vertex-transitive: every node has the same eccentricity, the diameter
    assert (ecc == ecc[0]).all()
    assert ecc[0] == ccc_diameter(n) == (6 if n == 3 else 2 * n + n // 2 - 2)


def test_ccc_ports():
    t = CCC(4)
    v = t.parse_label("(3, 0110)")
    assert v == 3 + 4 * 6
    nb = t.neighbors([v])[0]
    assert t.labels(nb) == ["(0, 0110)", "(2, 0110)", "(3, 1110)"]
    assert t.ports == ("cycle+", "cycle-", "cube") and t.reverse_port == (1, 0, 2)
    assert t.port_classes == ("cycle", "cycle", "cube") and t.vertex_transitive


@pytest.mark.parametrize("n", [3, 4, 5])
def test_ccc_labels_round_trip(n):
    t = CCC(n)
    for v in range(t.num_nodes):
        lab = t.label(v)
        assert t.parse_label(lab) == v and t.parse_label(lab.strip("()")) == v


def test_ccc_label_errors_and_params():
    t = CCC(4)
    assert t.parse_label("2,0110") == t.parse_label("( 2 , 0110 )") == 26
    for bad in ["(2, 011)", "(2 0110)", "2, 01102", "(2, 0110", "x"]:
        with pytest.raises(TopologyError, match=r"\(i, bits\)"):
            t.parse_label(bad)
    with pytest.raises(TopologyError, match=r"i in the ccc:4 label .* \[0, 3\]"):
        t.parse_label("(4, 0110)")
    assert from_spec("ccc:3").num_nodes == 24
    for bad in [2, 31, "x"]:
        with pytest.raises(TopologyError, match=r"N in ccc:N"):
            CCC(bad)
    big = CCC(30)
    check_symmetry(big, np.array([0, big.num_nodes - 1, 123456789]))
