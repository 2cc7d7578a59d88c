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
