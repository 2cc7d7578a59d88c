"""Routers ``fccn-sroute``, ``fccn-shortest`` (paper 002) and ``ccc``.

Every route is followed hop by hop with :func:`mpinet.routing.walk.walk` and
compared with Cor. 3.1 (S-Route lengths) or with BFS (shortest distances).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpinet.errors import RoutingError
from mpinet.routing import make_router
from mpinet.routing.base import HopContext
from mpinet.routing.ccc import PLUS, ring_walk
from mpinet.routing.fccn import link_level, max_level_differ, theorem41
from mpinet.routing.tables import all_pairs_tables, distances_from, neighbor_table
from mpinet.routing.walk import walk
from mpinet.topology.ccc import CCC, ccc_diameter
from mpinet.topology.fccn import FCCN, sroute_distance, sroute_path


def all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.repeat(np.arange(n), n), np.tile(np.arange(n), n)


def octal_path(t: FCCN, res: dict) -> list[str]:
    p = res["paths"][0]
    return [format(int(v), f"0{t.m}o") for v in p[p >= 0]]


def route(t: FCCN, name: str, src: str, dst: str) -> list[str]:
    res = walk(t, make_router(name, t), [int(src, 8)], [int(dst, 8)], paths=True)
    return octal_path(t, res)


# ------------------------------------------------------------------ registry


def test_registry_headers_and_options() -> None:
    f3, c4 = FCCN(3), CCC(4)
    assert make_router("fccn-sroute", f3).header_width == 1
    assert make_router("fccn-shortest", f3).header_width == 1
    assert make_router("ccc", c4).header_width == 0
    assert make_router("fccn-sroute", f3).distributed
    assert not make_router("fccn-shortest", f3).distributed
    with pytest.raises(RoutingError, match="applies to fccn only"):
        make_router("fccn-sroute", c4)
    with pytest.raises(RoutingError, match="applies to ccc only"):
        make_router("ccc", f3)
    with pytest.raises(RoutingError, match="has no option"):
        make_router("fccn-shortest", f3, pointer=False)
    with pytest.raises(RoutingError, match="mode of router 'ccc'"):
        make_router("ccc", c4, mode="west")


# ------------------------------------------------------------ paper examples


def test_paper_example_272_to_350() -> None:
    t = FCCN(3)
    want = ["272", "273", "237", "233", "322", "323", "321", "325", "352", "350"]
    assert route(t, "fccn-sroute", "272", "350") == want
    assert route(t, "fccn-shortest", "272", "350") == want  # already shortest
    assert sroute_path(0o272, 0o350, 3) == [int(v, 8) for v in want]


def test_paper_example_07_to_37() -> None:
    t = FCCN(2)
    assert route(t, "fccn-sroute", "07", "37") == ["07", "03", "30", "31", "33", "37"]
    assert route(t, "fccn-shortest", "07", "37") == ["07", "70", "71", "73", "37"]
    dist, way = theorem41([0o07], [0o37], 2)
    assert dist.tolist() == [4] and way.tolist() == [0o73]


# ------------------------------------------------------------------ S-Route


@pytest.mark.parametrize("m", [2, 3])
def test_sroute_exhaustive(m: int) -> None:
    t = FCCN(m)
    s, d = all_pairs(t.num_nodes)
    a = walk(t, make_router("fccn-sroute", t), s, d, paths=True)
    b = walk(t, make_router("fccn-sroute", t, pointer=False), s, d, paths=True)
    assert a["ok"].all()
    np.testing.assert_array_equal(a["lengths"], sroute_distance(s, d, m))
    np.testing.assert_array_equal(a["paths"], b["paths"])  # pointer == recompute every hop
    rows = np.random.default_rng(m).integers(0, s.size, 500)
    for r in rows:
        p = a["paths"][r]
        assert p[p >= 0].tolist() == sroute_path(int(s[r]), int(d[r]), m)


@pytest.mark.parametrize("m", [4, 5])
def test_sroute_sampled(m: int) -> None:
    t = FCCN(m)
    rng = np.random.default_rng(m)
    s, d = rng.integers(0, t.num_nodes, (2, 20_000))
    a = walk(t, make_router("fccn-sroute", t), s, d, paths=True)
    b = walk(t, make_router("fccn-sroute", t, pointer=False), s, d, paths=True)
    assert a["ok"].all()
    np.testing.assert_array_equal(a["lengths"], sroute_distance(s, d, m))
    np.testing.assert_array_equal(a["paths"], b["paths"])
    np.testing.assert_array_equal(make_router("fccn-sroute", t).route_length(s, d), a["lengths"])


def test_level_pointer_is_an_upper_bound_and_mostly_exact() -> None:
    """Step by hand: the carried pointer never falls below Max_level_differ."""
    t = FCCN(3)
    r = make_router("fccn-sroute", t)
    s, d = all_pairs(t.num_nodes)
    keep = s != d
    nodes, dests = s[keep], d[keep]
    hdr = r.init_headers(nodes, dests)
    np.testing.assert_array_equal(hdr[:, 0], max_level_differ(nodes ^ dests))
    stale = exact = 0
    while nodes.size:
        true = max_level_differ(nodes ^ dests)
        assert (hdr[:, 0] >= true).all()
        stale += int((hdr[:, 0] > true).sum())
        exact += int((hdr[:, 0] == true).sum())
        ctx = HopContext(step=0, pids=np.arange(nodes.size), hops=np.zeros(nodes.size, np.int64))
        port, hdr = r.next_port(nodes, dests, hdr, ctx)
        nodes = t.neighbors(nodes)[np.arange(nodes.size), port]
        go = nodes != dests
        nodes, dests, hdr = nodes[go], dests[go], hdr[go]
    assert 0 < stale < exact / 10
    # an overestimated pointer (here m) is repaired: same routes
    top = np.full((s.size, 1), 3, dtype=np.int64)
    r.init_headers = lambda src, dst: top  # type: ignore[method-assign]
    a = walk(t, r, s, d)
    np.testing.assert_array_equal(a["lengths"], sroute_distance(s, d, 3))


def test_paper_pointer_rule_decrementing_at_every_b2_fails() -> None:
    """Literal Sec. 3 rule: (B.2) also fires on lower-level links, e.g. (273) -> (237)."""
    t = FCCN(3)
    node, dest = 0o272, 0o350
    k = int(max_level_differ(np.array([node ^ dest]))[0])
    seen = []
    for _ in range(20):
        if node == dest:
            break
        bk = (dest >> 3 * (k - 1)) & 7
        if k > 1 and node & 7 == bk:
            node, k = int(t.neighbors([node])[0, 3]), k - 1  # (B.2) + decrement
        else:
            diff = (node & 7) ^ (bk if k > 1 else dest & 7)
            if diff == 0:
                break  # k = 1 and beta_1 reached, but not at the destination: stuck
            node ^= diff & -diff
        seen.append((node, k))
    assert (0o237, 2) in seen and max_level_differ(np.array([0o237 ^ dest]))[0] == 3
    assert node != dest
    assert link_level(np.array([0o273]), 3).tolist() == [2]  # why the rule must check levels


# ------------------------------------------------------------- shortest


@pytest.mark.parametrize("m", [2, 3])
def test_shortest_exhaustive_vs_bfs(m: int) -> None:
    t = FCCN(m)
    s, d = all_pairs(t.num_nodes)
    _, bfs = all_pairs_tables(neighbor_table(t))
    res = walk(t, make_router("fccn-shortest", t), s, d)
    assert res["ok"].all()
    np.testing.assert_array_equal(res["lengths"], bfs.ravel())
    np.testing.assert_array_equal(theorem41(s, d, m)[0], bfs.ravel())


@pytest.mark.slow
@pytest.mark.parametrize(("m", "sources"), [(4, 12), (5, 6)])
def test_shortest_sampled_vs_bfs(m: int, sources: int) -> None:
    t = FCCN(m)
    n = t.num_nodes
    rng = np.random.default_rng(m)
    picked = np.concatenate([t.ugns()[:1], rng.integers(0, n, sources - 1)])
    r = make_router("fccn-shortest", t)
    for src in picked:
        s, d = np.full(n, src), np.arange(n)
        res = walk(t, r, s, d)
        bfs = distances_from(t, int(src)).astype(np.int64)
        assert res["ok"].all()
        np.testing.assert_array_equal(res["lengths"], bfs)
        np.testing.assert_array_equal(r.distance(s, d), bfs)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(2, 8), data=st.data())
def test_routes_match_closed_forms(m: int, data: st.DataObject) -> None:
    t = FCCN(m)
    pairs = data.draw(
        st.lists(st.tuples(*[st.integers(0, t.num_nodes - 1)] * 2), min_size=1, max_size=40)
    )
    s, d = np.array(pairs).T
    a = walk(t, make_router("fccn-sroute", t), s, d)
    b = walk(t, make_router("fccn-shortest", t), s, d)
    np.testing.assert_array_equal(a["lengths"], sroute_distance(s, d, m))
    np.testing.assert_array_equal(b["lengths"], theorem41(s, d, m)[0])
    assert (b["lengths"] <= a["lengths"]).all()


# ------------------------------------------- Tables I and II (m = 2, 3)


def table_sums(m: int) -> dict[str, float]:
    """Exhaustive route statistics of both routers (docs/errata.md E10-E12)."""
    t = FCCN(m)
    s, d = all_pairs(t.num_nodes)
    lr = walk(t, make_router("fccn-sroute", t), s, d)["lengths"]
    ls = walk(t, make_router("fccn-shortest", t), s, d)["lengths"]
    distinct = s != d
    top = (s >> 3 * (m - 1)) != (d >> 3 * (m - 1))
    worse = top & (lr > ls)
    return {
        "pct_all": 100 * float((lr == ls)[distinct].mean()),
        "pct_top": 100 * float((lr == ls)[top].mean()),
        "worse_sroute": float(lr[worse].mean()),
        "worse_shortest": float(ls[worse].mean()),
        "L_sroute": float(lr[top].mean()),
        "L_shortest": float(ls[top].mean()),
        "avg_sroute": float(lr.mean()),
    }


def test_tables_i_and_ii_small() -> None:
    t2, t3 = table_sums(2), table_sums(3)
    assert round(t2["pct_all"], 4) == 81.5476 and round(t3["pct_all"], 4) == 84.1212
    assert round(t2["pct_top"], 2) == 79.24 and round(t3["pct_top"], 2) == 84.48
    assert round(t3["worse_sroute"], 4) == 11.0081 and round(t3["worse_shortest"], 4) == 9.1126
    assert t2["avg_sroute"] == 3.6875 and round(t3["avg_sroute"], 6) == 8.117188
    # locality model D_m(p) = (1 - p) L_m + p D_{m-1}(p), D_1 = 3/2 (errata E12)
    for p, want_r, want_s in [(0.5, 5.75, 5.5410), (0.7, 4.20, 4.0597), (0.9, 2.45, 2.3983)]:
        dr = (1 - p) * t3["L_sroute"] + p * ((1 - p) * t2["L_sroute"] + p * 1.5)
        ds = (1 - p) * t3["L_shortest"] + p * ((1 - p) * t2["L_shortest"] + p * 1.5)
        assert round(dr, 2) == want_r and round(ds, 4) == want_s


# ------------------------------------------------------------------- CCC


@pytest.mark.parametrize("n", [3, 4, 5])
def test_ccc_all_pairs(n: int) -> None:
    t = CCC(n)
    s, d = all_pairs(t.num_nodes)
    exact = make_router("shortest", t).distance(s, d)
    minimal, sweep = make_router("ccc", t), make_router("ccc", t, mode="sweep")
    a = walk(t, minimal, s, d, max_hops=ccc_diameter(n))
    b = walk(t, sweep, s, d, max_hops=ccc_diameter(n) + 1)
    assert a["ok"].all() and b["ok"].all()  # delivered within the bounds: no loops
    np.testing.assert_array_equal(a["lengths"], exact)
    np.testing.assert_array_equal(minimal.distance(s, d), exact)
    np.testing.assert_array_equal(b["lengths"], sweep.route_length(s, d))
    assert a["lengths"].max() == ccc_diameter(n)
    assert b["lengths"].max() == 2 * n - 1 + n // 2


@pytest.mark.parametrize("n", [6, 8, 10])
def test_ccc_distance_closed_form_vs_bfs(n: int) -> None:
    t = CCC(n)
    d = np.arange(t.num_nodes)
    r = make_router("ccc", t)
    np.testing.assert_array_equal(r.distance(0, d), distances_from(t, 0))
    rng = np.random.default_rng(n)
    s, d = rng.integers(0, t.num_nodes, (2, 5_000))
    res = walk(t, r, s, d)
    np.testing.assert_array_equal(res["lengths"], make_router("shortest", t).distance(s, d))


@pytest.mark.parametrize("n", [12, 20, 30])
def test_ccc_ring_moves_lower_the_distance(n: int) -> None:
    """Large rings, no BFS: every chosen ring move leaves a walk exactly one shorter."""
    rng = np.random.default_rng(n)
    s = rng.integers(0, 1 << n, 30_000) & rng.integers(0, 1 << n, 30_000) & ~np.int64(1)
    s[:10_000] &= rng.integers(0, 1 << n, 10_000)  # sparser masks
    r = rng.integers(0, n, s.size)
    keep = (s != 0) | (r != 0)
    s, r = s[keep], r[keep]
    cost, move = ring_walk(s, r, n)
    shift = np.where(move == PLUS, 1, n - 1)
    rot = ((s >> shift) | (s << (n - shift))) & ((np.int64(1) << n) - 1)
    after, _ = ring_walk(rot, (r - shift) % n, n)
    np.testing.assert_array_equal(after, cost - 1)
    assert cost.max() <= n + n // 2 + n - 2


def test_small_and_large_fccn() -> None:
    t1 = FCCN(1)
    s, d = all_pairs(8)
    for name in ("fccn-sroute", "fccn-shortest"):
        res = walk(t1, make_router(name, t1), s, d)
        np.testing.assert_array_equal(res["lengths"], np.bitwise_count(s ^ d))
    t10 = FCCN(10)
    ugn = t10.ugns()
    res = walk(t10, make_router("fccn-shortest", t10), ugn[:1], ugn[7:])
    assert res["lengths"].tolist() == [2**11 - 1]  # Thm 5.1: UGN pair at the diameter


@pytest.mark.parametrize("m", [2, 3, 5, 8])
def test_fccn_shortest_compiled_hop_equals_numpy(m):
    """The compiled ``fccn-shortest`` hop: S-Route to the waypoint, then to the destination."""
    from mpinet.routing.fccn import sroute_step

    topo = FCCN(m)
    r = make_router("fccn-shortest", topo)
    rng = np.random.default_rng(m)
    n = topo.num_nodes
    src, dst = rng.integers(0, n, 4000), rng.integers(0, n, 4000)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    rows = np.zeros((src.size, 2), np.int64)
    rows[:, 1:] = r.init_headers(src, dst)
    rows[::7, 1] = src[::7]  # some packets stand on their waypoint
    hdr = rows[:, 1:]  # a strided view, as the engine passes it
    z = np.zeros(src.size, np.int64)
    ports, new = r.next_port(src, dst, hdr, HopContext(step=1, pids=z, hops=z))
    way = np.where(hdr[:, 0] == src, -1, hdr[:, 0])
    target = np.where(way >= 0, way, dst)
    np.testing.assert_array_equal(ports, sroute_step(src, target, max_level_differ(src ^ target)))
    np.testing.assert_array_equal(new[:, 0], way)
    assert (ports >= 0).all() and (ports < topo.degree).all()
