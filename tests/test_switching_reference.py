"""The flit-level reference (``reference_switching``) against docs/switching.md.

Closed forms at zero load, hand-derived step-by-step scenarios, the model's
invariants checked from the recorded steps (not from the simulator's own
asserts), the deadlock freedom of the ``hops`` and ``negative-hop`` policies
and a deadlock of ``any`` with its wait-for cycle, and L = 1 equality of the
three switching modes (L = 1 at zero load: H for every mode, in the closed forms).
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from reference_switching import SWITCHING, simulate_switching
from test_flit_engine import bfs_distances

from mpinet.engine.models import parse_model
from mpinet.routing import make_router
from mpinet.routing.walk import walk
from mpinet.topology import from_spec
from mpinet.topology.colouring import colours

SAF, CT, WH = SWITCHING


def colouring(topo) -> list[int]:
    """The proper colouring negative-hop uses (``mpinet.topology.colouring``)."""
    return colours(topo, np.arange(topo.num_nodes)).tolist()


def all_routes(topo, router):
    n = topo.num_nodes
    s, d = np.divmod(np.arange(n * n), n)
    keep = s != d
    w = walk(topo, router, s[keep], d[keep], paths=True)
    return s[keep], d[keep], w["lengths"], w["paths"]


def needs(topo, router, col, policy) -> tuple[int, tuple[int, int]]:
    """VCs ``policy`` needs for every route (docs/switching.md), and a route needing them."""
    s, d, lengths, paths = all_routes(topo, router)
    if policy == "hops":
        need = lengths - 1
    else:
        rows = zip(paths.tolist(), lengths.tolist(), strict=True)
        need = 1 + np.array([sum(col[p[i]] > col[p[i + 1]] for i in range(h - 1)) for p, h in rows])
    i = int(np.argmax(need))
    return max(int(need[i]), 1), (int(s[i]), int(d[i]))


def traffic(n: int, per: int, steps: int, seed: int) -> list[tuple[int, int, int, int]]:
    """``per`` packets per node per step for ``steps`` steps, uniform other destinations."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(steps):
        for s in range(n):
            for _ in range(per):
                d = int(rng.integers(n - 1))
                out.append((len(out), s, d + (d >= s), t))
    return out


# ---------------------------------------------------------------- closed forms at zero load

FAMILIES = [("hypercube:4", "hypercube-ecube"), ("star:4", "shortest"),
            ("scc:4", "shortest"), ("ccc:3", "shortest")]  # fmt: skip


def routes_of_several_lengths(topo, router):
    """(src, dst, H): the first pair of each length: shortest, longest and two between. H is
    the pair's BFS distance (the routers are minimal), not a length the router gives."""
    s, d, _, _ = all_routes(topo, router)
    dist = {src: bfs_distances(topo, src) for src in np.unique(s).tolist()}
    first = {}
    for src, dst in zip(s.tolist(), d.tolist(), strict=True):
        h = dist[src][dst]
        first.setdefault(h, (src, dst, h))
    hs = sorted(first)
    pick = {hs[0], hs[-1], hs[len(hs) // 3], hs[(2 * len(hs)) // 3]}
    return [first[h] for h in sorted(pick)]


@pytest.mark.parametrize("spec,rname", FAMILIES)
def test_zero_load_latency_is_the_closed_form(spec, rname):
    topo = from_spec(spec)
    router = make_router(rname, topo)
    routes = routes_of_several_lengths(topo, router)
    assert len(routes) >= 3
    inj = 2
    for src, dst, H in routes:
        for L in (1, 2, 4, 16):
            for c in (1, 2):
                cases = [(SAF, L, H * math.ceil(L / c)), (CT, L, H + math.ceil(L / c) - 1),
                         (WH, 2 * c, H + math.ceil(L / c) - 1),  # B >= 2c: full rate
                         # B = 1: a freed slot is credited for the next step, one flit per
                         # two steps on every hop with a VC (none on a 1-hop route)
                         (WH, 1, math.ceil(L / c) if H == 1 else H + 2 * (L - 1))]  # fmt: skip
                for sw, B, want in cases:
                    rec = simulate_switching(topo, router, [(7, src, dst, inj)], switching=sw,
                                             flits=L, vc_buffer=B, capacity=c)  # fmt: skip
                    row = rec.packets[0].tolist()
                    assert row == [7, src, dst, inj, inj + want, H, inj], (sw, L, c, B, H)
                    assert rec.hops.shape == (H, 6) and rec.load.sum() == H * L
                    assert rec.counters[:, 0].sum() == H * L and rec.counters[-1, 2] == 0


# ---------------------------------------------------------------- hand-derived scenarios

S, D = "src", "dst"


def positions(rec) -> list[dict]:
    """Per step, {pid: {place: flits}}; place: S, D or the VC (node, port, VC)."""
    out = []
    for snap in rec.trace:
        step = {}
        for pid, places in snap["where"].items():
            step[pid] = {S if b[0] == "src" else D if b[0] == "dst" else b[1:]: n
                         for b, n in places}  # fmt: skip
        out.append(step)
    return out


def scenario(spec, rname, pkts, **kw):
    topo = from_spec(spec)
    return simulate_switching(topo, make_router(rname, topo), pkts, record=True, **kw)


# hypercube:3, e-cube (lowest dimension first): A = packet 0 from 0 to 7 (0 -d0-> 1 -d1-> 3
# -d2-> 7), B = packet 1 from 1 to 7 (1 -d1-> 3 -d2-> 7), both injected at step 0, L = 2,
# B = 2 flit slots. They contend for link (1, d1) and its VCs. VC (u, p, v) is VC v of link
# (u, p); the hop d2 into 7 takes no VC.
# fmt: off
CONTENTION = {
    # V = 1, wormhole. Step 2: A's head finds VC (1, 1, 0) held by B (B's tail is sent into
    # it in step 2, so it is free from step 3, with 1 credit: B's tail is still there).
    (WH, 1): ([5, 3], [
        {0: {S: 1, (0, 0, 0): 1}, 1: {S: 1, (1, 1, 0): 1}},
        {0: {(0, 0, 0): 2}, 1: {(1, 1, 0): 1, D: 1}},
        {0: {(0, 0, 0): 1, (1, 1, 0): 1}, 1: {D: 2}},  # A's head behind B's tail
        {0: {(1, 1, 0): 1, D: 1}, 1: {D: 2}},
        {0: {D: 2}, 1: {D: 2}},
    ]),
    # cut-through: A needs 2 credits; in step 3 there is 1 (B's tail), in step 4 two
    (CT, 1): ([6, 3], [
        {0: {S: 1, (0, 0, 0): 1}, 1: {S: 1, (1, 1, 0): 1}},
        {0: {(0, 0, 0): 2}, 1: {(1, 1, 0): 1, D: 1}},
        {0: {(0, 0, 0): 2}, 1: {D: 2}},
        {0: {(0, 0, 0): 1, (1, 1, 0): 1}, 1: {D: 2}},
        {0: {(1, 1, 0): 1, D: 1}, 1: {D: 2}},
        {0: {D: 2}, 1: {D: 2}},
    ]),
    # store-and-forward: B leaves 3 only with its tail there; A needs 2 credits (step 5)
    (SAF, 1): ([8, 4], [
        {0: {S: 1, (0, 0, 0): 1}, 1: {S: 1, (1, 1, 0): 1}},
        {0: {(0, 0, 0): 2}, 1: {(1, 1, 0): 2}},
        {0: {(0, 0, 0): 2}, 1: {(1, 1, 0): 1, D: 1}},
        {0: {(0, 0, 0): 2}, 1: {D: 2}},
        {0: {(0, 0, 0): 1, (1, 1, 0): 1}, 1: {D: 2}},
        {0: {(1, 1, 0): 2}, 1: {D: 2}},
        {0: {(1, 1, 0): 1, D: 1}, 1: {D: 2}},
        {0: {D: 2}, 1: {D: 2}},
    ]),
    # V = 2: A takes VC 1; the link carries one flit a step, the older packet first
    # (injection 0, id 0 before id 1), so B's tail waits for both of A's flits.
    (WH, 2): ([4, 5], [
        {0: {S: 1, (0, 0, 0): 1}, 1: {S: 1, (1, 1, 0): 1}},
        {0: {(0, 0, 0): 1, (1, 1, 1): 1}, 1: {S: 1, D: 1}},
        {0: {(1, 1, 1): 1, D: 1}, 1: {S: 1, D: 1}},
        {0: {D: 2}, 1: {(1, 1, 0): 1, D: 1}},
        {0: {D: 2}, 1: {D: 2}},
    ]),
}
# fmt: on


@pytest.mark.parametrize("sw,vcs", list(CONTENTION))
def test_two_packets_contending_for_one_link(sw, vcs):
    rec = scenario("hypercube:3", "hypercube-ecube", [(0, 0, 7, 0), (1, 1, 7, 0)],
                   switching=sw, flits=2, vcs=vcs, vc_buffer=2)  # fmt: skip
    deliver, steps = CONTENTION[(sw, vcs)]
    assert positions(rec) == steps
    assert rec.packets[:, 4].tolist() == deliver
    assert rec.packets[:, 5].tolist() == [3, 2] and rec.packets[:, 6].tolist() == [0, 0]
    assert rec.counters[:, 1].sum() == 2 and rec.load.sum() == 2 * 3 + 2 * 2


def test_worm_blocked_behind_another_stays_spread_over_its_buffers():
    # hypercube:4, e-cube, L = 4, V = 1, B = 2. X = packet 0: 0 -> 15 (0, 1, 3, 7, 15);
    # Y = packet 1: 3 -> 15 (3, 7, 15) holds VC (3, 2, 0) from step 1 until its tail enters
    # it in step 4. X's head waits at 3 in steps 3-4 (X is older but gets no VC, so it does
    # not stop Y's flits on the same link); X's flits fill 2 + 2 slots and stop.
    rec = scenario("hypercube:4", "hypercube-ecube", [(0, 0, 15, 0), (1, 3, 15, 0)],
                   switching=WH, flits=4, vcs=1, vc_buffer=2)  # fmt: skip
    a, b, c = (0, 0, 0), (1, 1, 0), (3, 2, 0)
    assert positions(rec) == [
        {0: {S: 3, a: 1}, 1: {S: 3, c: 1}},
        {0: {S: 2, a: 1, b: 1}, 1: {S: 2, c: 1, D: 1}},
        {0: {S: 1, a: 1, b: 2}, 1: {S: 1, c: 1, D: 2}},
        {0: {a: 2, b: 2}, 1: {c: 1, D: 3}},  # blocked: 2 VCs full, head at node 3
        {0: {a: 2, b: 1, c: 1}, 1: {D: 4}},  # the head takes VC c (1 credit: Y's tail)
        {0: {a: 1, b: 1, c: 1, D: 1}, 1: {D: 4}},
        {0: {b: 1, c: 1, D: 2}, 1: {D: 4}},
        {0: {c: 1, D: 3}, 1: {D: 4}},
        {0: {D: 4}, 1: {D: 4}},
    ]
    assert rec.packets[:, 4].tolist() == [9, 5]
    assert rec.hops[rec.hops[:, 1] == 0][:, [0, 2, 5]].tolist() == [
        [1, 0, 0], [2, 1, 0], [5, 3, 0], [6, 7, -1]]  # fmt: skip


@pytest.mark.parametrize("c", [1, 2])
def test_credits_return_for_the_next_step(c):
    # one packet, hypercube:3 0 -> 7, L = 3, B = 1: a slot freed in step t takes a flit
    # again in step t + 1, so each VC passes a flit every other step, whatever the capacity
    rec = scenario("hypercube:3", "hypercube-ecube", [(0, 0, 7, 0)], switching=WH, flits=3,
                   vc_buffer=1, capacity=c)  # fmt: skip
    a, b = (0, 0, 0), (1, 1, 0)
    assert [p[0] for p in positions(rec)] == [
        {S: 2, a: 1}, {S: 2, b: 1}, {S: 1, a: 1, D: 1}, {S: 1, b: 1, D: 1},
        {a: 1, D: 2}, {b: 1, D: 2}, {D: 3},
    ]  # fmt: skip
    assert rec.counters[:, 0].tolist() == [1, 1, 2, 1, 2, 1, 1]


# ---------------------------------------------------------------- invariants, from the record


def check_invariants(topo, rec, pkts, *, flits, buf, caps, kind="all-port", k=1, policy=None,
                     col=None):  # fmt: skip
    """Conservation, VC <= B, capacity, port model and the VC policy, every step."""
    L, B = flits, buf  # noqa: N806
    nb = topo.neighbors(np.arange(topo.num_nodes))
    inj = {p: t for p, _, _, t in pkts}
    path = defaultdict(list)  # pid -> VC keys of its head's hops, in order
    for _, pid, u, _, port, v in rec.hops.tolist():
        path[pid].append(("vc", u, port, v))
    prev = {}
    for t, snap in enumerate(rec.trace, 1):
        links, where = snap["links"], snap["where"]
        assert sum(links.values()) == rec.counters[t - 1, 0]
        assert all(n <= caps[port] for (_, port), n in links.items())
        assert all(0 < n <= B for n in snap["vcs"].values())
        senders = defaultdict(set)
        for u, port in links:
            senders[u].add(port)
        if kind in ("one-port", "k-port"):
            assert all(len(ports) <= k for ports in senders.values()), t
        if kind == "sdc":
            assert len({port for ports in senders.values() for port in ports}) <= 1
        # conservation: every injected packet's L flits are somewhere, and the flits moved
        # this step are exactly the advance of the flits along their paths
        assert set(where) == {p for p, i in inj.items() if i <= t}
        pos = {}  # pid -> sum over its flits of the hops each has made
        for pid, places in where.items():
            assert sum(n for _, n in places) == L
            hops = [("src",), *(b for b in path[pid] if b[3] >= 0), ("dst",)]  # in path order
            pos[pid] = sum(n * hops.index(b if b[0] == "vc" else b[:1]) for b, n in places)
        assert sum(pos[p] - prev.get(p, 0) for p in pos) == rec.counters[t - 1, 0]
        prev = pos
        consumed = sum(dict(places).get(("dst",), 0) for places in where.values())
        assert rec.counters[t - 1, 2] == L * len(where) - consumed
        assert rec.counters[t - 1, 3] == sum(dict(pl).get(("dst",), 0) < L for pl in where.values())
    assert rec.load.sum() == rec.counters[:, 0].sum()
    for pid, hops in path.items():  # the VC of each hop is the policy's
        nodes = [int(x) for x in rec.hops[rec.hops[:, 1] == pid][:, 2]]
        for h, (_, u, port, v) in enumerate(hops):
            if v < 0:
                assert nb[u, port] == pkts[pid][2]
                continue
            if policy == "hops":
                assert v == h
            if policy == "negative-hop":
                steps = nodes[: h + 1] + [int(nb[u, port])]
                assert v == sum(col[steps[i]] > col[steps[i + 1]] for i in range(h + 1))


INVARIANT_RUNS = [
    ("star:4", "all-port", WH, "any", 2, 2),
    ("star:4", "one-port", CT, "hops", 0, 4),
    ("scc:4", "k-port:2", WH, "negative-hop", 0, 1),
    ("scc:4", "sdc", SAF, "any", 2, 4),
    ("hypercube:4", "one-port", WH, "hops", 0, 2),
    ("hypercube:4", "sdc", WH, "negative-hop", 0, 3),
    ("ms:2,2", "all-port", CT, "any", 3, 5),
]


@pytest.mark.parametrize("spec,kind,sw,policy,vcs,buf", INVARIANT_RUNS)
def test_invariants_under_heavy_traffic(spec, kind, sw, policy, vcs, buf):
    topo = from_spec(spec)
    router = make_router("shortest", topo)
    col = colouring(topo)
    if vcs == 0:
        vcs = needs(topo, router, col, policy)[0]
    L = 4
    model = parse_model(kind, {topo.port_classes[0]: 2})  # capacity 2 on one class
    pkts = traffic(topo.num_nodes, 1, 3, seed=len(spec))
    rec = simulate_switching(topo, router, pkts, switching=sw, flits=L, vcs=vcs, vc_buffer=buf,
                             vc_policy=policy, model=model, colour=col.__getitem__,
                             record=True)  # fmt: skip
    caps = model.port_capacities(topo).tolist()
    check_invariants(topo, rec, pkts, flits=L, buf=buf, caps=caps, kind=model.kind, k=model.k,
                     policy=policy, col=col)  # fmt: skip
    if policy != "any":
        assert rec.deadlock_step is None and (rec.packets[:, 4] >= 0).all()
    lat = rec.packets[:, 4] - rec.packets[:, 3]
    delivered = rec.packets[:, 4] >= 0
    assert (rec.packets[delivered, 6] >= rec.packets[delivered, 3]).all()
    assert (lat[delivered] >= rec.packets[delivered, 5]).all()


# ---------------------------------------------------------------- deadlock


@pytest.mark.parametrize("spec", ["star:4", "hypercube:4", "scc:4"])
@pytest.mark.parametrize("policy", ["hops", "negative-hop"])
def test_policies_never_deadlock(spec, policy):
    topo = from_spec(spec)
    router = make_router("shortest", topo)
    col = colouring(topo)
    vcs, (src, dst) = needs(topo, router, col, policy)
    for seed, (sw, L, B) in enumerate([(WH, 4, 1), (WH, 8, 2), (CT, 4, 4)]):
        pkts = traffic(topo.num_nodes, 4, 3, seed)
        rec = simulate_switching(topo, router, pkts, switching=sw, flits=L, vcs=vcs,
                                 vc_buffer=B, vc_policy=policy, colour=col.__getitem__)  # fmt: skip
        assert rec.deadlock_step is None and (rec.packets[:, 4] >= 0).all(), (sw, L, B)
    with pytest.raises(ValueError, match="needs VC"):  # one VC fewer is refused
        simulate_switching(topo, router, [(0, src, dst, 0)], switching=WH, flits=2, vcs=vcs - 1,
                           vc_policy=policy, colour=col.__getitem__)  # fmt: skip


# scc:3 is a 12-cycle; RING lists it in order (ports alternate local, lateral). Four worms of
# 8 flits, from every third node, 5 hops ahead each: VCs on hops 1-4, so each worm's hop 4
# needs the VC the next worm took in step 1.
RING = [0, 1, 11, 10, 8, 9, 5, 4, 6, 7, 3, 2]
RING_PACKETS = [(i, RING[3 * i], RING[(3 * i + 5) % 12], 0) for i in range(4)]


@pytest.mark.parametrize("buf,step", [(1, 6), (2, 7)])
def test_any_deadlocks_on_a_ring_and_names_the_cycle(buf, step):
    # by hand: each head reaches hop 4 in step 4 and waits; with B = 1 the last flits move
    # in step 5 (hop-1 VC refilled), with B = 2 in step 6 (two slots per VC): the next step
    # moves nothing. The walk starts at the lowest VC with flits, (0, local, 0), and goes
    # round the ring: every link's VC 0, named by its sender.
    topo = from_spec("scc:3")
    router = make_router("shortest", topo)
    rec = simulate_switching(topo, router, RING_PACKETS, switching=WH, flits=8, vcs=1,
                             vc_buffer=buf, record=True)  # fmt: skip
    assert rec.deadlock_step == step == rec.steps
    assert rec.counters[-1, 0] == 0 and rec.counters[-2, 0] > 0
    assert (rec.packets[:, 4] == -1).all() and rec.counters[-1, 2] == 4 * 8
    ports = [0, 1] * 6  # RING[i] -> RING[i + 1] leaves by local (0), then lateral (1)
    assert rec.cycle == [(RING[i], ports[i], 0) for i in range(12)]
    assert all(rec.trace[-1]["vcs"][("vc", *c)] >= 1 for c in rec.cycle)
    col = colouring(topo).__getitem__  # a 2-colouring: the ring is even
    for policy, vcs in (("hops", 4), ("negative-hop", 3)):
        rec = simulate_switching(topo, router, RING_PACKETS, switching=WH, flits=8, vcs=vcs,
                                 vc_buffer=buf, vc_policy=policy, colour=col)  # fmt: skip
        assert rec.deadlock_step is None and (rec.packets[:, 4] >= 0).all()


def test_deadlock_waits_for_the_last_injection():
    # the ring deadlocks in step 6 (B = 1), but two packets come in step 20: packet 4
    # (RING[0] -> RING[2]) needs the VC packet 0 holds and never moves; packet 9 (RING[5] ->
    # RING[4], one hop against the ring's direction, no VC) crosses in steps 21-28. Steps
    # 7-20 move nothing but an injection is to come; step 29 is the deadlock (Q8). Declared
    # in step 20 already, packet 9 would have been called stuck.
    topo = from_spec("scc:3")
    late = [(4, RING[0], RING[2], 20), (9, RING[5], RING[4], 20)]
    rec = simulate_switching(topo, make_router("shortest", topo), RING_PACKETS + late,
                             switching=WH, flits=8, vcs=1, vc_buffer=1)  # fmt: skip
    assert rec.deadlock_step == rec.steps == 29
    assert rec.packets[:, 4].tolist() == [-1, -1, -1, -1, -1, 28]
    assert not rec.counters[6:20, 0].any() and rec.counters[20:28, 0].tolist() == [1] * 8
    assert rec.cycle == [(RING[i], [0, 1][i % 2], 0) for i in range(12)]


def test_one_port_serves_the_oldest_link_first():
    # hypercube:3, node 0 holds packet 1 for 1 (port d0) and packet 0 for 2 (port d1), both
    # one hop, L = 2. One-port: packet 0's link first (steps 1-2), then packet 1's; two
    # ports: both at once. Node 4 (packet 2 to 5) sends meanwhile: one port per node.
    pkts = [(1, 0, 1, 0), (0, 0, 2, 0), (2, 4, 5, 0)]
    for kind, k, want in (("one-port", 1, [2, 4, 2]), ("k-port", 2, [2, 2, 2])):
        rec = scenario("hypercube:3", "hypercube-ecube", pkts, switching=WH, flits=2,
                       kind=kind, k=k)  # fmt: skip
        assert rec.packets[:, 4].tolist() == want, kind
        assert [sorted(snap["links"]) for snap in rec.trace][:2] == (
            [[(0, 1), (4, 0)]] * 2 if k == 1 else [[(0, 0), (0, 1), (4, 0)]] * 2
        )


def test_sdc_serves_the_port_with_most_movable_requests_lowest_on_ties():
    # hypercube:3, one hop each, L = 2: A 0 -> 2 and B 1 -> 3 on port 1, C 4 -> 5 on port 0,
    # D 6 -> 2 on port 2 (D is the oldest: id 0). Port 1 has two requests (steps 1-2); then
    # ports 0 and 2 tie with one each: port 0 (steps 3-4), then port 2 (steps 5-6).
    pkts = [(1, 0, 2, 0), (2, 1, 3, 0), (3, 4, 5, 0), (0, 6, 2, 0)]
    rec = scenario("hypercube:3", "hypercube-ecube", pkts, switching=CT, flits=2, kind="sdc")
    assert rec.packets[:, 4].tolist() == [6, 2, 2, 4]
    ports = [sorted({p for _, p in snap["links"]}) for snap in rec.trace]
    assert ports == [[1], [1], [0], [0], [2], [2]]


def test_any_deadlocks_under_random_traffic_where_the_policies_do_not():
    topo = from_spec("scc:4")
    router = make_router("shortest", topo)
    nb = topo.neighbors(np.arange(topo.num_nodes))
    pkts = traffic(topo.num_nodes, 2, 4, seed=1)
    rec = simulate_switching(topo, router, pkts, switching=WH, flits=4, vcs=1, vc_buffer=2,
                             record=True)  # fmt: skip
    assert rec.deadlock_step is not None and len(rec.cycle) >= 2
    assert rec.counters[-1, 0] == 0 and (rec.packets[:, 4] < 0).any()
    for (u, p, v), (w, _, _) in zip(rec.cycle, rec.cycle[1:] + rec.cycle[:1], strict=True):
        assert nb[u, p] == w and v == 0  # each VC leads to the next one's sender
        assert rec.trace[-1]["vcs"][("vc", u, p, v)] == 2  # V = 1: full, or held and full
    col = colouring(topo)
    for policy in ("hops", "negative-hop"):
        vcs = needs(topo, router, col, policy)[0]
        rec = simulate_switching(topo, router, pkts, switching=WH, flits=4, vcs=vcs,
                                 vc_buffer=2, vc_policy=policy, colour=col.__getitem__)  # fmt: skip
        assert rec.deadlock_step is None and (rec.packets[:, 4] >= 0).all()


# ---------------------------------------------------------------- L = 1


@pytest.mark.parametrize("spec,kind,policy,vcs,buf", [("star:4", "all-port", "any", 1, 1),
                         ("scc:4", "one-port", "hops", 7, 2), ("hypercube:4", "sdc", "any", 2, 1),
                         ("scc:4", "all-port", "any", 1, 1)])  # fmt: skip
def test_one_flit_packets_are_the_same_under_every_mode(spec, kind, policy, vcs, buf):
    topo = from_spec(spec)
    router = make_router("shortest", topo)
    pkts = traffic(topo.num_nodes, 2, 3, seed=4)
    recs = [simulate_switching(topo, router, pkts, switching=sw, flits=1, vcs=vcs, vc_buffer=buf,
                               vc_policy=policy, kind=kind) for sw in SWITCHING]  # fmt: skip
    for rec in recs[1:]:
        for name in ("packets", "hops", "load", "counters"):
            np.testing.assert_array_equal(getattr(rec, name), getattr(recs[0], name))
        assert (rec.deadlock_step, rec.cycle) == (recs[0].deadlock_step, recs[0].cycle)
    assert recs[0].counters[:, 0].sum() > len(pkts)


def test_refusals():
    topo = from_spec("star:4")
    router = make_router("shortest", topo)
    # the values named (flits, vcs, vc_buffer; default 1, 1, 4): each refusal is its own
    cases = [
        (dict(flits=0), "0, 1, 4"),
        (dict(vcs=0), "1, 0, 4"),
        (dict(vc_buffer=0), "1, 1, 0"),
        (dict(switching=CT, flits=4, vc_buffer=3), "4, 1, 3"),
        (dict(switching=SAF, flits=2, vc_buffer=1), "2, 1, 1"),
    ]
    for kw, named in cases:
        with pytest.raises(ValueError, match=f"must be >= 1 and B >= L here: {named}$"):
            simulate_switching(topo, router, [(0, 0, 5, 0)], **kw)
