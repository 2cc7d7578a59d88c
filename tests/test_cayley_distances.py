"""Distances on the Cayley families (``cayley:K:GENS``, pancake, bubble, transposition, star):
exact diameters and whole distance distributions, each against a truth computed without
mpinet (a plain-Python BFS over permutations as tuples, or a closed form).

The graphs' structure, ports, refusals and commands are tests/test_cayley.py.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from perm_truth import tuple_bfs

from mpinet.cli import main
from mpinet.routing.tables import distances_from
from mpinet.topology import from_spec

# ---------------------------------------------------------------- exact diameters by BFS


def diameter(spec: str) -> int:
    return int(distances_from(from_spec(spec), 0).max())


@pytest.mark.parametrize("n", range(3, 9))
def test_bubble_and_transposition_diameters(n):
    assert diameter(f"bubble:{n}") == n * (n - 1) // 2  # inversions of the reversal
    assert diameter(f"transposition:{n}") == n - 1  # n minus the cycles of an n-cycle


@pytest.mark.parametrize("n, want", list(zip(range(3, 9), [3, 4, 5, 7, 8, 9], strict=True)))
def test_pancake_numbers(n, want):
    assert diameter(f"pancake:{n}") == want  # OEIS A058986


# ---------------------------------------------------------------- distance distributions
# Each truth is computed without mpinet: a plain-Python BFS over permutations as tuples,
# or a closed form (Akers-Harel-Krishnamurthy for the star graph, Mahonian numbers for
# bubble sort, Stirling numbers of the first kind for transpositions). The distribution
# from the identity does not depend on the side the generators act on (g -> g^-1 maps
# one Cayley graph onto the other and fixes the identity).


def star_moves(n: int):
    def swap(i):
        return lambda p: (p[i], *p[1:i], p[0], *p[i + 1 :])

    return [swap(i) for i in range(1, n)]


def swap_moves(i: int, j: int):
    return lambda p: tuple(p[j] if x == i else p[i] if x == j else p[x] for x in range(len(p)))


def pancake_moves(n: int):
    return [lambda p, i=i: p[:i][::-1] + p[i:] for i in range(2, n + 1)]


def cycles_of(p: tuple[int, ...]) -> list[list[int]]:
    seen, out = set(), []
    for a in range(len(p)):
        if a not in seen:
            cyc, x = [], a
            while x not in seen:
                seen.add(x)
                cyc.append(x)
                x = p[x]
            out.append(cyc)
    return out


def star_distance(p: tuple[int, ...]) -> int:
    """Akers, Harel and Krishnamurthy (1987): c + m over the nontrivial cycles (c cycles
    holding m symbols), minus 2 when the first symbol is out of place."""
    big = [c for c in cycles_of(p) if len(c) > 1]
    d = len(big) + sum(len(c) for c in big)
    return d - 2 if p[0] != 0 else d


def star_formula(n: int) -> list[int]:
    return np.bincount([star_distance(p) for p in itertools.permutations(range(n))]).tolist()


def mahonian(n: int) -> list[int]:
    """Permutations of n by inversions: the coefficients of prod_i (1 + q + ... + q^(i-1))."""
    poly = [1]
    for i in range(1, n + 1):
        out = [0] * (len(poly) + i - 1)
        for a, c in enumerate(poly):
            for b in range(i):
                out[a + b] += c
        poly = out
    return poly


def stirling_first(n: int) -> list[int]:
    """Unsigned Stirling numbers of the first kind c(n, k), k = 0..n (by the recurrence)."""
    row = [1]
    for m in range(n):
        row = [m * (row[k] if k < len(row) else 0) + (row[k - 1] if k else 0) for k in range(m + 2)]
    return row


def transposition_truth(n: int) -> list[int]:
    c = stirling_first(n)  # distance n - k for the permutations with k cycles
    return [c[n - d] for d in range(n)]


#: OEIS A092113 (pancake graph: permutations at each flip distance), rows n = 3..7
A092113 = {
    3: [1, 2, 2, 1],
    4: [1, 3, 6, 11, 3],
    5: [1, 4, 12, 35, 48, 20],
    6: [1, 5, 20, 79, 199, 281, 133, 2],
    7: [1, 6, 30, 149, 543, 1357, 1903, 1016, 35],
}


def mpinet_histogram(spec: str) -> list[int]:
    d = distances_from(from_spec(spec), 0)
    assert (d >= 0).all()
    return np.bincount(d).tolist()


def test_independent_truths_agree():
    """The closed forms and the literature table agree with the plain BFS, so each checks
    the other before either checks mpinet."""
    for n in range(3, 7):
        assert star_formula(n) == tuple_bfs(n, star_moves(n))
        assert tuple_bfs(n, pancake_moves(n)) == A092113[n]
        adjacent = [lambda p, i=i: (*p[:i], p[i + 1], p[i], *p[i + 2 :]) for i in range(n - 1)]
        assert tuple_bfs(n, adjacent) == mahonian(n)
        swaps = [swap_moves(i, j) for i, j in itertools.combinations(range(n), 2)]
        assert tuple_bfs(n, swaps) == transposition_truth(n)
    assert transposition_truth(4) == [1, 6, 11, 6]  # c(4, k) = 6, 11, 6, 1


@pytest.mark.parametrize("n", range(3, 9))
def test_star_distance_distribution(n):
    want = star_formula(n)
    if n <= 7:
        assert want == tuple_bfs(n, star_moves(n))
    assert mpinet_histogram(f"star:{n}") == want
    assert mpinet_histogram(f"cayley:{n}:" + ",".join(f"(1 {i})" for i in range(2, n + 1))) == want


@pytest.mark.parametrize("n", range(3, 8))
def test_pancake_distance_distribution(n):
    want = tuple_bfs(n, pancake_moves(n))
    assert want == A092113[n]
    assert mpinet_histogram(f"pancake:{n}") == want


@pytest.mark.parametrize("n", range(3, 9))
def test_bubble_sort_distribution_is_mahonian(n):
    assert mpinet_histogram(f"bubble:{n}") == mahonian(n)


@pytest.mark.parametrize("n", range(3, 9))
def test_transposition_distribution_is_stirling_first_kind(n):
    assert mpinet_histogram(f"transposition:{n}") == transposition_truth(n)


def test_info_histograms_are_the_known_distributions(capsys):
    """``mpinet info``'s own BFS (not the router tables') gives the same truths."""
    truths = {
        "star:6": star_formula(6),
        "pancake:6": A092113[6],
        "bubble:6": mahonian(6),
        "transposition:6": transposition_truth(6),
    }
    for spec, want in truths.items():
        assert main(["info", spec, "--json"]) == 0
        info = json.loads(capsys.readouterr().out)
        assert info["histogram"] == want, spec
        assert info["diameter"] == len(want) - 1, spec
