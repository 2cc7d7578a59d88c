"""The departure calendar gives exactly what the per-link queues give.

Both paths of :class:`mpinet.engine.core.Engine` run the same job
(``queues="links"`` and ``queues="calendar"``): every packet record, every
hop, the counters, the link loads, the stuck packets and the error messages
must be equal; the calendar is also checked against the plain-Python
reference engine. Which runs the calendar may take is tested too.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference_engine import simulate_reference

from mpinet.engine.core import CollectiveError, Engine
from mpinet.engine.models import ModelError, parse_model
from mpinet.routing import make_router
from mpinet.routing.base import HopContext, Router
from mpinet.topology import from_spec
from mpinet.topology.faults import make_faults
from mpinet.workloads import Unicast


def _run(spec, router="shortest", queues="auto", *, model="all-port", capacity=None,
         record=True, window=None, max_steps=100_000, tie="first", **wl):  # fmt: skip
    topo = from_spec(spec)
    rt = make_router(router, topo, tie=tie) if router == "shortest" else make_router(router, topo)
    eng = Engine(topo, rt, parse_model(model, capacity), seed=5, record_hops=record,
                 queues=queues, load_window=window, max_steps=max_steps)  # fmt: skip
    rec = eng.run(Unicast(topo, seed=5, **wl))
    return eng, rec


def _canon(rec):
    pk = rec.packets[np.lexsort(rec.packets.T[::-1])]
    hops = None if rec.hop_rows is None else rec.hop_rows[np.lexsort(rec.hop_rows.T[::-1])]
    return rec.steps, rec.counters, pk, hops, rec.link_load, rec.stuck


def _assert_same(a, b):
    sa, sb = _canon(a), _canon(b)
    assert sa[0] == sb[0]
    for x, y in zip(sa[1:5], sb[1:5], strict=True):
        if x is not None or y is not None:
            np.testing.assert_array_equal(x, y)
    assert sa[5] == sb[5]


CASES = [
    ("scc:5", "shortest", dict(packets=4)),
    ("scc:5", "scc-greedy", dict(packets=3)),
    ("ms:2,2", "ms-two-phase", dict(packets=8)),
    ("star:5", "shortest", dict(packets=16, tie="random")),
    ("fccn:3", "fccn-shortest", dict(packets=8)),
    ("borel:47,2,1,7", "shortest", dict(packets=3)),
    ("ccc:4", "shortest", dict(packets=2)),
    ("hypercube:6", "shortest", dict(packets=4)),
    ("ms:2,2", "shortest", dict(injection="bernoulli", rate=0.3, steps=20)),
    ("scc:5", "shortest", dict(pattern="hotspot", packets=2)),
    ("star:5", "shortest", dict(pattern="permutation", packets=3)),
]


@pytest.mark.parametrize("spec,router,wl", CASES)
def test_calendar_equals_link_queues(spec, router, wl):
    eng, cal = _run(spec, router, "calendar", **wl)
    assert eng.use_calendar
    _, links = _run(spec, router, "links", **wl)
    _assert_same(cal, links)
    assert (cal.packets[:, 4] >= 0).all()


def test_calendar_with_capacity_and_load_window():
    # local links carry 3 packets per step: a link's places fill in id order
    kw = dict(capacity={"local": 3}, window=(2, 9), packets=6)
    _assert_same(_run("scc:4", queues="calendar", **kw)[1], _run("scc:4", queues="links", **kw)[1])


def test_calendar_equals_reference():
    topo = from_spec("scc:4")
    model = parse_model("all-port", {"local": 2})
    w = Unicast(topo, seed=3, packets=5)
    rec = Engine(topo, make_router("shortest", topo), model, seed=3, record_hops=True,
                 queues="calendar").run(w)  # fmt: skip
    ref = simulate_reference(topo, make_router("shortest", topo), model, w, seed=3)
    np.testing.assert_array_equal(rec.packets[np.argsort(rec.packets[:, 0])], ref.packets)
    hops = rec.hop_rows[np.lexsort((rec.hop_rows[:, 0], rec.hop_rows[:, 1]))]
    np.testing.assert_array_equal(hops, ref.hops)
    np.testing.assert_array_equal(rec.counters[:, :3], ref.counters)


def test_calendar_stopped_at_max_steps_reports_the_same_packets():
    _, a = _run("star:5", queues="calendar", packets=8, max_steps=6, pattern="hotspot")
    _, b = _run("star:5", queues="links", packets=8, max_steps=6, pattern="hotspot")
    assert a.stuck and (a.packets[:, 4] < 0).any()
    _assert_same(a, b)


@pytest.mark.parametrize(
    "kw,why",
    [
        (dict(model="sdc"), "model sdc"),
        (dict(model="one-port"), "model one-port"),
        (dict(buffer=2), "finite buffers"),
        (dict(order="oldest-first"), "order oldest-first"),
        (dict(faults=True), "faults"),
    ],
)
def test_calendar_only_where_it_applies(kw, why):
    topo = from_spec("scc:4")
    model = parse_model(kw.get("model", "all-port"), buffer=kw.get("buffer", 0))
    faults = make_faults(topo, random_links=0.05, seed=1) if kw.get("faults") else None
    args = dict(order=kw.get("order", "fifo"), faults=faults)
    assert not Engine(topo, make_router("shortest", topo), model, **args).use_calendar
    with pytest.raises(ModelError, match=f"queues = 'calendar' does not apply here: {why}"):
        Engine(topo, make_router("shortest", topo), model, queues="calendar", **args)
    assert Engine(topo, make_router("shortest", topo), parse_model("all-port")).use_calendar


def test_holding_router_and_bad_queues_value():
    from mpinet.routing.words import WordScheduleRouter

    topo = from_spec("star:4")
    held = WordScheduleRouter.__new__(WordScheduleRouter)
    held.name, held.header_width = "word-schedule", 1
    with pytest.raises(ModelError, match="holds packets"):
        Engine(topo, held, parse_model("all-port"), queues="calendar")
    with pytest.raises(ModelError, match="queues must be one of auto, links, calendar"):
        Engine(topo, make_router("shortest", topo), parse_model("all-port"), queues="fast")


class _Wrong(Router):
    """Sends packet 7 out of a port that does not exist, at its second hop."""

    name = "wrong"

    def init_headers(self, src, dst):
        return self.inner.init_headers(src, dst)

    def next_port(self, cur, dst, hdr, ctx: HopContext):
        ports, new = self.inner.next_port(cur, dst, hdr, ctx)
        ports = np.array(ports, dtype=np.int64)
        ports[(np.asarray(ctx.pids) == 7) & (np.asarray(ctx.hops) == 1)] = 99
        return ports, new


@pytest.mark.parametrize("queues", ["links", "calendar"])
def test_bad_port_message_is_the_same(queues):
    topo = from_spec("star:4")
    rt = _Wrong(topo)
    rt.inner = make_router("shortest", topo)
    rt.header_width = rt.inner.header_width
    with pytest.raises(CollectiveError) as err:
        Engine(topo, rt, parse_model("all-port"), queues=queues).run(Unicast(topo, packets=1))
    assert "router wrong chose port 99 at node" in str(err.value)
    assert "valid ports are 0..2" in str(err.value)


def test_model_check_catches_a_broken_calendar(monkeypatch):
    # the calendar believes every link takes 2 packets a step: the independent check,
    # which knows the model's capacity of 1, must stop the run
    from mpinet.engine.calendar import DepartureCalendar

    real = DepartureCalendar.flush

    def broken(self, t):
        self.caps[:] = 2
        return real(self, t)

    monkeypatch.setattr(DepartureCalendar, "flush", broken)
    topo = from_spec("star:4")
    eng = Engine(topo, make_router("shortest", topo), parse_model("all-port"), queues="calendar")
    with pytest.raises(CollectiveError, match="model all-port violated in step 1 at node"):
        eng.run(Unicast(topo, packets=8, pattern="hotspot"))


def test_job_key_model_queues():
    from mpinet.jobs import load_job
    from mpinet.jobs.execute import execute, plan
    from mpinet.jobs.spec import JobError

    base = [(["topology"], "star:4"), (["trace", "level"], "none")]
    with pytest.raises(
        JobError, match="model.queues = 'calendar' does not apply to this job: model sdc"
    ):
        plan(load_job(None, [*base, (["model", "kind"], "sdc"), (["model", "queues"], "calendar")]))
    with pytest.raises(JobError, match="model.queues must be one of auto, links, calendar"):
        plan(load_job(None, [*base, (["model", "queues"], "fastest")]))
    res = [
        execute(plan(load_job(None, [*base, (["model", "queues"], q)])), None)["stats"]
        for q in ("calendar", "links")
    ]
    assert res[0]["steps"] == res[1]["steps"] and res[0]["delivered"] == res[1]["delivered"] == 24


def test_compiled_rules_route_inside_the_calendar():
    from mpinet.routing import compiled

    cases = [("scc:5", "shortest", "first", compiled.TRANSLATED),
             ("fccn:3", "fccn-shortest", "first", compiled.FCCN_SHORTEST),
             ("star:5", "shortest", "random", compiled.NONE),
             ("scc:5", "scc-greedy", "first", compiled.NONE)]  # fmt: skip
    for spec, router, tie, code in cases:
        eng, _ = _run(spec, router, tie=tie, packets=1, record=False)
        assert eng.cal is None  # released after the run; the rule is the router's
        topo = from_spec(spec)
        opts = {"tie": tie} if router == "shortest" else {}
        assert compiled.rule_of(make_router(router, topo, **opts)).code == code


def _bad_port_messages(topo, router, corrupt):
    msgs = []
    for queues in ("calendar", "links"):
        rt = make_router(router, topo)
        with corrupt(rt):
            eng = Engine(topo, rt, parse_model("all-port"), queues=queues)
            with pytest.raises(CollectiveError) as err:
                eng.run(Unicast(topo, packets=2, seed=1))
        msgs.append(str(err.value))
    return msgs


def test_bad_port_from_a_compiled_rule():
    # corrupt tables: the compiled rule inside the calendar reports the packet, node
    # and port exactly as the router's own next_port does on the per-link queues
    import contextlib

    from mpinet.routing import fccn

    @contextlib.contextmanager
    def port_200(rt):
        rt.prepare()
        rt._port[rt._port == 1] = 200
        yield

    @contextlib.contextmanager
    def always_inter(rt):
        keep = fccn._LOW8.copy()
        fccn._LOW8[:] = fccn.INTER
        try:
            yield
        finally:
            fccn._LOW8[:] = keep

    a = _bad_port_messages(from_spec("scc:5"), "shortest", port_200)
    assert "chose port 200 at node" in a[0] and "valid ports are 0..2" in a[0] and a[0] == a[1]
    b = _bad_port_messages(from_spec("fccn:2"), "fccn-shortest", always_inter)
    assert "which has no link there" in b[0] and b[0] == b[1]
