"""The iq router model (``model.router = "iq"``, docs/iq-router.md): its zero-load latency
against the pipeline formula derived from BookSim2's cycle-by-cycle traces, its allocators
against a plain-Python allocator written here from BookSim's documented behaviour, and
conservation of packets, flits and credits under load."""

from __future__ import annotations

from collections import deque
from dataclasses import replace

import numpy as np
import pytest
from test_flit_engine import Packets

from mpinet.engine.flit import iq_alloc as ia
from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit import iq_looks
from mpinet.engine.flit import iq_step as ist
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.iq_config import IQConfig
from mpinet.engine.models import parse_model
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec


def iq_model(topo, flits=1, vcs=4, vc_buffer=8, **keys):
    m = parse_model("all-port", dict.fromkeys(topo.port_classes, 1))
    return replace(m, flit=True, switching="wormhole", flits=flits, vcs=vcs, vc_buffer=vc_buffer,
                   router="iq", iq=IQConfig(**keys))  # fmt: skip


def run(topo, router, rows, m, max_steps=20000):
    policy = make_vc_policy(m.vc_policy, topo, m.vcs)
    eng = FlitEngine(topo, router, m, policy, max_steps=max_steps)
    return eng.run(Packets(rows)), eng


def distances(topo, src):
    d = [-1] * topo.num_nodes
    d[src] = 0
    q = deque([src])
    while q:
        u = q.popleft()
        for w in np.ravel(topo.neighbors(u)).tolist():
            if w >= 0 and d[w] < 0:
                d[w] = d[u] + 1
                q.append(w)
    return d


def zero_load(h: int, flits: int, iq: IQConfig) -> int:
    """A lone packet's latency over ``h`` links: the injection channel (2 cycles), at each of
    the ``h + 1`` routers its stages (routing, VC and switch allocation, crossbar; speculation
    overlaps the two allocations of one cycle each), then its channel (``channel_latency + 1``
    cycles to the next router's buffer, 2 to the terminal), the body one flit a cycle behind
    the head (switch allocation of one cycle)."""
    if iq.speculative:
        stage = iq.routing_delay + 1 + iq.crossbar_delay
    else:
        stage = iq.routing_delay + iq.vc_alloc_delay + iq.sw_alloc_delay + iq.crossbar_delay
    head = 2 + (h + 1) * (stage - 1) + h * (iq.channel_latency + 1) + 2
    return head + (flits - 1) * iq.sw_alloc_delay


CONFIGS = [
    ({}, 1),  # BookSim's defaults
    ({"routing_delay": 0, "credit_delay": 2, "alloc_iters": 2, "wait_for_tail_credit": 1}, 1),
    ({"routing_delay": 0, "credit_delay": 2}, 5),  # meshconfig's pipeline, 5 flits
    ({"routing_delay": 2, "vc_alloc_delay": 2, "sw_alloc_delay": 3, "st_prepare_delay": 1}, 1),
    ({"speculative": 1, "routing_delay": 0}, 4),
    ({"speculative": 1, "st_final_delay": 2, "channel_latency": 2}, 1),
    (
        {
            "channel_latency": 2,
            "vc_allocator": "separable_input_first",
            "sw_allocator": "separable_output_first",
        },
        3,
    ),  # fmt: skip
]


@pytest.mark.parametrize(("keys", "flits"), CONFIGS)
def test_lone_packets_take_the_pipeline_formula(keys, flits):
    topo = from_spec("mesh:4,2")
    router = make_router("dor", topo)
    n = topo.num_nodes
    rng = np.random.default_rng(len(keys) + flits)
    pairs = [(int(rng.integers(n)), int(rng.integers(n))) for _ in range(12)] + [(5, 5), (0, 15)]
    rows = [(i, s, d, 300 * i) for i, (s, d) in enumerate(pairs)]  # far apart: alone
    m = iq_model(topo, flits=flits, vc_buffer=16, **keys)
    rec, _ = run(topo, router, rows, m)
    p = rec.packets[np.argsort(rec.packets[:, 0])]
    for (s, d), row in zip(pairs, p, strict=True):
        h = distances(topo, s)[d]
        assert row[5] == h
        assert row[4] - row[3] == zero_load(h, flits, m.iq), (s, d, keys)


def test_meshconfig_zero_load_is_booksims_measured_value():
    """BookSim2's trace of one packet over one link of meshconfig's 8x8 mesh: created at
    cycle 356, retired at 366 (plat = 10)."""
    topo = from_spec("mesh:8,2")
    iq = {"routing_delay": 0, "credit_delay": 2, "alloc_iters": 2, "wait_for_tail_credit": 1}
    rec, _ = run(topo, make_router("dor", topo), [(0, 13, 14, 356)],
                 iq_model(topo, vcs=16, vc_buffer=8, **iq))  # fmt: skip
    assert rec.packets[0, 4] - rec.packets[0, 3] == 10


def test_credit_bound_packets_take_booksims_traced_latencies():
    """BookSim2's traces (``watch_packets``) of 6-flit packets on one VC of one slot on a 4x4
    mesh with meshconfig's pipeline: (source, destination, plat) as it retired them."""
    topo = from_spec("mesh:4,2")
    traced = [(9, 4, 49), (10, 3, 53), (10, 9, 45), (0, 2, 49), (15, 14, 45), (6, 10, 45)]
    rows = [(i, s, d, 200 * i) for i, (s, d, _) in enumerate(traced)]
    m = iq_model(topo, flits=6, vcs=1, vc_buffer=1, routing_delay=0, credit_delay=2,
                 alloc_iters=2)  # fmt: skip
    rec, _ = run(topo, make_router("dor", topo), rows, m)
    p = rec.packets[np.argsort(rec.packets[:, 0])]
    assert [(int(r[1]), int(r[2]), int(r[4] - r[3])) for r in p] == traced


# -- the allocators --------------------------------------------------------------------------
def ref_supersedes(a, pa, b, pb, offset, size):
    return pa > pb or (pa == pb and (a - offset) % size < (b - offset) % size)


def ref_separable(reqs, nin, nout, pin, pout, input_first):
    """BookSim's separable allocators: the first side's round-robin arbiters pick one
    request each, the other side's pick among those; matched arbiters move past the grant."""
    first, second = ({}, {})
    a, b = (0, 1) if input_first else (1, 0)
    ptr_a, ptr_b = (pin, pout) if input_first else (pout, pin)
    size_a, size_b = (nout, nin) if input_first else (nin, nout)
    for r in reqs:
        key, other = r[a], r[b]
        cur = first.get(key)
        if cur is None or ref_supersedes(other, r[2], cur[b], cur[2], ptr_a[key], size_a):
            first[key] = r
    for r in first.values():
        key, other = r[b], r[a]
        cur = second.get(key)
        if cur is None or ref_supersedes(other, r[2], cur[a], cur[2], ptr_b[key], size_b):
            second[key] = r
    for i, o, _ in second.values():
        pin[i] = (o + 1) % nout
        pout[o] = (i + 1) % nin
    return {(i, o) for i, o, _ in second.values()}


def ref_islip(reqs, nin, nout, iters, pin, pout):
    """iSLIP: unmatched outputs grant the first unmatched requester from their pointer,
    inputs accept the first grant from theirs; pointers move on the first iteration."""
    mi, mo = {}, {}
    for it in range(iters):
        grants = {}
        for o in range(nout):
            if o in mo:
                continue
            cands = [i for i, oo, _ in reqs if oo == o and i not in mi]
            if cands:
                grants[o] = min(cands, key=lambda i: (i - pout[o]) % nin)  # noqa: B023
        for i in range(nin):
            if i in mi:
                continue
            offers = [o for o, g in grants.items() if g == i]
            if offers:
                o = min(offers, key=lambda o: (o - pin[i]) % nout)  # noqa: B023
                mi[i], mo[o] = o, i
                if it == 0:
                    pout[o] = (i + 1) % nin
                    pin[i] = (o + 1) % nout
    return set(mi.items())


@pytest.mark.parametrize("kind", [ia.INPUT_FIRST, ia.OUTPUT_FIRST, ia.ISLIP])
@pytest.mark.parametrize("iters", [1, 3])
def test_allocators_match_the_plain_allocator(kind, iters):
    rng = np.random.default_rng(kind * 10 + iters)
    nin, nout = 7, 5
    pin, pout = np.zeros(nin, np.int64), np.zeros(nout, np.int64)
    rpin, rpout = [0] * nin, [0] * nout
    best_in, best_out = np.full(nin, -1, np.int64), np.full(nout, -1, np.int64)
    for _ in range(200):  # rounds: the pointers carry over
        pairs = {(int(rng.integers(nin)), int(rng.integers(nout))) for _ in range(rng.integers(12))}
        reqs = [
            (i, o, int(rng.integers(-1, 1))) for i, o in sorted(pairs, key=lambda _: rng.random())
        ]
        n = len(reqs)
        rin = np.array([r[0] for r in reqs] + [0], np.int64)
        rout = np.array([r[1] for r in reqs] + [0], np.int64)
        rpri = np.array([r[2] for r in reqs] + [0], np.int64)
        grant = np.zeros(n + 1, np.int64)
        ia.allocate(kind, n, rin, rout, rpri, nin, nout, iters, pin, pout, grant, best_in, best_out)
        got = {(reqs[r][0], reqs[r][1]) for r in range(n) if grant[r]}
        if kind == ia.ISLIP:
            want = ref_islip(reqs, nin, nout, iters, rpin, rpout)
        else:
            want = ref_separable(reqs, nin, nout, rpin, rpout, kind == ia.INPUT_FIRST)
        assert got == want
        assert list(pin) == rpin and list(pout) == rpout
        assert (best_in == -1).all() and (best_out == -1).all()
        assert len({i for i, _ in got}) == len(got) == len({o for _, o in got})


# -- conservation ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "rname", "keys"),
    [
        ("mesh:4,2", "dor", {"routing_delay": 0, "credit_delay": 2, "alloc_iters": 2}),
        ("mesh:4,2", "dor", {"speculative": 1, "input_speedup": 2, "output_speedup": 2}),
        ("hypercube:5", "shortest", {"internal_speedup": 1.5, "wait_for_tail_credit": 1,
                                "vc_allocator": "separable_input_first"}),
    ],
)  # fmt: skip
def test_everything_delivered_once_and_every_credit_returned(spec, rname, keys):
    """Heavy traffic on tight buffers: each packet delivered once, the link loads are the
    packets' hops times their flits, and at the end every credit is back and every VC free
    (a credit spent twice or never returned would show there)."""
    topo = from_spec(spec)
    n = topo.num_nodes
    rng = np.random.default_rng(7)
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(60)))
            for i in range(1500)]  # fmt: skip
    m = iq_model(topo, flits=3, vcs=2, vc_buffer=2, **keys)
    rec, eng = run(topo, make_router(rname, topo), rows, m)
    p = rec.packets[np.argsort(rec.packets[:, 0])]
    assert np.array_equal(p[:, 0], np.arange(1500)) and (p[:, 4] > p[:, 3]).all()
    assert rec.counters[:, 1].sum() == 1500 and rec.counters[-1, 2] == 0
    assert rec.link_load.sum() == rec.counters[:, 0].sum() == 3 * p[:, 5].sum()
    s, prm, rule, vrule, t = eng.iq_state
    # the credits of the last flits are still on their way back: 50 more cycles, no packets
    e = np.zeros(0, np.int64)
    inj = (np.zeros(51, np.int64), e, e, e, np.zeros((0, 1), np.int64))
    status = np.zeros(9, np.int64)
    ist.run_block(t, t + 50, t + 50, 0, 0, 1000, np.array([0.0, m.iq.internal_speedup]), inj,
                  prm, s, rule, vrule, np.empty((100, 7), np.int64), np.empty((1, 5), np.int64),
                  np.zeros((50, 5), np.int64), status, iq_looks.arrays(False, 0, 1))  # fmt: skip
    assert status[1] == t + 50 and status[6] == 0
    assert (s.bs_cred == 2).all() and (s.bs_use == 0).all() and (s.hv[:, il.IBN] == 0).all()
    assert (s.work == 0).all() and (s.obn == 0).all() and (s.xqn == 0).all()


@pytest.mark.parametrize(
    "keys", [{"credit_delay": 3}, {"channel_latency": 2, "st_prepare_delay": 1}]
)
def test_credits_limit_the_rate_of_one_vc(keys):
    """One VC of one slot: a flit leaves only when the credit of the one before is back, so
    a packet of 6 flits over one link takes 5 credit loops more than a flit. The loop: the
    crossbar, the channel (latency + 1), switch allocation at the receiver (which returns
    the credit), the credit's channel, credit_delay, switch allocation at the sender."""
    topo = from_spec("mesh:2,1")
    router = make_router("dor", topo)
    lat = {}
    for flits in (1, 6):
        m = iq_model(topo, flits=flits, vcs=1, vc_buffer=1, **keys)
        rec, _ = run(topo, router, [(0, 0, 1, 0)], m)
        lat[flits] = int(rec.packets[0, 4] - rec.packets[0, 3])
    iq = m.iq
    loop = iq.crossbar_delay + 2 * (iq.channel_latency + 1) + 2 * (iq.sw_alloc_delay - 1)
    assert lat[6] - lat[1] == 5 * (loop + iq.credit_delay)


def test_torus_ties_and_datelines_take_the_ideal_routers_routes():
    """On torus:8,2 dor draws the direction of a tie (K/2 both ways) per packet; the iq model
    draws it at injection, keyed as the router's draw: each packet takes the links it takes
    in the ideal model, on the dateline policy's VC halves, and arrives."""
    topo = from_spec("torus:8,2")
    router = make_router("dor", topo)
    n = topo.num_nodes
    rng = np.random.default_rng(2)
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), i // 8) for i in range(400)]
    m = replace(iq_model(topo, vcs=4, channel_latency=2), vc_policy="dateline")
    policy = make_vc_policy("dateline", topo, 4)
    paths = []
    for mm in (m, replace(m, router="ideal", iq=None)):
        eng = FlitEngine(topo, router, mm, policy, record_hops=True, max_steps=20000)
        rec = eng.run(Packets(rows))
        assert (rec.packets[:, 4] >= 0).all()
        h = rec.hop_rows[np.lexsort((rec.hop_rows[:, 0], rec.hop_rows[:, 1]))]
        paths.append(h[:, [1, 2, 3]])
    assert np.array_equal(paths[0], paths[1])
    tied = sum(1 for _, s, d, _ in rows if (np.abs(topo.coords(d) - topo.coords(s)) == 4).any())
    assert tied > 50
