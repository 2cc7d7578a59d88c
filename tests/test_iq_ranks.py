"""The iq router (docs/iq-router.md) on several ranks against its one-rank run: the flits
and credits that cross a rank boundary go in the ideal model's exchange, and the gathered
run must be the one-rank run row for row (counters, packets, link loads, hop rows,
injected ids, stuck packets; the flits that crossed ranks counted). Run under mpiexec with
2-4 ranks (``-m mpi --with-mpi``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_flit_ranks import Packets, gathered
from test_iq_router import iq_model

from mpinet.engine.flit.engine import FlitEngine
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec

CASES = [
    # meshconfig's pipeline, 4-flit packets, congested
    ("mesh:4,2", "dor", None, 4, {"routing_delay": 0, "credit_delay": 2, "alloc_iters": 2,
                                  "wait_for_tail_credit": 1}),
    # the torus's random ties and dateline classes, a slower channel
    ("torus:4,2", "dor", "dateline", 2, {"channel_latency": 2}),
    # speculation, speedups, another topology and router
    ("hypercube:4", "shortest", None, 3, {"speculative": 1, "input_speedup": 2,
                                          "internal_speedup": 1.5}),
    # routers without a compiled hop: routes walked into rows, walked again by the receiver
    ("scc:4", "scc-random", None, 2, {}),
    ("fccn:2", "fccn-sroute", None, 3, {"routing_delay": 0}),
]  # fmt: skip


def runs(comm, spec, rname, pol, flits, keys, rows, max_steps=20000):
    from mpi4py import MPI

    topo = from_spec(spec)
    m = iq_model(topo, flits=flits, vcs=4, vc_buffer=2, **keys)
    if pol is not None:
        m = replace(m, vc_policy=pol)
    out = []
    for c in (MPI.COMM_SELF, comm):
        policy = make_vc_policy(m.vc_policy, topo, m.vcs)
        eng = FlitEngine(topo, make_router(rname, topo), m, policy, c, record_hops=True,
                         max_steps=max_steps, seed=5)  # fmt: skip
        out.append(gathered(c, eng.run(Packets(rows))))
    return out


def same(comm, one: dict, many: dict) -> None:
    """Every part equal; the flits that crossed ranks none on one rank, some on more."""
    for key, a in one.items():
        b = many[key]
        if key == "counters":
            assert np.array_equal(a[:, :3], b[:, :3]) and a[:, 3].sum() == 0, key
            assert (b[:, 3].sum() > 0) == (comm.Get_size() > 1), key
            assert (b[:, 3] <= b[:, 0]).all(), key
        else:
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, key


@pytest.mark.mpi
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_ranks_run_the_one_rank_run(case):
    """Congested traffic (every node injecting, tight buffers): the same run on any ranks."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    spec, rname, pol, flits, keys = case
    n = from_spec(spec).num_nodes
    rng = np.random.default_rng(3)
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(40)))
            for i in range(600)]  # fmt: skip
    one, many = runs(comm, spec, rname, pol, flits, keys, rows)
    assert (one["packets"][:, 4] >= 0).all() and one["packets"].shape[0] == 600
    assert one["hops"].shape[0] > 600  # traffic crossed links (and, on 2+ ranks, ranks)
    same(comm, one, many)


@pytest.mark.mpi
def test_a_stuck_run_lists_each_packet_once():
    """Wormhole on a ring of 8 with one VC of one slot deadlocks (8-flit packets, each node
    sending three hops on): every rank stops at the same cycle and the stuck packets are the
    one-rank run's, each once (a packet whose tail is on one rank and head on another is
    listed by the head's)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = from_spec("torus:8,1")
    m = iq_model(topo, flits=8, vcs=1, vc_buffer=1)
    rows = [(i, i % 8, (i % 8 + 3) % 8, 0) for i in range(16)]
    out = []
    for c in (MPI.COMM_SELF, comm):
        policy = make_vc_policy(m.vc_policy, topo, m.vcs)
        eng = FlitEngine(
            topo, make_router("dor", topo), m, policy, c, max_steps=2000, seed=1, record_hops=True
        )
        out.append(gathered(c, eng.run(Packets(rows))))
    one, many = out
    assert one["stuck"], "the ring must deadlock"
    same(comm, one, many)
