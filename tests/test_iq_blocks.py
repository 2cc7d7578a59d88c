"""The iq router's run in compiled calls of a growing number of cycles where traffic is light
(:func:`~mpinet.engine.flit.iq_blocks.next_block`): the run's results are those of calls of
64 cycles, packet for packet and cycle for cycle, in fewer calls (docs/iq-router.md
"Speed")."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mpinet.engine.flit import iq_blocks
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.iq_config import IQConfig
from mpinet.engine.models import parse_model
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from mpinet.workloads import Unicast


def _run(rate: float, steps: int, record_hops: bool = False):
    topo = from_spec("mesh:4,2")
    m = parse_model("all-port", dict.fromkeys(topo.port_classes, 1))
    m = replace(m, flit=True, switching="wormhole", flits=5, vcs=4, vc_buffer=4,
                router="iq", iq=IQConfig(routing_delay=0, input_speedup=2))  # fmt: skip
    w = Unicast(topo, "uniform", injection="bernoulli", rate=rate, steps=steps, seed=5)
    eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy("any", topo, 4), seed=5,
                     max_steps=20 * steps, record_hops=record_hops)  # fmt: skip
    return eng.run(w), eng


def test_next_block_grows_on_light_traffic_and_falls_back_under_load():
    own = 64
    b = iq_blocks.BLOCK
    seen = [b]
    for _ in range(6):  # 0.3 packets a cycle: doubles to the cap
        b = iq_blocks.next_block(b, int(0.3 * b), b, own)
        seen.append(b)
    assert seen == [64, 128, 256, 512, 1024, 1024, 1024]
    cap = 16 * own + 1024
    assert iq_blocks.next_block(256, cap + 1, 256, own) == iq_blocks.BLOCK  # past the budget
    assert iq_blocks.next_block(256, cap, 256, own) == 256  # twice as long would be past it
    assert iq_blocks.next_block(256, cap // 2, 256, own) == 512


@pytest.mark.parametrize(("rate", "steps"), [(0.01, 3000), (0.2, 600)])
def test_results_do_not_depend_on_the_blocks(monkeypatch, rate, steps):
    got, eng = _run(rate, steps, record_hops=True)
    with monkeypatch.context() as mp:
        mp.setattr(iq_blocks, "next_block", lambda block, *_: iq_blocks.BLOCK)
        want, eng64 = _run(rate, steps, record_hops=True)
    assert got.steps == want.steps
    assert got.packets.shape[0] > 0 and (got.packets[:, 4] >= 0).all()  # all delivered
    for a, b in ((got.packets, want.packets), (got.counters, want.counters),
                 (got.link_load, want.link_load), (got.hop_rows, want.hop_rows)):  # fmt: skip
        assert np.array_equal(a, b)
    if rate < 0.05:  # light: the calls grew
        assert eng.block_calls < eng64.block_calls / 4, (eng.block_calls, eng64.block_calls)
    else:
        assert eng.block_calls <= eng64.block_calls


def test_ring_items_lists_each_ring_from_its_head_around_the_end():
    rng = np.random.default_rng(3)
    size, rings = 5, 40
    buf = rng.integers(0, 1000, rings * size)
    count = rng.integers(0, size + 1, rings)
    head = rng.integers(0, size, rings)
    want = [(i, int(buf[i * size + (head[i] + j) % size]))
            for i in range(rings) for j in range(int(count[i]))]  # fmt: skip
    ring, item = iq_blocks.ring_items(buf, count, head, size)
    assert list(zip(ring.tolist(), item.tolist(), strict=True)) == want
    assert count.sum() > 0 and (count == size).any() and (head + count > size).any()
    none = iq_blocks.ring_items(buf, np.zeros(rings, np.int64), head, size)
    assert none[0].size == none[1].size == 0
