"""Router ``anynet-min``: BookSim2's anynet ``min`` rule (docs/booksim.md), checked three ways.

1. Against a literal transcription of ``AnyNet::route``'s Dijkstra (settle the lowest
   distance, ties to the lowest id; replace a predecessor only on a shorter distance),
   written here in plain Python on networkx graphs, for every pair of small networks.
2. Against BookSim2 itself: the routers its flits visited (``watch_packets`` output of
   BookSim2 on ``mpinet export --format anynet`` networks, tests/data/booksim/).
3. Its channel-load bound against the figures issue 23 measured.
"""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from mpinet.errors import ResourceError
from mpinet.routing import make_router
from mpinet.routing.anynet_min import AnynetMinRouter
from mpinet.routing.channel_load import uniform_load
from mpinet.routing.walk import walk
from mpinet.topology import from_spec

DATA = Path(__file__).parent / "data" / "booksim"
SMALL = ["hypercube:3", "hypercube:4", "scc:3", "scc:4", "star:4", "ms:2,2", "fccn:2"]
SMALL += ["ccc:3", "ims:1,2,2", "borel:7,2,0,1"]


def graph(topo) -> nx.DiGraph:
    """The network as BookSim reads its anynet file: one link per (router, neighbour)."""
    g = nx.DiGraph()
    g.add_nodes_from(range(topo.num_nodes))
    nb = topo.neighbors(np.arange(topo.num_nodes))
    g.add_edges_from((u, int(v)) for u in range(topo.num_nodes) for v in nb[u] if v >= 0)
    return g


def booksim_next_hops(g: nx.DiGraph) -> np.ndarray:
    """``nxt[s, d]``: AnyNet::route transcribed — Dijkstra from s, then prev-chain from d."""
    n = g.number_of_nodes()
    nxt = np.full((n, n), -1)
    for s in range(n):
        dist, prev, left = dict.fromkeys(range(n), float("inf")), {}, set(range(n))
        dist[s] = 0
        while left:
            m = min(left, key=lambda i: (dist[i], i))  # the first minimum in id order
            left.discard(m)
            for v in sorted(g.successors(m)):
                if dist[m] + 1 < dist[v]:  # strictly shorter only
                    dist[v], prev[v] = dist[m] + 1, m
        for d in range(n):
            if d != s and d in prev:
                x = d
                while prev[x] != s:
                    x = prev[x]
                nxt[s, d] = x
    return nxt


def routes(topo, router, src, dst) -> list[list[int]]:
    res = walk(topo, router, src, dst, paths=True)
    assert res["ok"].all()
    return [[int(v) for v in p if v >= 0] for p in res["paths"]]


@pytest.mark.parametrize("spec", SMALL)
def test_tables_follow_booksims_rule_and_routes_are_shortest(spec):
    topo = from_spec(spec)
    g, n = graph(topo), topo.num_nodes
    router = make_router("anynet-min", topo)
    s, d = np.divmod(np.arange(n * n), n)
    keep = s != d
    s, d = s[keep], d[keep]
    port, _ = router.next_port(s, d, np.zeros((s.size, 0), np.int64), None)
    got = topo.neighbors(np.arange(n))[s, port]
    assert (got == booksim_next_hops(g)[s, d]).all()
    # the lowest port to that neighbour (parallel links are one link in BookSim)
    first = np.array(
        [list(topo.neighbors(np.arange(n))[u]).index(v) for u, v in zip(s, got, strict=True)]
    )
    assert (port == first).all()
    exact = dict(nx.all_pairs_shortest_path_length(g))
    lengths = walk(topo, router, s, d)["lengths"]
    assert (lengths == [exact[a][b] for a, b in zip(s, d, strict=True)]).all()
    assert (router.distance(s, d) == lengths).all()


def test_ties_to_the_lowest_id_by_hand():
    """hypercube:3, 4 -> 3: the predecessors of 3 at distance 2 from 4 are 1, 2 and 7,
    the lowest is 1; those of 1 at distance 1 are 0 and 5, the lowest is 0; so the first
    hop is 4 -> 0 (bit 2 first), not e-cube's 4 -> 5. At 0 the rule gives 0 -> 1 -> 3."""
    topo = from_spec("hypercube:3")
    router = make_router("anynet-min", topo)
    assert routes(topo, router, [4, 0, 0], [3, 7, 6]) == [[4, 0, 1, 3], [0, 1, 3, 7], [0, 2, 6]]


def _booksim_paths(path: Path) -> dict[int, tuple[int, int, list[int]]]:
    """Packet -> (src, dst, routers visited) from BookSim2's watch output (1-flit packets)."""
    seen: dict[int, list[int]] = {}
    ends: dict[int, tuple[int, int]] = {}
    for line in path.read_text().splitlines():
        m = re.search(r"router_(\d+) \| Received flit (\d+) ", line)
        if m:
            seen.setdefault(int(m.group(2)), []).append(int(m.group(1)))
        m = re.search(r"Retiring flit (\d+) \(packet \d+, src = (\d+), dest = (\d+)", line)
        if m:
            ends[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    return {f: (*ends[f], seen[f]) for f in ends}


@pytest.mark.parametrize("spec", ["hypercube:4", "scc:4"])
def test_routes_are_the_routers_booksim2_visited(spec):
    """BookSim2 run on ``mpinet export SPEC --format anynet`` (its watch output, filtered
    to the lines the test reads): every watched packet's routers are anynet-min's route."""
    packets = _booksim_paths(DATA / f"{spec.replace(':', '-')}-routes.txt")
    assert len(packets) >= 80
    topo = from_spec(spec)
    src = [s for s, _, _ in packets.values()]
    dst = [d for _, d, _ in packets.values()]
    mine = routes(topo, make_router("anynet-min", topo), src, dst)
    assert mine == [p for _, _, p in packets.values()]
    assert sum(len(p) > 3 for p in mine) >= 20  # routes long enough for ties to matter


def test_channel_bound_of_hypercube8_against_ecube():
    """Issue 23: anynet's rule loads hypercube:8's hottest link 8.58 times per unit rate
    (channel bound 0.117) where e-cube loads every link 128/255 (bound 1.99)."""
    topo = from_spec("hypercube:8")
    mine = uniform_load(topo, make_router("anynet-min", topo))
    ecube = uniform_load(topo, make_router("hypercube-ecube", topo))
    assert round(1 / mine.load.max(), 3) == 0.117
    assert ecube.load.max() == pytest.approx(128 / 255)
    assert mine.mean_hops == pytest.approx(ecube.mean_hops)  # both minimal
    assert mine.method == "all-pairs" and mine.exact


@pytest.mark.slow
@pytest.mark.parametrize("spec, bound", [("scc:6", 0.182), ("ms:3,2", 0.243)])
def test_channel_bound_of_the_issues_networks(spec, bound):
    topo = from_spec(spec)
    assert round(1 / uniform_load(topo, make_router("anynet-min", topo)).load.max(), 3) == bound


def test_runs_on_the_engine(run_mpinet):
    r = run_mpinet(["run", "--topology", "ms:2,2", "--router", "anynet-min"])
    assert r.returncode == 0, r.stderr
    assert re.search(r"delivered\s+120 of 120", r.stdout), r.stdout
    assert re.search(r"stretch .* shortest 100.0%", r.stdout), r.stdout


def test_refuses_tables_that_do_not_fit():
    big = from_spec("scc:8")
    assert big.num_nodes**2 > 2**26
    with pytest.raises(
        ResourceError, match=rf"N\*N = {big.num_nodes**2:,} entries, over the limit"
    ):
        make_router("anynet-min", big)
    with pytest.raises(ResourceError, match="router 'anynet-min' tables for ms:2,2"):
        AnynetMinRouter(from_spec("ms:2,2"), max_table_bytes=1000)
