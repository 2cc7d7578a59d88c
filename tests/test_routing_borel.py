"""Routers of the borel family (paper 003, Sec. 4): CR, Two-Phase and table routing.

Routes are followed by :func:`walk` (next nodes from ``topology.neighbors``) and
compared with BFS distances; the paper's worked examples (Table 2, Sec. 4.6,
Fig. 2) and the Two-Phase columns of Tables 3-4 are reproduced exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpinet.errors import RoutingError, TopologyError
from mpinet.routing import ROUTERS, available_routers, make_router
from mpinet.routing import borel as rb
from mpinet.routing.base import HopContext
from mpinet.routing.shortest import ShortestRouter
from mpinet.routing.tables import distances_from
from mpinet.routing.walk import walk
from mpinet.topology import from_spec
from mpinet.topology.borel import Borel
from mpinet.topology.borel_ring import CRRing, find_ring_word

# (t1, t2), D, D1, D2, Two-Phase max and avg (paper Tables 3 and 4)
TABLE3 = [
    ((1, 7), 7, 4, 7, 11, 7.67),
    ((7, 8), 8, 6, 7, 13, 8.12),
    ((1, 2), 8, 6, 7, 13, 8.50),
    ((3, 6), 9, 6, 7, 13, 8.03),
]
TABLE4 = [
    ((2, 16), 10, 6, 10, 16, 11.49),
    ((1, 4), 11, 7, 9, 16, 11.38),
    ((4, 13), 12, 8, 10, 18, 12.37),
    ((1, 2), 15, 13, 10, 23, 13.99),
]
SPECS = ["borel:7,2,0,1"] + [f"borel:47,2,{t[0]},{t[1]}" for t, *_ in TABLE3]
CR_OPTIONS = [{"lookahead": d, "commit": c} for d in (1, 2, 3, 4) for c in (False, True)]


def route(g: Borel, name: str, src: object, dst: object, **opt) -> dict:
    out = walk(g, make_router(name, g, **opt), src, dst)
    assert out["ok"].all()
    return out


def pairs(g: Borel, count: int = 1500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Node 0 to every node, then ``count`` random pairs."""
    rng = np.random.default_rng(seed)
    n = g.num_nodes
    src = np.concatenate([np.zeros(n, dtype=np.int64), rng.integers(0, n, count)])
    dst = np.concatenate([np.arange(n), rng.integers(0, n, count)])
    return src, dst


def bfs(g: Borel, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Exact distances of pairs: BFS from the identity, moved by the translations."""
    return distances_from(g, 0)[g.translate(dst, src)[0]].astype(np.int64)


def peripheral(g: Borel, ring: CRRing, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    e = (ring.to_cr(dst) - ring.to_cr(src)) % g.num_nodes
    return np.minimum(e, g.num_nodes - e)


# ------------------------------------------------------------------ registry
def test_registered_for_borel_only():
    g = from_spec("borel:7,2,0,1")
    names = available_routers(g)
    for name in ("borel-cr", "borel-two-phase", "borel-table"):
        assert name in names and ROUTERS[name].families == ("borel",)
        assert ROUTERS[name].distributed
    assert issubclass(ROUTERS["borel-table"], ShortestRouter)
    widths = {name: make_router(name, g).header_width for name in names if name.startswith("bo")}
    assert widths == {"borel-cr": 1, "borel-two-phase": 2, "borel-table": 1}
    assert make_router("borel-cr", g, commit=True).header_width == 3
    with pytest.raises(RoutingError, match="applies to borel only"):
        make_router("borel-cr", from_spec("star:4"))


@pytest.mark.parametrize(
    "opt,match",
    [
        ({"lookahead": 0}, r"lookahead of router 'borel-cr' must be in \[1, 4\]"),
        ({"lookahead": 5}, r"lookahead .* \[1, 4\]"),
        ({"lookahead": "x"}, r"lookahead .* integer"),
        ({"ring_seed": -1}, r"ring_seed .* >= 0"),
        ({"commit": "yes"}, r"commit .* true or false"),
        ({"tie": "first"}, r"no option"),
    ],
)
def test_cr_option_errors(opt, match):
    with pytest.raises(RoutingError, match=match):
        make_router("borel-cr", from_spec("borel:7,2,0,1"), **opt)


def test_cr_refuses_without_ring(monkeypatch):
    # borel:7,3,1,5: the 7-coset graph has no Hamiltonian cycle (exhaustive search)
    with pytest.raises(RoutingError, match="needs a CR labelling.*no CR labelling exists"):
        make_router("borel-cr", from_spec("borel:7,3,1,5"))
    monkeypatch.setattr("mpinet.topology.borel_ring.MAX_RING_P", 40)
    with pytest.raises(RoutingError, match="handles P <= 40, got 47"):
        make_router("borel-cr", Borel(47, 2, 1, 7))


# ----------------------------------------------------------------- CR rings
@pytest.mark.parametrize(
    "spec,seed",
    [(s, 0) for s in SPECS]
    + [("borel:7,2,0,1", 3), ("borel:13,2,3,5", 0), ("borel:307,4,2,16", 0)],
)
def test_cr_ring_is_a_chordal_ring(spec, seed):
    g = from_spec(spec)
    ring = g.cr_ring(seed)
    n, p = g.num_nodes, g.p
    c = np.arange(n)
    ids = ring.from_cr(c)
    assert np.array_equal(np.sort(ids), c) and np.array_equal(ring.to_cr(ids), c)
    nb = ring.to_cr(g.neighbors(ids).ravel()).reshape(n, 4)
    off = ring.offsets()
    # GCR property with q = p: offsets depend on the class only; +1 is an edge
    assert np.array_equal((nb - c[:, None]) % n, off[c % p])
    assert np.all(off[np.arange(p), ring.word] == 1)
    assert np.all(np.any(off == n - 1, axis=1))
    if g.has_cr and seed == 0:
        assert np.array_equal(ring.to_cr(c), g.to_cr(c))  # the paper's labelling
    assert g.cr_ring(seed) is ring
    assert find_ring_word(g, 5) == find_ring_word(g, 5)  # deterministic


def test_cr_ring_rejects_bad_words():
    g = Borel(7, 2, 0, 1)
    with pytest.raises(TopologyError, match="not a CR ring"):
        CRRing(g, [0] * 7)
    with pytest.raises(TopologyError, match="needs 7 ports"):
        CRRing(g, [0, 2])


# ------------------------------------------------------ the paper's examples
def test_table2_cr_routing_path():
    g = Borel(7, 2, 0, 1)
    ring = g.cr_ring()
    out = walk(g, make_router("borel-cr", g), ring.from_cr([0]), ring.from_cr([16]), paths=True)
    path = out["paths"][0]
    assert ring.to_cr(path[path >= 0]).tolist() == [0, 20, 14, 15, 16]


def test_two_phase_example_and_figure2():
    g = Borel(7, 2, 0, 1)
    r = make_router("borel-two-phase", g)
    out = walk(g, r, [0], [16], paths=True)
    path = out["paths"][0]
    ports = [
        g.neighbors([u])[0].tolist().index(v) for u, v in zip(path[:-1], path[1:], strict=True)
    ]
    assert path.tolist() == [0, 4, 10, 16] and [g.ports[q] for q in ports] == ["B", "A", "A"]
    fig2 = [[], ["A"], ["A"] * 2, ["A"] * 3, ["A-1"] * 3, ["A-1"] * 2, ["A-1"]]
    rows = [[g.ports[q] for q in r.paths[j, : r.path_len[j]]] for j in range(7)]
    assert rows == fig2
    assert (r.d1, r.d2) == (1, 3)


# ---------------------------------------------------------------- delivery
@pytest.mark.parametrize("spec", SPECS)
def test_all_routers_deliver(spec):
    g = from_spec(spec)
    src, dst = pairs(g)
    dist = bfs(g, src, dst)
    assert dist[: g.num_nodes].max() == distances_from(g, 0).max()
    table = route(g, "borel-table", src, dst)["lengths"]
    assert np.array_equal(table, dist)
    two = make_router("borel-two-phase", g)
    lengths = walk(g, two, src, dst)["lengths"]
    assert np.all(lengths >= dist) and lengths.max() <= two.d1 + two.d2 <= 2 * dist.max()
    ring = g.cr_ring()
    pd = peripheral(g, ring, src, dst)
    for opt in CR_OPTIONS:
        lengths = route(g, "borel-cr", src, dst, **opt)["lengths"]
        assert np.all(lengths >= dist) and np.all(lengths <= opt["lookahead"] * pd), opt
        if opt["lookahead"] == 1:
            assert np.all(lengths <= pd)


@pytest.mark.parametrize("t,diam,d1,d2,mx,avg", TABLE3)
def test_table3_two_phase_and_d1_d2(t, diam, d1, d2, mx, avg):
    g = Borel(47, 2, *t)
    r = make_router("borel-two-phase", g)
    lengths = walk(g, r, np.zeros(g.num_nodes, dtype=np.int64), np.arange(g.num_nodes))["lengths"]
    assert (r.d1, r.d2, lengths.max()) == (d1, d2, mx)
    assert round(lengths.sum() / (g.num_nodes - 1), 2) == avg
    assert mx <= 2 * diam


def test_table4_two_phase_and_d1_d2():
    for t, diam, d1, d2, mx, avg in TABLE4:
        g = Borel(307, 4, *t)
        r = make_router("borel-two-phase", g)
        src = np.zeros(g.num_nodes, dtype=np.int64)
        lengths = walk(g, r, src, np.arange(g.num_nodes))["lengths"]
        assert (r.d1, r.d2, lengths.max()) == (d1, d2, mx) and mx <= 2 * diam
        assert round(lengths.sum() / (g.num_nodes - 1), 2) == avg


def test_cr_on_table4_graph():
    g = Borel(307, 4, 2, 16)
    n = g.num_nodes
    src, dst = np.zeros(n, dtype=np.int64), np.arange(n)
    dist = distances_from(g, 0).astype(np.int64)
    pd = peripheral(g, g.cr_ring(), src, dst)
    for d in (1, 4):
        lengths = route(g, "borel-cr", src, dst, lookahead=d)["lengths"]
        assert np.all(lengths >= dist) and np.all(lengths <= d * pd)


def test_two_phase_source_in_destination_class_and_vertex_transitive():
    g = Borel(47, 2, 1, 7)
    rng = np.random.default_rng(3)
    src = rng.integers(0, g.num_nodes, 500)
    dst = rng.integers(0, g.num_nodes, 500)
    dst[:100] = src[:100] % g.k + g.k * rng.integers(0, g.p, 100)  # same class
    r = make_router("borel-two-phase", g)
    got = walk(g, r, src, dst)["lengths"]
    rel = g.translate(src, dst)[0]  # route from 0 to the relative position
    want = walk(g, r, np.zeros(500, dtype=np.int64), g.translate(0, rel)[0])["lengths"]
    assert np.array_equal(got, want)
    t, y = g.matrices(src[:100])
    row = g.pw[(-t) % g.k] * ((dst[:100] // g.k - y) % g.p) % g.p  # j' of Sec. 4.5
    assert np.array_equal(got[:100], r.path_len[row])


def test_cr_chunks_and_batches_agree():
    g = Borel(47, 2, 3, 6)
    src, dst = pairs(g, 400, seed=1)
    m = src != dst
    src, dst = src[m], dst[m]
    r = make_router("borel-cr", g, lookahead=3)
    h = r.init_headers(src, dst)
    ctx = HopContext(step=0, pids=np.arange(src.size), hops=np.zeros(src.size, dtype=np.int64))
    whole = r.next_port(src, dst, h, ctx)[0]
    r._chunk = 7
    assert np.array_equal(r.next_port(src, dst, h, ctx)[0], whole)
    for i in range(0, src.size, 37):
        assert r.next_port(src[i : i + 1], dst[i : i + 1], h[i : i + 1], ctx)[0][0] == whole[i]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([11, 13, 17, 19, 23, 29, 31]), st.integers(0, 10**6), st.integers(1, 4))
def test_cr_never_loops_on_random_graphs(p, draw, d):
    rng = np.random.default_rng(draw)
    a = int(rng.integers(2, p - 1))
    k = next(e for e in range(1, p) if pow(a, e, p) == 1)
    try:
        g = Borel(p, a, int(rng.integers(k)), int(rng.integers(k)))
        r = make_router("borel-cr", g, lookahead=d, ring_seed=draw % 3, commit=draw % 2 == 1)
    except (TopologyError, RoutingError):
        return
    n = g.num_nodes
    src = r.ring.from_cr(np.repeat(np.arange(p), n))  # one source per class: all pairs
    dst = np.tile(np.arange(n), p)
    out = walk(g, r, src, dst, max_hops=d * n)
    assert out["ok"].all()
    assert np.all(out["lengths"] <= d * peripheral(g, r.ring, src, dst))
    assert np.all(out["lengths"] >= bfs(g, src, dst))


def test_module_exports():
    want = (rb.BorelCRRouter, rb.BorelTwoPhaseRouter, rb.BorelTableRouter)
    assert want == rb.ROUTERS_HERE
