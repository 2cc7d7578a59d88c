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
    """Drawn in the kernel, a call's steps at a time: the ids, sources and destinations the
    workload draws (its blocks of :func:`mpinet.rng.grid_below` and
    :func:`mpinet.rng.integers`), up to the last step whose draws fit the arrays."""
    topo = from_spec("hypercube:6")
    w = Unicast(topo, "uniform", injection="bernoulli", rate=rate, steps=300, seed=7)
    eng = _Eng(lo, hi, _Plain(topo))
    drw, inj = sd.make_draw(eng, w, False, 400)
    assert drw.on
    for t0, t_end, most in ((-1, 301, None), (-1, 0, None), (120, 140, None), (5, 60, hi - lo)):
        if most is not None:  # arrays for one step's worst case: fewer steps drawn
            inj = sd.injections(eng, most, 400)
        last = sd.draw_block(t0, t_end, drw, inj.off, inj.pid, inj.src, inj.dst)
        assert t0 < last <= t_end
        assert last == t_end or rate * (hi - lo) * (t_end - t0) > inj.pid.size / 2
        for t in range(t0 + 1, last + 1):
            a, b = inj.off[t - t0 - 1], inj.off[t - t0]
            pid, src, dst = w.injections(lo, hi, t)
            np.testing.assert_array_equal(inj.pid[a:b], pid)
            np.testing.assert_array_equal(inj.src[a:b], src)
            np.testing.assert_array_equal(inj.dst[a:b], dst)
            assert (inj.dst[a:b] != inj.src[a:b]).all()
        assert inj.off[last - t0] > 0 or rate < 0.01


def test_no_draw_for_other_workloads():
    """Other patterns, injections, walked routes and routers with headers: drawn in Python."""
    topo = from_spec("hypercube:4")
    eng = _Eng(0, 16, _Plain(topo))
    for w in (Unicast(topo, "permutation", injection="bernoulli", rate=0.1, steps=10),
              Unicast(topo, "uniform", packets=2)):  # fmt: skip
        assert not sd.make_draw(eng, w, False, 64)[0].on
    w = Unicast(topo, "uniform", injection="bernoulli", rate=0.1, steps=10)
    assert not sd.make_draw(eng, w, True, 64)[0].on
    assert sd.make_draw(eng, w, False, 64)[0].on
    shortest = ShortestRouter(topo)  # translated: its headers carry the route's key
    assert shortest.translated and not sd.make_draw(_Eng(0, 16, shortest), w, False, 64)[0].on


class _Small:
    """:func:`~mpinet.engine.flit.step_draws.injections` with ``most`` rows the first time
    (the engine's first arrays), then the rows asked for (the arrays grown)."""

    def __init__(self, most, own):
        self.most, self.own, self.calls = most, own, 0

    def __call__(self, eng, most, steps):
        self.calls += 1
        return self.own(eng, self.most if self.calls == 1 else most, steps)


def _plan(spec, router, pattern, rate, steps, flits):
    sets = [(["topology"], spec), (["router", "name"], router), (["trace", "level"], "none"),
            (["model", "switching"], "wormhole"), (["model", "flits"], flits),
            (["model", "vcs"], 2), (["model", "vc_buffer"], 4), (["workload", "kind"], pattern),
            (["workload", "injection"], "bernoulli"), (["workload", "rate"], rate),
            (["workload", "steps"], steps)]  # fmt: skip
    return plan(load_job(None, sets), ranks=1)


def _count_blocks(monkeypatch) -> list:
    """The arguments of every injection block drawn in Python from now on."""
    made = []
    own = chunk.Steps._injections

    def counted(self, *a, **k):
        made.append(a)
        return own(self, *a, **k)

    monkeypatch.setattr(chunk.Steps, "_injections", counted)
    return made


@pytest.mark.parametrize(("pattern", "inside"), [("uniform", True), ("permutation", False)])
def test_runs_equal_the_steps(pattern, inside, monkeypatch):
    """hypercube:8 as the speed table runs it (L = 16 and 1), drawn in the steps or not;
    with the draws' arrays too small for a call's steps (the call runs fewer steps), and
    too small for one step's (the call returns for room, the arrays grow)."""
    made = _count_blocks(monkeypatch)
    for flits, rate in ((16, 0.01), (1, 0.3)):
        p = _plan("hypercube:8", "anynet-min", pattern, rate, 200, flits)
        _, b = run(p, False)
        own_arrays = sd.injections
        for most in (None, 300, 3):
            small = _Small(most, own_arrays)
            if most is not None:
                monkeypatch.setattr(sd, "injections", small)
            made.clear()
            _, a = run(p, True)
            monkeypatch.setattr(sd, "injections", own_arrays)
            assert (not made) == inside
            if most is not None and inside:  # grown once a step's draws did not fit 3 rows
                assert small.calls == (2 if most == 3 else 1)
            assert_identical(a, b)
        assert a.injected_ids.size > 100


def test_draws_inside_a_run(monkeypatch):
    """The steps of a uniform Bernoulli run draw inside: no block is drawn in Python, and
    the calls that return for room (a step's draws past ``most``) draw that step again."""
    made = _count_blocks(monkeypatch)
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
