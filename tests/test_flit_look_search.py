"""The deadlock look's search inside the one-rank compiled steps
(:mod:`mpinet.engine.flit.look_search`) and the kernels' calls without numba's dispatch
(:mod:`mpinet.engine.flit.direct`).

The one search of the wait-for definition (:func:`mpinet.engine.waitfor_live.live_fronts`,
behind ``any_dead`` and :func:`mpinet.engine.waitfor.dead_one_rank`) must find the
definition's dead set on any listing, as the several-rank spread does; the compiled steps
then search without returning to Python and must pace and count their searches as the
step-by-step path does. ``Direct`` must reach the entry point of exactly the types numba's
dispatch would pick.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest
from numba import njit

from mpinet.engine import waitfor
from mpinet.engine import waitfor_live as wl
from mpinet.engine.comm import SerialComm
from mpinet.engine.flit import chunk, direct
from mpinet.engine.flit import deadlock_live as dl
from mpinet.engine.flit import look_search as ls
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.waitfor import dead_one_rank
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from mpinet.workloads.unicast import Unicast
from tests.test_flit_chunk import assert_identical, model


def listing(rng):
    """A random listing: fronts waiting for buffers 100.., holds on listed and unlisted
    fronts, some buffers closed (cycles among them, or not)."""
    nb, nf = int(rng.integers(1, 12)), int(rng.integers(0, 14))
    fronts = rng.permutation(40)[:nf].astype(np.int64)
    waits = rng.integers(99, 100 + nb, nf).astype(np.int64)
    waits[waits == 99] = -1  # waits for nothing: it can move
    nh = int(rng.integers(0, 18))
    listed = rng.random(nh) < 0.85
    hf = np.where(listed & (nf > 0), rng.choice(fronts, nh) if nf else 0, rng.integers(40, 60, nh))
    hb = rng.integers(100, 100 + nb, nh)
    closed = rng.integers(100, 100 + nb, int(rng.integers(0, 14)))
    return fronts, waits, hf.astype(np.int64), hb.astype(np.int64), closed.astype(np.int64)


def in_scan_order(fronts, hf, hb, closed):
    """The same listing as the scan writes one (look_search's contract): a hold whose front
    is not listed frees its buffer, so that buffer leaves ``closed`` (free by the
    definition either way) and the hold goes; the others in their fronts' order."""
    at = {int(f): j for j, f in enumerate(fronts.tolist())}
    mine = np.array([int(h) in at for h in hf.tolist()], bool)
    free = set(hb[~mine].tolist())
    closed = np.array([c for c in closed.tolist() if c not in free], np.int64)
    order = sorted(np.flatnonzero(mine).tolist(), key=lambda e: at[int(hf[e])])
    return hf[order], hb[order], closed


def any_dead(fronts, waits, hf, hb, closed):
    """look_search.any_dead on the listing put in the scan's order."""
    hf, hb, closed = in_scan_order(fronts, hf, hb, closed)
    scr, live = ls.scratch(np.empty(fronts.size + 1), np.empty(hf.size + 1))
    return ls.any_dead(fronts.size, hf.size, closed.size, fronts, waits, hf, hb, closed, scr, live)


def is_scan_ordered(fronts, hf):
    """Every hold's front listed, the holds in their fronts' order."""
    at = {int(f): j for j, f in enumerate(fronts.tolist())}
    idx = [at.get(int(h), -1) for h in hf.tolist()]
    return all(i >= 0 for i in idx) and idx == sorted(idx)


def reference_dead(fronts, waits, hf, hb, closed):
    """The definition (mpinet/engine/waitfor.py) spread naively: a buffer is live when it is
    not closed or a holder is unlisted or live, a front when it waits for nothing or for a
    live buffer; liveness spread until nothing changes."""
    listed = set(fronts.tolist())
    live = {int(f): int(w) < 0 for f, w in zip(fronts, waits, strict=True)}
    shut = set(closed.tolist())
    changed = True
    while changed:
        changed = False
        for f, w in zip(fronts.tolist(), waits.tolist(), strict=True):
            if live[f]:
                continue
            holders = [h for h, b in zip(hf.tolist(), hb.tolist(), strict=True) if b == w]
            if w not in shut or any(h not in listed or live[h] for h in holders):
                live[f] = changed = True
    return np.array([not live[f] for f in fronts.tolist()], bool)


def every_search(fronts, waits, hf, hb, closed):
    """The dead set by the shared pass (in one scratch reused), by dead_one_rank and by the
    several-rank spread on one rank; all must agree."""
    got = live_dead(fronts, waits, hf, hb, closed, SCRATCH)
    assert dead_one_rank(fronts, waits, hf, hb, closed).tolist() == got.tolist()
    own = lambda ids: np.zeros(np.asarray(ids).size, np.int64)  # noqa: E731
    spread = waitfor._dead_spread(SerialComm(), fronts, waits, hf, hb, closed, own, own)
    assert spread.tolist() == got.tolist()
    return got


def live_dead(fronts, waits, hf, hb, closed, scr):
    live = np.full(max(fronts.size, 1), 7, np.int64)
    n = wl.live_fronts(fronts.size, hf.size, closed.size, fronts, waits, hf, hb, closed, scr, live)
    assert n == int((live[: fronts.size] == 0).sum())
    return live[: fronts.size] == 0


SCRATCH = wl.scratch(64, 64)  # shared by the calls: a larger table's leftovers must not leak


@pytest.mark.parametrize("offset", [0, 2**40 + 12345])
def test_the_search_finds_the_definitions_dead_set(offset):
    """Random listings (ids shifted by ``offset``: far from the hash table's size), the dead
    set of every search against the definition spread naively; any_dead answers its
    emptiness."""
    rng = np.random.default_rng(5)
    seen = set()
    for _ in range(1500):
        f, w, hf, hb, cl = listing(rng)
        f, hf = f + offset, hf + offset
        w = np.where(w >= 0, w + offset, w)
        hb, cl = hb + offset, cl + offset
        want = reference_dead(f, w, hf, hb, cl)
        assert every_search(f, w, hf, hb, cl).tolist() == want.tolist()
        assert any_dead(f, w, hf, hb, cl) == (ls.DEAD if want.any() else ls.NONE_DEAD)
        seen.add(int(want.sum()))
    assert 0 in seen and max(seen) >= 3  # listings with no dead front and with several


@pytest.mark.parametrize("closed_end", [False, True])
def test_a_long_chain_is_answered_exactly(closed_end):
    """Front j waits for buffer j, closed and held by front j + 1 (2,000 fronts, shuffled);
    the last front's buffer is open (all live: liveness crosses the whole chain) or closed
    and held by front 0 (a cycle: all dead)."""
    n = 2000
    fronts = np.arange(n, dtype=np.int64)
    waits = 100_000 + fronts
    hf, hb = (fronts + 1) % n, 100_000 + fronts
    closed = 100_000 + (fronts if closed_end else fronts[:-1])
    if not closed_end:
        hf, hb = hf[:-1], hb[:-1]
    order = np.random.default_rng(1).permutation(n)
    got = live_dead(fronts[order], waits[order], hf, hb, closed, wl.scratch(n, n))
    assert got.tolist() == [closed_end] * n
    assert dead_one_rank(fronts, waits, hf, hb, closed).tolist() == [closed_end] * n
    assert any_dead(fronts, waits, hf, hb, closed) == (ls.DEAD if closed_end else ls.NONE_DEAD)


def test_compiled_looks_search_without_python(monkeypatch):
    """A loaded run whose looks list fronts and find none dead: the compiled steps search
    them in the call (no return to Python's search) with the step-by-step path's searches,
    pacing budget and rows."""
    topo = from_spec("hypercube:5")
    router = make_router("anynet-min", topo)
    m = model(topo, "wormhole", 8, 2, 2)
    work = Unicast(topo, injection="bernoulli", rate=0.05, steps=1500, seed=3)
    calls = []
    real = dl.LiveCheck.search

    def search(self, t, in_flight, scanned):  # the scan's listing: the compiled search's order
        fronts, waits, _, hf, hb, closed, cnt = scanned
        nf, nh, nc = (int(x) for x in cnt)
        assert is_scan_ordered(fronts[:nf], hf[:nh])
        scr, live = wl.scratch(nf, nh), np.empty(max(nf, 1), np.int64)
        ref = np.empty_like(live)
        args = (nf, nh, nc, fronts, waits, hf, hb, closed, scr)
        assert ls.live_scanned(*args, live) == wl.live_fronts(*args, ref)
        assert live[:nf].tolist() == ref[:nf].tolist()
        calls.append(nf)
        return real(self, t, in_flight, scanned)

    monkeypatch.setattr(dl.LiveCheck, "search", search)
    runs = []
    for compiled_steps in (True, False):
        eng = FlitEngine(topo, router, m, make_vc_policy("any", topo, 2),
                         compiled_steps=compiled_steps)  # fmt: skip
        assert chunk.usable(eng) == compiled_steps
        runs.append((eng, eng.run(work), len(calls)))
    (eng, rec, n_compiled), (eng1, rec1, n_all) = runs
    assert_identical(rec, rec1)
    assert rec.deadlock is None
    assert eng1.live.searches > 5 and eng.live.searches == eng1.live.searches
    assert eng.live.budget == eng1.live.budget
    assert n_compiled == 0  # every search of the compiled run was in the call
    assert max(calls) > 20  # the step-by-step run's listings, checked in its order


Bundle = namedtuple("Bundle", "a b")


@njit(cache=False)
def _kernel(x, n, flag, pair, bundle, mixed):
    return x[0] + n + int(flag) + pair[0][0] + bundle.a[0] + bundle.b[0, 0] + mixed[1]


def test_direct_types_as_numba_dispatch():
    """Direct's types are numba's (its dispatch's signature) for arrays of every layout and
    writability, scalars, tuples and named tuples; the entry is kept per kernel and key."""
    a = np.arange(6, dtype=np.int64)
    ro = a.copy()
    ro.flags.writeable = False
    cases = [
        (a, 3, True, (a, a), Bundle(a, a.reshape(2, 3)), (1.5, 2)),
        (a[::2], 2**40, False, (ro, a), Bundle(ro, np.asfortranarray(a.reshape(2, 3))), (1.0, 7)),
        (
            a.astype(np.int32),
            np.int64(4),
            np.bool_(1),
            (a, a),
            Bundle(a, a.reshape(3, 2)[:, :1]),
            (0.5, -(2**40)),
        ),  # fmt: skip
    ]
    for args in cases:
        want = _kernel.py_func(*args)
        d = direct.Direct(_kernel)
        assert d(*args) == want and d(*args) == want
        sig = tuple(_kernel.typeof_pyval(x) for x in args)
        assert tuple(direct.arg_type(x) for x in args) == sig
        assert d.entry is _kernel.overloads[sig].entry_point
        assert direct.Direct(_kernel)(*args) == want  # a new one: the kept entry
    keys = {direct.fingerprint(args) for args in cases}
    assert len(keys) == len(cases)
    assert direct.fingerprint((object(),)) is None
