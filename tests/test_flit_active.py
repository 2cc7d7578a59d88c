"""The flit engine's cost per step (issue 33, items 1 and 4): the port models' choice without
sorting or scanning, and many steps per compiled call with the deadlock looks inside it.

Every run here is compared row for row with the step-by-step path (counters, packet rows in
order, link loads, hop rows, injected ids, deadlock reports): Bernoulli runs long enough that
a compiled call crosses the workload's injection blocks and the deadlock looks, on every
port model, switching mode and VC policy with a compiled rule. The model check's k-port
count, which no longer relies on a node's links being contiguous, is held to hand-made steps.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_chunk import assert_identical

from mpinet.engine.flit import chunk, step_end
from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit.layout import Buffers, Links, Params
from mpinet.jobs.execute import plan
from mpinet.jobs.spec import load_job
from mpinet.jobs.switching import make_engine

KINDS = ("all-port", "one-port", "k-port:2", "sdc")
MODES = ("store-and-forward", "cut-through", "wormhole")


def bernoulli_plan(spec, router, kind, mode, rate, steps, *, flits=4, vcs=2, buf=2, policy="any"):
    buf = buf if mode == "wormhole" else max(buf, flits)
    sets = [(["topology"], spec), (["router", "name"], router), (["trace", "level"], "none"),
            (["model", "kind"], kind), (["model", "switching"], mode),
            (["model", "flits"], flits), (["model", "vcs"], vcs), (["model", "vc_buffer"], buf),
            (["model", "vc_policy"], policy), (["workload", "injection"], "bernoulli"),
            (["workload", "rate"], rate), (["workload", "steps"], steps)]  # fmt: skip
    return plan(load_job(None, sets), ranks=1)


def run(p, compiled_steps, **kw):
    eng = make_engine(p, None, seed=p.job.seed, max_steps=20_000, record_hops=True,
                      progress=None, compiled_steps=compiled_steps, **kw)  # fmt: skip
    rec = eng.run(p.workload.traffic)
    assert (eng.steps_path == chunk.COMPILED) == compiled_steps
    return eng, rec


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_long_bernoulli_runs_compiled_equal_the_steps(kind, mode):
    """300 injecting steps (several injection blocks and 18 deadlock looks per call) at a
    load that keeps requests waiting on every port model, with the policies' compiled rules."""
    for spec, rname, policy, rate in (("hypercube:4", "anynet-min", "any", 0.08),
                                      ("star:4", "shortest", "hops", 0.05)):  # fmt: skip
        p = bernoulli_plan(spec, rname, kind, mode, rate, 300, policy=policy,
                           vcs=2 if policy == "any" else 4)  # fmt: skip
        _, a = run(p, True)
        _, b = run(p, False)
        assert a.packets.shape[0] > 100 and (a.packets[:, 4] >= 0).all()
        assert_identical(a, b)


def test_a_call_runs_many_steps(monkeypatch):
    """One call runs past many deadlock looks: it returns for a look only when the look
    lists fronts, so the calls are far fewer than the 16-step looks of the run."""
    calls, codes = [], []
    inner = chunk.run_steps

    def counted(*args):
        out = inner(*args)
        calls.append(out)
        codes.append(int(args[16][0]))
        return out

    monkeypatch.setattr(chunk, "run_steps", counted)
    p = bernoulli_plan("hypercube:4", "anynet-min", "all-port", "wormhole", 0.01, 1500)
    eng, a = run(p, True)
    looks = 1500 // 16
    assert a.steps >= 1490 and len(calls) < looks // 4
    assert codes.count(chunk.LOOK) == eng.live.searches  # a return per search, no more
    monkeypatch.undo()
    _, b = run(p, False)
    assert_identical(a, b)


def test_deadlock_found_inside_a_call_equals_the_steps(monkeypatch):
    """A deadlock that forms while injecting is found at the same look, with the same cycle,
    when the calls are short (the injections drawn for the steps after a look kept for the
    next call) as when they are long."""
    p = bernoulli_plan("star:4", "shortest", "all-port", "wormhole", 0.3, 400, flits=8,
                       vcs=1, buf=1)  # fmt: skip
    _, b = run(p, False)
    assert b.deadlock is not None and b.deadlock["found"] == "check"
    for most in (7, 64, chunk.ONE_RANK_CHUNK):
        monkeypatch.setattr(chunk, "ONE_RANK_CHUNK", most)
        _, a = run(p, True)
        assert_identical(a, b)


def links_of(flits_per_link, deg):
    """A rank's links with the given flits sent this step (capacity 1 each)."""
    nl = len(flits_per_link)
    z = np.zeros(nl, np.int32)
    return Links(np.zeros(nl, np.int64), np.ones(nl, np.int32), z.copy(), z.copy(),
                 np.zeros(nl, np.uint8), np.zeros(nl, np.int64),
                 np.array(flits_per_link, np.int32), z.copy(), z.copy())  # fmt: skip


@pytest.mark.parametrize("k", [1, 2])
def test_the_model_check_counts_a_nodes_ports_in_any_order(k):
    """k-port: a node whose k + 1 links sent is found whatever the order of the step's links
    (the (k + 1)-th link of the node in port order is named); k links are not."""
    deg = 4
    prm = Params(fk.WORM, 4, 1, 1, deg, 0, 3, 12, 4, fk.KPORT, k, 0)
    bufs = Buffers(*(np.zeros(1, np.int32) for _ in range(3)), np.zeros(1, np.uint8),
                   np.zeros(1, np.int32), np.zeros(3, np.int64), np.zeros(1, np.int64),
                   np.zeros(1, np.int32), np.zeros(1, np.int32))  # fmt: skip
    rng = np.random.default_rng(k)
    over = [5, 7] if k == 1 else [4, 5, 7, 9]  # node 1 (links 4-7) sends by k + 1 ports
    for sent, bad in ((over, 7), ([1, 6, 9][:k] if k == 1 else [1, 2, 6, 9], None)):
        for _ in range(5):
            order = rng.permutation(sent)
            fl = np.zeros(3 * deg, np.int32)
            fl[sent] = 1
            links = links_of(fl, deg)
            touched = np.array(list(order) + [0, 2], np.int64)  # links that sent nothing too
            out = np.zeros(2, np.int64)
            step_end.check_step(touched.size, -1, prm, links, bufs, touched, 0, touched, out)
            if bad is None:
                assert out[0] == 0
            else:
                assert (out[0], out[1]) == (step_end.PORTS, bad)
            assert not links.flits.any()  # reset for the next step
