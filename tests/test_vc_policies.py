"""Node colourings, the VC policies and the static deadlock analysis at VC level.

Every policy's ``hop`` is checked against a plain per-packet computation along walked
routes, ``needed`` against the walked routes of every pair, and the (link, VC)
dependency graph edge for edge against one built from the walked routes, with networkx
deciding acyclicity; then the published results it reproduces and the CLI.
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from mpinet.cli import main
from mpinet.deadlock.vc import analyze_vc
from mpinet.deadlock.vc_need import check_vcs, requirement
from mpinet.errors import ResourceError, RoutingError, TopologyError
from mpinet.routing import available_routers, make_router
from mpinet.routing.vc_policies import VC_POLICIES, make_vc_policy
from mpinet.routing.walk import walk
from mpinet.topology import colouring, from_spec

#: every family at small sizes, both parities where the colouring depends on one
FAMILIES = ["star:3", "star:4", "star:5", "scc:3", "scc:4", "scc:5", "ms:2,2", "ms:2,3",
            "ms:3,2", "ms:1,3", "ims:1,2,2", "ims:1,3,2", "ims:1,2,3", "cms:2,2,2",
            "cms:3,2,3", "fccn:1", "fccn:2", "fccn:3", "borel:7,2,0,1", "borel:13,2,1,3",
            "borel:47,2,1,7", "hypercube:1", "hypercube:4", "ccc:3", "ccc:4", "ccc:5"]  # fmt: skip
#: one small network per family for the policies
SMALL = ["star:4", "scc:4", "ms:2,2", "fccn:2", "borel:7,2,0,1", "hypercube:3", "ccc:3", "ccc:4"]
POLICIES = ["hops", "negative-hop", "dateline"]


def refused_here(name, t) -> bool:
    """Dateline on a network without rings is refused (it would order nothing): True then."""
    if name != "dateline" or t.family in ("ccc", "scc"):
        return False
    with pytest.raises(RoutingError, match=rf"vc_policy 'dateline' orders nothing on {t.spec}"):
        make_vc_policy(name, t, 3)
    return True


def nx_graph(topo) -> nx.Graph:
    n = topo.num_nodes
    nb = topo.neighbors(np.arange(n))
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for p in range(topo.degree):
        ok = nb[:, p] >= 0
        g.add_edges_from(zip(np.arange(n)[ok].tolist(), nb[ok, p].tolist(), strict=True))
    return g


# -- colourings ---------------------------------------------------------------------------
@pytest.mark.parametrize("spec", FAMILIES)
def test_colouring_is_proper_and_two_colours_exactly_on_bipartite_networks(spec):
    t = from_spec(spec)
    n = t.num_nodes
    col = colouring.colours(t, np.arange(n))
    assert col.dtype == np.int8 and col.min() == 0
    g = nx_graph(t)
    assert all(col[a] != col[b] for a, b in g.edges)  # proper, checked independently
    assert colouring.is_proper(t) and colouring.is_proper(t, col)
    k = colouring.num_colours(t)
    assert k == int(col.max()) + 1 == len(set(col.tolist()))
    assert (k == 2) == nx.is_bipartite(g) == colouring.bipartite(t)
    assert k <= t.degree + 1
    picks = np.random.default_rng(1).integers(0, n, 50)  # vectorized over any ids
    assert np.array_equal(colouring.colours(t, picks), col[picks])


def test_closed_forms_where_the_family_has_one():
    assert colouring.closed_form(from_spec("star:6")) == "permutation parity"
    assert colouring.closed_form(from_spec("ms:2,3")) == "permutation parity"  # n odd
    assert colouring.closed_form(from_spec("ms:2,2")).startswith("permutation parity + 2")
    assert colouring.closed_form(from_spec("fccn:2")) is None  # searched
    # closed forms scale: star:10 (3.6 M nodes) without a search
    t = from_spec("star:10")
    ids = np.array([0, 1, t.num_nodes - 1])
    assert colouring.colours(t, ids).tolist() == [0, 1, int(colouring.colours(t, ids)[2])]
    nb = t.neighbors(ids)
    assert (
        colouring.colours(t, nb.ravel()).reshape(nb.shape) != colouring.colours(t, ids)[:, None]
    ).all()


def test_a_search_above_its_limit_is_refused(monkeypatch):
    monkeypatch.setattr(colouring, "MAX_SEARCHED", 100)
    monkeypatch.setattr(colouring, "_SEARCHED", {})
    with pytest.raises(TopologyError, match=r"fccn:3 has no closed-form colouring and 512 nodes"):
        colouring.colours(from_spec("fccn:3"), [0])


def test_a_colouring_that_is_not_proper_is_caught():
    t = from_spec("star:4")
    col = colouring.colours(t, np.arange(t.num_nodes)).copy()
    col[0] = 1 - col[0]
    assert not colouring.is_proper(t, col)


# -- hop() against a per-packet computation --------------------------------------------------
def python_vcs(policy, path: list[int]) -> list[int]:
    """The VC of every hop of one route, one packet at a time, as docs/switching.md says."""
    out, count = [], 0
    for j, (a, b) in enumerate(zip(path[:-1], path[1:], strict=True)):
        if policy.name == "hops":
            out.append(j)
        elif policy.name == "any":
            out.append(0)
        else:
            if policy.name == "negative-hop":
                ca, cb = (int(policy.colour_of([x])[0]) for x in (a, b))
                count += ca > cb
            else:
                ring = policy.ring
                ia, ib = a % ring if ring else 0, b % ring if ring else 0
                same = ring and a - ia == b - ib
                count += bool(same and {ia, ib} == {0, ring - 1})
            out.append(count)
    return out


def walked(topo, router, seed=0):
    n = topo.num_nodes
    s, d = np.divmod(np.arange(n * n), n)
    keep = s != d
    paths = walk(topo, router, s[keep], d[keep], seed=seed, paths=True)["paths"]
    return [[int(x) for x in row if x >= 0] for row in paths]


@pytest.mark.parametrize("spec", SMALL)
@pytest.mark.parametrize("name", ["any", *POLICIES])
def test_hop_matches_a_per_packet_computation_along_walked_routes(spec, name):
    t = from_spec(spec)
    if refused_here(name, t):
        return
    router = make_router(available_routers(t)[0], t)
    pol = make_vc_policy(name, t, 3)
    paths = walked(t, router)
    arr = np.full((len(paths), max(map(len, paths))), -1)
    for i, p in enumerate(paths):
        arr[i, : len(p)] = p
    state = np.zeros((len(paths), pol.state_words), np.int64)
    for j in range(arr.shape[1] - 1):
        live = arr[:, j + 1] >= 0
        lo, hi, new = pol.hop(arr[live, j], arr[live, j + 1], np.full(live.sum(), j), state[live])
        assert new.shape == (live.sum(), pol.state_words)
        want = np.array([python_vcs(pol, paths[i])[j] for i in np.flatnonzero(live)])
        if name == "any":
            assert (lo == 0).all() and (hi == 3).all()
        else:
            assert np.array_equal(lo, want) and np.array_equal(hi, want + 1)
        state[live] = new


# -- needed() against brute force --------------------------------------------------------------
def brute_needed(pol, paths) -> int:
    """1 + the highest VC of a hop that is not a route's last (the last takes none)."""
    top = -1
    for p in paths:
        v = python_vcs(pol, p)[:-1]
        top = max([top, *v])
    return 1 if pol.name == "any" else max(1, top + 1)


@pytest.mark.parametrize("spec", SMALL)
@pytest.mark.parametrize("name", ["any", *POLICIES])
def test_needed_is_what_the_walked_routes_need(spec, name):
    t = from_spec(spec)
    if refused_here(name, t):
        return
    pol = make_vc_policy(name, t, 1)
    for rname in available_routers(t):
        router = make_router(rname, t)
        req = requirement(pol, router)
        got = brute_needed(pol, walked(t, router))
        if req.how == "not needed":
            assert req.vcs == got == 1
            continue
        assert req.exact and req.how == "every pair"
        if "random" in rname:  # the union over every choice: at least any seed's
            assert req.vcs >= max(got, brute_needed(pol, walked(t, router, seed=5)))
        else:
            assert req.vcs == got, (rname, req)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("spec", "rname", "name"),
    [("star:5", "shortest", "negative-hop"), ("scc:5", "scc-greedy", "negative-hop"),
     ("scc:5", "scc-random", "dateline"), ("star:5", "star-greedy", "hops"),
     ("ccc:4", "ccc", "negative-hop")],
)  # fmt: skip
def test_symmetry_gives_the_every_pair_answer(spec, rname, name):
    """Negative-hop by symmetry: a translation keeps or swaps the two colours."""
    t = from_spec(spec)
    router = make_router(rname, t)
    pol = make_vc_policy(name, t, 1)
    a, s = (requirement(pol, router, destinations=d) for d in ("all", "symmetry"))
    assert (a.how, s.how) == ("every pair", "symmetry") and a.vcs == s.vcs
    ga, gs = (analyze_vc(t, router, name, destinations=d) for d in ("all", "symmetry"))
    assert gs.report["destinations"] == "symmetry"
    assert set(zip(ga.src.tolist(), ga.dst.tolist(), strict=True)) == set(
        zip(gs.src.tolist(), gs.dst.tolist(), strict=True)
    )


def test_estimates_say_so(monkeypatch):
    """Above every-pair limits: a bound where the translations do not keep the count,
    a sample where there are none; the refusal names the number and the estimate."""
    from mpinet.deadlock import analysis as deadlock_analysis

    monkeypatch.setattr(deadlock_analysis, "MAX_ALL_PAIRS", 100)
    t = from_spec("scc:4")  # 3 colours: negative-hop cannot use the symmetry
    router = make_router("scc-greedy", t)
    req = requirement(make_vc_policy("negative-hop", t, 1), router)
    assert req.how == "upper bound" and not req.exact and req.vcs == req.longest == 8
    with pytest.raises(RoutingError, match=r"needs vcs >= 8 .*an upper bound"):
        check_vcs(make_vc_policy("negative-hop", t, 2), router)
    f = from_spec("fccn:2")
    req = requirement(make_vc_policy("hops", f, 1), make_router("fccn-sroute", f))
    assert req.how == "sample" and req.pairs == 64 * 63 and req.vcs <= 6
    with pytest.raises(ResourceError, match=r"following every route of fccn:2"):
        analyze_vc(f, make_router("fccn-sroute", f), "hops")


def test_check_refuses_too_few_vcs_naming_the_number():
    t = from_spec("star:5")
    router = make_router("shortest", t)
    msg = (r"vc_policy 'hops' needs vcs >= 5 for shortest on star:5 \(longest route 6 hops; "
           r"the last hop takes no VC\); got vcs = 2")  # fmt: skip
    with pytest.raises(RoutingError, match=msg):
        check_vcs(make_vc_policy("hops", t, 2), router)
    check_vcs(make_vc_policy("hops", t, 5), router)
    check_vcs(make_vc_policy("any", t, 1), router)
    with pytest.raises(RoutingError, match=r"unknown vc_policy 'x'; valid: any, hops, "):
        make_vc_policy("x", t, 1)
    with pytest.raises(RoutingError, match=r"vcs must be in \[1, 64\], got 0"):
        make_vc_policy("any", t, 0)
    assert set(VC_POLICIES) >= {"any", "hops", "negative-hop", "dateline"}


# -- the (link, VC) graph against networkx ----------------------------------------------------
def brute_graph(topo, pol, paths) -> set:
    """(link, VC) dependencies read off the walked routes, one packet at a time."""
    deg, v = topo.degree, pol.vcs
    nb = topo.neighbors(np.arange(topo.num_nodes))
    edges = set()
    for p in paths:
        ports = [int(np.flatnonzero(nb[a] == b)[0]) for a, b in zip(p[:-1], p[1:], strict=True)]
        vc = python_vcs(pol, p)
        for j in range(1, len(ports) - 1):  # the last hop takes no VC
            a, b = p[j - 1] * deg + ports[j - 1], p[j] * deg + ports[j]
            held = range(v) if pol.name == "any" else [vc[j - 1]]
            wait = range(v) if pol.name == "any" else [vc[j]]
            edges |= {(a * v + x, b * v + y) for x in held for y in wait}
    return edges


CASES = [(s, r) for s in ["star:4", "scc:4", "hypercube:3", "ccc:3", "fccn:2", "borel:7,2,0,1"]
         for r in available_routers(from_spec(s)) if "random" not in r]  # fmt: skip


@pytest.mark.parametrize(("spec", "rname"), CASES)
@pytest.mark.parametrize(("name", "vcs"), [("any", 1), ("any", 2), ("hops", None),
                                          ("negative-hop", None), ("dateline", None)])  # fmt: skip
def test_the_vc_graph_is_the_walked_routes_graph(spec, rname, name, vcs):
    t = from_spec(spec)
    if refused_here(name, t):
        return
    router = make_router(rname, t)
    res = analyze_vc(t, router, name, vcs=vcs, destinations="all")
    rep = res.report
    pol = make_vc_policy(name, t, rep["vcs"])
    want = brute_graph(t, pol, walked(t, router))
    assert set(zip(res.src.tolist(), res.dst.tolist(), strict=True)) == want
    g = nx.DiGraph(list(want))
    assert rep["acyclic"] == nx.is_directed_acyclic_graph(g)
    if not rep["acyclic"]:  # the cycle printed is one of the graph's
        ch = [res.channel(t.parse_label(c["node"]), t.ports.index(c["port"]), c["vc"])
              for c in rep["cycle"]]  # fmt: skip
        assert all(g.has_edge(a, b) for a, b in zip(ch, ch[1:] + ch[:1], strict=True))


# -- known results ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["hypercube:3", "hypercube:5", "hypercube:6"])
def test_ecube_is_deadlock_free_with_one_vc(spec):
    """Dally & Seitz 1987: dimension order on the hypercube needs one VC."""
    t = from_spec(spec)
    rep = analyze_vc(t, make_router("hypercube-ecube", t), "any").report
    assert rep["acyclic"] and rep["vcs"] == rep["smallest_vcs"] == 1
    assert analyze_vc(t, make_router("hypercube-ecube", t), "any", vcs=4).report["acyclic"]


@pytest.mark.parametrize("spec", ["ccc:3", "ccc:4"])
def test_ccc_needs_two_vcs_with_a_dateline(spec):
    """Dally & Seitz 1987: two VCs per CCC channel, the cycles split at a dateline."""
    t = from_spec(spec)
    sweep = make_router("ccc", t, mode="sweep")
    assert not analyze_vc(t, sweep, "any").report["acyclic"]  # one VC: a cycle
    rep = analyze_vc(t, sweep, "dateline").report
    assert rep["acyclic"] and rep["smallest_vcs"] == 2
    with pytest.raises(RoutingError, match=r"needs vcs >= 2"):
        analyze_vc(t, sweep, "dateline", vcs=1)


@pytest.mark.parametrize("spec", SMALL + ["star:6", "scc:5"])
def test_hops_is_acyclic_for_every_router(spec):
    t = from_spec(spec)
    for rname in available_routers(t):
        rep = analyze_vc(t, make_router(rname, t), "hops").report
        assert rep["acyclic"] and rep["vcs"] == rep["max_route_length"] - 1, rname


@pytest.mark.parametrize("n", [4, 5, 6])
def test_negative_hop_on_the_star_graph(n):
    """Two colours; a minimal router needs floor(D/2) + 1 VCs (the last hop takes none)."""
    t = from_spec(f"star:{n}")
    diam = 3 * (n - 1) // 2
    for rname in ("shortest", "star-greedy"):
        rep = analyze_vc(t, make_router(rname, t), "negative-hop").report
        assert rep["acyclic"] and rep["colours"] == 2
        assert rep["smallest_vcs"] == diam // 2 + 1
        assert rep["smallest_vcs"] <= -(-diam // 2) + 1  # the published ceil(D/2) + 1


def test_any_is_cyclic_for_shortest_on_star4_with_any_number_of_vcs():
    t = from_spec("star:4")
    router = make_router("shortest", t)
    for v in (None, 2, 3):
        rep = analyze_vc(t, router, "any", vcs=v).report
        assert not rep["acyclic"] and rep["smallest_vcs"] is None and rep["cycle_length"] == 6
    assert analyze_vc(t, router, "negative-hop").report["acyclic"]
    assert analyze_vc(t, router, "hops").report["acyclic"]


# -- the CLI -------------------------------------------------------------------------------------
def test_cli_vc_level(capsys):
    args = ["deadlock", "star:5", "--router", "shortest", "--switching", "wormhole"]
    assert main([*args, "--vc-policy", "negative-hop", "--json", "--quiet"]) == 0
    rep = json.loads(capsys.readouterr().out)
    keys = ("vc_policy", "vcs", "vcs_needed", "smallest_vcs", "requirement", "acyclic", "cycle",
            "channels", "dependencies", "switching", "colours", "literature")  # fmt: skip
    assert all(k in rep for k in keys)
    assert rep["vcs"] == rep["smallest_vcs"] == 4 and rep["requirement"]["how"] == "every pair"
    assert main([*args, "--quiet"]) == 1  # any: a cycle, printed with its VCs
    out = capsys.readouterr().out
    assert "CYCLIC" in out and "(VC 0)" in out and "smallest V        none" in out
    assert main([*args, "--switching", "cut-through", "--vc-policy", "hops", "--vcs", "5"]) == 0
    assert "ACYCLIC" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--switching", "wormhole", "--vc-policy", "nope"], "unknown --vc-policy 'nope'"),
        (["--switching", "wormhole", "--vc-policy", "hops", "--vcs", "2"],
         "vc_policy 'hops' needs vcs >= 5 for shortest on star:5"),
        (["--vc-policy", "hops"], "--vc-policy needs --switching wormhole or cut-through"),
        (["--switching", "wormhole", "--buffer-classes", "hops"], "give --vc-policy hops"),
    ],
)  # fmt: skip
def test_cli_errors_are_one_line(capsys, extra, says):
    assert main(["deadlock", "star:5", "--router", "shortest", "--quiet", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mpinet: error: ") and says in err[0]
