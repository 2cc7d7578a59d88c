"""Tests of the macro-star routers (:mod:`mpinet.routing.macrostar`, paper 004).

Routes are followed by :func:`walk` (next nodes from ``topology.neighbors``),
from every node to the identity (enough by vertex transitivity; a sample of
random pairs checks the translation), compared with exact BFS distances, with
the paper's bounds, and hop by hop with plain scalar implementations of the
algorithms written from the paper's text (boxes as lists, symbols as ints).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpinet import perm
from mpinet.errors import RoutingError
from mpinet.routing import ROUTERS, available_routers, make_router
from mpinet.routing import macrostar_game as mg
from mpinet.routing.base import HopContext
from mpinet.routing.macrostar import ROUTERS_HERE
from mpinet.routing.tables import distances_from
from mpinet.routing.walk import walk
from mpinet.topology import from_spec
from mpinet.topology.macrostar import MacroStar

NAMES = ["ms-balls-to-boxes", "ms-merged", "ms-two-phase", "ms-star-emulation"]
SMALL = ["ms:1,3", "ms:2,2", "ms:3,2", "ms:2,3"]
_dist: dict[str, np.ndarray] = {}


def bfs(spec: str) -> np.ndarray:
    if spec not in _dist:
        _dist[spec] = distances_from(from_spec(spec), 0).astype(np.int64)
    return _dist[spec]


def diameter_bound(l: int, n: int) -> int:
    """Theorem 3.2: floor(2.5 n l) + 2 l - 2 (the merged algorithm of 3.2)."""
    return math.floor(2.5 * n * l) + 2 * l - 2


def paper_bound(name: str, l: int, n: int) -> int:
    """The bound the paper gives (or implies) for each algorithm."""
    star = 3 * n * l // 2  # diameter of the (nl+1)-star
    return {
        "ms-balls-to-boxes": math.floor(2.5 * (n * l + l - 1)),  # end of 3.2's first analysis
        "ms-merged": diameter_bound(l, n),
        "ms-two-phase": 2 * star + 3 * (l - 1) // 2,  # 3.1: <= 2 hops per star step + l-star
        "ms-star-emulation": 3 * star,  # 3.1: 3 floor(3nl/2)
    }[name]


def ids(perms: list[tuple[int, ...]]) -> np.ndarray:
    return perm.rank(np.array(perms, dtype=np.uint8))


# ------------------------------------------------------------ scalar references
class Boxes:
    """A game state as the paper draws it: the outside ball and l boxes of n balls."""

    def __init__(self, p: np.ndarray, n: int, l: int, colours: list[int]) -> None:
        self.n, self.l, self.k = n, l, n * l + 1
        self.out = int(p[0])
        self.boxes = [[int(s) for s in p[1 + b * n : 1 + (b + 1) * n]] for b in range(l)]
        self.col = list(colours)
        self.path = [self.label()]

    def label(self) -> tuple[int, ...]:
        return (self.out, *[s for box in self.boxes for s in box])

    def done(self) -> bool:
        return self.label() == tuple(range(self.k))

    def clean(self, b: int) -> bool:
        return all(self.boxes[b][o] == 1 + self.col[b] * self.n + o for o in range(self.n))

    def swap(self, b: int) -> None:  # S_{b+1}
        self.boxes[0], self.boxes[b] = self.boxes[b], self.boxes[0]
        self.col[0], self.col[b] = self.col[b], self.col[0]
        self.path.append(self.label())

    def exchange(self, o: int) -> None:  # T_{o+2}
        self.out, self.boxes[0][o] = self.boxes[0][o], self.out
        self.path.append(self.label())


def balls_to_boxes(g: Boxes, merged: bool = False) -> list[str]:
    """Section 2.1 (or 3.2 merged) with the "first" choices; returns the steps taken."""
    steps = []
    while not g.done():
        if g.out != 0:
            c = (g.out - 1) // g.n
            if g.col[0] != c:
                g.swap(g.col.index(c))
                steps.append("1.2.1")
            else:
                g.exchange((g.out - 1) % g.n)
                steps.append("1.2.2")
        elif merged and g.clean(0):
            if g.col[0] != 0:
                g.swap(g.col[0])
                steps.append("place")
            else:
                dirty = [b for b in range(1, g.l) if not g.clean(b)]
                g.swap((dirty or [b for b in range(1, g.l) if g.col[b] != b])[0])
                steps.append("exception")
        elif all(g.clean(b) for b in range(g.l)):
            g.swap(g.col[0] if g.col[0] else next(b for b in range(1, g.l) if g.col[b] != b))
            steps.append("2")
        elif g.clean(0):
            g.swap(next(b for b in range(1, g.l) if not g.clean(b)))
            steps.append("1.1.1")
        else:
            g.exchange(next(o for o in range(g.n) if g.boxes[0][o] != 1 + g.col[0] * g.n + o))
            steps.append("1.1.2")
    return steps


def star_route(p: np.ndarray) -> list[int]:
    """Positions j of a minimal star route (cycle following, lowest misplaced symbol first)."""
    q, out = [int(s) for s in p], []
    while q != sorted(q):
        j = q[0] if q[0] else next(i for i in range(1, len(q)) if q[i] != i)
        q[0], q[j] = q[j], q[0]
        out.append(j)
    return out


def two_phase(p: np.ndarray, n: int, l: int) -> list[tuple[int, ...]]:
    """Section 3.1 from its text: exchange the star route's symbols, bringing their block
    to the front when needed, then sort the blocks as an l-star."""
    q, syms = [int(s) for s in p], []
    for j in star_route(p):
        syms.append(q[j])
        q[0], q[j] = q[j], q[0]
    g = Boxes(p, n, l, list(range(l)))
    for y in syms:
        b = next(b for b in range(l) if y in g.boxes[b])
        if b:
            g.swap(b)
        g.exchange(g.boxes[0].index(y))
    while g.col != list(range(l)):
        g.swap(g.col[0] if g.col[0] else next(b for b in range(1, l) if g.col[b] != b))
    return g.path


def star_emulation(p: np.ndarray, n: int, l: int) -> list[tuple[int, ...]]:
    """Theorem 3.1: the star route, T_j (j > n + 1) as S_i T_j' S_i; stops on arrival."""
    g = Boxes(p, n, l, list(range(l)))
    for j in star_route(p):
        b, o = (j - 1) // n, (j - 1) % n
        for hop in ("S", "T", "S") if b else ("T",):
            if g.done():
                return g.path
            if hop == "S":
                g.swap(b)
            else:
                g.exchange(o)
    return g.path


def greedy_colours(p: np.ndarray, n: int, l: int) -> list[int]:
    """:func:`match_colours` written out: greedy on (clean balls, b == c, -b, -c)."""
    w = {
        (b, c): sum(int(p[1 + b * n + o]) == 1 + c * n + o for o in range(n))
        for b in range(l)
        for c in range(l)
    }
    col = [-1] * l
    for _ in range(l):
        free = [bc for bc in w if col[bc[0]] < 0 and bc[1] not in col]
        b, c = max(free, key=lambda bc: (w[bc], bc[0] == bc[1], -bc[0], -bc[1]))
        col[b] = c
    return col


# ------------------------------------------------------------------ registry
def test_registry_and_options() -> None:
    assert {cls.name for cls in ROUTERS_HERE} == set(NAMES)
    for name in NAMES:
        assert ROUTERS[name].families == ("ms",)
        assert ROUTERS[name].distributed
        assert ROUTERS[name].__doc__ and "header" in ROUTERS[name].__doc__
    assert set(NAMES) <= set(available_routers(from_spec("ms:2,2")))
    assert not set(NAMES) & set(available_routers(from_spec("star:4")))
    t = from_spec("ms:2,2")
    with pytest.raises(RoutingError, match="applies to ms only"):
        make_router("ms-merged", from_spec("star:4"))
    with pytest.raises(RoutingError, match="choice"):
        make_router("ms-balls-to-boxes", t, choice="best")
    with pytest.raises(RoutingError, match="boxes"):
        make_router("ms-merged", t, boxes="sorted")
    with pytest.raises(RoutingError, match="no option"):
        make_router("ms-two-phase", t, boxes="home")
    with pytest.raises(RoutingError, match="applies to ms only"):
        ROUTERS["ms-star-emulation"](from_spec("star:4"))


@pytest.mark.parametrize("l", [1, 2, 12, 13, 19])
def test_colour_packing_round_trip(l: int) -> None:
    rng = np.random.default_rng(l)
    sig = np.array([rng.permutation(l) for _ in range(50)], dtype=np.int64)
    words = mg.pack_colours(sig)
    assert words.shape == (50, mg.colour_words(l)) and (words >= 0).all()
    assert (mg.unpack_colours(words, l) == sig).all()


# ------------------------------------------------------ exhaustive, to identity
@pytest.mark.parametrize("spec", SMALL)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("choice", ["first", "random"])
def test_every_node_to_identity(spec: str, name: str, choice: str) -> None:
    t = from_spec(spec)
    assert isinstance(t, MacroStar)
    bound = paper_bound(name, t.l, t.n)
    w = walk(t, make_router(name, t, choice=choice), np.arange(t.num_nodes), 0, seed=3,
             max_hops=bound)  # fmt: skip
    dist = bfs(spec)
    assert w["ok"].all(), "a route did not arrive within the paper's bound (loop?)"
    assert (w["lengths"] >= dist).all()
    assert w["lengths"].max() <= bound
    if name in ("ms-balls-to-boxes", "ms-merged"):
        assert w["lengths"].max() <= diameter_bound(t.l, t.n)
    if t.l == 1:  # ms:1,N is the (N+1)-star: every router is the minimal star routing
        assert (w["lengths"] == dist).all()


@pytest.mark.parametrize("spec", ["ms:2,2", "ms:3,2"])
def test_home_colours_deliver(spec: str) -> None:
    t = from_spec(spec)
    for name in ("ms-balls-to-boxes", "ms-merged"):
        w = walk(t, make_router(name, t, boxes="home"), np.arange(t.num_nodes), 0)
        assert w["ok"].all() and (w["lengths"] >= bfs(spec)).all()
        assert w["lengths"].max() <= paper_bound(name, t.l, t.n)


@pytest.mark.parametrize("spec", ["ms:2,2", "ms:3,2", "ms:2,3"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("choice", ["first", "random"])
def test_random_pairs_follow_the_translation(spec: str, name: str, choice: str) -> None:
    """The route s -> d is the route d^-1 s -> identity moved by d (same pids, same draws)."""
    t = from_spec(spec)
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, t.num_nodes, 500), rng.integers(0, t.num_nodes, 500)
    rel, _ = t.translate(src, dst)
    r = make_router(name, t, choice=choice)
    a = walk(t, r, src, dst, seed=5, paths=True)
    b = walk(t, r, rel, 0, seed=5, paths=True)
    assert a["ok"].all() and (a["lengths"] == b["lengths"]).all()
    assert (a["port_counts"] == b["port_counts"]).all()
    on = b["paths"] >= 0
    rows = np.broadcast_to(np.arange(src.size)[:, None], on.shape)[on]
    moved = perm.compose(perm.unrank(dst[rows], t.k), perm.unrank(b["paths"][on], t.k))
    assert (perm.rank(moved) == a["paths"][on]).all()


@pytest.mark.parametrize("spec", ["ms:4,4", "ms:6,3", "ms:19,1", "ms:3,6"])
@pytest.mark.parametrize("name", NAMES)
def test_large_networks_sample(spec: str, name: str) -> None:
    """Up to 20 symbols and 19 boxes (two header words of colours)."""
    t = from_spec(spec)
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, t.num_nodes, 300), rng.integers(0, t.num_nodes, 300)
    bound = paper_bound(name, t.l, t.n)
    w = walk(t, make_router(name, t, choice="random"), src, dst, max_hops=bound)
    assert w["ok"].all()


# ---------------------------------------------------- against the scalar references
@pytest.mark.slow
@pytest.mark.parametrize("spec", ["ms:2,2", "ms:3,2", "ms:2,3"])
def test_game_routers_match_the_reference_and_the_step_counts(spec: str) -> None:
    """Vectorized routers = the scalar game hop by hop; the step counts of 3.2's analysis hold:
    1.2.1 and 1.2.2 <= nl each, 1.1.2 <= floor(nl/2), 1.1.1 <= l - 1, Phase 2 <= floor(1.5(l-1));
    merged: <= l - 1 placements and <= l - 1 exceptions."""
    t = from_spec(spec)
    n, l = t.n, t.l
    nodes = np.arange(t.num_nodes)
    p = perm.unrank(nodes, t.k)
    colours = mg.unpack_colours(make_router("ms-merged", t).init_headers(nodes, 0 * nodes), l)
    limit = {"1.2.1": n * l, "1.2.2": n * l, "1.1.2": n * l // 2, "1.1.1": l - 1}
    limit |= {"2": 3 * (l - 1) // 2, "place": l - 1, "exception": l - 1}
    for name, merged in (("ms-balls-to-boxes", False), ("ms-merged", True)):
        w = walk(t, make_router(name, t), nodes, 0, paths=True)
        for v in range(t.num_nodes):
            assert colours[v].tolist() == greedy_colours(p[v], n, l)
            g = Boxes(p[v], n, l, colours[v].tolist())
            steps = balls_to_boxes(g, merged)
            for step, most in limit.items():
                assert steps.count(step) <= most, (t.label(v), name, step)
            route = w["paths"][v, : w["lengths"][v] + 1]
            assert (route == ids(g.path)).all(), (t.label(v), name)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["ms:2,2", "ms:3,2", "ms:2,3"])
def test_two_phase_and_emulation_match_section_3_1(spec: str) -> None:
    t = from_spec(spec)
    nodes = np.arange(t.num_nodes)
    p = perm.unrank(nodes, t.k)
    for name, reference in (("ms-two-phase", two_phase), ("ms-star-emulation", star_emulation)):
        w = walk(t, make_router(name, t), nodes, 0, paths=True)
        for v in range(t.num_nodes):
            route = w["paths"][v, : w["lengths"][v] + 1]
            assert (route == ids(reference(p[v], t.n, t.l))).all(), (t.label(v), name)
    # star emulation: every T hop is a star step, so at most star_distance of them
    w = walk(t, make_router("ms-star-emulation", t), nodes, 0)
    assert w["class_counts"]["nucleus"] <= perm.star_distance(p).sum()


def test_figure_2_route() -> None:
    """Fig. 2: 6572341 -> 5672341 -> 5412367 -> 1452367 -> 1234567 on MS(3, 2),
    with the boxes coloured 3, 1, 2 as in the paper."""
    t = from_spec("ms:3,2")
    src = t.parse_label("6572341")
    expected = ["6572341", "5672341", "5412367", "1452367", "1234567"]
    for name in ("ms-balls-to-boxes", "ms-merged"):
        r = make_router(name, t)
        colours = mg.unpack_colours(r.init_headers(np.array([src]), np.array([0])), 3)
        assert colours[0].tolist() == [2, 0, 1]
        w = walk(t, r, [src], [0], paths=True)
        assert [t.label(int(v)) for v in w["paths"][0]] == expected
        assert [t.ports[p] for p in np.flatnonzero(w["port_counts"])] == ["T2", "T3", "S2", "S3"]
    assert bfs("ms:3,2")[src] == 4


def test_next_port_is_vectorized_and_distributed() -> None:
    """One call decides for packets at different nodes and hops; the result of each
    packet depends only on its own node, destination and header."""
    t = from_spec("ms:3,2")
    rng = np.random.default_rng(2)
    nodes, dests = rng.integers(0, t.num_nodes, 64), rng.integers(0, t.num_nodes, 64)
    keep = nodes != dests
    nodes, dests = nodes[keep], dests[keep]
    for name in NAMES:
        r = make_router(name, t)
        h = r.init_headers(nodes, dests)
        assert h.shape == (nodes.size, r.header_width) and h.dtype == np.int64
        ctx = HopContext(0, np.arange(nodes.size), np.zeros(nodes.size, dtype=np.int64))
        ports, h2 = r.next_port(nodes, dests, h, ctx)
        one = HopContext(0, np.arange(1), np.zeros(1, dtype=np.int64))
        for i in range(0, nodes.size, 9):
            p1, h1 = r.next_port(nodes[i : i + 1], dests[i : i + 1], h[i : i + 1], one)
            assert p1[0] == ports[i] and (h1[0] == h2[i]).all()


@pytest.mark.parametrize("choice", ["first", "random"])
def test_two_phase_one_word_header_routes_as_the_two_word_one(choice):
    """The owed port packed above the colours (l <= 11) changes no route."""
    t = from_spec("ms:3,2")
    one = make_router("ms-two-phase", t, choice=choice)
    two = make_router("ms-two-phase", t, choice=choice)
    two.packed, two.header_width = False, 1 + mg.colour_words(t.l)
    assert one.header_width == 1
    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, t.num_nodes, (2, 2000))
    a = walk(t, one, src, dst, seed=2, paths=True)
    b = walk(t, two, src, dst, seed=2, paths=True)
    assert a["ok"].all() and b["ok"].all()
    assert np.array_equal(a["paths"], b["paths"])
    big = make_router("ms-two-phase", from_spec("ms:12,1"))  # 60 colour bits: two words
    assert not big.packed and big.header_width == 2
