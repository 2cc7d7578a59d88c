"""Tests of :mod:`mpinet.routing`: translations, tables, routers, registry, walk.

Reference distances come from :func:`distances_from`, itself checked against
networkx; routes are followed by :func:`walk`, which computes every next node
with ``topology.neighbors``, independently of the router's tables.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from mpinet.errors import MpinetError, ResourceError, RoutingError, TopologyError
from mpinet.routing import ROUTERS, available_routers, make_router
from mpinet.routing.base import HopContext, Router
from mpinet.routing.tables import (
    NO_PORT,
    all_pairs_tables,
    best_ports,
    distances_from,
    neighbor_table,
)
from mpinet.routing.walk import walk
from mpinet.topology import from_spec
from mpinet.topology.base import Topology

TRANSLATED = [
    "star:4",
    "ms:2,2",
    "ms:3,2",
    "scc:3",
    "scc:4",
    "scc:5",
    "borel:7,2,0,1",
    "borel:47,2,1,7",
    "hypercube:5",
    "ccc:3",
    "ccc:4",
]


def graph(t: Topology) -> nx.Graph:
    nb = t.neighbors(np.arange(t.num_nodes))
    g = nx.Graph()
    g.add_nodes_from(range(t.num_nodes))
    g.add_edges_from((u, int(v)) for u in range(t.num_nodes) for v in nb[u] if v >= 0)
    return g


def sample(n: int, count: int, seed: int = 0) -> np.ndarray:
    if n <= count:
        return np.arange(n)
    return np.random.default_rng(seed).choice(n, count, replace=False)


# ---------------------------------------------------------------- translate
@pytest.mark.parametrize("spec", TRANSLATED)
def test_translate_is_port_preserving_automorphism(spec: str) -> None:
    t = from_spec(spec)
    n = t.num_nodes
    ids = np.arange(n)
    nb = t.neighbors(ids)
    targets = t.translation_targets
    assert targets is not None and targets.dtype == np.int64
    for d in sample(n, 12):
        rel, key = t.translate(ids, d)
        assert np.unique(rel).size == n  # a bijection
        assert (key == key[0]).all() and targets[key[d]] == rel[d]
        rel_nb = t.translate(nb.ravel(), d)[0].reshape(nb.shape)
        assert (t.neighbors(rel) == rel_nb).all()
    # vectorized over both arguments
    d = sample(n, n, seed=1)
    rel, key = t.translate(ids, d)
    assert rel.shape == key.shape == (n,) and rel.dtype == key.dtype == np.int64
    same = t.translate(d, d)
    assert (same[0] == targets[same[1]]).all()


def test_translate_keys_and_errors() -> None:
    scc = from_spec("scc:5")
    assert list(scc.translation_targets) == [0, 1, 2, 3]
    _, key = scc.translate([0, 0, 0], scc.join(np.array([2, 4, 5]), np.array([7, 0, 119])))
    assert list(key) == [0, 2, 3]
    fccn = from_spec("fccn:2")
    assert fccn.translation_targets is None
    with pytest.raises(TopologyError, match="fccn:2 has no translation"):
        fccn.translate([0], [1])
    with pytest.raises(TopologyError, match="dst must be in"):
        from_spec("star:4").translate([0], [24])


# ------------------------------------------------------------------- tables
@pytest.mark.parametrize("spec", ["scc:4", "fccn:2", "borel:47,2,1,7", "ccc:3"])
def test_distances_from_matches_networkx(spec: str) -> None:
    t = from_spec(spec)
    g = graph(t)
    nb = neighbor_table(t)
    for s in sample(t.num_nodes, 3):
        ref = nx.single_source_shortest_path_length(g, int(s))
        want = np.array([ref[v] for v in range(t.num_nodes)])
        got = distances_from(t, int(s))
        assert got.dtype == np.int16 and (got == want).all()
        assert (distances_from(t, int(s), nb) == want).all()


@pytest.mark.parametrize("spec", ["star:5", "ms:2,2", "ms:3,2", "ms:2,3", "scc:4", "fccn:2"])
def test_neighbor_table(spec: str) -> None:
    t = from_spec(spec)
    nb = neighbor_table(t)
    assert nb.dtype == np.int32 and nb.shape == (t.num_nodes, t.degree)
    assert (nb == t.neighbors(np.arange(t.num_nodes))).all()


def test_all_pairs_tables_and_best_ports() -> None:
    t = from_spec("fccn:2")
    nb = neighbor_table(t)
    masks, dist = all_pairs_tables(nb)
    ref = dict(nx.all_pairs_shortest_path_length(graph(t)))
    want = np.array([[ref[u][v] for v in range(64)] for u in range(64)])
    assert (dist == want).all()
    for d in range(64):
        port = best_ports(nb, distances_from(t, d))
        assert port[d] == NO_PORT
        for x in range(64):
            ok = [p for p in range(4) if nb[x, p] >= 0 and want[nb[x, p], d] == want[x, d] - 1]
            assert masks[x, d] == sum(1 << p for p in ok)
            assert x == d or port[x] == ok[0]


def test_table_limits() -> None:
    with pytest.raises(ResourceError, match=r"fccn:5 .*2\*\*26"):
        make_router("shortest", from_spec("fccn:5"))
    with pytest.raises(ResourceError, match=r"scc:6 \(3,600 nodes.*limit of 1,000 bytes"):
        make_router("shortest", from_spec("scc:6"), max_table_bytes=1000)


# ------------------------------------------------------------------ routers
EXHAUSTIVE = ["star:5", "ms:2,2", "scc:4", "fccn:2", "borel:7,2,0,1", "hypercube:5", "ccc:4"]
SAMPLED = ["ms:3,2", "scc:5", "fccn:3", "borel:47,2,1,7"]


def pairs(t: Topology, spec: str) -> tuple[np.ndarray, np.ndarray]:
    """All pairs, or all destinations from a few sources (a whole ring for SCC:
    with translations, one source per ring position reaches every table entry)."""
    n = t.num_nodes
    srcs = np.arange(n) if spec in EXHAUSTIVE else np.union1d(np.arange(6), sample(n, 10))
    s, d = np.meshgrid(srcs, np.arange(n), indexing="ij")
    return s.ravel(), d.ravel()


@pytest.mark.parametrize("tie", ["first", "random"])
@pytest.mark.parametrize("spec", EXHAUSTIVE + SAMPLED)
def test_shortest_routes_are_shortest(spec: str, tie: str) -> None:
    t = from_spec(spec)
    r = make_router("shortest", t, tie=tie)
    s, d = pairs(t, spec)
    dist = {int(x): distances_from(t, int(x)) for x in np.unique(s)}
    want = np.concatenate([dist[int(x)][d[s == x]] for x in np.unique(s)])
    res = walk(t, r, s, d, seed=3, paths=tie == "random")
    assert res["ok"].all()
    assert (res["lengths"] == want).all()
    assert (r.distance(s, d) == want).all()
    assert res["port_counts"].sum() == want.sum() == sum(res["class_counts"].values())
    assert r.header_width == (0 if t.family == "fccn" else 1)  # key * N + rel, one word
    if tie == "random":
        again = walk(t, r, s, d, seed=3, paths=True)
        other = walk(t, r, s, d, seed=4, paths=True)
        assert (again["paths"] == res["paths"]).all()  # reproducible
        assert (other["paths"] != res["paths"]).any()  # another seed, other paths
        assert (other["lengths"] == want).all()


def test_shortest_random_ties_are_uniform() -> None:
    t = from_spec("hypercube:4")
    r = make_router("shortest", t, tie="random")
    m = 8000
    src, dst = np.zeros(m, dtype=np.int64), np.full(m, 15)
    ctx = HopContext(step=0, pids=np.arange(m), hops=np.zeros(m, dtype=np.int64), seed=9)
    ports, headers = r.next_port(src, dst, r.init_headers(src, dst), ctx)
    counts = np.bincount(ports, minlength=4)
    assert (np.abs(counts - m / 4) < 0.1 * m / 4).all()
    assert (headers[:, 0] == (1 << ports) ^ 15).all()  # rel = position relative to dst
    empty = np.zeros(0, dtype=np.int64)
    ctx0 = HopContext(step=0, pids=empty, hops=empty)
    assert r.next_port(empty, empty, np.zeros((0, 2), dtype=np.int64), ctx0)[0].size == 0


def test_shortest_options() -> None:
    t = from_spec("scc:4")
    with pytest.raises(RoutingError, match="tie of router 'shortest'"):
        make_router("shortest", t, tie="last")
    with pytest.raises(RoutingError, match="no option.*'bogus'.*tie, max_table_bytes"):
        make_router("shortest", t, bogus=1)
    r = make_router("shortest", t)
    assert r.build_seconds is None
    r.prepare()
    assert r.build_seconds is not None and r.build_seconds >= 0


def test_hypercube_ecube() -> None:
    t = from_spec("hypercube:6")
    r = make_router("hypercube-ecube", t)
    s, d = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    s, d = s.ravel(), d.ravel()
    res = walk(t, r, s, d, paths=True)
    want = np.bitwise_count(s ^ d)
    assert res["ok"].all() and (res["lengths"] == want).all()
    assert (r.distance(s, d) == want).all()
    # dimension order: the bits flipped along a path increase
    p = res["paths"]
    bit = np.bitwise_count((p[:, 1:] ^ p[:, :-1]) - 1)
    bit = np.where(p[:, 1:] >= 0, bit, 100 + np.arange(p.shape[1] - 1))
    assert (np.diff(bit, axis=1) > 0).all()


# ----------------------------------------------------------------- registry
def test_registry() -> None:
    assert set(ROUTERS) >= {"shortest", "hypercube-ecube"}
    assert available_routers(from_spec("hypercube:3")) == [
        "shortest",
        "hypercube-ecube",
        "anynet-min",
    ]
    assert available_routers(from_spec("scc:4")) == [
        "shortest",
        "scc-random",
        "scc-greedy",
        "scc-nobacktrack",
        "scc-optimal",
        "anynet-min",
    ]
    with pytest.raises(RoutingError, match="unknown router 'nope'; known: shortest"):
        make_router("nope", from_spec("scc:4"))
    with pytest.raises(RoutingError, match="applies to hypercube only, not scc:4") as err:
        make_router("hypercube-ecube", from_spec("scc:4"))
    assert isinstance(err.value, MpinetError) and isinstance(err.value, ValueError)
    with pytest.raises(RoutingError, match="hypercube-ecube' has no option"):
        make_router("hypercube-ecube", from_spec("hypercube:3"), tie="random")


# --------------------------------------------------------------------- walk
class _Fixed(Router):
    name = "fixed-port"

    def __init__(self, topo: Topology, port: int) -> None:
        super().__init__(topo)
        self.port = port

    def next_port(self, nodes, dests, headers, ctx):  # noqa: ANN001, ANN201
        return np.full(nodes.size, self.port, dtype=np.int64), headers


def test_walk_checks_ports_and_limits() -> None:
    t = from_spec("fccn:2")
    with pytest.raises(RoutingError, match=r"'fixed-port' chose port 3 \(inter\) at node \(0 0\)"):
        walk(t, _Fixed(t, 3), [0], [63])
    with pytest.raises(RoutingError, match="port 7 at node"):
        walk(t, _Fixed(t, 7), [1], [2])
    res = walk(t, _Fixed(t, 0), [0, 0, 5], [1, 2, 5], max_hops=10)
    assert res["ok"].tolist() == [True, False, True]
    assert res["lengths"].tolist() == [1, 10, 0]
    assert res["class_counts"] == {"cube": 11, "intercubic": 0}


@pytest.mark.parametrize("spec", ["scc:5", "ms:2,3", "star:6", "ccc:5", "hypercube:7", "ims:2,2,3"])
def test_shortest_compiled_hop_equals_the_table_lookups(spec):
    """The one-pass kernel of translated ``shortest`` routing equals the two gathers it replaces."""
    from mpinet.routing.base import HopContext

    topo = from_spec(spec)
    r = make_router("shortest", topo)
    r.prepare()
    if not r.translated:
        pytest.skip(f"{spec}: not a translated topology")
    rng = np.random.default_rng(7)
    src, dst = (rng.integers(0, topo.num_nodes, 3000) for _ in range(2))
    rows = np.zeros((3000, 3), np.int64)
    rows[:, 2:] = r.init_headers(src, dst)
    hdr = rows[:, 2:]  # a strided view, as the engine passes it
    ctx = HopContext(step=1, pids=np.arange(3000), hops=np.zeros(3000, np.int64))
    ports, new = r.next_port(src, dst, hdr, ctx)
    n, deg = topo.num_nodes, topo.degree
    idx = hdr[:, 0]
    rel = idx % n if r.targets.size > 1 else idx
    want = r._port[idx].astype(np.int64)
    np.testing.assert_array_equal(ports, want)
    np.testing.assert_array_equal(new[:, 0], idx + r._nb_flat[rel * deg + want] - rel)
    assert (ports[src != dst] < deg).all()
