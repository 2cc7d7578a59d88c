"""k-port's and one-port's choice by node counts in the compiled steps
(mpinet/engine/flit/kport_nodes.py; issue 33, the port models within 1.5x of all-port):
random runs of one-port, k-port:2 and k-port:3 (1-5 flits, 1-4 VCs, every switching mode,
links of capacity 1 and 2) equal the step-by-step path, whose choice is
:func:`~mpinet.engine.flit.port_choice.kport_choice`, row for row (counters, packet rows in
order, link loads, hop rows, deadlock reports). The choice itself is held to a reference
made from :func:`~mpinet.engine.flit.port_choice.movable` and
:func:`~mpinet.engine.flit.port_choice.choose_links` on hand-built requests, so a denied
link that should send, or the reverse, fails here and not only in a long run. One-port's
choice kept between steps (mpinet/engine/flit/kept_choice.py) is compared with a fresh one
at every kept decision of random runs (check mode), and a decision kept without its
signature's test is caught."""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_active import run
from test_flit_chunk import assert_identical

from mpinet.engine.flit import chunk, port_choice, step_end
from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import port_demand as pd
from mpinet.engine.flit.kport_nodes import count_nodes, kport_deny, kport_nodes_ok
from mpinet.engine.flit.layout import Buffers, Links, Packets, Params, Segments, StepOut
from mpinet.jobs.execute import plan
from mpinet.jobs.spec import load_job
from mpinet.netfile import load_topology

SPECS = (("hypercube:4", "anynet-min"), ("star:4", "shortest"), ("ms:2,2", "shortest"),
         ("ccc:3", "shortest"))  # fmt: skip
MODES = ("store-and-forward", "cut-through", "wormhole")


@pytest.mark.parametrize("seed", range(8))
def test_random_kport_runs_compiled_equal_the_steps(seed):
    rng = np.random.default_rng(100 + seed)
    spec, router = SPECS[seed % len(SPECS)]
    kind = ("one-port", "k-port:2", "k-port:3")[seed % 3]
    mode = MODES[int(rng.integers(len(MODES)))]
    flits = int(rng.integers(1, 6))
    vcs = int(rng.integers(1, 5))
    buf = int(rng.integers(1, 4)) if mode == "wormhole" else flits
    sets = [(["topology"], spec), (["router", "name"], router), (["trace", "level"], "none"),
            (["model", "kind"], kind), (["model", "switching"], mode),
            (["model", "flits"], flits), (["model", "vcs"], vcs), (["model", "vc_buffer"], buf),
            (["workload", "injection"], "bernoulli"),
            (["workload", "rate"], float(rng.uniform(0.03, 0.12)) / flits),
            (["workload", "steps"], 250)]  # fmt: skip
    if seed % 2:  # every port class 2 flits a step
        sets.append((["model", "capacity"], dict.fromkeys(load_topology(spec).port_classes, 2)))
    p = plan(load_job(None, sets), ranks=1)
    eng, a = run(p, True)
    _, b = run(p, False)
    assert eng.steps_path == chunk.COMPILED
    assert a.counters[:, 0].sum() > 0 and a.packets.shape[0] > 20
    assert_identical(a, b)


def made_up_step(rng, k):
    """A step's requests made up at random on 8 nodes of degree 4, 2 VCs: per link no request
    or 1-3 of random packets (age, id), VCs, credits and holds; then the reference choice
    (``movable`` and ``choose_links``). Returns ``(nt, prm, segs, pkts, links, so, ref,
    first)``: ``ref``/``first`` per touched link, as ``so.touched`` has them."""
    nn, deg, nvc = 8, 4, 2
    nl = nn * deg
    need = int(rng.integers(1, 3))
    prm = Params(fk.WORM, 4, nvc, need, deg, 0, nn, nl * nvc, 4, fk.KPORT, k, 0)
    npk = 30
    pid = rng.permutation(1000)[:npk].astype(np.int64)
    z = np.zeros(npk, np.int64)
    pkts = Packets(pid, z, rng.integers(0, nn, npk), rng.integers(0, 5, npk), z, z, z,
                   np.zeros((npk, 1), np.int64), z, np.zeros(1, np.int64))  # fmt: skip
    nreq = np.where(rng.random(nl) < 0.6, rng.integers(1, 4, nl), 0).astype(np.int64)
    ns = int(nreq.sum())
    start = np.zeros(nl, np.int64)
    start[1:] = np.cumsum(nreq)[:-1]
    zs = np.zeros(ns, np.int64)
    spk = rng.integers(0, npk, ns)
    segs = Segments(spk, zs + 1, zs, zs, zs - 1, zs, zs, rng.integers(-2, nvc, ns), zs,
                    zs + nvc, rng.integers(0, 4, ns), pkts.inj[spk], zs,
                    np.zeros(1, np.int64))  # fmt: skip
    zl = np.zeros(nl, np.int64)
    links = Links(rng.integers(0, nn, nl), zl + 1, zl, rng.integers(0, 3, nl * nvc),
                  rng.integers(0, 2, nl * nvc), zl, zl.copy(), nreq, start)  # fmt: skip
    touched = rng.permutation(np.flatnonzero(nreq)).astype(np.int64)
    nt = touched.size
    n = max(4 * ns, 64)
    e = np.empty(n, np.int64)
    so = StepOut(np.concatenate([touched, e])[:n].copy(), np.zeros(n, np.bool_),
                 np.concatenate([np.arange(ns), e])[: 2 * n].copy(), e.copy(), None, None, None,
                 None, None, None, None, None, None, None, e.copy(), None,
                 np.full(nn, -1, np.int64), np.empty((11, n), np.int64), None)  # fmt: skip
    first = np.empty(nt, np.int64)
    port_choice.movable(nt, prm, segs, pkts, links, so, first, np.zeros(deg, np.int64))
    port_choice.choose_links(nt, prm, segs, pkts, so, first, -1)
    return nt, prm, segs, pkts, links, so, so.allow[:nt].copy(), first


@pytest.mark.parametrize("k", [1, 2, 3])
def test_kport_deny_equals_the_reference_choice_on_made_up_requests(k):
    """Every link the reference allows is served; every link it does not is emptied unless
    its node has at most ``k`` links with requests (then it moves nothing either way)."""
    rng = np.random.default_rng(k)
    checked = 0
    for _ in range(40):
        nt, prm, segs, pkts, links, so, ref, first = made_up_step(rng, k)
        inc = pd.make_demand(links.nreq.size, prm.deg)
        nreq = links.nreq.copy()
        touched = so.touched[:nt].copy()
        na = kport_deny(nt, 7, prm, segs, pkts, links, so, inc)
        allowed = set(so.touched[:na].tolist())
        assert sorted(so.touched[:nt].tolist()) == sorted(touched.tolist())
        kept = [int(x) for x in touched if x in allowed]
        assert so.touched[:na].tolist() == kept  # the allowed links in their order
        nodes = touched // prm.deg
        per_node = np.bincount(nodes, minlength=int(nodes.max()) + 1)[nodes]
        for j, link in enumerate(touched):
            if per_node[j] > k:
                assert (link in allowed) == bool(ref[j]), (j, link)
            else:
                assert link in allowed
                if not ref[j]:
                    assert first[j] == -1  # allowed here only: nothing of it can move
            assert (links.nreq[link] > 0) == (link in allowed)
            if link in allowed:
                assert links.nreq[link] == nreq[link]
        checked += int((per_node > k).sum())
    assert checked > 100


def reference_check(touched, flits, cap, deg, k):
    """The k-port model check as the step-by-step reading of it: the touched links in order,
    each that sent checked against its capacity, then its node's links that sent (a node
    over ``k``: the link over ``k`` in port order), its flits reset after; the first
    violation wins. Returns ``(code, where, flits after)``."""
    flits = flits.copy()
    code, where = 0, 0
    for link in touched:
        f = flits[link]
        if f == 0:
            continue
        base = link // deg * deg
        if code == 0 and f > cap[link]:
            code, where = step_end.CAPACITY, link
        if code == 0:
            sent = [q for q in range(base, base + deg) if flits[q] > 0]
            if len(sent) > k:
                code, where = step_end.PORTS, sent[k]
        flits[link] = 0
    return code, where, flits


@pytest.mark.parametrize("k", [1, 2])
def test_kport_check_finds_the_first_violation_as_the_reference(k):
    """``check_step`` under k-port on made-up flits (links that sent or not, over their
    capacity or not, nodes over ``k`` or not): the same first violation and the touched
    links' flits reset, as the reference reads them; so does settle's pair
    (``kport_sent_ok``, then ``check_step`` only where it found a violation)."""
    rng = np.random.default_rng(10 + k)
    nn, deg, nvc = 12, 4, 2
    nl = nn * deg
    found = set()
    for _ in range(300):
        prm = Params(fk.WORM, 4, nvc, 1, deg, 0, nn, nl * nvc, 4, fk.KPORT, k, 0)
        touched = rng.permutation(nl)[: int(rng.integers(1, nl))].astype(np.int64)
        flits = np.zeros(nl, np.int64)
        p_send = rng.uniform(0.05, 0.6)
        sent = touched[rng.random(touched.size) < p_send]
        flits[sent] = rng.integers(1, 3, sent.size)
        cap = np.where(rng.random(nl) < 0.97, 2, 1).astype(np.int64)
        zl = np.zeros(nl, np.int64)
        links = Links(zl, cap, zl, zl, zl, zl, flits.copy(), zl, zl)
        bufs = Buffers(zl, zl, np.zeros(1, np.int64), zl, zl, zl, zl, zl, zl)
        out = np.zeros(2, np.int64)
        step_end.check_step(touched.size, -1, prm, links, bufs, touched, 0, zl, out)
        code, where, after = reference_check(touched, flits, cap, deg, k)
        assert (out[0], out[1] if out[0] else 0) == (code, where)
        assert np.array_equal(links.flits, after)
        found.add(code)
        # settle's pair: the count per node first, check_step only on a violation
        links = links._replace(flits=flits.copy())
        nsent = np.full(nn, -1, np.int64)
        ok = step_end.kport_sent_ok(touched.size, prm, links, touched, nsent)
        assert ok == (code == 0)
        step_end.check_step(0 if ok else touched.size, -1, prm, links, bufs, touched, 0, zl, out)
        assert (out[0], out[1] if out[0] else 0) == (code, where)
        assert np.array_equal(links.flits, after)
        assert (nsent == -1).all()
        # the one-rank steps' pair: the nodes with a choice counted before the moves
        # (count_nodes), checked after them, check_step only on a violation
        links = links._replace(flits=flits.copy())
        nodes, ncnt = np.empty(touched.size + 1, np.int64), np.zeros(nn, np.int64)
        owner = np.empty(touched.size, np.int64)
        count_nodes(touched.size, deg, k, touched, owner, ncnt, nodes)
        ok = kport_nodes_ok(touched.size, k, deg, nodes, touched, links.flits, cap)
        assert ok == (code == 0)
        if not ok:  # nothing reset: the first violation named as the reference names it
            assert np.array_equal(links.flits, flits)
        step_end.check_step(0 if ok else touched.size, -1, prm, links, bufs, touched, 0, zl, out)
        assert (out[0], out[1] if out[0] else 0) == (code, where)
        assert np.array_equal(links.flits, after)
    assert found == {0, step_end.CAPACITY, step_end.PORTS}


def run_checked(monkeypatch, p, check):
    """The compiled run of ``p`` with one-port's kept choice in check mode ``check``
    (:mod:`~mpinet.engine.flit.kept_choice`: 1 compares every kept decision with a fresh
    one, 2 also keeps decisions without the signature's test); its record and state."""
    made = []

    class Checked(chunk.Steps):
        def __init__(self, eng):
            super().__init__(eng)
            self.inc.chk[0] = check
            made.append(self)

    monkeypatch.setattr(chunk, "Steps", Checked)
    _, rec = run(p, True)
    monkeypatch.undo()
    return rec, made[0].inc


@pytest.mark.parametrize("seed", range(4))
def test_kept_one_port_decisions_equal_fresh_ones(monkeypatch, seed):
    """At every step of random one-port runs each decision kept from the step before
    (kept_choice.kept_deny) equals a fresh one, and the run without the check equals the
    step-by-step path row for row."""
    rng = np.random.default_rng(200 + seed)
    spec, router = SPECS[seed % len(SPECS)]
    mode = MODES[(seed + 1) % len(MODES)]
    flits = int(rng.integers(2, 6))
    buf = int(rng.integers(1, 4)) if mode == "wormhole" else flits
    sets = [(["topology"], spec), (["router", "name"], router), (["trace", "level"], "none"),
            (["model", "kind"], "one-port"), (["model", "switching"], mode),
            (["model", "flits"], flits), (["model", "vcs"], int(rng.integers(1, 4))),
            (["model", "vc_buffer"], buf), (["workload", "injection"], "bernoulli"),
            (["workload", "rate"], float(rng.uniform(0.15, 0.3)) / flits),
            (["workload", "steps"], 200)]  # fmt: skip
    p = plan(load_job(None, sets), ranks=1)
    a, inc = run_checked(monkeypatch, p, 1)
    _, b = run(p, True)
    _, c = run(p, False)
    assert_identical(a, c)
    assert_identical(b, c)
    assert inc.chk[1] > 100, "too few decisions kept to compare"
    assert inc.chk[2] == 0, f"{inc.chk[2]} of {inc.chk[1]} kept decisions differed"


def test_a_decision_kept_through_a_change_is_caught(monkeypatch):
    """Kept without the signature's test (a loser's new or newly movable request missed),
    decisions differ from fresh ones: the check above can fail."""
    sets = [(["topology"], "ms:2,2"), (["router", "name"], "shortest"),
            (["trace", "level"], "none"), (["model", "kind"], "one-port"),
            (["model", "switching"], "wormhole"), (["model", "flits"], 4),
            (["workload", "injection"], "bernoulli"), (["workload", "rate"], 0.06),
            (["workload", "steps"], 200)]  # fmt: skip
    _, inc = run_checked(monkeypatch, plan(load_job(None, sets), ranks=1), 2)
    assert inc.chk[1] > 1000 and inc.chk[2] > 10


def test_a_nodes_byte_names_every_port_of_any_network():
    """One-port's choice names a node's winning port in a byte (kept_choice.WON + port) and
    keeps no other way: every network's degree (topology.base.MAX_DEGREE) must fit it."""
    from mpinet.engine.flit.kept_choice import MAX_DEG, WON
    from mpinet.topology.base import MAX_DEGREE

    assert MAX_DEGREE <= MAX_DEG and WON + MAX_DEG <= 255
