"""Tests of ``cayley:K:GENS`` and the named families pancake, bubble, transposition, rotator.

The references are independent of :mod:`mpinet.topology.cayley`: the built-in
star and macro-star (same ids, ports and routes expected), plain-Python
permutations following the documented cycle convention ("the symbol in position
a moves to position b"), group orders by brute-force closure, and exact
diameters known in closed form or from the literature, each reproduced by BFS
(tests/test_cayley_distances.py, with the distance distributions).
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perm_truth import closure_size, dest_cycles, move, tuple_bfs

from mpinet.cli import main
from mpinet.errors import MpinetError, SpecError, TopologyError
from mpinet.routing import make_router
from mpinet.routing.channel_load import uniform_load
from mpinet.routing.tables import distances_from, neighbor_table
from mpinet.routing.walk import walk
from mpinet.topology import FAMILIES, from_spec, spec_forms
from mpinet.topology._schreier import group_order
from mpinet.topology.cayley import MAX_GENERATORS, Cayley, undirected_rotator_spec

STAR5 = "cayley:5:(1 2),(1 3),(1 4),(1 5)"
#: the built-in family and its generators written out by hand (paper 004 Def. 2.3 for MS)
SAME = {
    "star:4": "cayley:4:(1 2),(1 3),(1 4)",
    "star:5": STAR5,
    "ms:2,2": "cayley:5:(1 2),(1 3),(2 4)(3 5)",
    "ms:3,2": "cayley:7:(1 2),(1 3),(2 4)(3 5),(2 6)(3 7)",
    "ms:2,3": "cayley:7:(1 2),(1 3),(1 4),(2 5)(3 6)(4 7)",
}


def all_nb(t) -> np.ndarray:
    return t.neighbors(np.arange(t.num_nodes))


# ---------------------------------------------------------------- identities with built-ins


@pytest.mark.parametrize("spec", list(SAME))
def test_same_graph_as_builtin(spec):
    ref, t = from_spec(spec), from_spec(SAME[spec])
    assert t.spec == SAME[spec] and t.family == "cayley"
    assert t.num_nodes == ref.num_nodes and t.degree == ref.degree
    assert np.array_equal(all_nb(t), all_nb(ref))
    assert np.array_equal(neighbor_table(t), neighbor_table(ref))
    assert t.reverse_port == ref.reverse_port == tuple(range(ref.degree))
    assert t.port_classes == ("generator",) * t.degree
    ids = np.arange(t.num_nodes)
    for d in np.random.default_rng(0).choice(t.num_nodes, 20, replace=False):
        assert np.array_equal(t.translate(ids, d)[0], ref.translate(ids, d)[0])
    assert t.labels(ids[:50]) == ref.labels(ids[:50])
    last = t.num_nodes - 1
    assert t.parse_label(ref.label(last)) == last


@pytest.mark.parametrize("spec", ["star:5", "ms:2,2", "ms:3,2"])
def test_same_shortest_routes_as_builtin(spec):
    ref, t = from_spec(spec), from_spec(SAME[spec])
    n = t.num_nodes
    rng = np.random.default_rng(1)
    s, d = (rng.integers(0, n, 3000) for _ in range(2))
    if n <= 120:
        s, d = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n)))
    want = distances_from(ref, 0)[ref.translate(s, d)[0]]
    for tie in ("first", "random"):
        rr, rt = make_router("shortest", ref, tie=tie), make_router("shortest", t, tie=tie)
        assert np.array_equal(rt.distance(s, d), rr.distance(s, d))
        a, b = walk(ref, rr, s, d, seed=5, paths=True), walk(t, rt, s, d, seed=5, paths=True)
        assert a["ok"].all() and b["ok"].all()
        assert np.array_equal(b["lengths"], want) and np.array_equal(a["paths"], b["paths"])


def test_channel_load_bound_by_translation():
    ref, t = from_spec("star:5"), from_spec(STAR5)
    a = uniform_load(ref, make_router("shortest", ref))
    b = uniform_load(t, make_router("shortest", t))
    assert a.method == b.method == "translation" and b.exact
    assert np.array_equal(a.load, b.load) and a.mean_hops == b.mean_hops
    t = from_spec("cayley:5:(1 2 3),(1 3 2),(1 4),(1 5)")
    r = make_router("shortest", t)
    c = uniform_load(t, r)
    assert c.method == "translation"
    # every packet crosses mean_hops links; per unit rate the loads sum to N * mean_hops
    assert np.isclose(c.load.sum(), t.num_nodes * c.mean_hops)
    n = t.num_nodes
    s, d = (x.ravel() for x in np.meshgrid(np.arange(n), np.arange(n)))
    keep = s != d
    want = distances_from(t, 0)[t.translate(s[keep], d[keep])[0]].mean()
    assert np.isclose(c.mean_hops, want)


def test_named_families_equal_their_cayley_forms():
    pairs = {
        "pancake:5": "cayley:5:(1 2),(1 3),(1 4)(2 3),(1 5)(2 4)",
        "bubble:5": "cayley:5:(1 2),(2 3),(3 4),(4 5)",
        "transposition:4": "cayley:4:(1 2),(1 3),(1 4),(2 3),(2 4),(3 4)",
    }
    for named, spec in pairs.items():
        a, b = from_spec(named), from_spec(spec)
        assert np.array_equal(all_nb(a), all_nb(b)), named
        assert a.reverse_port == b.reverse_port == tuple(range(a.degree))
    assert from_spec("pancake:6").ports == ("P2", "P3", "P4", "P5", "P6")
    assert from_spec("bubble:4").ports == ("B1", "B2", "B3")
    assert from_spec("transposition:4").ports == from_spec(pairs["transposition:4"]).ports
    assert from_spec("pancake:4").label(from_spec("pancake:4").neighbors([0])[0, 2]) == "4321"


@pytest.mark.parametrize("n", [12, 20])
def test_large_k_matches_star_on_samples(n):
    spec = f"cayley:{n}:" + ",".join(f"(1 {i})" for i in range(2, n + 1))
    t, ref = from_spec(spec), from_spec(f"star:{n}")
    ids = np.random.default_rng(n).integers(0, t.num_nodes, 2000)
    assert np.array_equal(t.neighbors(ids), ref.neighbors(ids))


# ---------------------------------------------------------------- cycle convention, ports


def test_cycle_direction_convention():
    t = from_spec("cayley:5:(1 2 3),(1 3 2),(1 4),(1 5)")
    assert t.ports == ("(1,2,3)", "(1,3,2)", "(1,4)", "(1,5)")
    # (1 2 3): the symbol in position 1 moves to position 2, 2 to 3, 3 to 1
    assert t.labels(t.neighbors([t.parse_label("12345")])[0]) == [
        "31245",
        "23145",
        "42315",
        "52341",
    ]
    assert t.label(t.neighbors([t.parse_label("54321")])[0, 0]) == "35421"


def test_non_involutions_get_their_inverse_as_reverse_port():
    t = from_spec("cayley:5:(1 2),(1 2 3 4 5),(1 3 2),(1 5 4 3 2),(1 2 3)")
    assert t.reverse_port == (0, 3, 4, 1, 2)
    nb = all_nb(t)
    ids = np.arange(t.num_nodes)
    for p, r in enumerate(t.reverse_port):
        assert np.array_equal(nb[nb[:, p], r], ids)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(3, 5).flatmap(lambda k: st.lists(st.permutations(range(k)), min_size=1, max_size=3))
)
def test_random_generator_sets(dests):
    """Any inverse-closed set: built with the documented moves when it generates S_K,
    refused with the true group order otherwise."""
    k = len(dests[0])
    ident = list(range(k))
    gens: list[list[int]] = []
    for d in dests:
        inv = [0] * k
        for a, b in enumerate(d):
            inv[b] = a
        for g in (list(d), inv):
            if g != ident and g not in gens:
                gens.append(g)
    if not gens:
        return
    spec = f"cayley:{k}:" + ",".join(dest_cycles(g) for g in gens)
    order = closure_size(gens, k)
    if order < math.factorial(k):
        with pytest.raises(TopologyError, match=f"group of order {order:,}, but"):
            from_spec(spec)
        return
    t = from_spec(spec)
    assert from_spec(t.spec).spec == t.spec
    ids = np.arange(t.num_nodes)
    nb = all_nb(t)
    for v in (0, 1, t.num_nodes // 2, t.num_nodes - 1):
        pi = tuple(int(c) for c in t.label(v))
        want = [t.parse_label("".join(map(str, move(pi, g)))) for g in gens]
        assert nb[v].tolist() == want
    for p, r in enumerate(t.reverse_port):
        assert np.array_equal(nb[nb[:, p], r], ids)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 7).flatmap(lambda k: st.lists(st.permutations(range(k)), min_size=1, max_size=3))
)
def test_group_order_matches_closure(dests):
    k = len(dests[0])
    assert group_order(dests, k) == closure_size([list(d) for d in dests], k)


def test_group_order_of_large_groups():
    n = 20
    half = [p for p in itertools.combinations(range(n), 2) if (p[0] < 10) == (p[1] < 10)]
    swaps = []
    for i, j in half:
        g = list(range(n))
        g[i], g[j] = j, i
        swaps.append(g)
    assert group_order(swaps, n) == math.factorial(10) ** 2
    three = [[1, 2, 0, *range(3, n)]] + [
        [*range(i), i + 1, i + 2, i, *range(i + 3, n)] for i in range(1, n - 2)
    ]
    assert group_order(three, n) == math.factorial(n) // 2


# ---------------------------------------------------------------- refusals


def refused(spec: str) -> str:
    with pytest.raises(MpinetError) as exc:
        from_spec(spec)
    return str(exc.value)


def test_missing_inverse_names_the_generator():
    msg = refused("cayley:4:(1 2),(1 2 3),(1 4)")
    assert "inverse of generator (1 2 3)" in msg and "add (1 3 2)" in msg and "one-way" in msg
    assert "(1 4 3 2)" in refused("cayley:4:(1 2),(2 3 4 1)")  # normalized: starts at 1


def test_group_order_refusals():
    msg = refused("cayley:5:(1 2 3),(1 3 2),(3 4 5),(3 5 4)")
    assert "order 60" in msg and "5! = 120" in msg and "A_5" in msg and "odd" in msg
    msg = refused("cayley:6:(1 2),(1 3),(4 5),(4 6)")
    assert "order 36" in msg and "{1,2,3} {4,5,6}" in msg
    assert "{6}" in refused("cayley:6:(1 2),(1 3),(1 4),(1 5)")


def test_rotator_is_refused_with_a_working_suggestion():
    for n in (4, 5):
        msg = refused(f"rotator:{n}")
        assert "directed" in msg and "no inverses" in msg
        suggestion = undirected_rotator_spec(n)
        assert f"'{suggestion}'" in msg
        t = from_spec(suggestion)
        assert t.degree == 2 * n - 3 and t.num_nodes == math.factorial(n)
        nb = all_nb(t)
        for p, r in enumerate(t.reverse_port):
            assert np.array_equal(nb[nb[:, p], r], np.arange(t.num_nodes))
    # the rotation of the first 4 symbols: the first symbol moves to position 4
    t = from_spec(undirected_rotator_spec(4))
    assert "2341" in t.labels(t.neighbors([0])[0])
    assert "rotator:N" not in spec_forms() and FAMILIES["rotator"].family == "rotator"
    assert "N in rotator:N" in refused("rotator:2")


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("cayley:4", "separated by ':'"),
        ("cayley:2:(1 2)", "K in cayley:K:GENS must be in [3, 20]"),
        ("cayley:21:(1 2)", "K in cayley:K:GENS must be in [3, 20]"),
        ("cayley:x:(1 2)", "K in cayley:K:GENS"),
        ("cayley:4:", "no generator given"),
        ("cayley:4:(1 2),,(1 3)", "generator 2 is empty"),
        ("cayley:4:(1 2),", "trailing ','"),
        ("cayley:4:(1 2", "has no ')'"),
        ("cayley:4:(1 (2 3)", "has no ')'"),
        ("cayley:4:1 2", "expected '(' starting a cycle"),
        ("cayley:4:(1 2)x", "unexpected 'x'"),
        ("cayley:4:()", "empty cycle"),
        ("cayley:4:(1 b)", "'b' is not a symbol"),
        ("cayley:4:(1 5)", "symbol 5 in generator 1 (1 5) must be in 1..K = 1..4"),
        ("cayley:4:(0 1)", "symbol 0"),
        ("cayley:4:(1 2 1)", "symbol 1 appears twice"),
        ("cayley:4:(1 2)(2 3)", "symbol 2 appears twice"),
        ("cayley:4:(1 2),(1 3),(1 4),(2 1)", "(1 2) is given twice (generators 1 and 4)"),
        ("cayley:4:(1 2),(3),(1 3),(1 4)", "generator 2 (port ()) is the identity"),
        ("pancake:2", "N in pancake:N must be in [3, 20]"),
        ("bubble:21", "N in bubble:N must be in [3, 20]"),
        ("transposition:x", "N in transposition:N"),
        ("pancake:3,4", "pancake takes 1 parameter"),
    ],
)
def test_bad_specs(spec, needle):
    assert needle in refused(spec)


def test_too_many_generators():
    k = 6
    gens = [np.array(p, dtype=np.uint8) for p in itertools.permutations(range(k))][1:]
    assert len(gens) > MAX_GENERATORS
    with pytest.raises(TopologyError, match=f"over the limit of {MAX_GENERATORS}"):
        Cayley(k, gens)
    with pytest.raises(TopologyError, match="generator 2 of cayley:4 must be a permutation"):
        Cayley(4, [[1, 0, 2, 3], [0, 0, 1, 2]])
    assert (
        Cayley(4, [[1, 0, 2, 3], [2, 1, 0, 3], [3, 1, 2, 0]]).spec == "cayley:4:(1 2),(1 3),(1 4)"
    )


def test_spec_forms_and_normalization():
    t = from_spec("  Cayley:5: (1,2) ,(1  3),( 4 1 ),(5 1) ")
    assert t.spec == STAR5 and from_spec(t.spec).spec == STAR5
    t = from_spec("cayley:5:(3 1 2)(4 5),(1 3 2)(5 4),(2 1),(5 1)")
    assert t.spec == "cayley:5:(1 2 3)(4 5),(1 3 2)(4 5),(1 2),(1 5)"
    assert t.ports == ("(1,2,3)(4,5)", "(1,3,2)(4,5)", "(1,2)", "(1,5)")
    for form in ("cayley:K:GENS", "pancake:N", "bubble:N", "transposition:N"):
        assert form in spec_forms()
    with pytest.raises(SpecError, match="cayley:K:GENS"):
        from_spec("nofamily:3")


# ---------------------------------------------------------------- the command line


def test_cli_info_same_as_star(capsys):
    out = {}
    for spec in ("star:5", STAR5):
        assert main(["info", spec, "--json"]) == 0
        out[spec] = json.loads(capsys.readouterr().out)
    a, b = out["star:5"], out[STAR5]
    for key in ("diameter", "avg_distance", "histogram", "nodes", "degree", "vertex_transitive"):
        assert a[key] == b[key], key
    assert b["spec"] == STAR5 and b["ports"] == ["(1,2)", "(1,3)", "(1,4)", "(1,5)"]


def test_cli_run_same_as_star(capsys):
    res = {}
    for spec in ("star:5", STAR5):
        args = ["run", "--topology", spec, "--workload", "uniform", "--packets", "4"]
        args += ["--router", "shortest", "--set", "router.tie=random", "--json"]
        assert main([*args, "--trace-level", "none"]) == 0
        res[spec] = json.loads(capsys.readouterr().out)["stats"]
    a, b = res["star:5"], res[STAR5]
    for key in ("delivered", "injected", "steps", "hops", "latency", "stretch"):
        assert a[key] == b[key], key
    assert a["delivered"] == a["injected"] > 0
    assert list(a["link_load"].values()) == list(b["link_load"].values())


def test_cli_rotator_is_one_line_exit_2(capsys):
    assert main(["info", "rotator:4"]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and "directed graph" in lines[0]
    assert undirected_rotator_spec(4) in lines[0]


@pytest.mark.slow
def test_info_on_two_ranks(run_mpinet):
    spec = "cayley:6:(1 2),(1 2 3 4 5 6),(1 6 5 4 3 2)"
    one, two = (json.loads(run_mpinet(["info", spec, "--json"], ranks=r).stdout) for r in (1, 2))
    for key in ("diameter", "avg_distance", "histogram", "spec"):
        assert one[key] == two[key], key
    dests = [[1, 0, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0], [5, 0, 1, 2, 3, 4]]
    assert one["histogram"] == tuple_bfs(6, [lambda p, d=d: move(p, d) for d in dests])


@pytest.mark.parametrize("pattern", ["reversal", "transpose", "antipodal"])
def test_permutation_patterns_run_on_cayley_forms_as_on_star(pattern):
    from mpinet.engine.core import Engine
    from mpinet.engine.models import parse_model
    from mpinet.workloads import Unicast

    recs = []
    for spec in ("star:5", "cayley:5:(1 2),(1 3),(1 4),(1 5)"):
        topo = from_spec(spec)
        w = Unicast(topo, seed=1, pattern=pattern, packets=2)
        router = make_router("shortest", topo)
        recs.append(Engine(topo, router, parse_model("all-port"), None, seed=1).run(w))
    assert recs[0].steps == recs[1].steps
    assert np.array_equal(recs[0].packets, recs[1].packets)


def test_degree_limit_is_the_one_of_every_network():
    """transposition:12 has 66 generators: over MAX_DEGREE (64 ports, one 64-bit mask), the
    same limit the file readers and the routing tables apply, refused before any node."""
    from mpinet.topology import from_spec
    from mpinet.topology.base import MAX_DEGREE

    assert MAX_GENERATORS == MAX_DEGREE == 64
    with pytest.raises(TopologyError, match=r"66 generators, over the limit of 64 \(routing"):
        from_spec("transposition:12")
    with pytest.raises(TopologyError, match=r"over the limit of 64"):
        from_spec(
            "cayley:12:" + ",".join(f"({a} {b})" for a in range(1, 13) for b in range(a + 1, 13))
        )
