"""Bernoulli injections drawn a block of steps at a time equal the per-step draws."""

import numpy as np
import pytest

from mpinet import rng
from mpinet.topology import from_spec
from mpinet.workloads import unicast
from mpinet.workloads.unicast import Unicast


def per_step(w: Unicast, lo: int, hi: int, step: int):
    """The definition: node v fires at ``step`` iff its draw keyed (v, step) is < rate."""
    nodes = np.arange(lo, hi, dtype=np.int64)
    src = nodes[rng.uniform(w.seed, nodes, step, rng.STREAM_INJECT) < w.rate]
    if w.pattern in ("hotspot", "all-to-identity"):
        src = src[src != w.target]
    pid = step * w.topo.num_nodes + src
    return pid, src, w._dest(pid, src)


@pytest.mark.parametrize("pattern", ["uniform", "hotspot", "nearest-neighbour", "permutation"])
@pytest.mark.parametrize("split", [(0, 24), (0, 7), (7, 24)])
def test_block_equals_per_step(pattern, split):
    topo = from_spec("star:4")
    w = Unicast(topo, pattern, injection="bernoulli", rate=0.3, steps=150, seed=5)
    lo, hi = split
    order = [*range(0, 150, 1), 149, 3, 70, 0, 64, 63]  # forwards, then out of order
    for step in order:
        got, want = w.injections(lo, hi, step), per_step(w, lo, hi, step)
        for g, e in zip(got, want, strict=True):
            assert np.array_equal(g, e), (pattern, split, step)
    assert all(a.size == 0 for a in w.injections(lo, hi, 150))  # past the window


@pytest.mark.parametrize("split", [(0, 24), (7, 24)])
def test_span_equals_per_step(split):
    """``injection_span`` (the flit engine's compiled steps) against the definition, spans
    inside, across and past the blocks, in any order."""
    topo = from_spec("star:4")
    w = Unicast(topo, "uniform", injection="bernoulli", rate=0.3, steps=150, seed=5)
    lo, hi = split
    for first, end in [(1, 17), (49, 65), (60, 80), (130, 160), (149, 150), (0, 64), (5, 6)]:
        got = w.injection_span(lo, hi, first, end)
        assert got is not None
        pid, src, dst, off = got
        assert off.size == end - first + 1 and off[0] == 0 and off[-1] == pid.size
        for k, step in enumerate(range(first, end)):
            want = per_step(w, lo, hi, step) if step < 150 else (np.empty(0, np.int64),) * 3
            a, b = off[k], off[k + 1]
            for g, e in zip((pid[a:b], src[a:b], dst[a:b]), want, strict=True):
                assert np.array_equal(g, e), (first, end, step)
    assert w.injection_span(lo, hi, 150, 170) is None  # past the window: nothing to draw
    long = Unicast(topo, "uniform", injection="bernoulli", rate=0.3, steps=3000, seed=5)
    b = unicast.BLOCK
    for first, end in [(1000, 1100), (b - 10, b + 10), (1, b + 1), (2 * b - 1, 2 * b + 3)]:
        pid, src, dst, off = long.injection_span(lo, hi, first, end)  # across blocks
        for k, step in enumerate(range(first, end)):
            a, z = off[k], off[k + 1]
            want = per_step(long, lo, hi, step)
            for g, e in zip((pid[a:z], src[a:z], dst[a:z]), want, strict=True):
                assert np.array_equal(g, e), (first, end, step)
    assert long.injection_span(lo, hi, 0, b + 1) is None  # longer than a block: in pieces
    got = long.injection_span(lo, hi, 3, 3 * b, partial=True)  # a block's part: its steps
    assert got[3].size - 1 == b - 3  # the block drawn at step 0 ends at b
    for k, step in enumerate(range(3, b)):
        a, z = got[3][k], got[3][k + 1]
        assert np.array_equal(got[0][a:z], per_step(long, lo, hi, step)[0])


@pytest.mark.parametrize("p", [0.0, 1e-9, 0.006, 0.3, 0.5, 0.999999, 1.0])
@pytest.mark.parametrize("seed", [0, 7, 2**40 + 3])
def test_grid_below_is_uniform_below(p, seed):
    keys = np.arange(37, 637, dtype=np.int64)
    hops = np.array([0, 1, 5, 64, 2**33], dtype=np.int64)
    u = rng.uniform(seed, keys[None, :], hops[:, None], rng.STREAM_INJECT)
    want = np.nonzero(u < p)
    got = rng.grid_below(seed, keys, hops, p, rng.STREAM_INJECT)
    assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))


def test_grid_below_at_the_threshold():
    """A draw exactly at ``p`` is not below it; one ulp under is."""
    keys, hops = np.arange(200, dtype=np.int64), np.arange(3, dtype=np.int64)
    u = rng.uniform(3, keys[None, :], hops[:, None])
    for v in u.ravel()[:20]:
        for p in (float(v), float(np.nextafter(v, 1.0))):
            want = np.nonzero(u < p)
            got = rng.grid_below(3, keys, hops, p)
            assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
