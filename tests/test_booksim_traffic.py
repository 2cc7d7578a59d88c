"""BookSim's traffic patterns and its on/off injection, against definitions written here.

Each pattern is restated from BookSim2's src/traffic.cpp in plain Python (bit strings,
digits) and compared with mpinet's vectorized one on every node; on_off's mean rate is
checked against alpha / (alpha + beta) * r1 within a statistical bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpinet.errors import WorkloadError
from mpinet.topology import from_spec
from mpinet.workloads.unicast import Unicast


def bits_of(v, b):
    return [(v >> i) & 1 for i in range(b)]  # least significant first


def from_bits(x):
    return sum(bit << i for i, bit in enumerate(x))


def reference(name, v, n, k=None, dims=None):
    b = n.bit_length() - 1
    x = bits_of(v, b)
    if name == "bitcomp":
        return from_bits([1 - t for t in x])
    if name == "bitrev":
        return from_bits(x[::-1])
    if name == "shuffle":  # rotate left: the top bit comes round to bit 0
        return from_bits([x[-1]] + x[:-1])
    if name == "booksim-transpose":
        h = b // 2
        return from_bits(x[h:] + x[:h])
    digits = [(v // k**i) % k for i in range(dims)]
    shift = math.ceil(k / 2) - 1 if name == "tornado" else 1
    return sum(((c + shift) % k) * k**i for i, c in enumerate(digits))


def dests(spec, name, **kw):
    topo = from_spec(spec)
    w = Unicast(topo, name, **kw)
    pid, src, dst = w.injections(0, topo.num_nodes, 0)
    return topo, src, dst


@pytest.mark.parametrize("spec", ["mesh:4,2", "torus:8,2", "mesh:2,5", "torus:4,3"])
@pytest.mark.parametrize("name", ["bitcomp", "bitrev", "shuffle", "booksim-transpose",
                                  "tornado", "neighbor"])  # fmt: skip
def test_deterministic_patterns_match_booksim(spec, name):
    topo = from_spec(spec)
    if name == "booksim-transpose" and (topo.num_nodes.bit_length() - 1) % 2:
        with pytest.raises(WorkloadError, match="even power of two"):
            Unicast(topo, name)
        return
    topo, src, dst = dests(spec, name)
    assert src.tolist() == list(range(topo.num_nodes))
    want = [reference(name, v, topo.num_nodes, topo.k, topo.n) for v in range(topo.num_nodes)]
    assert dst.tolist() == want


def test_transpose_is_the_coordinate_swap_on_k_by_k():
    topo, src, dst = dests("mesh:8,2", "booksim-transpose")
    c = topo.coords(src)
    assert np.array_equal(topo.coords(dst), c[:, ::-1])


def test_uniform_includes_the_source_and_is_uniform():
    topo, src, dst = dests("torus:4,2", "booksim-uniform", packets=4000, seed=2)
    counts = np.bincount(dst, minlength=16)
    # 64,000 draws over 16 nodes: 4,000 each, sd ~ 61; six sd
    assert np.abs(counts - 4000).max() < 6 * math.sqrt(4000 * 15 / 16)
    assert (src == dst).mean() == pytest.approx(1 / 16, abs=0.005)


def test_randperm_is_a_permutation_from_the_seed():
    _, _, a = dests("mesh:4,2", "randperm", seed=5)
    _, _, b = dests("mesh:4,2", "randperm", seed=5)
    _, _, c = dests("mesh:4,2", "randperm", seed=6)
    assert sorted(a.tolist()) == list(range(16)) and np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_hotspot_includes_the_target():
    topo = from_spec("mesh:3,2")
    w = Unicast(topo, "booksim-hotspot", target=4)
    pid, src, dst = w.injections(0, 9, 0)
    assert src.tolist() == list(range(9)) and (dst == 4).all()


@pytest.mark.parametrize("spec,name,match", [
    ("mesh:3,2", "bitcomp", "power-of-two"), ("torus:3,3", "bitrev", "power-of-two"),
    ("mesh:2,3", "booksim-transpose", "even power"), ("hypercube:4", "tornado", "k-ary n-cube"),
])  # fmt: skip
def test_refused_where_booksim_refuses(spec, name, match):
    with pytest.raises(WorkloadError, match=match):
        Unicast(from_spec(spec), name)


def injected(topo, lo, hi, **kw):
    w = Unicast(topo, "booksim-uniform", injection="on_off", **kw)
    rows = [w.injections(lo, hi, t) for t in range(w.steps)]
    return np.concatenate([r[0] for r in rows]), np.concatenate([r[2] for r in rows])


@pytest.mark.parametrize("alpha,beta,r1,rate", [(0.5, 0.5, -1.0, 0.2), (0.1, -1.0, 0.8, 0.3),
                                                (-1.0, 0.05, 0.9, 0.1)])  # fmt: skip
def test_on_off_mean_rate_is_the_stationary_one(alpha, beta, r1, rate):
    topo = from_spec("torus:8,2")
    steps = 4000
    pid, _ = injected(topo, 0, 64, rate=rate, steps=steps, seed=9, burst=(alpha, beta, r1))
    # derived as BookSim derives: the mean is rate; bursts correlate the draws, so the
    # bound is the chain's: variance inflated by (1 + lambda) / (1 - lambda), lambda =
    # 1 - alpha - beta
    a = alpha if alpha >= 0 else beta * rate / (r1 - rate)
    b = beta if beta >= 0 else a * (r1 - rate) / rate
    lam = 1 - a - b
    n = 64 * steps
    sd = math.sqrt(rate * (1 - rate) / n * (1 + abs(lam)) / (1 - abs(lam)) * 4)
    assert abs(pid.size / n - rate) < 6 * sd


def test_on_off_is_bursty_and_rank_split_independent():
    topo = from_spec("mesh:4,2")
    kw = dict(rate=0.2, steps=300, seed=1, burst=(0.05, 0.05, -1.0))
    whole, dw = injected(topo, 0, 16, **kw)
    parts = [injected(topo, lo, hi, **kw) for lo, hi in ((0, 5), (5, 11), (11, 16))]
    split = np.concatenate([p[0] for p in parts])
    order = np.argsort(split)
    assert np.array_equal(np.sort(whole), split[order])
    assert np.array_equal(dw[np.argsort(whole)], np.concatenate([p[1] for p in parts])[order])
    # long bursts: a node that injected at a step injects at the next far more often
    node, step = whole % 16, whole // 16
    hit = set(zip(node.tolist(), step.tolist(), strict=True))
    again = np.mean([(v, t + 1) in hit for v, t in hit])
    assert again > 0.3  # r1 = 0.4 while on; bernoulli would give 0.2


@pytest.mark.parametrize("burst,match", [
    ((0.5, 0.5, 0.5), "exactly one of burst_alpha"), ((-1, -1, 0.5), "exactly one"),
    ((0.5, 0.5, -1.0), "burst_r1 derived"),  # rate 0.8: r1 = 1.6
    ((1.5, 0.5, -1.0), "at most 1"),
])  # fmt: skip
def test_on_off_refusals(burst, match):
    with pytest.raises(WorkloadError, match=match):
        Unicast(from_spec("mesh:4,2"), injection="on_off", rate=0.8, steps=10, burst=burst)
