"""Deadlocks of worms found while packets are still injected (mpinet/engine/flit/deadlock_live.py).

The search must be sound (every worm it calls dead never moves again: the same run without
the search keeps those packets undelivered to its end), leave the run unchanged until it
stops it, name a real cycle, stay silent where no deadlock can form, and give the same
answer on any number of ranks.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_engine import by_pid, check_on_every_rank

from mpinet.deadlock.vc_need import vcs_needed
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.models import Model, switching_model
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from mpinet.workloads import Unicast

# (spec, router, switching, flits, vcs, vc_buffer, rate): all deadlock under vc_policy any
DEADLOCKING = [
    ("star:4", "shortest", "wormhole", 8, 1, 2, 0.3),
    ("scc:4", "shortest", "wormhole", 8, 2, 2, 0.3),
    ("ccc:3", "shortest", "wormhole", 8, 1, 2, 0.3),
    ("star:4", "shortest", "cut-through", 4, 2, 4, 0.6),
    ("ms:2,2", "shortest", "wormhole", 8, 2, 2, 0.2),
    ("scc:4", "scc-greedy", "wormhole", 6, 1, 3, 0.2),
    ("star:4", "shortest", "cut-through", 3, 1, 3, 0.5),
]


def engine(spec, rname, sw, flits, vcs, buf, policy="any", comm=None, live=True):
    topo = from_spec(spec)
    router = make_router(rname, topo)
    m = switching_model(Model(), sw, flits, vcs, buf, policy)
    pol = make_vc_policy(policy, topo, vcs)
    return FlitEngine(topo, router, m, pol, comm, max_steps=20_000, live_check=live), topo


def traffic(topo, rate, steps=1500):
    return Unicast(topo, injection="bernoulli", rate=rate, steps=steps, seed=3)


@pytest.mark.parametrize("case", DEADLOCKING, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_found_while_injecting_and_sound(case):
    spec, rname, sw, flits, vcs, buf, rate = case
    eng, topo = engine(spec, rname, sw, flits, vcs, buf)
    rec = eng.run(traffic(topo, rate))
    d = rec.deadlock
    assert d is not None and d["found"] == "check"
    assert d["step"] % 8 == 0 and d["step"] < 1499  # while packets are injected
    dead = eng.live.dead_pids
    assert dead.size > 0 and d["dead_fronts"] >= dead.size
    # the same run without the search: unchanged up to that step, and the dead never move
    eng2, _ = engine(spec, rname, sw, flits, vcs, buf, live=False)
    rec2 = eng2.run(traffic(topo, rate))
    assert np.array_equal(rec2.counters[: d["step"]], rec.counters)
    assert rec2.deadlock is not None and rec2.deadlock["step"] > d["step"]
    left = rec2.packets[rec2.packets[:, 4] < 0, 0]
    assert np.isin(dead, left).all()


@pytest.mark.parametrize("case", DEADLOCKING, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_the_cycle_is_a_chain_of_vcs(case):
    spec, rname, sw, flits, vcs, buf, rate = case
    eng, topo = engine(spec, rname, sw, flits, vcs, buf)
    cyc = eng.run(traffic(topo, rate)).deadlock["cycle"]
    assert len(cyc) >= 2
    for a, b in zip(cyc, cyc[1:] + cyc[:1], strict=True):
        assert a["next"] == b["node"]  # each VC's front waits for a VC out of its node
        u = topo.parse_label(a["node"])
        w = int(topo.neighbors(np.array([u]))[0, list(topo.ports).index(a["port"])])
        assert topo.label(w) == a["next"]
        assert 0 <= a["vc"] < vcs


@pytest.mark.parametrize(
    "spec,rname,policy",
    [("star:4", "shortest", "negative-hop"), ("star:4", "shortest", "hops"),
     ("hypercube:4", "hypercube-ecube", "any"), ("ms:2,2", "shortest", "hops")],
)  # fmt: skip
def test_silent_where_no_deadlock_can_form(spec, rname, policy):
    topo = from_spec(spec)
    vcs = vcs_needed(make_vc_policy(policy, topo, 16), make_router(rname, topo))
    eng, topo = engine(spec, rname, "wormhole", 8, vcs, 2, policy)
    rec = eng.run(traffic(topo, 0.5, steps=600))  # far past saturation
    assert rec.deadlock is None and (rec.packets[:, 4] >= 0).all()


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.mpi
@pytest.mark.parametrize(
    "case", [DEADLOCKING[i] for i in (0, 1, 3, 6)], ids=lambda c: f"{c[0]}-{c[2]}-{c[4]}"
)
def test_same_deadlock_on_any_number_of_ranks(comm, case):
    """Every rank reports the one-rank deadlock, and the ranks' packet rows and link loads,
    gathered, are the one-rank run's (checked on every rank, failing on all together)."""
    spec, rname, sw, flits, vcs, buf, rate = case
    eng, topo = engine(spec, rname, sw, flits, vcs, buf, comm=comm)
    rec = eng.run(traffic(topo, rate))
    eng1, _ = engine(spec, rname, sw, flits, vcs, buf)
    rec1 = eng1.run(traffic(topo, rate))
    pids = np.unique(np.concatenate(comm.allgather(eng.live.dead_pids)))  # a worm's pieces
    packets = np.concatenate(comm.allgather(rec.packets))  # may sit on two ranks
    loads = np.concatenate(comm.allgather(rec.link_load))

    def check():
        d, d1 = rec.deadlock, rec1.deadlock
        assert d is not None and d["found"] == "check"
        assert d["step"] == d1["step"] and d["message"] == d1["message"]
        assert d["cycle"] == d1["cycle"] and d["dead_fronts"] == d1["dead_fronts"]
        assert np.array_equal(pids, eng1.live.dead_pids)
        assert rec.steps == rec1.steps  # and the counters but the last (flits crossing ranks)
        assert np.array_equal(rec.counters[:, :3], rec1.counters[:, :3])
        assert np.array_equal(by_pid(packets), by_pid(rec1.packets))
        assert np.array_equal(loads, rec1.link_load)

    check_on_every_rank(comm, check)


@pytest.mark.mpi
@pytest.mark.parametrize("small", [False, True], ids=["scanned-in-block", "scanned-in-python"])
def test_same_searches_on_any_number_of_ranks(comm, monkeypatch, small):
    """Past saturation without a deadlock, looks list fronts and searches pace the next
    ones: the ranks' blocks (the look voted inside them) search at the one-rank run's steps
    and end with its budget; also where a rank's scan does not fit the block's scratch."""
    from mpi4py import MPI

    from mpinet.engine.flit import chunk

    if small:  # a look's scratch of one buffer: Python scans that rank's fronts
        real = chunk.Steps._look
        monkeypatch.setattr(chunk.Steps, "_look", lambda self, live, m: real(self, live, 1))
    topo = from_spec("star:4")
    vcs = vcs_needed(make_vc_policy("negative-hop", topo, 16), make_router("shortest", topo))
    runs = []
    for c in (comm, MPI.COMM_SELF):
        eng, _ = engine("star:4", "shortest", "wormhole", 8, vcs, 2, "negative-hop", comm=c)
        runs.append((eng, eng.run(traffic(topo, 0.5, steps=600))))
    assert_same_searches(comm, *runs)


def assert_same_searches(comm, run, run1):
    """A run on ``comm`` and on one rank, neither dead: the same searches (more than 5),
    budget, counters and packets."""
    (eng, rec), (eng1, rec1) = run, run1
    packets = np.concatenate(comm.allgather(rec.packets))

    def check():
        assert rec.deadlock is None and rec1.deadlock is None
        assert eng1.live.searches > 5 and eng.live.searches == eng1.live.searches
        assert eng.live.budget == eng1.live.budget
        assert np.array_equal(rec.counters[:, :3], rec1.counters[:, :3])
        assert np.array_equal(by_pid(packets), by_pid(rec1.packets))

    check_on_every_rank(comm, check)
