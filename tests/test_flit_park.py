"""Waiting buffers parked off the active list (mpinet/engine/flit/park.py).

After every step's ``collect`` on a step-by-step run: no parked buffer can make a request
(its front has no flits here yet, or is a body whose VC has no credit, that VC's credit word
marked and naming it), every buffer holding a segment is listed or parked, and the flags,
counts and lists agree. Under mpiexec: bodies parked for credits that come back from another
rank are woken as by a local credit, on the compiled steps and the step-by-step path alike,
and the runs equal the one-rank run (the rest of the ranks' paths: tests/test_flit_ranks.py).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_flit_active import bernoulli_plan
from test_flit_ranks import assert_equal_runs, runs

from mpinet.engine.flit import kernels, park, python_step
from mpinet.engine.models import parse_model
from mpinet.jobs.switching import make_engine
from mpinet.netfile import load_topology
from mpinet.routing import make_router


def check_parked(eng) -> tuple[int, int]:
    """The lists' invariants after a step's collect; returns the buffers parked and of them
    the bodies parked for credits."""
    st = eng.st
    na, flag = int(st.nact[0]), st.inact
    listed = st.act[:na].astype(np.int64)
    parked = park.waiting(st.bufs).astype(np.int64)
    assert parked.size == int(st.nact[2])
    assert np.unique(listed).size == na and not np.isin(parked, listed).any()
    assert (flag[listed] & 3 == 1).all() and (flag[parked] == park.PARKED).all()
    assert np.unique(parked).size == parked.size
    assert np.isin(np.flatnonzero(st.bhead >= 0), np.concatenate([listed, parked])).all()
    s = st.bhead[parked]
    assert (s >= 0).all()
    cnt, out, ovc = st.seg_cnt[s], st.seg_out[s], st.seg_ovc[s]
    saf = eng.model.switching == "store-and-forward"
    empty = (cnt <= 0) | (saf & (parked < st.nvcbuf) & (st.seg_recv[s] < eng.flits))
    k = np.where(ovc >= 0, out * eng.vcs + ovc, 0)
    starved = ~empty & (ovc >= 0) & (st.credit[k] <= 0)
    assert (empty | starved).all()  # no request left parked
    assert (st.credit[k[starved]] < -park.HALF).all()  # its VC marked, naming it
    assert np.array_equal(st.pwait[k[starved]], parked[starved])
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


@pytest.mark.mpi
@pytest.mark.parametrize("kind", ["one-port", "all-port", "k-port:2"])
def test_bodies_woken_by_credits_from_other_ranks(monkeypatch, kind):
    """Wormhole with 2-flit VCs on ms:2,2 at a load where bodies wait for credits on the
    links between the ranks' blocks: the credits from other ranks wake them (counted on the
    step-by-step path's exchange), and the compiled run, the step-by-step run and the
    one-rank run are the same row for row. (Not hypercube:5 under `shortest`: its hops
    between two ranks' blocks are the last, into the destination, which needs no credit.)"""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    woken = np.zeros(1, np.int64)
    credits_in = python_step.credits_in

    def counted(keys, credit, pwait, active, act, nact):
        marked = keys[credit[keys] < -park.HALF]
        woken[0] += int((active[pwait[np.unique(marked)]] == park.PARKED).sum())
        credits_in(keys, credit, pwait, active, act, nact)

    monkeypatch.setattr(python_step, "credits_in", counted)
    topo = load_topology("ms:2,2")
    router = make_router("anynet-min", topo)
    m = replace(parse_model(kind, dict.fromkeys(topo.port_classes, 1)), flit=True,
                switching="wormhole", flits=6, vcs=2, vc_buffer=2, vc_policy="any")  # fmt: skip
    rng = np.random.default_rng(33)
    n = topo.num_nodes
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(40)))
            for i in range(600)]  # fmt: skip
    a, b, one = runs(comm, topo, router, m, comm.bcast(rows), max_steps=4000,
                     load_window=(3, 50))  # fmt: skip
    assert_equal_runs(comm, a, b)
    assert_equal_runs(comm, a, one, cross=False)
    assert (a["packets"][:, 4] >= 0).all()
    total = comm.allreduce(int(woken[0]))
    assert total > 0 or comm.Get_size() == 1  # parked bodies woken by other ranks' credits
