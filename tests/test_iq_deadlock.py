"""The iq router's deadlock report (docs/iq-router.md, mpinet/engine/flit/iq_deadlock.py): a
run that stops moving names one wait-for cycle as the ideal model's report does, and the
cycle is checked against the routers' state left by the run (every VC of the cycle holds a
front flit that waits for the next VC of the cycle, which another packet holds or has
filled). On several ranks (``-m mpi --with-mpi``, 2 and 3 ranks) the report is the
one-rank run's, and each rank checks the part of the cycle at its own nodes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_flit_ranks import Packets, gathered
from test_iq_ranks import same
from test_iq_router import iq_model

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit import iq_router as ir
from mpinet.engine.flit.engine import FlitEngine
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec

RING = [(i, i % 8, (i % 8 + 3) % 8, 0) for i in range(16)]  # each node three hops on, twice
#: (network, router, flits, VCs, slots per VC, iq keys, packets: a list, or (how many, in
#: how many first cycles) at random); each deadlocks under vc_policy "any"
CASES = {
    "ring-one-vc": ("torus:8,1", "dor", 8, 1, 1, {}, RING),
    "ring-two-vcs": ("torus:8,1", "dor", 4, 2, 2, {}, (800, 4)),
    "ring-tail-credit": ("torus:8,1", "dor", 8, 1, 2,
                         {"wait_for_tail_credit": 1, "credit_delay": 2}, (100, 1)),
    "star-tail-credit": ("star:4", "shortest", 8, 1, 2, {"wait_for_tail_credit": 1}, (300, 1)),
}  # fmt: skip


def run_case(name: str, comm=None):
    spec, rname, flits, vcs, buf, keys, pk = CASES[name]
    topo = from_spec(spec)
    m = replace(iq_model(topo, flits=flits, vcs=vcs, vc_buffer=buf, **keys), vc_policy="any")
    if isinstance(pk, tuple):
        rng = np.random.default_rng(3)
        n = topo.num_nodes
        pk = [(i, int(rng.integers(n)), int(rng.integers(n)), int(rng.integers(pk[1])))
              for i in range(pk[0])]  # fmt: skip
    eng = FlitEngine(topo, make_router(rname, topo), m, make_vc_policy("any", topo, vcs), comm,
                     max_steps=20000, seed=5, record_hops=True)  # fmt: skip
    return eng.run(Packets(pk)), eng


def state_errors(eng, dl: dict) -> tuple[list[str], int]:
    """What in the cycle ``dl["cycle"]`` the state of ``eng``'s run contradicts, for the VCs
    whose buffer is at this rank's nodes; and how many VCs were checked. Independent of the
    adapter: nodes from their labels, ports from the neighbour lists."""
    topo = eng.topo
    s, prm, *_ = eng.iq_state
    node = {topo.label(u): u for u in range(topo.num_nodes)}
    nb = np.asarray(topo.neighbors(np.arange(topo.num_nodes)))
    nport, nvc, bsz, fl = prm.nport, prm.nvc, prm.bsz, prm.fl
    cyc, errors, checked = dl["cycle"], [], 0
    for i, c in enumerate(cyc):
        nxt = cyc[(i + 1) % len(cyc)]
        u, w = node[c["node"]], node[c["next"]]
        p = topo.ports.index(c["port"])
        if nb[u, p] != w or nxt["node"] != c["next"]:
            errors.append(f"{c}: not a link of the cycle")
            continue
        if not prm.lo <= w < prm.hi:
            continue
        checked += 1
        (q,) = np.flatnonzero(nb[w] == u)  # the input port at w of the link from u
        row = (w - prm.lo) * prm.deg  # the state's port of each of w's (BookSim's order)
        q = s.sport[row + q]
        iv = ((w - prm.lo) * nport + q) * nvc + c["vc"]  # the rank's arrays
        op, v2 = s.sport[row + topo.ports.index(nxt["port"])], nxt["vc"]
        k = ((w - prm.lo) * nport + op) * nvc + v2  # the downstream state of the VC waited for
        if s.hv[iv, il.IBN] <= 0:
            errors.append(f"{c}: no flit in the VC")
            continue
        pk = s.ib[iv * bsz + s.hv[iv, il.IBH]] // fl
        if s.pk_dst[pk] == w or s.bs_use[k] != 1:
            errors.append(f"{c}: its front is at its destination, or {nxt} is free")
        elif s.hv[iv, il.VST] == ir.ACTIVE:  # it holds the next VC, whose buffer has no room
            if (s.hv[iv, il.VOP], s.hv[iv, il.VOV]) != (op, v2) or s.bs_cred[k] > 0:
                errors.append(f"{c}: active, not waiting for credits of {nxt}")
        elif s.hv[iv, il.VST] == ir.VC_ALLOC:  # every VC of its range held, the next the lowest
            held = s.bs_use[
                ((w - prm.lo) * nport + op) * nvc + np.arange(s.va[iv, il.VLO], s.va[iv, il.VHI])
            ]
            if s.va[iv, il.VRP] != op or s.va[iv, il.VLO] != v2 or not held.all():
                errors.append(f"{c}: its head does not wait for {nxt}")
        else:
            errors.append(f"{c}: its front is neither active nor allocating a VC")
    return errors, checked


@pytest.mark.parametrize("name", list(CASES))
def test_a_stuck_iq_run_names_a_wait_for_cycle(name):
    rec, eng = run_case(name)
    dl = rec.deadlock
    assert dl is not None, "the case must deadlock"
    left = int((rec.packets[:, 4] < 0).sum())
    assert dl["blocked_packets"] == left > 0 and rec.stuck  # (the stuck list is capped)
    assert dl["step"] == rec.steps and dl["switching"] == "wormhole"
    assert (dl["vcs"], dl["flits"]) == (CASES[name][3], CASES[name][2])
    cyc = dl["cycle"]
    assert len(cyc) >= 2 and len({(c["node"], c["port"], c["vc"]) for c in cyc}) == len(cyc)
    assert [c["next"] for c in cyc] == [c["node"] for c in cyc[1:] + cyc[:1]]
    errors, checked = state_errors(eng, dl)
    assert not errors and checked == len(cyc), errors
    hops = " ".join(f"{c['node']} --{c['port']}--> (VC {c['vc']})" for c in cyc)
    assert dl["message"] == (f"deadlock in step {dl['step']}: {left:,} packets in flight and "
                             f"no flit can move; wait-for cycle of {len(cyc)} virtual "
                             f"channels: {hops} {cyc[0]['node']}")  # fmt: skip


def test_a_run_that_completes_reports_no_deadlock():
    topo = from_spec("torus:8,1")
    m = iq_model(topo, flits=8, vcs=2, vc_buffer=2)
    m = replace(m, vc_policy="dateline")
    eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy("dateline", topo, 2),
                     max_steps=20000, seed=5)  # fmt: skip
    rec = eng.run(Packets(RING))
    assert rec.deadlock is None and (rec.packets[:, 4] >= 0).all()


@pytest.mark.mpi
@pytest.mark.parametrize("name", ["ring-one-vc", "ring-two-vcs", "star-tail-credit"])
def test_the_cycle_is_the_one_rank_runs(name):
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    one, _ = run_case(name, MPI.COMM_SELF)
    rec, eng = run_case(name, comm)
    assert rec.deadlock is not None and rec.deadlock == one.deadlock
    same(comm, gathered(MPI.COMM_SELF, one), gathered(comm, rec))
    errors, checked = state_errors(eng, rec.deadlock)
    assert not sum(comm.allgather(errors), []), errors
    assert comm.allreduce(checked) == len(rec.deadlock["cycle"])


def test_mpinet_run_reports_the_cycle(run_mpinet, tmp_path):
    """``mpinet run`` under iq: exit 1, the cycle in the JSON and the text, on 1 and 2 ranks
    alike; the trace written."""
    job = str(Path(__file__).resolve().parent.parent / "jobs" / "switching" / "deadlock.toml")
    # six packets a node: under iq the job's burst of four completes on star:4 (its routers'
    # ties broken by BookSim's anynet port numbers, docs/iq-router.md "Port numbers")
    base = ["run", job, "--set", "model.router=iq", "--set", "workload.packets=6"]
    res = []
    for ranks in (1, 2):
        out = tmp_path / f"t{ranks}.h5"
        proc = run_mpinet([*base, "--json", "--out", str(out)], ranks=ranks)
        assert proc.returncode == 1, proc.stderr[-2000:]
        r = json.loads(proc.stdout)
        assert r["trace"] == str(out) and out.exists()
        res.append(r["stats"]["deadlock"])
    assert res[0] == res[1] and len(res[0]["cycle"]) >= 2
    text = run_mpinet([*base, "--quiet"]).stdout
    assert f"DEADLOCK in step {res[0]['step']:,}" in text
    assert f"one wait-for cycle of {len(res[0]['cycle'])} virtual channels" in text
