"""The prefetch intrinsic: compiles for the arrays the kernels use and changes nothing."""

import numpy as np
from numba import njit

from mpinet.engine.flit.state import SEG
from mpinet.prefetch import ahead, prefetch


@njit(cache=False)
def _walk(a, order):
    total = 0
    n = order.shape[0]
    for i in range(n):
        if i + 4 < n:
            prefetch(a, order[i + 4])
        total += a[order[i]]
    prefetch(a, -1)  # before the array and far past it: a prefetch never faults
    prefetch(a, 1 << 40)
    return total


def test_prefetch_keeps_results_on_contiguous_and_strided_arrays():
    rng = np.random.default_rng(1)
    order = rng.permutation(10_000)
    a = rng.integers(0, 1_000, 10_000).astype(np.int32)
    assert _walk(a, order) == int(a.sum())
    rec = np.zeros(10_000, SEG)
    rec["cnt"] = a
    view = rec["cnt"]  # a field of a record array: strided, as the kernels read segments
    assert not view.flags.c_contiguous
    assert _walk(view, order) == int(a.sum())
    assert _walk(a.astype(np.uint8), order.astype(np.int32)) == int(a.astype(np.uint8).sum())


@njit(cache=False)
def _walk_ahead(far, a, order):
    total = 0
    n = order.shape[0]
    for i in range(n):
        if i + 4 < n:
            ahead(far, a, order[i + 4])
        total += a[order[i]]
    return total


def test_ahead_prefetches_only_when_far_is_not_none():
    rng = np.random.default_rng(2)
    order = rng.permutation(1_000)
    a = rng.integers(0, 1_000, 1_000).astype(np.int32)
    assert _walk_ahead(None, a, order) == _walk_ahead(True, a, order) == int(a.sum())
    ir = {str(sig[0]): text for sig, text in _walk_ahead.inspect_llvm().items()}
    assert len(ir) == 2  # one kernel per kind of far
    assert "llvm.prefetch" not in ir["none"] and "llvm.prefetch" in ir["bool"]
