"""The kernels' two kinds (session 9, issue 33): a rank's state small enough to stay in a
core's caches runs kernels compiled without prefetches (``Params.far`` None), a larger one
with them (True); both give the same packets, counters and link loads, on the compiled
steps and step by step."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_flit_engine import Packets

from mpinet.engine.flit import engine as fe
from mpinet.engine.flit import layout
from mpinet.engine.models import parse_model
from mpinet.netfile import load_topology
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy


def test_far_at_the_threshold():
    assert layout.far(0) is None and layout.far(layout.PREFETCH_MIN - 1) is None
    assert layout.far(layout.PREFETCH_MIN) is True and layout.far(10 * layout.PREFETCH_MIN)


def _run(topo, compiled, force=None, monkeypatch=None):
    if force is not None:
        monkeypatch.setattr(fe, "far", lambda nvcbuf: force)
    m = replace(parse_model("all-port", dict.fromkeys(topo.port_classes, 1)), flit=True,
                switching="wormhole", flits=4, vcs=2, vc_buffer=4, vc_policy="any")  # fmt: skip
    eng = fe.FlitEngine(topo, make_router("shortest", topo), m, make_vc_policy("any", topo, 2),
                        compiled_steps=compiled)  # fmt: skip
    n = topo.num_nodes
    rows = [(i, i % n, (i * 7 + 5) % n, i // 40) for i in range(600)]  # contention: VCs wait
    rec = eng.run(Packets(rows))
    return eng, rec


@pytest.mark.parametrize(
    "compiled", [False, pytest.param(True, marks=pytest.mark.slow)]
)  # the compiled steps' prefetching kind: a kernel of its own to compile (about a minute)
def test_prefetching_kernels_give_the_same_run(compiled, monkeypatch):
    topo = load_topology("star:4")
    eng, near = _run(topo, compiled)
    assert eng.prm.far is None  # 24 nodes: far below layout.PREFETCH_MIN
    eng, far = _run(topo, compiled, True, monkeypatch)
    assert eng.prm.far is True
    assert near.packets.shape[0] == 600 and (near.packets[:, 4] >= 0).all()
    for a, b in ((near.packets, far.packets), (near.counters, far.counters),
                 (near.link_load, far.link_load)):  # fmt: skip
        assert np.array_equal(a, b)
