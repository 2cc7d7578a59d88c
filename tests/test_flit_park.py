"""Waiting buffers parked out of the active list (mpinet/engine/flit/park.py).

After every step's ``collect`` on a step-by-step run: no parked buffer can make a request
(its front has no flits here yet, or is a body whose VC has no credit), every buffer holding
a segment is in the active list or parked, and the flags, counts and entries agree. The
compiled steps run the same kernels and are held to this path row for row
(tests/test_flit_chunk.py, tests/test_flit_active.py), and results to the independent
reference (tests/test_flit_engine.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_active import bernoulli_plan

from mpinet.engine.flit import kernels, park
from mpinet.jobs.switching import make_engine


def check_parked(eng) -> tuple[int, int]:
    """The list's invariants after a step's collect; returns the buffers parked and of them
    the bodies parked for credits."""
    st = eng.st
    na = int(st.nact[0])
    x, flag = st.act[:na].astype(np.int64), st.inact
    parked = -x[x < 0] - 1
    listed = np.concatenate([x[x >= 0], parked])
    assert np.unique(listed).size == na
    assert np.array_equal(np.sort(x[x >= 0]), np.flatnonzero(flag == 1))  # the flags agree
    assert np.array_equal(np.sort(parked), np.flatnonzero(flag == park.PARKED))
    assert np.isin(np.flatnonzero(st.bhead >= 0), listed).all()  # every buffer holding flits
    s = st.bhead[parked]
    assert (s >= 0).all()
    cnt, out, ovc = st.seg_cnt[s], st.seg_out[s], st.seg_ovc[s]
    saf = eng.model.switching == "store-and-forward"
    empty = (cnt <= 0) | (saf & (parked < st.nvcbuf) & (st.seg_recv[s] < eng.flits))
    k = np.where(ovc >= 0, out * eng.vcs + ovc, 0)
    starved = ~empty & (ovc >= 0) & (st.credit[k] <= 0)
    assert (empty | starved).all()  # no request left parked
    assert np.array_equal(st.park[parked], np.where(empty, park.EMPTY, k))  # what it waits for
    return parked.size, int(starved.sum())


@pytest.mark.parametrize("mode", ["wormhole", "store-and-forward"])
@pytest.mark.parametrize("kind", ["one-port", "all-port"])
def test_parked_buffers_wait_and_come_back(monkeypatch, kind, mode):
    seen = np.zeros(3, np.int64)  # steps, parked, parked for credits
    collect = kernels.collect

    def checked(prm, segs, pkts, links, bufs, so):
        nt = collect(prm, segs, pkts, links, bufs, so)
        seen[:] += (1, *check_parked(eng))
        return nt

    monkeypatch.setattr(kernels, "collect", checked)  # python_step calls fk.collect
    p = bernoulli_plan("hypercube:5", "shortest", kind, mode, 0.2, 150, flits=4, vcs=2,
                       buf=2)  # fmt: skip
    eng = make_engine(p, None, seed=p.job.seed, max_steps=4000, record_hops=False,
                      progress=None, compiled_steps=False)  # fmt: skip
    rec = eng.run(p.workload.traffic)
    assert seen[0] == rec.steps and seen[1] > 0  # buffers were parked and checked
    assert seen[2] > 0 or mode == "store-and-forward"  # bodies too, for credits
    assert (rec.packets[:, 4] >= 0).all()
