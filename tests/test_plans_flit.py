"""The flit engine's memory plan (:mod:`mpinet.jobs.plans_flit`) against the engine itself.

Each figure of the plan is compared with what the engine allocates, computed here from its
own arrays (``nbytes`` of :class:`~mpinet.engine.flit.state.FlitState` and of the live
deadlock check's snapshot, tracemalloc's peak while the state is built, the segments and
packets a real run holds): the plan grows with ``vcs``, ``flits`` and ``vc_buffer`` as the
engine's allocations do. Measured peaks of whole runs are in docs/reliability.md.
"""

from __future__ import annotations

import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest

from mpinet.engine.flit import state as fs
from mpinet.engine.flit.deadlock_live import LiveCheck
from mpinet.engine.state import neighbor_block
from mpinet.errors import ResourceError
from mpinet.jobs import plans_flit as pf
from mpinet.jobs import resources as rs
from mpinet.jobs.execute import execute, plan
from mpinet.jobs.spec import validate
from mpinet.topology import from_spec

#: the arrays of FlitState indexed by buffer (VC buffers, then source queues)
PER_BUFFER = ("bhead", "btail", "bocc", "inact", "act", "park")
#: the arrays indexed by VC buffer only (the sender's side, and its credit source)
PER_VC = ("credit", "held", "ucred", "pwait")


def _state(topo, vcs: int) -> fs.FlitState:
    n, deg = topo.num_nodes, topo.degree
    nodes = np.repeat(np.arange(n, dtype=np.int64), deg)
    rev = topo.reverse_of(nodes, np.tile(np.arange(deg), n))
    nbt = neighbor_block(topo, 0, n).astype(np.int64)
    return fs.FlitState(n, deg, vcs, 4, nbt, 1, 0, rev, np.ones(deg, np.int64))


def _job(topo: str = "hypercube:6", **model) -> object:
    m = {"switching": "wormhole", "flits": 16, "vcs": 2, "vc_buffer": 4, **model}
    return validate({"topology": topo, "workload": {"kind": "uniform", "packets": 1},
                     "router": {"name": "hypercube-ecube"}, "model": m})  # fmt: skip


def _bernoulli(topo: str, rate: float, steps: int, **model) -> object:
    m = {"switching": "wormhole", "flits": 16, "vcs": 2, "vc_buffer": 4, **model}
    w = {"kind": "uniform", "injection": "bernoulli", "rate": rate, "steps": steps}
    return validate({"topology": topo, "workload": w, "router": {"name": "hypercube-ecube"},
                     "model": m})  # fmt: skip


def _buffer_bytes(st: fs.FlitState) -> int:
    return sum(getattr(st, a).nbytes for a in PER_BUFFER + PER_VC)


@pytest.mark.parametrize("spec", ["hypercube:5", "star:5"])
def test_vc_bytes_are_the_engines_per_vc_arrays(spec):
    topo = from_spec(spec)
    nl = topo.num_nodes * topo.degree
    sizes = {v: _buffer_bytes(_state(topo, v)) for v in (1, 3, 8)}
    # every VC more is VC_BYTES more per link, exactly
    assert sizes[3] - sizes[1] == pf.VC_BYTES * nl * 2
    assert sizes[8] - sizes[3] == pf.VC_BYTES * nl * 5
    # what stays is the source queue of each link, within LINK_BYTES
    queue = sizes[1] - pf.VC_BYTES * nl
    assert 0 < queue <= pf.LINK_BYTES * nl


def test_snapshot_bytes_are_the_live_checks():
    topo = from_spec("hypercube:5")
    st = _state(topo, 4)
    eng = SimpleNamespace(topo=topo, deg=topo.degree, vcs=4, st=st)
    snap = LiveCheck(eng).snap
    assert snap.nbytes == pf.SNAP_BYTES * st.bhead.size  # one row per buffer


@pytest.mark.parametrize("vcs", [4, 16])
def test_the_build_peak_is_within_the_plan(vcs):
    """tracemalloc's peak while FlitState is built (its index temporaries) against the plan's
    links and VC buffers without the live check."""
    topo = from_spec("hypercube:8")
    tracemalloc.start()
    try:
        _state(topo, vcs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    est = rs.Estimate("t")
    m = pf.flit_model(_job(vcs=vcs).model)
    pf.flit_state(est, topo, 1, m, None, 1, live=False)
    planned = est.parts["VC buffers"] + est.parts["flit links"]
    assert 0.67 <= peak / planned <= 1.5, (peak, planned)


def test_the_plan_grows_with_vcs_as_the_engine_does():
    topo = from_spec("hypercube:6")
    nl = topo.num_nodes * topo.degree
    part = {v: rs.estimate_run(_job(vcs=v), topo, 1).parts["VC buffers"] for v in (1, 8, 64)}
    eng = {v: _buffer_bytes(_state(topo, v)) for v in (1, 8)}
    # the plan's growth per VC is the engine's, or the build's temporaries when larger
    per_vc = (part[64] - part[8]) / (56 * nl)
    assert per_vc == max(pf.VC_BYTES, pf.VC_BUILD_BYTES)
    assert per_vc >= (eng[8] - eng[1]) / (7 * nl)
    # a run injecting after step 16 keeps the live check's snapshot: more per VC
    late = {v: rs.estimate_run(_bernoulli("hypercube:6", 0.01, 40, vcs=v), topo, 1)
            for v in (1, 8)}  # fmt: skip
    grow = (late[8].parts["VC buffers"] - late[1].parts["VC buffers"]) / (7 * nl)
    assert grow == pf.VC_BYTES + pf.SNAP_BYTES


def _peak_segments(job, monkeypatch) -> tuple[int, int]:
    """The most segments and packet records a real run held at once."""
    seen = {"segs": 0, "pkts": 0}
    reserve = fs.FlitState.reserve

    def watch(self, segs, pkts):
        seen["segs"] = max(seen["segs"], self.segments_used)
        seen["pkts"] = max(seen["pkts"], self.packets_used)
        return reserve(self, segs, pkts)

    monkeypatch.setattr(fs.FlitState, "reserve", watch)
    # the compiled steps reserve before each call: one step a call, so every step is seen
    from mpinet.engine.flit import chunk

    monkeypatch.setattr(chunk, "MAX_CHUNK", 1)
    monkeypatch.setattr(chunk, "ONE_RANK_CHUNK", 1)  # one rank without a progress line
    res = execute(plan(job), None)
    assert res["stats"]["delivered"] == res["stats"]["injected"]
    return seen["segs"], seen["pkts"]


@pytest.mark.parametrize("flits,buffer", [(4, 4), (16, 4), (16, 1), (32, 2)])
def test_segments_grow_with_flits_as_the_engines_do(flits, buffer, monkeypatch):
    job = _job(flits=flits, vc_buffer=buffer, vcs=4)
    topo = from_spec("hypercube:6")
    m = pf.flit_model(job.model)
    hops = rs.mean_hops(topo)
    spans = pf.segments_per_packet(m, hops)
    assert spans == 1 + min(flits, int(np.ceil(2 * hops)) + 1)
    segs, pkts = _peak_segments(job, monkeypatch)
    flight = topo.num_nodes  # one packet per node, all at step 0
    # the segments in use: each packet's source queue, one per VC beyond (a worm's VC)
    assert flight < segs <= flight + min(flight * (spans - 1), topo.num_nodes * topo.degree * 4)
    assert pkts <= flight
    est = rs.estimate_run(job, topo, 1)
    assert est.parts["segments"] >= 2 * segs * pf.SEG_BYTES
    # longer worms plan more segments; the buffer size bounds none of the engine's arrays
    more = rs.estimate_run(_job(flits=2 * flits, vc_buffer=buffer, vcs=4), topo, 1)
    assert more.parts["segments"] >= est.parts["segments"]
    other = rs.estimate_run(_job(flits=flits, vc_buffer=buffer + 3, vcs=4), topo, 1)
    assert other.parts == est.parts


def test_store_and_forward_packets_hold_two_segments(monkeypatch):
    job = _job(switching="store-and-forward", flits=8, vc_buffer=8, vcs=2)
    topo = from_spec("hypercube:6")
    assert pf.segments_per_packet(pf.flit_model(job.model), rs.mean_hops(topo)) == 2
    segs, _ = _peak_segments(job, monkeypatch)
    assert segs <= 2 * topo.num_nodes


def _record(job):
    """The engine's RunRecord of ``job`` (per-step counters: flits, delivered, in flight)."""
    from mpinet.jobs.switching import make_engine

    p = plan(job)
    eng = make_engine(p, None, seed=job.seed, max_steps=job.max_steps)
    return eng.run(p.workload.traffic)


def _footprint(job, topo):
    from mpinet.workloads.registry import WORKLOADS

    return WORKLOADS.get(job.workload["kind"]).footprint(job.workload, topo)


def test_in_flight_of_light_uniform_traffic_bounds_the_run():
    job = _bernoulli("hypercube:8", 0.01, 60, vcs=2)
    topo = from_spec("hypercube:8")
    rec = _record(job)
    most = int(rec.counters[:, 2].max())
    planned = pf.in_flight(job, topo, _footprint(job, topo), pf.flit_model(job.model))
    assert 0 < most <= planned
    # light traffic: not every packet of the run at once, as the packet plan assumes
    assert planned < _footprint(job, topo).in_flight


def test_heavy_or_uneven_traffic_plans_every_packet_in_flight():
    topo = from_spec("hypercube:8")
    for job in (_bernoulli("hypercube:8", 0.5, 60), _bernoulli("hypercube:8", 0.01, 60,
                                                                 flits=4096)):  # fmt: skip
        fp = _footprint(job, topo)
        assert pf.in_flight(job, topo, fp, pf.flit_model(job.model)) == fp.in_flight


def test_buffers_beyond_int32_are_refused_before_work():
    topo = from_spec("hypercube:26")
    with pytest.raises(ResourceError, match=r"over the flit engine's 2\*\*31; way out: \d+ or"):
        pf.check_buffers(topo, pf.flit_model({"vcs": 64}), 1)
    pf.check_buffers(topo, pf.flit_model({"vcs": 64}), 64)  # 64 ranks: under 2**31 each


def test_a_refusal_names_the_vcs_that_fit(monkeypatch):
    monkeypatch.setenv("MPINET_MEMORY_LIMIT", "600M")
    job = _bernoulli("hypercube:14", 0.005, 50, vcs=64)
    topo = from_spec("hypercube:14")
    with pytest.raises(ResourceError, match=r"fewer VCs \(model\.vcs <= (\d+) fits\)") as exc:
        rs.plan_run(job, topo, 1, 1)
    import re

    k = int(re.search(r"model\.vcs <= (\d+) fits", str(exc.value)).group(1))
    have = rs.per_rank_memory(1)
    fits = rs.estimate_run(_bernoulli("hypercube:14", 0.005, 50, vcs=k), topo, 1)
    over = rs.estimate_run(_bernoulli("hypercube:14", 0.005, 50, vcs=k + 1), topo, 1)
    assert fits.bytes <= have < over.bytes


def test_the_packet_engine_plan_is_unchanged_without_switching_keys():
    topo = from_spec("hypercube:6")
    job = validate({"topology": "hypercube:6", "workload": {"kind": "uniform", "packets": 1},
                    "router": {"name": "hypercube-ecube"}})  # fmt: skip
    est = rs.estimate_run(job, topo, 1)
    assert "VC buffers" not in est.parts and "link queues" in est.parts
    assert pf.flit_model(job.model) is None
