"""The iq router's deadlock look while packets are injected (docs/iq-router.md, "Deadlocks";
mpinet/engine/flit/iq_looks.py): a network that deadlocks while its terminals still inject
stops at the look that finds it (the ideal model's look steps), the report names a cycle the
routers' state confirms (every VC of it held and waiting for the next), and the fronts it
names never move again when the state is run on; a loaded network without deadlock runs to
its end with its looks searched. On several ranks (``-m mpi --with-mpi``, 2 and 3 ranks)
the run, its stop and its report are the one-rank run's."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_flit_ranks import Packets, gathered
from test_iq_deadlock import state_errors
from test_iq_ranks import same
from test_iq_router import iq_model

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit import iq_looks
from mpinet.engine.flit import iq_step as ist
from mpinet.engine.flit.deadlock_live import CHECK_EVERY
from mpinet.engine.flit.engine import FlitEngine
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from mpinet.workloads import Unicast

#: (network, router, flits, VCs, slots per VC, iq keys, packets, in how many first cycles):
#: each deadlocks under vc_policy "any" long before its last injection
LIVE = {
    "ring-one-vc": ("torus:8,1", "dor", 8, 1, 2, {}, 800, 1000),
    "ring-tail-credit": ("torus:8,1", "dor", 8, 1, 2,
                         {"wait_for_tail_credit": 1, "credit_delay": 2}, 800, 1000),
    "star-tail-credit": ("star:4", "shortest", 8, 1, 2, {"wait_for_tail_credit": 1}, 3000, 1000),
}  # fmt: skip


def live_run(name: str, comm=None, live: bool = True):
    spec, rname, flits, vcs, buf, keys, npk, span = LIVE[name]
    topo = from_spec(spec)
    m = replace(iq_model(topo, flits=flits, vcs=vcs, vc_buffer=buf, **keys), vc_policy="any")
    rng = np.random.default_rng(3)
    n = topo.num_nodes
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(span)))
            for i in range(npk)]  # fmt: skip
    eng = FlitEngine(topo, make_router(rname, topo), m, make_vc_policy("any", topo, vcs), comm,
                     max_steps=20000, seed=5, record_hops=True, live_check=live)  # fmt: skip
    return eng.run(Packets(rows)), eng, np.array(rows, np.int64)


def fronts(eng, cycle: list[dict]) -> list[int]:
    """The front flit (packet id x flits + index) of each VC buffer of ``cycle``."""
    topo = eng.topo
    s, prm, *_ = eng.iq_state
    node = {topo.label(u): u for u in range(topo.num_nodes)}
    nb = np.asarray(topo.neighbors(np.arange(topo.num_nodes)))
    out = []
    for c in cycle:
        u, w = node[c["node"]], node[c["next"]]
        (q,) = np.flatnonzero(nb[w] == u)
        q = s.sport[(w - prm.lo) * prm.deg + q]  # the state's port (BookSim's order)
        iv = ((w - prm.lo) * prm.nport + q) * prm.nvc + c["vc"]
        f = int(s.ib[iv * prm.bsz + s.hv[iv, il.IBH]])
        out.append(int(s.pk_pid[f // prm.fl]) * prm.fl + f % prm.fl if s.hv[iv, il.IBN] else -1)
    return out


def run_on(eng, cycles: int) -> np.ndarray:
    """Run the state ``eng``'s run left ``cycles`` more cycles without new packets; the
    packets delivered meanwhile."""
    s, prm, rule, vrule, t = eng.iq_state
    e = np.zeros(0, np.int64)
    inj = (np.zeros(cycles + 1, np.int64), e, e, e, np.zeros((0, 1), np.int64))
    status = np.zeros(12, np.int64)
    deliv = np.empty((s.pk_pid.size + prm.nnode + 1, 7), np.int64)
    hop = np.empty((cycles * prm.nnode * prm.nport + 1, 5), np.int64)
    ist.run_block(t, t + cycles, t + cycles, 0, 0, 10**9, np.array([0.0, 1.0]), inj, prm, s,
                  rule, vrule, deliv, hop, np.zeros((cycles, 6), np.int64), status,
                  iq_looks.arrays(False, 0, 1))  # fmt: skip
    assert status[1] == t + cycles
    return deliv[: int(status[6]), 0]


@pytest.mark.parametrize("name", list(LIVE))
def test_a_deadlock_while_injecting_stops_the_run(name):
    rec, eng, rows = live_run(name)
    dl = rec.deadlock
    last = int(rows[:, 3].max())
    assert dl is not None and dl["found"] == "check", "the look must find the deadlock"
    t = dl["step"]
    assert t == rec.steps < last and t % CHECK_EVERY == 0
    left = int((rec.packets[:, 4] < 0).sum())
    assert dl["blocked_packets"] == left > 0 and dl["dead_fronts"] > 0
    # the packets injected are those of the cycles run, each once
    assert np.array_equal(np.sort(rec.injected_ids), rows[rows[:, 3] <= t, 0])
    assert np.array_equal(np.sort(rec.packets[:, 0]), rows[rows[:, 3] <= t, 0])
    cyc = dl["cycle"]
    assert len(cyc) >= 2 and [c["next"] for c in cyc] == [c["node"] for c in cyc[1:] + cyc[:1]]
    errors, checked = state_errors(eng, dl)
    assert not errors and checked == len(cyc), errors
    hops = " ".join(f"{c['node']} --{c['port']}--> (VC {c['vc']})" for c in cyc)
    assert dl["message"] == (f"deadlock in step {t}: {dl['dead_fronts']:,} worm pieces can "
                             f"never move ({left:,} packets in flight, traffic still injected); "
                             f"wait-for cycle of {len(cyc)} virtual channels: {hops} "
                             f"{cyc[0]['node']}")  # fmt: skip
    # dead for good: run on, the cycle's fronts stay and no dead front's packet arrives
    before = fronts(eng, cyc)
    got = run_on(eng, 400)
    assert fronts(eng, cyc) == before and min(before) >= 0
    assert not np.isin(got, eng.live.dead_pids).any() and eng.live.dead_pids.size
    # without the looks the run goes on to its last injection and stops moving after it
    later, _, _ = live_run(name, live=False)
    assert later.deadlock is not None and later.deadlock["step"] > last


def test_a_loaded_network_without_deadlock_reports_none():
    """Dimension order on a mesh cannot deadlock: past saturation (queues growing at every
    terminal, most fronts blocked at each look) the looks search and find nothing."""
    topo = from_spec("mesh:4,2")
    m = iq_model(topo, flits=4, vcs=2, vc_buffer=2, routing_delay=0, credit_delay=2)
    w = Unicast(topo, "uniform", injection="bernoulli", rate=0.5, steps=1500, seed=3)
    eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy("any", topo, 2),
                     max_steps=200000, seed=3)  # fmt: skip
    eng.iq_lean = False  # the looks run on the general path (these keys now take the lean)
    rec = eng.run(w)
    assert rec.deadlock is None and (rec.packets[:, 4] >= 0).all()
    assert eng.live.searched() > 3  # looks that listed blocked fronts and searched them
    assert rec.steps > 2 * 1500  # past saturation: the queues drained long after injection


@pytest.mark.mpi
@pytest.mark.parametrize("name", list(LIVE))
def test_the_look_stops_every_rank_as_one_rank(name):
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    one, _, _ = live_run(name, MPI.COMM_SELF)
    rec, eng, _ = live_run(name, comm)
    assert rec.deadlock is not None and rec.deadlock == one.deadlock
    assert rec.deadlock["found"] == "check"
    same(comm, gathered(MPI.COMM_SELF, one), gathered(comm, rec))
    errors, checked = state_errors(eng, rec.deadlock)
    assert not sum(comm.allgather(errors), []), errors
    assert comm.allreduce(checked) == len(rec.deadlock["cycle"])


@pytest.mark.mpi
def test_loaded_ranks_without_deadlock_run_the_one_rank_run():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = from_spec("mesh:4,2")
    m = iq_model(topo, flits=4, vcs=2, vc_buffer=2, routing_delay=0, credit_delay=2)
    out = []
    for c in (MPI.COMM_SELF, comm):
        w = Unicast(topo, "uniform", injection="bernoulli", rate=0.5, steps=600, seed=3)
        eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy("any", topo, 2), c,
                         max_steps=200000, seed=3, record_hops=True)  # fmt: skip
        eng.iq_lean = False  # one rank's looks too (its keys now take the lean path)
        rec = eng.run(w)
        assert rec.deadlock is None
        out.append((gathered(c, rec), eng.live.searched()))
    same(comm, out[0][0], out[1][0])
    assert out[0][1] == out[1][1] > 0  # the same looks searched


def outside_stages(s, prm) -> np.ndarray:
    """The input VCs holding flits with no item in any stage set (``m_rt | m_va | m_sa``):
    the look walks those sets' bits for the VCs holding flits, so this must be empty."""
    niv = (prm.hi - prm.lo) * prm.nport * prm.nvc
    bits = np.unpackbits((s.m_rt | s.m_va | s.m_sa).view(np.uint8), bitorder="little")
    return np.flatnonzero((s.hv[:niv, il.IBN] > 0) & (bits[:niv] == 0))


@pytest.mark.parametrize(
    "keys",
    [
        {"routing_delay": 2},  # heads in route computation at a cycle's end
        {"routing_delay": 0, "speculative": 1, "output_speedup": 2, "wait_for_tail_credit": 1},
        {"routing_delay": 0, "input_speedup": 2, "sw_alloc_delay": 2, "internal_speedup": 2.0},
    ],
)
def test_every_input_vc_holding_flits_has_a_stage_item(keys):
    """The look lists the input VCs holding flits from the stage sets: at any cycle of a loaded
    mesh (past saturation: fronts wait for credits and VCs) and of a deadlocked ring, every
    such VC has an item in a stage."""
    topo = from_spec("mesh:4,2")
    m = iq_model(topo, flits=4, vcs=2, vc_buffer=2, credit_delay=2, **keys)
    held = 0
    for cycles in (29, 150, 401):
        w = Unicast(topo, "uniform", injection="bernoulli", rate=0.5, steps=600, seed=3)
        eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy("any", topo, 2),
                         max_steps=cycles, seed=3)  # fmt: skip
        eng.run(w)
        s, prm, _, _, t = eng.iq_state
        assert t == cycles and outside_stages(s, prm).size == 0
        held += int((s.hv[:, il.IBN] > 0).sum())
    _, eng, _ = live_run("ring-tail-credit")
    s, prm, *_ = eng.iq_state
    assert outside_stages(s, prm).size == 0
    assert held > 0 and (s.hv[:, il.IBN] > 0).any()  # the check saw VCs holding flits
