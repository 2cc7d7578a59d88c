"""Routes computed at injection (mpinet.routing.source_routes) against the step-by-step walk."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpinet.errors import RoutingError
from mpinet.routing import ROUTERS, make_router
from mpinet.routing import compiled as cp
from mpinet.routing.base import DROP, WAIT, Router
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.route_tables import (
    PATH_COMPILED,
    PATH_TABLE,
    PATH_WALKED,
    RouteTable,
    compile_routes,
    random_choices,
)
from mpinet.routing.source_routes import (
    PORT_DROP,
    PORT_END,
    source_headers,
    source_rule,
    walk_routes,
)
from mpinet.routing.walk import walk
from mpinet.topology import from_spec

#: one small network per family (as tests/test_routers_everywhere.py)
INSTANCE = {
    "star": "star:5",
    "scc": "scc:4",
    "ms": "ms:2,2",
    "ims": "ims:1,3,2",
    "cms": "cms:3,2,2",
    "fccn": "fccn:3",
    "borel": "borel:47,2,1,7",
    "hypercube": "hypercube:5",
    "ccc": "ccc:4",
    "mesh": "mesh:4,2",
    "torus": "torus:4,2",
}
#: every registered router on a network of each family it applies to (generic ones on scc:4
#: and ms:2,2), and shortest with random ties
CASES = [
    (name, INSTANCE[fam], {})
    for name, cls in ROUTERS.items()
    for fam in (cls.families or ["scc", "ms"])
    if fam in INSTANCE  # test_every_family_has_a_network says which are missing
] + [("shortest", "scc:4", {"tie": "random"}), ("shortest", "fccn:3", {"tie": "random"})]


def test_every_family_has_a_network():
    missing = {f for cls in ROUTERS.values() for f in cls.families} - set(INSTANCE)
    assert not missing, f"give INSTANCE a small network of {sorted(missing)}"


def random_pairs(topo, m: int, seed: int):
    g = np.random.default_rng(seed)
    src = g.integers(0, topo.num_nodes, m)
    dst = g.integers(0, topo.num_nodes, m)
    pids = g.permutation(10 * m)[:m].astype(np.int64)
    return src, dst, pids


def check_against_walk(router, src, dst, pids, seed: int) -> np.ndarray:
    """walk_routes's rows replayed on the network visit walk's nodes, hop for hop."""
    topo = router.topo
    ref = walk(topo, router, src, dst, seed=seed, pids=pids, paths=True)
    assert ref["ok"].all()
    width = max(1, int(ref["lengths"].max(initial=0)))  # the longest route fills its row
    ports, nhops = walk_routes(router, src, dst, pids, seed=seed, max_hops=width)
    assert np.array_equal(nhops, ref["lengths"])
    m = src.size
    past = np.arange(ports.shape[1])[None, :] >= nhops[:, None]
    assert (ports[past] == PORT_END).all() and (ports[~past] < topo.degree).all()
    nodes = np.asarray(src, np.int64).copy()
    for h in range(int(nhops.max(initial=0))):
        go = np.flatnonzero(nhops > h)
        nodes[go] = topo.neighbors(nodes[go])[np.arange(go.size), ports[go, h]]
        assert np.array_equal(nodes[go], ref["paths"][go, h + 1])
    assert np.array_equal(nodes, dst)
    trimmed, again = walk_routes(router, src, dst, pids, seed=seed, max_hops=400, trim=True)
    assert np.array_equal(again, nhops) and trimmed.shape[1] == width + 1
    assert np.array_equal(trimmed[:, :width], ports) and (trimmed[:, width] == PORT_END).all()
    used = np.bincount(ports[~past].astype(np.int64), minlength=topo.degree)
    assert np.array_equal(used, ref["port_counts"])  # the same ports, not only the same nodes
    assert m == nhops.size
    return ports


@pytest.mark.parametrize("name,spec,opts", CASES)
def test_every_router_walks_the_routes_of_the_step_by_step_walk(name, spec, opts):
    topo = from_spec(spec)
    router = make_router(name, topo, **opts)
    for seed in (0, 5):
        src, dst, pids = random_pairs(topo, 600, seed)
        check_against_walk(router, src, dst, pids, seed)


@settings(max_examples=25, deadline=None)
@given(
    case=st.sampled_from(
        [("scc-random", "scc:4", {}), ("shortest", "scc:4", {"tie": "random"}),
         ("ms-balls-to-boxes", "ms:2,2", {}), ("ms-merged", "ms:2,2", {}),
         ("borel-cr", "borel:47,2,1,7", {}), ("ims-two-phase", "ims:1,3,2", {})]
    ),
    seed=st.integers(0, 2**31),
    pair_seed=st.integers(0, 2**31),
)  # fmt: skip
def test_random_choices_follow_the_pids_and_seed(case, seed, pair_seed):
    name, spec, opts = case
    router = make_router(name, from_spec(spec), **opts)
    src, dst, pids = random_pairs(router.topo, 40, pair_seed)
    check_against_walk(router, src, dst, pids, seed)


def test_the_compiled_hop_reads_the_rows():
    topo = from_spec("ms:2,2")
    router = make_router("ms-two-phase", topo)
    src, dst, pids = random_pairs(topo, 300, 4)
    ports, nhops = walk_routes(router, src, dst, pids, seed=1, max_hops=24)
    table = np.ascontiguousarray(ports)
    rule = source_rule(table)
    assert rule.code == cp.SOURCE
    h = source_headers(np.arange(src.size), ports.shape[1])
    for i in range(src.size):  # the scalar rule, as the compiled steps call it
        hi, cur = int(h[i]), int(src[i])
        for k in range(int(nhops[i])):
            port, hi = cp.hop(rule.code, rule.prm, rule.ta, rule.tb, cur, int(dst[i]), hi)
            assert port == ports[i, k]
            cur = int(topo.neighbors(np.array([cur]))[0, port])
        assert cur == dst[i] and hi == h[i] + nhops[i]
    table[0, 0] = PORT_DROP
    assert cp.hop(rule.code, rule.prm, rule.ta, rule.tb, 0, 1, 0) == (DROP, 0)


class _Bad(Router):
    name = "bad"

    def __init__(self, topo, port, holds=False):
        super().__init__(topo)
        self.port = port
        self.holds = holds

    def next_port(self, nodes, dests, headers, ctx):
        return np.full(nodes.size, self.port), headers


def test_refusals_name_the_router():
    topo = from_spec("star:4")
    src, dst = np.array([0, 1]), np.array([5, 7])
    for router, what in [
        (_Bad(topo, 0, holds=True), "holds packets"),
        (_Bad(topo, WAIT), "chose port -1"),
        (_Bad(topo, topo.degree), f"chose port {topo.degree}"),
    ]:
        with pytest.raises(RoutingError, match=f"router bad.*{what}"):
            walk_routes(router, src, dst, [0, 1])
    with pytest.raises(RoutingError, match="router bad: the route of packet 0 .* longer than "
                       "max_hops = 9 hops"):  # fmt: skip
        walk_routes(_Bad(topo, 0), src, dst, [0, 1], max_hops=9)  # back and forth on port 0
    with pytest.raises(RoutingError, match="max_hops must be in 1..65536, got 65537"):
        walk_routes(make_router("shortest", topo), src, dst, [0, 1], max_hops=65537)
    with pytest.raises(RoutingError, match="width must be in 2..256, got 1"):
        SourceRouted(make_router("shortest", topo), width=1)
    with pytest.raises(RoutingError, match="router bad.*holds packets"):
        SourceRouted(_Bad(topo, 0, holds=True))

    class OneWrong(_Bad):  # shortest's ports, but packet 7 leaves on port 9 at its 2nd hop
        def init_headers(self, src, dst):
            return self.inner.init_headers(src, dst)

        def next_port(self, nodes, dests, headers, ctx):
            port, new = self.inner.next_port(nodes, dests, headers, ctx)
            return np.where((ctx.pids == 7) & (ctx.hops == 1), 9, port), new

    wrong = OneWrong(topo, 0)
    wrong.inner = make_router("shortest", topo, tie="random")
    pids = np.arange(30)
    with pytest.raises(RoutingError, match=r"router bad chose port 9 at node .* for packet 7 "):
        walk_routes(wrong, np.zeros(30, np.int64), np.full(30, 23), pids)
    with pytest.raises(RoutingError, match="router shortest: routes computed at injection"):
        SourceRouted(make_router("shortest", topo)).set_faults(None)


# -- translated route tables and the choice of path -------------------------------------------
#: routers whose routes are not translation-invariant (found by RouteTable's check)
NOT_INVARIANT = {"borel-cr"}
TABLE_CASES = [
    (name, spec, opts)
    for name, spec, opts in CASES
    if from_spec(spec).translation_targets is not None
    and name not in NOT_INVARIANT
    and make_router(name, from_spec(spec), **opts).compiled_hop() is None
    and not random_choices(make_router(name, from_spec(spec), **opts))
]


def test_every_router_has_a_compiled_path():
    """No registered router is left to next_port: a compiled hop, a table, or walked rows."""
    seen = set()
    for name, spec, opts in CASES:
        topo = from_spec(spec)
        router = make_router(name, topo, **opts)
        run, path, why = compile_routes(router)
        seen.add(path)
        if router.compiled_hop() is not None:
            assert (run, path, why) == (router, PATH_COMPILED, "")
        elif (name, spec, opts) in TABLE_CASES:
            assert path == PATH_TABLE and isinstance(run, RouteTable), why
        else:
            assert path == PATH_WALKED and isinstance(run, SourceRouted) and why
        assert cp.rule_of(run) is not cp.NO_HOP
    assert seen == {PATH_COMPILED, PATH_TABLE, PATH_WALKED}


@pytest.mark.parametrize("name,spec,opts", TABLE_CASES)
def test_translated_route_tables_route_as_the_router(name, spec, opts):
    topo = from_spec(spec)
    router = make_router(name, topo, **opts)
    table = RouteTable(router)
    src, dst, pids = random_pairs(topo, 800, 9)
    ref = walk(topo, router, src, dst, seed=4, pids=pids, paths=True)
    got = walk(topo, table, src, dst, seed=4, pids=pids, paths=True)
    assert np.array_equal(ref["paths"], got["paths"])
    assert np.array_equal(ref["port_counts"], got["port_counts"])


def test_route_tables_refuse_what_they_cannot_route_exactly():
    topo = from_spec("scc:4")
    for router, what in [
        (make_router("scc-random", topo), "its choices are random"),
        (make_router("shortest", from_spec("fccn:3"), tie="first"), "no translations"),
        (make_router("scc-greedy", topo), "rows, over the limit of 100"),
    ]:
        with pytest.raises(RoutingError, match=f"router {router.name} .*: .*{what}"):
            RouteTable(router, max_rows=100 if "limit" in what else 1 << 20)

    # anynet-min's parents are the lowest ids (BookSim's rule): not translation-invariant
    skewed = make_router("anynet-min", topo)
    with pytest.raises(RoutingError, match="router anynet-min on scc:4: .*\\(not translation-inv"):
        RouteTable(skewed)
    skewed.compiled_hop = lambda: None  # as a router without a compiled hop
    run, path, why = compile_routes(skewed)
    assert path == PATH_WALKED and "not translation-invariant" in why
    assert isinstance(run, SourceRouted) and run.by_engine and cp.rule_of(run).code == cp.SOURCE


@pytest.mark.parametrize("width", [4, 32])
def test_rows_walked_at_injection_and_freed_by_the_engine(width):
    """The compiled engines' protocol: walk_rows at injection, the rule hop by hop (re-read
    after the table grows), release with the words carried at delivery; rows are reused.
    Width 4: a route of more than 3 hops goes on in linked rows."""
    topo = from_spec("scc:4")
    router = make_router("scc-random", topo)
    run = SourceRouted(make_router("scc-random", topo), width=width, release="engine")
    nbt = topo.neighbors(np.arange(topo.num_nodes))
    most = 0
    for batch in range(4):  # 300 packets a batch: the table grows, then rows are reused
        src, dst, pids = random_pairs(topo, 300, batch)
        words = run.walk_rows(src, dst, pids, 6, batch)
        rule = cp.rule_of(run)
        ref = walk(topo, router, src, dst, seed=6, pids=pids, paths=True)
        most = max(most, int(np.maximum(1, -(-ref["lengths"] // (width - 1))).sum()))
        for i in range(src.size):
            cur, h = int(src[i]), int(words[i])
            for k in range(int(ref["lengths"][i])):
                port, h = cp.hop(rule.code, rule.prm, rule.ta, rule.tb, cur, int(dst[i]), h)
                cur = int(nbt[cur, port])
                assert cur == ref["paths"][i, k + 1]
            words[i] = h
        run.release(words)
        assert run.nfree == run.table.shape[0]  # every row back on the stack
    assert run.table.shape[0] <= 2 * most  # reused: four batches in the room of one


@pytest.mark.parametrize("width", [3, 32])
def test_a_packet_from_another_rank_is_walked_again_from_its_source(width):
    """rewalk: the receiving rank's row, positioned after the hops taken (chains followed)."""
    topo = from_spec("ms:2,2")
    router = make_router("ms-balls-to-boxes", topo, choice="random")
    run = SourceRouted(make_router("ms-balls-to-boxes", topo, choice="random"), width=width,
                       release="engine")  # fmt: skip
    src, dst, pids = random_pairs(topo, 200, 3)
    ref = walk(topo, router, src, dst, seed=2, pids=pids, paths=True)
    go = ref["lengths"] > 0
    src, dst, pids = src[go], dst[go], pids[go]
    lengths, paths = ref["lengths"][go], ref["paths"][go]
    taken = np.random.default_rng(0).integers(0, lengths)  # hops before the crossing
    words = run.rewalk(src, dst, pids, 2, 7, taken)
    rule = cp.rule_of(run)
    nbt = topo.neighbors(np.arange(topo.num_nodes))
    for i in range(src.size):
        cur, h = int(paths[i, taken[i]]), int(words[i])
        for k in range(int(taken[i]), int(lengths[i])):
            port, h = cp.hop(rule.code, rule.prm, rule.ta, rule.tb, cur, int(dst[i]), h)
            cur = int(nbt[cur, port])
            assert cur == paths[i, k + 1]
    assert width > 8 or (taken > width - 1).any()  # width 3: crossings past a row's end


@pytest.mark.parametrize("spec, name, tight", [("scc:6", "scc-optimal", False),
                                               ("scc:7", "scc-greedy", True)])  # fmt: skip
def test_planned_bytes_bound_the_table_build(spec, name, tight):
    """The run's plan counts a translated route table's build (``planned_bytes``): the
    peak measured by tracemalloc stays under it, and within 0.5x of it once the rows
    dominate the fixed part; no table, no bytes."""
    import tracemalloc

    from mpinet.routing import make_router
    from mpinet.routing.route_tables import PATH_TABLE, compile_routes, planned_bytes
    from mpinet.topology import from_spec

    topo = from_spec(spec)
    router = make_router(name, topo)
    plan = planned_bytes(router)
    tracemalloc.start()
    _run, path, _why = compile_routes(router)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert path == PATH_TABLE
    assert peak <= plan and (not tight or peak >= 0.5 * plan), (peak, plan)
    assert planned_bytes(make_router("shortest", topo)) == 0  # its own compiled hop
