"""The iq router's per-flit-hop short cuts (docs/iq-router.md, "Per flit-hop (session 8)"):
VC allocation reads a router output's free VCs from one word (``fvm``, kept beside
``bs_use``) and grants a lone head its arbiter's choice without the allocator
(:func:`~mpinet.engine.flit.iq_lists.first_from`); switch allocation grants a lone request
without the allocator. Each must be what the allocators compute, from any pointers, and the
free-VC words must follow the VCs in use cycle by cycle."""

from __future__ import annotations

import numpy as np
import pytest
from test_iq_router import iq_model, run

from mpinet.engine.flit import iq_alloc as ia
from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit import iq_looks
from mpinet.engine.flit import iq_step as ist
from mpinet.routing import make_router
from mpinet.topology import from_spec


def test_vmask_is_the_range_of_bits():
    for lo in range(64):
        for hi in range(lo + 1, 65):
            want = sum(1 << v for v in range(lo, hi))
            assert int(il.vmask(lo, hi)) == want


def test_first_at_and_first_from_are_a_round_robin_choice():
    """The set bit nearest a pointer, wrapping: ``first_at`` for pointers 0-63, ``first_from``
    for any (one outside the word: the lowest bit), against a walk of the bits."""
    rng = np.random.default_rng(3)
    words = [1, 1 << 63, (1 << 64) - 1] + [int(w) for w in rng.integers(1, 1 << 63, 200)]
    for w in words:
        bits = [b for b in range(64) if w >> b & 1]
        m = np.uint64(w)
        for p in range(-2, 67):
            want = next((b for b in bits if b >= p), bits[0]) if 0 <= p < 64 else bits[0]
            assert il.first_from(m, p) == want
            if 0 <= p < 64:
                assert il.first_at(m, p) == want


@pytest.mark.parametrize("kind", [ia.INPUT_FIRST, ia.OUTPUT_FIRST, ia.ISLIP])
def test_a_lone_heads_vc_is_the_allocators_grant(kind):
    """One input VC asking for the free VCs ``m`` of one output port: the allocator grants
    the first at or after the input's pointer (wrapping), and both pointers move past it."""
    rng = np.random.default_rng(11)
    for _ in range(3000):
        nvc = int(rng.choice([1, 2, 3, 8, 16, 63, 64]))
        nport = int(rng.integers(1, 6))
        nio = nport * nvc
        op, j = int(rng.integers(nport)), int(rng.integers(nio))
        bits = rng.random(nvc) < rng.random()
        bits[int(rng.integers(nvc))] = True
        m = np.uint64(sum(1 << int(v) for v in np.flatnonzero(bits)))
        o0 = op * nvc
        pin = rng.integers(nio, size=nio).astype(np.int64)
        pout = rng.integers(nio, size=nio).astype(np.int64)
        rout = (o0 + np.flatnonzero(bits)).astype(np.int64)
        rin = np.full(rout.size, j, np.int64)
        grant = np.zeros(rout.size, np.int64)
        bi, bo = np.full(nio, -1, np.int64), np.full(nio, -1, np.int64)
        pin2, pout2 = pin.copy(), pout.copy()
        ng = ia.allocate(kind, rout.size, rin, rout, np.zeros(rout.size, np.int64), nio, nio, 1,
                         pin2, pout2, grant, bi, bo)  # fmt: skip
        assert ng == 1
        w = o0 + int(il.first_from(m, int(pin[j]) - o0))
        assert rout[np.flatnonzero(grant)[0]] == w
        pin[j] = w + 1 if w + 1 < nio else 0
        pout[w] = j + 1 if j + 1 < nio else 0
        assert np.array_equal(pin, pin2) and np.array_equal(pout, pout2)


@pytest.mark.parametrize(
    "keys",
    [
        {"routing_delay": 0, "credit_delay": 2, "wait_for_tail_credit": 1},
        {"speculative": 1, "input_speedup": 2},
        {"vc_allocator": "separable_input_first", "sw_allocator": "separable_output_first"},
    ],
)
def test_free_vc_words_follow_the_vcs_in_use(keys):
    """After every cycle of a loaded mesh, bit ``v`` of ``fvm[port]`` is set exactly where
    that output VC is not in use; the packets are all delivered."""
    topo = from_spec("mesh:4,2")
    n = topo.num_nodes
    rng = np.random.default_rng(5)
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(20)))
            for i in range(200)]  # fmt: skip
    m = iq_model(topo, flits=3, vcs=4, vc_buffer=2, **keys)
    _, eng = run(topo, make_router("dor", topo), rows, m)
    s, prm, rule, vrule, t = eng.iq_state
    k = 300
    src, dst = rng.integers(n, size=k), rng.integers(n, size=k)
    inj = (np.array([0, k]), np.arange(1000, 1000 + k), src, dst, np.zeros((k, 1), np.int64))
    e = np.zeros(0, np.int64)
    none = (np.zeros(2, np.int64), e, e, e, np.zeros((0, 1), np.int64))
    status = np.zeros(9, np.int64)
    acc = np.array([0.0, m.iq.internal_speedup])
    deliv, hop = np.empty((k + 2 * n, 7), np.int64), np.empty((1, 5), np.int64)
    nrp = n * prm.nport
    busy = 0
    for c in range(2000):
        ist.run_block(t, t + 1, t + 1, 0, 0, 1000, acc, inj if c == 0 else none, prm, s, rule,
                      vrule, deliv, hop, np.zeros((1, 5), np.int64), status,
                      iq_looks.arrays(False, 0, 1))  # fmt: skip
        t += 1
        use = s.bs_use[: nrp * prm.nvc].reshape(nrp, prm.nvc)
        free = (s.fvm[:, None] >> np.arange(prm.nvc, dtype=np.uint64)) & np.uint64(1)
        assert np.array_equal(free == 1, use == 0), c
        busy += int((use == 1).sum())
        if status[0] == ist.FINISHED:
            break
    assert status[0] == ist.FINISHED and status[6] == k
    assert busy > 100
