"""The counter-based generator :mod:`mpinet.rng` against a plain-Python SplitMix64."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mpinet import rng

MASK = (1 << 64) - 1
GOLD = 0x9E3779B97F4A7C15


def py_mix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def py_bits(seed: int, key: int, hop: int, stream: int) -> int:
    x = py_mix(((seed & MASK) * GOLD + stream) & MASK)
    x = py_mix(x ^ ((key * GOLD) & MASK))
    return py_mix(x ^ ((hop + GOLD) & MASK))


@pytest.mark.parametrize("n", [1, 7, 4095, 4096, 50_000])
def test_bits_equal_the_reference(n):
    keys = np.arange(n, dtype=np.int64) * 7919 + 3
    hops = np.arange(n, dtype=np.int64) % 5
    got = rng.bits(2**64 - 5, keys, hops, rng.STREAM_ROUTE)
    idx = np.unique(np.r_[0, n - 1, np.linspace(0, n - 1, 50).astype(int)])
    want = [py_bits(2**64 - 5, int(keys[i]), int(hops[i]), rng.STREAM_ROUTE) for i in idx]
    assert got.dtype == np.uint64 and got[idx].tolist() == want


def test_bits_broadcast_like_numpy():
    keys = np.arange(3000)[:, None]
    hops = np.arange(3)[None, :]
    got = rng.bits(11, keys, hops)
    assert got.shape == (3000, 3)
    assert got[1234, 2] == py_bits(11, 1234, 2, 0)
    assert np.array_equal(rng.bits(11, 5, np.arange(5000))[:3], rng.bits(11, 5, np.arange(3)))
    u = rng.uniform(11, np.arange(10_000))
    assert ((u >= 0) & (u < 1)).all()
    assert np.array_equal(u[:10], rng.uniform(11, np.arange(10)))
    assert rng.bits(11, 1234, 2) == py_bits(11, 1234, 2, 0)  # a scalar key gives a scalar


@pytest.mark.parametrize("keys", ["np.empty(0, np.int64)", "np.arange(1)", "np.arange(5)"])
def test_first_draw_of_a_process_warns_nothing(keys):
    """numba's first call types its arguments in Python and reads their writeable flag, which
    warns for broadcast_arrays' views: a sweep's first, empty injection printed a FutureWarning."""
    code = "import numpy as np; from mpinet import rng; "
    code += f"rng.integers(3, {keys}, 7); rng.bits(1, 2, {keys})"
    run = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True
    )
    assert run.returncode == 0 and run.stderr == "", run.stderr[-2000:]
