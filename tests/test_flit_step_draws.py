"""The injections drawn inside the one-rank compiled steps (issue 33: a fresh run's fixed
cost): the same packets as the workload draws, and runs row for row as the step-by-step path,
whether the steps draw or read their injections."""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_active import bernoulli_plan, run
from test_flit_chunk import assert_identical

from mpinet.engine.flit import chunk
from mpinet.engine.flit import step_draws as sd
from mpinet.jobs.execute import plan
from mpinet.jobs.spec import load_job
from mpinet.routing.base import Router
from mpinet.routing.shortest import ShortestRouter
from mpinet.topology import from_spec
from mpinet.workloads.unicast import Unicast


class _Plain(Router):
    """A router whose headers start empty (the base's), as ``anynet-min``'s."""

    name = "plain"

    def next_port(self, nodes, dests, headers, ctx):
        raise NotImplementedError


class _Eng:
    """What :func:`~mpinet.engine.flit.step_draws.make_draw` reads of an engine."""

    def __init__(self, lo, hi, router):
        self.lo, self.hi, self.router = lo, hi, router
        self.st = type("St", (), {"hw": 0})()


@pytest.mark.parametrize("rate", [0.003, 0.2, 1.0])
@pytest.mark.parametrize(("lo", "hi"), [(0, 64), (13, 50)])
def test_draws_are_the_workloads(rate, lo, hi):
    """Step by step in the kernel: the ids, sources and destinations the workload draws
    (its blocks of :func:`mpinet.rng.grid_below` and :func:`mpinet.rng.integers`)."""
    topo = from_spec("hypercube:6")
    w = Unicast(topo, "uniform", injection="bernoulli", rate=rate, steps=300, seed=7)
    drw, inj = sd.make_draw(_Eng(lo, hi, _Plain(topo)), w, walked=False)
    assert drw.on
    sd.draw_keys(drw)
    total = 0
    for t in range(302):  # past the last injection step (299): none
        ni = sd.draw_step(t, drw, inj.pid, inj.src, inj.dst)
        pid, src, dst = w.injections(lo, hi, t)
        total += ni
        assert ni == pid.size
        np.testing.assert_array_equal(inj.pid[:ni], pid)
        np.testing.assert_array_equal(inj.src[:ni], src)
        np.testing.assert_array_equal(inj.dst[:ni], dst)
        assert (inj.dst[:ni] != inj.src[:ni]).all()
    assert total > 0


def test_no_draw_for_other_workloads():
    """Other patterns, injections, walked routes and routers with headers: drawn in Python."""
    topo = from_spec("hypercube:4")
    eng = _Eng(0, 16, _Plain(topo))
    for w in (Unicast(topo, "permutation", injection="bernoulli", rate=0.1, steps=10),
              Unicast(topo, "uniform", packets=2)):  # fmt: skip
        assert not sd.make_draw(eng, w, walked=False)[0].on
    w = Unicast(topo, "uniform", injection="bernoulli", rate=0.1, steps=10)
    assert not sd.make_draw(eng, w, walked=True)[0].on
    assert sd.make_draw(eng, w, walked=False)[0].on
    shortest = ShortestRouter(topo)  # translated: its headers carry the route's key
    assert shortest.translated and not sd.make_draw(_Eng(0, 16, shortest), w, False)[0].on


def _plan(spec, router, pattern, rate, steps, flits):
    sets = [(["topology"], spec), (["router", "name"], router), (["trace", "level"], "none"),
            (["model", "switching"], "wormhole"), (["model", "flits"], flits),
            (["model", "vcs"], 2), (["model", "vc_buffer"], 4), (["workload", "kind"], pattern),
            (["workload", "injection"], "bernoulli"), (["workload", "rate"], rate),
            (["workload", "steps"], steps)]  # fmt: skip
    return plan(load_job(None, sets), ranks=1)


@pytest.mark.parametrize(("pattern", "inside"), [("uniform", True), ("permutation", False)])
def test_runs_equal_the_steps(pattern, inside, monkeypatch):
    """hypercube:8 as the speed table runs it (L = 16 and 1), drawn in the steps or not;
    with the ids a call keeps (``IDS``) too few for its steps, so that calls return for
    room and draw the step again."""
    made = []
    own = chunk.Steps._injections

    def counted(self, *a, **k):
        made.append(a)
        return own(self, *a, **k)

    monkeypatch.setattr(chunk.Steps, "_injections", counted)
    for flits, rate in ((16, 0.01), (1, 0.3)):
        p = _plan("hypercube:8", "anynet-min", pattern, rate, 200, flits)
        _, b = run(p, False)
        for ids in (sd.IDS, 5):
            monkeypatch.setattr(sd, "IDS", ids)
            made.clear()
            _, a = run(p, True)
            assert (not made) == inside
            assert_identical(a, b)
        assert a.injected_ids.size > 100


def test_draws_inside_a_run(monkeypatch):
    """The steps of a uniform Bernoulli run draw inside: no block is drawn in Python, and
    the calls that return for room (a step's draws past ``most``) draw that step again."""
    made = []
    own = chunk.Steps._injections

    def counted(self, *a, **k):
        made.append(a)
        return own(self, *a, **k)

    monkeypatch.setattr(chunk.Steps, "_injections", counted)
    calls = []
    inner = chunk.run_steps

    def call(*args):
        out = inner(*args)
        calls.append(int(args[16][0]))
        return out

    monkeypatch.setattr(chunk, "run_steps", call)
    p = bernoulli_plan("hypercube:6", "anynet-min", "all-port", "wormhole", 0.9, 60)
    _, a = run(p, True)
    assert not made and chunk.ROOM in calls  # 0.9 x 64 a step: past the first room (16)
    monkeypatch.undo()
    _, b = run(p, False)
    assert_identical(a, b)
