"""Bernoulli injections drawn a block of steps at a time equal the per-step draws."""

import numpy as np
import pytest

from mpinet import rng
from mpinet.topology import from_spec
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
