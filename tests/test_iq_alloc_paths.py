"""The iq router's allocators take a shorter pass where the requests cannot conflict
(:func:`~mpinet.engine.flit.iq_alloc.uncontested`: one input, one output, or no two
requests sharing either); its grants and round-robin pointers must be the full pass's, for
each allocator, from any pointers (docs/iq-router.md "Speed"); a lone request, which
switch allocation grants without an allocator's call, is granted and moves each pointer one
past the other in every allocator's full pass. The kernels' divisions by
multiplication (:func:`~mpinet.engine.flit.iq_lists.div`) must be exact."""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.engine.flit import iq_alloc as ia
from mpinet.engine.flit import iq_lists as il

KINDS = (ia.INPUT_FIRST, ia.OUTPUT_FIRST, ia.ISLIP)


def _requests(rng, shape: str, nin: int, nout: int):
    """Requests of a shape (at most one per input-output pair) with random priorities."""
    if shape == "lone":  # one request: internal_steps grants it without the allocator
        rin, rout = rng.integers(nin, size=1), rng.integers(nout, size=1)
    elif shape == "one-in":
        k = int(rng.integers(1, nout + 1))
        rout = rng.choice(nout, k, replace=False)
        rin = np.full(k, int(rng.integers(nin)))
    elif shape == "one-out":
        k = int(rng.integers(1, nin + 1))
        rin = rng.choice(nin, k, replace=False)
        rout = np.full(k, int(rng.integers(nout)))
    elif shape == "free":
        k = int(rng.integers(1, min(nin, nout) + 1))
        rin, rout = rng.choice(nin, k, replace=False), rng.choice(nout, k, replace=False)
    else:  # general: pairs drawn at random (mostly conflicting)
        pairs = rng.choice(nin * nout, int(rng.integers(2, nin * nout)), replace=False)
        rin, rout = pairs // nout, pairs % nout
    order = rng.permutation(rin.size)
    rpri = rng.integers(-1, 1, rin.size)
    return (np.ascontiguousarray(rin[order], np.int64),
            np.ascontiguousarray(rout[order], np.int64), rpri.astype(np.int64))  # fmt: skip


def _full(kind, n, rin, rout, rpri, nin, nout, iters, pin, pout, grant, bi, bo):
    if kind == ia.ISLIP:
        return ia.islip(n, rin, rout, nin, nout, iters, pin, pout, grant, bi, bo)
    return ia.separable(n, rin, rout, rpri, nin, nout, pin, pout, grant, bi, bo,
                        kind == ia.INPUT_FIRST)  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ["lone", "one-in", "one-out", "free", "general"])
def test_short_pass_grants_and_pointers_are_the_full_pass(kind, shape):
    rng = np.random.default_rng(7 + kind)
    nin, nout = 10, 8
    short_taken = 0
    for _ in range(300):
        rin, rout, rpri = _requests(rng, shape, nin, nout)
        n = rin.size
        pin, pout = rng.integers(0, nout, nin), rng.integers(0, nin, nout)
        got, want = [], []
        for fn in (ia.allocate, _full):
            p_in, p_out = pin.copy(), pout.copy()
            grant = np.full(n, 7, np.int64)
            bi, bo = np.full(nin, -1, np.int64), np.full(nout, -1, np.int64)
            ng = fn(kind, n, rin, rout, rpri, nin, nout, 2, p_in, p_out, grant, bi, bo)
            (got if fn is ia.allocate else want).append((ng, grant.tolist(), p_in.tolist(),
                                                        p_out.tolist()))  # fmt: skip
            assert (bi == -1).all() and (bo == -1).all()  # the scratch left as found
        assert got == want, (rin, rout, rpri, pin, pout)
        if n == 1:  # internal_steps' lone request: granted, each pointer one past the other
            i, o = int(rin[0]), int(rout[0])
            lone_in, lone_out = pin.copy(), pout.copy()
            lone_in[i], lone_out[o] = (o + 1) % nout, (i + 1) % nin
            assert want == [(1, [1], lone_in.tolist(), lone_out.tolist())]
        bi, bo = np.full(nin, -1, np.int64), np.full(nout, -1, np.int64)
        g = np.zeros(n, np.int64)
        short_taken += ia.uncontested(kind, n, rin, rout, rpri, nin, nout, pin.copy(),
                                      pout.copy(), g, bi, bo) >= 0  # fmt: skip
    # the shapes that cannot conflict take the short pass; the general ones mostly not
    assert short_taken == 300 if shape != "general" else short_taken < 300


@pytest.mark.parametrize("d", [1, 2, 3, 5, 7, 16, 20, 63, 64, 65, 1000, 65_537])
def test_div_is_floor_division(d):
    m, lim = il.magic(d)
    xs = np.concatenate([np.arange(3 * d + 5), np.arange(max(lim - 3 * d, 0), lim + 3 * d),
                         np.random.default_rng(d).integers(0, 1 << 40, 200)])  # fmt: skip
    for x in xs.tolist():
        assert il.div(x, d, m, lim) == x // d
