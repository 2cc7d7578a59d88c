"""Routers that route around faults: scc-random, ms-balls-to-boxes, ms-merged, borel-cr."""

from __future__ import annotations

import numpy as np
import pytest

from mpinet import perm
from mpinet.routing import ROUTERS, make_router
from mpinet.routing import scc_cycles as sc
from mpinet.routing.base import DROP, HopContext
from mpinet.topology import from_spec
from mpinet.topology.faults import make_faults

TOLERANT = [
    ("scc:3", "scc-random", {}),
    ("scc:4", "scc-random", {}),
    ("scc:5", "scc-random", {}),
    ("ms:2,2", "ms-balls-to-boxes", {}),
    ("ms:3,2", "ms-balls-to-boxes", {"choice": "random"}),
    ("ms:3,2", "ms-merged", {}),
    ("ms:2,3", "ms-merged", {"choice": "random", "boxes": "home"}),
    ("borel:7,2,0,1", "borel-cr", {}),
    ("borel:47,2,1,7", "borel-cr", {"lookahead": 2}),
    ("borel:47,2,1,7", "borel-cr", {"lookahead": 3, "commit": True}),
]


#: routers whose route, where its next link is live, is the route they take without faults
#: (borel-cr with look-ahead > 1 re-decides when a later link of its walk failed)
def _keeps_route(name: str, opts: dict) -> bool:
    if name == "scc-random" or "choice" in opts:
        return False
    return opts.get("lookahead", 1) == 1 or bool(opts.get("commit"))


DETERMINISTIC = [c for c in TOLERANT if _keeps_route(c[1], c[2])]


def pairs(topo, faults, k=600, seed=0):
    """Up to ``k`` random ordered pairs of distinct surviving nodes."""
    g = np.random.default_rng(seed)
    src = g.integers(0, topo.num_nodes, 4 * k)
    dst = g.integers(0, topo.num_nodes, 4 * k)
    ok = (src != dst) & ~faults.node_down(src) & ~faults.node_down(dst)
    return src[ok][:k], dst[ok][:k]


def walk(router, topo, faults, src, dst, *, tolerant=True, seed=3, cap=400):
    """Follow each packet hop by hop without contention, as the engine routes.

    Returns (delivered, hops, lateral hops, port sequences). A router that
    does not route around faults loses a packet on a failed link (the
    engine's "no route"); one that does must never choose such a link.
    """
    m = src.size
    cur, hdr = src.copy(), router.init_headers(src, dst)
    hops = np.zeros(m, dtype=np.int64)
    lateral = np.zeros(m, dtype=np.int64)
    lost = np.zeros(m, dtype=bool)
    seq = [[] for _ in range(m)]
    for _ in range(cap):
        act = np.flatnonzero(~lost & (cur != dst))
        if act.size == 0:
            break
        ctx = HopContext(step=0, pids=act.astype(np.int64), hops=hops[act], seed=seed)
        ports, new = router.next_port(cur[act], dst[act], hdr[act], ctx)
        ports = np.asarray(ports, dtype=np.int64)
        drop = ports == DROP
        ok = ~drop
        down = np.zeros(act.size, dtype=bool)
        down[ok] = faults.link_down(cur[act][ok], ports[ok])
        if tolerant:
            assert not down.any(), "a fault-tolerant router chose a failed link"
        lost[act[drop | down]] = True
        go = act[ok & ~down]
        p = ports[ok & ~down]
        hdr[go] = new[ok & ~down]
        cur[go] = topo.neighbors(cur[go])[np.arange(go.size), p]
        hops[go] += 1
        lateral[go] += np.asarray(topo.port_classes)[p] == "lateral"
        for i, q in zip(go.tolist(), p.tolist(), strict=True):
            seq[i].append(q)
    else:
        raise AssertionError("a route did not end (loop)")
    return cur == dst, hops, lateral, seq


@pytest.mark.parametrize("spec,name,opts", TOLERANT)
def test_never_a_failed_link_and_no_loop(spec, name, opts):
    topo = from_spec(spec)
    f = make_faults(topo, random_links=0.08, random_nodes=0.02, seed=11)
    src, dst = pairs(topo, f)
    router = make_router(name, topo, faults=f, **opts)
    assert router.fault_tolerant and router.faults is f
    done, hops, lateral, _ = walk(router, topo, f, src, dst)
    assert done.any()
    if topo.family == "scc":  # still minimal in lateral links (paper 000: from B only)
        sigma = sc.relative(topo, src, dst)[0]
        assert np.array_equal(lateral[done], perm.star_distance(sigma)[done])


@pytest.mark.parametrize("spec,name,opts", TOLERANT)
def test_identical_without_faults(spec, name, opts):
    """An empty fault set takes the fault-aware path and gives the very same routes."""
    topo = from_spec(spec)
    none = make_faults(topo)
    src, dst = pairs(topo, none, k=300)
    plain = walk(make_router(name, topo, **opts), topo, none, src, dst)
    aware = walk(make_router(name, topo, faults=none, **opts), topo, none, src, dst)
    assert plain[0].all() and aware[0].all()
    assert plain[3] == aware[3]


@pytest.mark.parametrize("spec,name,opts", DETERMINISTIC)
def test_routing_around_loses_fewer(spec, name, opts):
    """A deterministic router keeps its route until a failed link, so it delivers a
    superset of what the same router delivers without rerouting."""
    topo = from_spec(spec)
    f = make_faults(topo, random_links=0.1, seed=4)
    src, dst = pairs(topo, f)
    assert f.num_links
    blind = walk(make_router(name, topo, **opts), topo, f, src, dst, tolerant=False)[0]
    aware = walk(make_router(name, topo, faults=f, **opts), topo, f, src, dst)[0]
    assert (aware | ~blind).all() and aware.sum() > blind.sum()


def test_scc_random_goes_round_the_other_way():
    """A failed local link on the shorter way round: the packet goes the longer way."""
    topo = from_spec("scc:5")
    a, b = topo.parse_label("<2, 12345>"), topo.parse_label("<3, 12345>")
    f = make_faults(topo, links=[["<2, 12345>", "<3, 12345>"]])
    r = make_router("scc-random", topo, faults=f)
    done, hops, _, seq = walk(r, topo, f, np.array([a]), np.array([b]))
    assert done[0] and hops[0] == 3 and seq[0] == [1, 1, 1]  # local- three times


def test_scc_random_drops_only_without_alternative():
    """The only minimal lateral link failed: no allowed alternative, DROP."""
    topo = from_spec("scc:4")
    a = topo.parse_label("<2, 1234>")
    b = topo.parse_label("<2, 2134>")  # one lateral link away (T2)
    f = make_faults(topo, links=[["<2, 1234>", "<2, 2134>"]])
    r = make_router("scc-random", topo, faults=f)
    ctx = HopContext(step=0, pids=np.array([0]), hops=np.array([0]))
    ports, _ = r.next_port(np.array([a]), np.array([b]), r.init_headers([a], [b]), ctx)
    assert ports[0] == DROP


def test_ms_merged_takes_another_dirty_ball():
    """Case 1.1.2 with the first dirty ball's T link failed: another dirty ball."""
    topo = from_spec("ms:2,2")
    src = topo.parse_label("13245")  # ball 0 outside, the leftmost box dirty
    dst = topo.identity
    r0 = make_router("ms-merged", topo)
    ctx = HopContext(step=0, pids=np.array([0]), hops=np.array([0]))
    p0, _ = r0.next_port(np.array([src]), np.array([dst]), r0.init_headers([src], [dst]), ctx)
    nb = topo.label(int(topo.neighbors([src])[0, p0[0]]))
    f = make_faults(topo, links=[["13245", nb]])
    r = make_router("ms-merged", topo, faults=f)
    p, _ = r.next_port(np.array([src]), np.array([dst]), r.init_headers([src], [dst]), ctx)
    assert p[0] != p0[0] and p[0] >= 0 and not f.link_down([src], p).any()


def test_fault_tolerant_routers_listed():
    from mpinet.cli.routes import HELP

    tolerant = sorted(n for n, c in ROUTERS.items() if c.fault_tolerant)
    assert tolerant == sorted(
        ["shortest", "borel-table", "scc-random", "ms-balls-to-boxes", "ms-merged", "borel-cr"]
    )
    for name in tolerant:
        assert name in HELP


@pytest.mark.parametrize("spec,name,opts", TOLERANT[1:2] + TOLERANT[5:6] + TOLERANT[7:8])
def test_set_faults_for_dynamic_faults(spec, name, opts):
    topo = from_spec(spec)
    f = make_faults(topo, random_links=0.1, seed=2, step=4)
    r = make_router(name, topo, faults=f, **opts)
    assert r.faults is None  # not yet: the faults appear at step 4
    r.set_faults(f)
    src, dst = pairs(topo, f, k=200)
    walk(r, topo, f, src, dst)
