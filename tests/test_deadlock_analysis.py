"""Static deadlock analysis: channel dependency graphs against routes and the engine."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpinet.cli import main
from mpinet.deadlock import channel_graph as cg
from mpinet.deadlock.analysis import SymmetryError, analyze
from mpinet.engine.core import Engine
from mpinet.engine.models import parse_model
from mpinet.errors import RoutingError
from mpinet.routing import available_routers, make_router
from mpinet.routing.walk import walk
from mpinet.topology import from_spec
from mpinet.workloads import Unicast

#: one small network per family
SMALL = ["star:4", "scc:4", "ms:2,2", "ims:1,2,2", "cms:2,2,2", "fccn:2", "borel:7,2,0,1"]
SMALL += ["hypercube:3", "ccc:3"]
EVERY = [(s, r) for s in SMALL for r in available_routers(from_spec(s))]


def edge_set(a) -> set[tuple[int, int]]:
    return set(zip(a.src.tolist(), a.dst.tolist(), strict=True))


def walked_edges(topo, router, seed: int = 0) -> set[tuple[int, int]]:
    """Dependencies read off the routes of every ordered pair, as walk() follows them:
    consecutive hops, the second one not into the destination."""
    n, deg = topo.num_nodes, topo.degree
    s, d = np.divmod(np.arange(n * n), n)
    keep = s != d
    paths = walk(topo, router, s[keep], d[keep], seed=seed, paths=True)["paths"]
    nb = topo.neighbors(np.arange(n))
    out = set()
    for row in paths:
        nodes = row[row >= 0]
        ports = [
            int(np.flatnonzero(nb[a] == b)[0]) for a, b in zip(nodes[:-1], nodes[1:], strict=True)
        ]
        for i in range(1, len(ports) - 1):  # the last hop delivers: it takes no buffer
            out.add((int(nodes[i - 1]) * deg + ports[i - 1], int(nodes[i]) * deg + ports[i]))
    return out


@pytest.mark.parametrize("spec", ["hypercube:3", "hypercube:5"])
def test_ecube_is_acyclic(spec):
    t = from_spec(spec)
    rep = analyze(t, make_router("hypercube-ecube", t)).report
    assert rep["acyclic"] and rep["cycle"] is None and rep["core_channels"] == 0
    assert rep["max_route_length"] == t.n and rep["classes_needed"] == t.n  # 0..n-1


@pytest.mark.parametrize(("spec", "name"), EVERY)
def test_hop_classes_are_always_acyclic(spec, name):
    t = from_spec(spec)
    rep = analyze(t, make_router(name, t), buffer_classes="hops", max_hops=24).report
    assert rep["acyclic"] and rep["classes_needed"] == rep["max_route_length"]


def test_shortest_on_star4_has_a_valid_cycle():
    t = from_spec("star:4")
    a = analyze(t, make_router("shortest", t))
    rep = a.report
    assert not rep["acyclic"] and rep["cycle_length"] == len(rep["cycle"]) >= 2
    ids = [a.channel(t.parse_label(c["node"]), t.ports.index(c["port"])) for c in rep["cycle"]]
    for i, c in enumerate(rep["cycle"]):
        nxt = rep["cycle"][(i + 1) % len(rep["cycle"])]
        assert c["next"] == nxt["node"]  # consecutive links of a walk
        assert a.has_dependency(ids[i], ids[(i + 1) % len(ids)])


@pytest.mark.parametrize(
    ("spec", "name"),
    [("star:4", "shortest"), ("scc:4", "scc-greedy"), ("ms:2,2", "ms-two-phase"),
     ("fccn:2", "fccn-sroute"), ("borel:7,2,0,1", "borel-cr"), ("ccc:3", "ccc")],
)  # fmt: skip
def test_dependencies_are_exactly_those_of_the_routes(spec, name):
    t = from_spec(spec)
    r = make_router(name, t)
    assert edge_set(analyze(t, r, destinations="all")) == walked_edges(t, r)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("spec", "name", "opts"),
    [("star:4", "shortest", {"tie": "random"}), ("scc:4", "scc-random", {}),
     ("ms:2,2", "ms-balls-to-boxes", {"choice": "random"})],
)  # fmt: skip
def test_random_routers_union_covers_sampled_routes(spec, name, opts):
    t = from_spec(spec)
    r = make_router(name, t, **opts)
    a = analyze(t, r, destinations="all")
    assert a.report["random"]
    union = edge_set(a)
    seen = set()
    for seed in range(4):
        seen |= walked_edges(t, r, seed)
    assert seen <= union
    if name == "shortest":  # the lowest-port choice is one of the random ones
        assert edge_set(analyze(t, make_router(name, t), destinations="all")) <= union


@pytest.mark.parametrize(
    ("spec", "name"),
    [("star:4", "shortest"), ("scc:4", "scc-optimal"), ("ms:2,2", "ms-balls-to-boxes"),
     ("ccc:3", "ccc"), ("borel:7,2,0,1", "borel-two-phase"), ("ims:1,2,2", "ims-two-phase")],
)  # fmt: skip
@pytest.mark.parametrize("classes", ["none", "hops"])
def test_symmetry_gives_the_all_destination_graph(spec, name, classes):
    t = from_spec(spec)
    r = make_router(name, t)
    a = analyze(t, r, destinations="all", buffer_classes=classes, max_hops=16)
    b = analyze(t, r, destinations="symmetry", buffer_classes=classes, max_hops=16)
    assert edge_set(a) == edge_set(b) and np.array_equal(a.channels, b.channels)
    assert a.report["max_route_length"] == b.report["max_route_length"]


def test_a_router_that_is_not_translation_invariant_is_caught():
    t = from_spec("borel:7,2,0,1")
    with pytest.raises(SymmetryError, match="not invariant"):
        analyze(t, make_router("borel-cr", t), destinations="symmetry")


def test_cycle_search_on_small_graphs():
    src, dst = np.array([0, 1, 2, 2, 4]), np.array([1, 2, 0, 3, 3])
    acyclic, cyc, core = cg.find_cycle(5, src, dst)
    assert not acyclic and sorted(cyc) == [0, 1, 2] and core == 3
    assert cg.find_cycle(4, np.array([0, 1, 0]), np.array([1, 2, 2]))[0]


#: (spec, router, packets per node): small networks whose one-slot buffers fill up
ENGINE = [
    ("star:4", "shortest", 8), ("star:4", "star-greedy", 6), ("hypercube:3", "hypercube-ecube", 8),
    ("hypercube:4", "shortest", 8), ("ccc:3", "ccc", 8), ("scc:3", "scc-greedy", 8),
    ("ms:2,2", "ms-two-phase", 6), ("borel:7,2,0,1", "shortest", 8),
    ("fccn:2", "fccn-sroute", 6), ("borel:7,2,0,1", "borel-two-phase", 8),
    ("cms:3,2,2", "shortest", 8),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "name", "packets"), ENGINE)
def test_runtime_deadlocks_only_where_the_graph_has_a_cycle(spec, name, packets):
    t = from_spec(spec)
    router = make_router(name, t)
    a = analyze(t, router)
    deadlocked = 0
    for seed in range(3):
        rec = Engine(t, router, parse_model("all-port", buffer=1), seed=seed).run(
            Unicast(t, "uniform", packets=packets, seed=seed)
        )
        if rec.deadlock is None:
            continue
        deadlocked += 1
        assert not a.report["acyclic"], f"{spec} {name} deadlocked on an acyclic graph"
        cyc = rec.deadlock["cycle"]
        ids = [a.channel(t.parse_label(c["node"]), t.ports.index(c["port"])) for c in cyc]
        assert set(ids) <= set(a.channels.tolist())
        for i in range(len(ids)):  # each full buffer waits for the next: a dependency
            assert a.has_dependency(ids[i], ids[(i + 1) % len(ids)])
    if (spec, name) == ("star:4", "shortest"):  # jobs/buffers/deadlock.toml's case
        assert deadlocked


def test_hop_classes_never_deadlock_at_runtime():
    t = from_spec("star:4")
    router = make_router("shortest", t)
    rep = analyze(t, router, buffer_classes="hops", max_hops=3).report
    assert rep["acyclic"] and rep["classes_needed"] == 4  # classes 0..3: max_hops 3 suffices
    model = parse_model("all-port", buffer=1, buffer_classes="hops", max_hops=3)
    for seed in range(3):
        rec = Engine(t, router, model, seed=seed).run(Unicast(t, "uniform", packets=8, seed=seed))
        assert rec.deadlock is None
    with pytest.raises(RoutingError, match="taken 3 hops"):  # routes of 4 hops need class 3
        analyze(t, router, buffer_classes="hops", max_hops=2)


def test_cli_deadlock(capsys):
    assert main(["deadlock", "star:4", "--router", "shortest", "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert not rep["acyclic"] and rep["cycle"] and rep["literature"]
    assert rep["literature"][1]["value"] == 5  # hop classes: diameter 4 + 1
    assert main(["deadlock", "star:4", "--router", "shortest", "--buffer-classes", "hops"]) == 0
    assert "ACYCLIC" in capsys.readouterr().out
    assert main(["deadlock", "star:4", "--router", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mpinet: error:")


def test_cli_deadlock_text_cites_every_published_bound(capsys):
    assert main(["deadlock", "star:4", "--router", "shortest", "--json"]) == 1
    lit = json.loads(capsys.readouterr().out)["literature"]
    assert main(["deadlock", "star:4", "--router", "shortest"]) == 1
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("published bounds (star graph; docs/deadlock-analysis.md):")
    want = [f"  {e['quantity']}: {e['value']}  [{e['source']}; {e['note']}]" for e in lit]
    assert lines[at + 1 :] == want
