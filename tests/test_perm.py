"""Tests of the permutation kernel :mod:`mpinet.perm`.

Reference implementations here are plain Python on tuples, independent of the
vectorized code under test.
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpinet import perm
from mpinet.errors import MpinetError, TopologyError

# A permutation of k symbols (0-based), k in 1..20.
perms_any = st.integers(1, perm.MAX_SYMBOLS).flatmap(lambda k: st.permutations(range(k)))


def same_k(count: int, lo: int = 1, hi: int = perm.MAX_SYMBOLS):
    """``count`` permutations sharing one random k in [lo, hi]."""
    return st.integers(lo, hi).flatmap(
        lambda k: st.tuples(*[st.permutations(range(k)) for _ in range(count)])
    )


def arr(p) -> np.ndarray:
    return np.array(p, dtype=np.uint8)


def all_perms(k: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(k))), dtype=np.uint8).reshape(-1, k)


def py_cycles(p) -> tuple[int, int]:
    """Plain-Python (cycles of length >= 2, symbols they hold)."""
    seen = [False] * len(p)
    cycles = moved = 0
    for start in range(len(p)):
        if seen[start]:
            continue
        length, j = 0, start
        while not seen[j]:
            seen[j] = True
            j = p[j]
            length += 1
        if length >= 2:
            cycles += 1
            moved += length
    return cycles, moved


# ---------------------------------------------------------------- rank / unrank


@settings(max_examples=200, deadline=None)
@given(perms_any)
def test_rank_unrank_round_trip(p):
    k = len(p)
    r = perm.rank(arr(p))
    assert r.shape == (1,)
    assert 0 <= r[0] < math.factorial(k)
    back = perm.unrank(r, k)
    assert back.dtype == np.uint8
    assert back.shape == (1, k)
    assert back[0].tolist() == list(p)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, perm.MAX_SYMBOLS), st.data())
def test_unrank_rank_round_trip(k, data):
    r = data.draw(st.integers(0, math.factorial(k) - 1))
    assert perm.rank(perm.unrank([r], k))[0] == r


@pytest.mark.parametrize("k", range(1, perm.MAX_SYMBOLS + 1))
def test_rank_identity_is_zero(k):
    assert perm.rank(perm.identity(k))[0] == 0
    assert perm.unrank([0], k)[0].tolist() == list(range(k))


def test_rank_of_largest_k_fits_int64():
    k = perm.MAX_SYMBOLS
    rev = arr(range(k - 1, -1, -1))
    r = perm.rank(rev)[0]
    assert 0 <= r < math.factorial(k)
    assert perm.unrank([math.factorial(k) - 1], k).shape == (1, k)
    assert perm.rank(perm.unrank([math.factorial(k) - 1], k))[0] == math.factorial(k) - 1


@pytest.mark.parametrize("k", range(1, 7))
def test_rank_is_bijection_small(k):
    n = math.factorial(k)
    ps = all_perms(k)
    ranks = perm.rank(ps)
    assert sorted(ranks.tolist()) == list(range(n))
    un = perm.unrank(np.arange(n), k)
    assert len({tuple(row) for row in un.tolist()}) == n
    assert all(sorted(row) == list(range(k)) for row in un.tolist())
    assert np.array_equal(perm.rank(un), np.arange(n))


def test_rank_large_batch_crosses_chunks():
    # more rows than the internal chunk size, to exercise the chunked loops
    k = 9
    ids = np.arange(math.factorial(k))
    p = perm.unrank(ids, k)
    assert np.array_equal(perm.rank(p), ids)


@pytest.mark.parametrize("k", [5, 6])
def test_cluster_property(k):
    """Permutations sharing their last s symbols are (k-s)! consecutive ranks."""
    ps = all_perms(k)
    ranks = perm.rank(ps)
    for s in range(0, k + 1):
        size = math.factorial(k - s)
        groups: dict[tuple, list[int]] = {}
        for row, r in zip(ps.tolist(), ranks.tolist(), strict=True):
            groups.setdefault(tuple(row[k - s :]), []).append(r)
        assert len(groups) == math.factorial(k) // size
        for rs in groups.values():
            rs.sort()
            assert len(rs) == size
            assert rs == list(range(rs[0], rs[0] + size))
            assert rs[0] % size == 0


def test_unrank_errors():
    with pytest.raises(TopologyError, match=r"rank must be in \[0, 119\] for k=5"):
        perm.unrank([math.factorial(5)], 5)
    with pytest.raises(TopologyError, match=r"rank must be in \[0, 119\] for k=5"):
        perm.unrank([-1], 5)
    with pytest.raises(
        TopologyError, match=r"k \(number of symbols\) must be in \[1, 20\], got 21"
    ):
        perm.unrank([0], perm.MAX_SYMBOLS + 1)
    with pytest.raises(TopologyError, match=r"k \(number of symbols\) must be in \[1, 20\], got 0"):
        perm.unrank([0], 0)
    with pytest.raises(TopologyError, match=r"shape \(M, k\) with k <= 20, got \(1, 21\)"):
        perm.rank(np.zeros((1, perm.MAX_SYMBOLS + 1), dtype=np.uint8))


# ---------------------------------------------------------------- algebra


@settings(max_examples=100, deadline=None)
@given(same_k(2))
def test_compose_convention(ab):
    a, b = ab
    got = perm.compose(arr(a), arr(b))[0].tolist()
    assert got == [a[b[i]] for i in range(len(a))]


@settings(max_examples=100, deadline=None)
@given(same_k(3))
def test_compose_associative(abc):
    a, b, c = (arr(x) for x in abc)
    left = perm.compose(perm.compose(a, b), c)
    right = perm.compose(a, perm.compose(b, c))
    assert np.array_equal(left, right)


@settings(max_examples=100, deadline=None)
@given(perms_any)
def test_inverse(p):
    k = len(p)
    a = arr(p)
    inv = perm.inverse(a)
    ident = perm.identity(k)
    assert np.array_equal(perm.compose(a, inv), ident)
    assert np.array_equal(perm.compose(inv, a), ident)
    assert np.array_equal(perm.inverse(inv)[0], a)


@settings(max_examples=100, deadline=None)
@given(same_k(4))
def test_compose_matches_apply_positions(ps):
    p, g1, g2, g3 = (arr(x) for x in ps)
    gens = np.stack([g1, g2, g3])
    moved = perm.apply_positions(p, gens)
    assert moved.shape == (1, 3, len(p))
    for j, g in enumerate((g1, g2, g3)):
        assert np.array_equal(moved[0, j], perm.compose(p, g)[0])


@settings(max_examples=200, deadline=None)
@given(same_k(2))
def test_relative_rank_is_rank_of_d_inverse_times_c(cd):
    # plain Python: (d^-1 * c)[i] = d^-1[c[i]], ranked by the module's convention
    c, d = cd
    k = len(c)
    dinv = [0] * k
    for i, s in enumerate(d):
        dinv[s] = i
    rel = [dinv[c[i]] for i in range(k)]
    want = sum(sum(rel[j] > rel[i] for j in range(i)) * math.factorial(i) for i in range(k))
    rc, rd = perm.rank(arr(c)), perm.rank(arr(d))
    assert perm.relative_rank(rc, rd, k).tolist() == [want]


def test_relative_rank_batch_and_errors():
    # a batch through the table path (k = 10 reads the 9-symbol table for its first symbols)
    for k in (4, 9, 10, 12):
        r = np.random.default_rng(k).integers(0, math.factorial(k), (2, 3000))
        p = perm.unrank(r.ravel(), k).reshape(2, 3000, k)
        want = perm.rank(perm.compose(perm.inverse(p[1]), p[0]))
        assert np.array_equal(perm.relative_rank(r[0], r[1], k), want)
    with pytest.raises(TopologyError, match=r"dst ranks must be in \[0, 5\] for k=3"):
        perm.relative_rank([0, 1], [0, 6], 3)
    with pytest.raises(TopologyError, match="cur and dst must have the same length"):
        perm.relative_rank([0, 1], [0], 3)


def test_compose_broadcasts_rows():
    k = 5
    ps = all_perms(k)
    g = perm.transposition(k, 3)
    out = perm.compose(ps, g)
    assert out.shape == ps.shape
    assert np.array_equal(out, ps[:, g])
    assert np.array_equal(perm.apply_positions(ps, g[None, :])[:, 0], out)


@pytest.mark.parametrize("k", [2, 5, 9])
def test_transposition(k):
    for i in range(k):
        for j in range(k):
            g = perm.transposition(k, i, j).tolist()
            want = list(range(k))
            want[i], want[j] = want[j], want[i]
            assert g == want
    # T_i swaps the first and the i-th symbol (positions)
    p = arr(range(k))[::-1].copy()
    q = perm.compose(p, perm.transposition(k, k - 1))[0].tolist()
    assert q[0] == p[k - 1] and q[k - 1] == p[0] and q[1 : k - 1] == p[1 : k - 1].tolist()


# ---------------------------------------------------------------- cycles, distance


@pytest.mark.parametrize("k", range(1, 7))
def test_cycle_stats_exhaustive(k):
    ps = all_perms(k)
    c, m = perm.cycle_stats(ps)
    want = [py_cycles(row) for row in ps.tolist()]
    assert c.tolist() == [w[0] for w in want]
    assert m.tolist() == [w[1] for w in want]


@settings(max_examples=200, deadline=None)
@given(perms_any)
def test_cycle_stats_random(p):
    c, m = perm.cycle_stats(arr(p))
    assert (int(c[0]), int(m[0])) == py_cycles(p)


@pytest.mark.parametrize("k", [2, 7, 8, 16, 17, 20])
def test_cycle_stats_single_long_cycle(k):
    # one k-cycle: the pointer doubling must reach around the whole cycle
    p = [(i + 1) % k for i in range(k)]
    c, m = perm.cycle_stats(arr(p))
    assert (int(c[0]), int(m[0])) == (1, k)


def star_graph_tuples(k: int) -> nx.Graph:
    """The k-star on tuples, built by swapping the first and i-th symbols."""
    g = nx.Graph()
    for p in itertools.permutations(range(k)):
        for i in range(1, k):
            q = list(p)
            q[0], q[i] = q[i], q[0]
            g.add_edge(p, tuple(q))
    return g


@pytest.mark.parametrize("k", [3, 4, 5, 6])
def test_star_distance_vs_bfs(k):
    g = star_graph_tuples(k)
    ident = tuple(range(k))
    dist = nx.single_source_shortest_path_length(g, ident)
    assert len(dist) == math.factorial(k)
    nodes = list(dist)
    got = perm.star_distance(arr(nodes))
    assert got.tolist() == [dist[v] for v in nodes]
    # known diameter of the k-star: floor(3(k-1)/2)
    assert max(dist.values()) == 3 * (k - 1) // 2


def test_star_distance_pairs_via_left_translation():
    """dist(s, d) == star_distance(d^-1 * s) (routing convention)."""
    k = 5
    g = star_graph_tuples(k)
    rng = np.random.default_rng(1)
    nodes = list(g.nodes)
    for _ in range(20):
        s = nodes[rng.integers(len(nodes))]
        d = nodes[rng.integers(len(nodes))]
        want = nx.shortest_path_length(g, s, d)
        rel = perm.compose(perm.inverse(arr(d)), arr(s))
        assert perm.star_distance(rel)[0] == want


# ---------------------------------------------------------------- text forms


@settings(max_examples=200, deadline=None)
@given(perms_any)
def test_format_parse_round_trip(p):
    k = len(p)
    text = perm.format_perm(arr(p))
    if k > 9:
        assert text == ".".join(str(x + 1) for x in p)
    else:
        assert text == "".join(str(x + 1) for x in p)
    back = perm.parse_perm(text, k)
    assert back.tolist() == list(p)


def test_format_examples():
    assert perm.format_perm(arr([2, 3, 0, 1, 4])) == "34125"
    assert perm.format_perm(arr([0, 1, 2, 3, 4]), groups=[1, 2, 2]) == "1 23 45"
    assert perm.format_perm(arr(range(10))) == "1.2.3.4.5.6.7.8.9.10"
    assert perm.parse_perm("34125", 5).tolist() == [2, 3, 0, 1, 4]
    assert perm.parse_perm(" 1 23 45 ", 5).tolist() == [0, 1, 2, 3, 4]
    assert perm.parse_perm("3,4,1,2,5", 5).tolist() == [2, 3, 0, 1, 4]
    assert perm.parse_perm("1.2.10.3.4.5.6.7.8.9", 10).tolist() == [0, 1, 9, 2, 3, 4, 5, 6, 7, 8]
    assert perm.parse_perm("1 2 10 3 4 5 6 7 8 9", 10).tolist() == [0, 1, 9, 2, 3, 4, 5, 6, 7, 8]


@settings(max_examples=50, deadline=None)
@given(st.integers(3, 9).flatmap(lambda k: st.permutations(range(k))), st.data())
def test_grouped_format_round_trip(p, data):
    k = len(p)
    cut = sorted(data.draw(st.sets(st.integers(1, k - 1), max_size=k - 1)))
    groups = [b - a for a, b in zip([0, *cut], [*cut, k], strict=True)]
    text = perm.format_perm(arr(p), groups=groups)
    assert text.replace(" ", "") == "".join(str(x + 1) for x in p)
    assert len(text.split(" ")) == len(groups)
    assert perm.parse_perm(text, k).tolist() == list(p)


@pytest.mark.parametrize(
    "text, k",
    [
        ("1234", 5),  # missing symbol
        ("11234", 5),  # duplicate
        ("12346", 5),  # out of range
        ("123456", 5),  # too many
        ("", 3),
        ("12a45", 5),  # not a number
        ("1.2.3.4.5.6.7.8.9.9", 10),  # duplicate, dotted
        ("1.2.3.4.5.6.7.8.9", 10),  # missing 10, dotted
        ("1.2.3.4.5.6.7.8.9.11", 10),  # out of range, dotted
        ("1.2.3.4.5.6.7.8.9.x", 10),
    ],
)
def test_parse_errors(text, k):
    with pytest.raises(TopologyError) as exc:
        perm.parse_perm(text, k)
    assert isinstance(exc.value, MpinetError)
    assert f"1..{k}" in str(exc.value)


@pytest.mark.parametrize("k", [10, 12, 20])
def test_unrank_from_the_table_equals_the_loop(k, monkeypatch):
    """Above TABLE_SYMBOLS, big batches start from the table of the first symbols."""
    rng = np.random.default_rng(k)
    r = rng.integers(0, math.factorial(k), perm.TABLE_FROM + 7, dtype=np.int64)
    r[:3] = [0, math.factorial(k) - 1, math.factorial(perm.TABLE_SYMBOLS)]
    fast = perm.unrank(r, k)
    monkeypatch.setattr(perm, "TABLE_FROM", 1 << 62)  # the plain loop
    assert np.array_equal(fast, perm.unrank(r, k))
    assert np.array_equal(perm.rank(fast), r)
