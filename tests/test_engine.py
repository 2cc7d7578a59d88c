"""The hop-by-hop engine, serially: exact small cases, models, invariants, errors."""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.engine import core
from mpinet.engine.core import CollectiveError, Engine
from mpinet.engine.models import ModelError, parse_model, violations
from mpinet.engine.report import gather_packets, summarize
from mpinet.routing import make_router
from mpinet.routing.base import Router
from mpinet.routing.tables import distances_from
from mpinet.topology import from_spec
from mpinet.workloads import Unicast


def run(spec, model="all-port", router="shortest", record_hops=True, comm=None, **wl):
    topo = from_spec(spec)
    seed = wl.pop("seed", 1)
    max_steps = wl.pop("max_steps", 100_000)
    order = wl.pop("order", "fifo")
    r = make_router(router, topo) if isinstance(router, str) else router
    w = Unicast(topo, wl.pop("pattern", "uniform"), seed=seed, **wl)
    eng = Engine(
        topo,
        r,
        parse_model(model),
        comm,
        seed=seed,
        max_steps=max_steps,
        order=order,
        record_hops=record_hops,
    )
    rec = eng.run(w)
    pk, ids = gather_packets(rec, w.pid_space, eng.comm)
    stats = summarize(rec, topo, pk, ids, eng.comm, distance=getattr(r, "distance", None))
    return topo, rec, pk, stats


def test_scc3_hotspot_exact_arrival_steps():
    # SCC_3 is a 12-cycle; with 2 packets per node to <2, 123>, each side of the
    # ring is a FIFO line: packet j of the node at distance d arrives at 2d - 1 + j.
    topo, rec, pk, stats = run("scc:3", pattern="hotspot", packets=2)
    dist = distances_from(topo, topo.identity)
    order = np.argsort(pk[:, 0])
    src, deliver = pk[order, 1], pk[order, 4]
    j = pk[order, 0] % 2
    d = dist[src].astype(np.int64)
    antipode = d == 6  # its packets queue behind one side's 10: steps 11 and 12
    expect = np.where(antipode, 11 + j, 2 * d - 1 + j)
    assert deliver.tolist() == expect.tolist()
    assert rec.counters[:, 1].tolist() == [2] * 10 + [1, 1]
    assert stats["steps"] == 12 and stats["ok"]


FAMILIES = [
    "star:5",
    "scc:4",
    "ms:2,2",
    "ms:3,2",
    "fccn:2",
    "borel:7,2,0,1",
    "hypercube:6",
    "ccc:4",
]
MODELS = ["all-port", "one-port", "k-port:2", "sdc"]


@pytest.mark.parametrize("spec", FAMILIES)
@pytest.mark.parametrize("model", MODELS)
def test_conservation_and_model_on_every_family(spec, model):
    topo, rec, pk, stats = run(spec, model=model, packets=2)
    assert stats["ok"], stats["checks"]
    assert stats["delivered"] == stats["injected"] == 2 * topo.num_nodes
    assert (pk[:, 4] >= pk[:, 3] + pk[:, 5]).all()  # at most one hop per step
    hops = rec.hop_rows
    assert hops.shape[0] == stats["transmissions"] == pk[:, 5].sum()
    nb = topo.neighbors(hops[:, 2])
    assert (nb[np.arange(hops.shape[0]), hops[:, 4]] == hops[:, 3]).all()  # real links
    step_node = hops[:, 0] * topo.num_nodes + hops[:, 2]
    link = step_node * topo.degree + hops[:, 4]
    assert np.unique(link, return_counts=True)[1].max() == 1  # capacity 1
    if model in ("one-port", "k-port:2"):
        k = 1 if model == "one-port" else 2
        assert np.unique(step_node, return_counts=True)[1].max() <= k
    if model == "sdc":
        for t in np.unique(hops[:, 0]):
            assert np.unique(hops[hops[:, 0] == t, 4]).size == 1
    if "stretch" in stats:
        assert stats["stretch"]["fraction_shortest"] == 1.0  # shortest router, no detours


def test_capacity_per_port_class():
    _, rec, _, stats = run("scc:5", pattern="hotspot", packets=3, model="all-port")
    assert stats["ok"]
    topo = from_spec("scc:5")
    model = parse_model("all-port", {"local": 2})
    w = Unicast(topo, "hotspot", packets=3, seed=1)
    eng = Engine(topo, make_router("shortest", topo), model, record_hops=True)
    fast = eng.run(w)
    assert fast.steps <= rec.steps
    h = fast.hop_rows
    link = (h[:, 0] * topo.num_nodes + h[:, 2]) * topo.degree + h[:, 4]
    ul, cnt = np.unique(link, return_counts=True)
    lateral = topo.ports.index("lateral")
    assert cnt.max() == 2 and cnt[ul % topo.degree == lateral].max() == 1


def test_violations_are_named():
    caps = np.ones(3, dtype=np.int64)
    nodes, ports = np.array([4, 4]), np.array([0, 2])
    bad = violations(parse_model("one-port"), 7, nodes, ports, 3, caps)
    assert bad and "one-port allows 1" in bad[0][2]
    assert violations(parse_model("all-port"), 7, nodes, ports, 3, caps) == []
    bad = violations(parse_model("sdc"), 7, np.array([1, 2]), np.array([0, 1]), 3, caps)
    assert bad and "dimensions [0, 1]" in bad[0][2]
    bad = violations(parse_model("all-port"), 7, np.array([1, 1]), np.array([0, 0]), 3, caps)
    assert bad and "capacity 1" in bad[0][2]


@pytest.mark.parametrize("model", ["one-port", "sdc"])
def test_engine_detects_a_broken_selection(monkeypatch, model):
    # the selection kernel told "all-port" while the model is one-port / sdc: the
    # independent check of what moved must catch it in the first step
    monkeypatch.setattr(core, "select_kind", lambda m: core.kn.KIND_ALL)
    with pytest.raises(CollectiveError, match=f"model {model} violated in step 1 at node"):
        run("star:4", model=model, packets=3)


def test_router_using_a_missing_link_is_an_error():
    class ToInter(Router):
        name = "always-inter"

        def next_port(self, nodes, dests, headers, ctx):
            return np.full(nodes.size, 3), headers

    topo = from_spec("fccn:1")  # every node is a UGN: port 3 (inter) does not exist
    with pytest.raises(CollectiveError, match=r"port inter, which has no link there"):
        run("fccn:1", router=ToInter(topo), packets=1)


def test_max_steps_reports_stuck_packets():
    topo, rec, pk, stats = run("scc:5", packets=2, max_steps=3)
    assert not stats["ok"]
    assert stats["undelivered"] > 0 and stats["dropped"] == 0
    assert stats["undelivered"] + stats["delivered"] == stats["injected"]
    assert rec.stuck and {"id", "source", "dest", "at", "hops"} <= set(rec.stuck[0])
    assert (pk[pk[:, 4] < 0, 5] <= 3).all()


def test_random_ties_are_seeded():
    a = run("ms:3,2", router=make_router("shortest", from_spec("ms:3,2"), tie="random"), seed=1)
    b = run("ms:3,2", router=make_router("shortest", from_spec("ms:3,2"), tie="random"), seed=1)
    c = run("ms:3,2", router=make_router("shortest", from_spec("ms:3,2"), tie="random"), seed=2)
    assert np.array_equal(a[1].hop_rows, b[1].hop_rows)
    assert not np.array_equal(a[2][:, 2], c[2][:, 2])  # other seed, other destinations


def test_bernoulli_and_oldest_first():
    topo, rec, pk, stats = run(
        "borel:47,2,1,7", injection="bernoulli", rate=0.3, steps=10, order="oldest-first"
    )
    assert stats["ok"] and stats["injected"] > 0.2 * 10 * topo.num_nodes
    assert set(np.unique(pk[:, 3])) <= set(range(10))
    assert stats["completion_step"] >= 10


def test_model_parsing():
    assert parse_model("k-port:3").k == 3 and parse_model("one-port").k == 1
    with pytest.raises(ModelError, match="k-port:K"):
        parse_model("two-port")
    with pytest.raises(Exception, match="K in model k-port:K"):
        parse_model("k-port:0")
    with pytest.raises(ModelError, match="port class"):
        parse_model("all-port", {"lateral": 2}).port_capacities(from_spec("ms:2,2"))


def test_fifo_within_a_link_and_capacity():
    # SCC_3 is a 12-cycle; 3 packets of node 1 all go one way to the hotspot: with
    # capacity 2 on local links the first two leave in step 1, the third in step 2
    topo = from_spec("scc:3")
    w = Unicast(topo, "hotspot", packets=3, seed=1)
    eng = Engine(topo, make_router("shortest", topo), parse_model("all-port", {"local": 2}))
    pk = eng.run(w).packets
    one = pk[pk[:, 1] == 1]
    one = one[np.argsort(one[:, 0])]
    assert (one[:, 4] - one[:, 5]).tolist() == [0, 0, 1]
