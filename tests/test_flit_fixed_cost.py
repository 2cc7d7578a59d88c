"""A flit run's fixed cost outside its steps: the state (links, VC buffers, pools) is built
with the engine, before the engine's clock (as BookSim2 builds its network before its "Total
run time"), and used by the first run; a second run of the same engine builds its own and
gives the same packets."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from test_flit_engine import Packets

from mpinet.engine.flit import engine as fe
from mpinet.engine.flit import state as fs
from mpinet.engine.models import parse_model
from mpinet.netfile import load_topology
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy


def test_the_state_is_built_with_the_engine_and_a_second_run_builds_its_own(monkeypatch):
    topo = load_topology("star:4")
    router = make_router("shortest", topo)
    m = replace(parse_model("all-port", dict.fromkeys(topo.port_classes, 1)), flit=True,
                switching="wormhole", flits=4, vcs=2, vc_buffer=4, vc_policy="any")  # fmt: skip
    rows = [(i, i % 24, (i * 7 + 5) % 24, i // 12) for i in range(72)]
    built = []
    own = fs.FlitState.__init__

    def counted(self, *a, **kw):
        built.append(self)
        own(self, *a, **kw)

    monkeypatch.setattr(fs.FlitState, "__init__", counted)
    eng = fe.FlitEngine(topo, router, m, make_vc_policy("any", topo, 2))
    assert len(built) == 1 and eng._built[0] is built[0]
    first = eng.run(Packets(rows))
    assert len(built) == 1 and eng._built is None  # the first run took the built state
    again = eng.run(Packets(rows))
    assert len(built) == 2  # the second built its own
    other = fe.FlitEngine(topo, router, m, make_vc_policy("any", topo, 2)).run(Packets(rows))
    for rec in (again, other):
        assert np.array_equal(first.packets, rec.packets)
        assert np.array_equal(first.counters, rec.counters)
    assert first.packets.shape[0] == 72 and (first.packets[:, 4] >= 0).all()


def test_a_run_is_set_up_before_its_clock(monkeypatch):
    """Before the engine's clock starts (its ``time.perf_counter``): the compiled steps'
    arrays made and their call's entry point found for step 0's arguments (the draws made
    in the steps: BookSim2's traffic), the collector's youngest generation collected; the
    same packets as step by step. The record reads the pools only with packets in flight."""
    import gc

    from test_flit_active import bernoulli_plan, run
    from test_flit_chunk import assert_identical

    from mpinet.engine.flit import chunk, results

    events = []
    prepare, young, live_rows = chunk.Steps.prepare, fe.collect_young, results.live_rows

    def prepared(self, workload, live):
        prepare(self, workload, live)
        events.append(("prepare", self.c_run.entry is not None, self.drw.on, live is not None))

    def collected():
        young()
        events.append(("young", gc.get_count()[0] if gc.isenabled() else 0))

    class Clock:  # the engine module's time: its perf_counter is the clock's start
        def __getattr__(self, name):
            return getattr(fe_time, name)

        def perf_counter(self):
            events.append(("clock",))
            return fe_time.perf_counter()

    fe_time = fe.time
    monkeypatch.setattr(chunk.Steps, "prepare", prepared)
    monkeypatch.setattr(fe, "collect_young", collected)
    monkeypatch.setattr(fe, "time", Clock())
    monkeypatch.setattr(results, "live_rows", lambda eng: events.append(("live",)) or
                        live_rows(eng))  # fmt: skip
    p = bernoulli_plan("hypercube:4", "anynet-min", "all-port", "wormhole", 0.05, 200)
    run(p, True)  # the kernel compiled or loaded in this process: its set-up finds it
    events.clear()
    _, a = run(p, True)
    assert events[0] == ("prepare", True, True, True)  # the entry point found, draws on
    assert events[1][0] == "young" and events[1][1] < 50 and events[2] == ("clock",)
    assert ("live",) not in events  # nothing in flight at the end: no pool read
    _, b = run(p, False)
    assert_identical(a, b)
    events.clear()
    p = bernoulli_plan("hypercube:4", "anynet-min", "all-port", "wormhole", 0.05, 200)
    eng = fe.FlitEngine(p.topo, p.router, p.model, p.policy, max_steps=100)
    cut = eng.run(p.workload.traffic)  # stopped while injecting: packets in flight
    left = int((cut.packets[:, 4] == -1).sum())
    assert ("live",) in events and left > 0 and left == int(cut.counters[-1, 2])
