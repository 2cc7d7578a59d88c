"""Finite buffers, credits and deadlocks: the engine against its executable specification.

``reference_engine.simulate_reference`` implements the documented semantics
packet by packet; the numba kernels must reproduce it exactly (every packet's
record and path, the step count, the counters, the deadlock step). The
buffer invariants are read back from the engine's own hop rows.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest
from reference_engine import simulate_reference

from mpinet.engine.core import CollectiveError, Engine
from mpinet.engine.models import ModelError, parse_model
from mpinet.errors import MpinetError
from mpinet.routing import make_router
from mpinet.topology import from_spec
from mpinet.workloads import Unicast

FAMILIES = ["star:4", "scc:3", "ms:2,2", "hypercube:3", "ccc:3", "borel:7,2,0,1"]
MODELS = ["all-port", "one-port", "k-port:2", "sdc"]
BUFFERS = [
    (0, "none"),
    (1, "none"),
    (1, "hops"),
    (2, "none"),
    (2, "hops"),
    (4, "none"),
    (4, "hops"),
]
ORDERS = ["fifo", "oldest-first"]
TIES = ["first", "random"]


def make_job(spec, kind="all-port", buffer=0, classes="none", capacity=None, max_hops=None,
             seed=1, **wl):  # fmt: skip
    """(topology, model, workload) of one run."""
    topo = from_spec(spec)
    model = parse_model(kind, capacity, buffer=buffer, buffer_classes=classes, max_hops=max_hops)
    return topo, model, Unicast(topo, seed=seed, **wl)


def run_engine(topo, model, w, *, order="fifo", tie="first", seed=1, record_hops=True):
    router = make_router("shortest", topo, tie=tie)
    eng = Engine(topo, router, model, seed=seed, order=order, record_hops=record_hops)
    return eng.run(w)


def run_reference(topo, model, w, *, order="fifo", tie="first", seed=1):
    router = make_router("shortest", topo, tie=tie)
    return simulate_reference(topo, router, model, w, seed=seed, order=order)


def by_id(packets):
    return packets[np.argsort(packets[:, 0], kind="stable")]


def by_packet(hops):
    """Hop rows sorted by (packet, step): each packet's path in order."""
    return hops[np.lexsort((hops[:, 0], hops[:, 1]))]


def assert_matches_reference(rec, ref, topo):
    """Same packet records and paths, steps, counters and deadlock step."""
    np.testing.assert_array_equal(by_id(rec.packets), ref.packets)
    np.testing.assert_array_equal(by_packet(rec.hop_rows), ref.hops)
    assert rec.steps == ref.steps
    np.testing.assert_array_equal(rec.counters[:, :3], ref.counters)
    assert (rec.deadlock or {}).get("step") == ref.deadlock_step
    if ref.deadlock_step is not None:
        dl = rec.deadlock
        assert dl["blocked_packets"] == int((ref.packets[:, 4] < 0).sum())
        assert dl["closed"] == ref.deadlock_closed and dl["dead_packets"] == ref.dead_packets
        assert cycle_keys(topo, dl) == ref.deadlock_cycle


def cycle_keys(topo, dl):
    """A report's wait-for cycle as the reference's (node, port, class) tuples."""
    return [(topo.parse_label(c["node"]), topo.ports.index(c["port"]), c["class"])
            for c in dl["cycle"]]  # fmt: skip


def grid():
    """Every (family, model, buffers), then bernoulli jobs.

    Order, tie rule and backlog (2-4 packets per node) vary with the indices,
    so that each value of one axis meets both orders and both tie rules.
    """
    for (fi, spec), (mi, kind), (bi, (b, cls)) in itertools.product(
        enumerate(FAMILIES), enumerate(MODELS), enumerate(BUFFERS)
    ):
        order, tie, packets = ORDERS[(fi + mi + bi) % 2], TIES[(fi + mi) % 2], 2 + (mi + bi) % 3
        yield pytest.param(
            spec, kind, b, cls, order, tie, dict(packets=packets),
            id=f"{spec}-{kind}-B{b}{cls[0]}-{order}-{tie}-p{packets}",
        )  # fmt: skip
    for fi, spec in enumerate(FAMILIES):  # bernoulli: source queues fill and drain over time
        for mi, kind in enumerate(MODELS):
            b, cls = BUFFERS[(fi + mi) % len(BUFFERS)]
            wl = dict(injection="bernoulli", rate=0.6, steps=6)
            yield pytest.param(
                spec, kind, b, cls, ORDERS[mi % 2], TIES[fi % 2], wl,
                id=f"{spec}-{kind}-B{b}{cls[0]}-bernoulli",
            )  # fmt: skip


@pytest.mark.parametrize("spec,kind,buffer,classes,order,tie,wl", list(grid()))
def test_engine_equals_reference(spec, kind, buffer, classes, order, tie, wl):
    topo, model, w = make_job(spec, kind, buffer, classes, **wl)
    ref = run_reference(topo, model, w, order=order, tie=tie)
    rec = run_engine(topo, model, w, order=order, tie=tie)
    assert_matches_reference(rec, ref, topo)


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("buffer,classes", [(0, "none"), (1, "none"), (1, "hops"), (2, "none")])
def test_engine_equals_reference_with_capacity(kind, buffer, classes):
    # local links carry 2 packets per step, lateral ones 1: capacity > buffer too
    topo, model, w = make_job("scc:4", kind, buffer, classes, {"local": 2}, packets=3)
    order = ORDERS[buffer % 2]
    assert_matches_reference(run_engine(topo, model, w, order=order),
                             run_reference(topo, model, w, order=order), topo)  # fmt: skip


#: jobs with 8 packets per node on one-slot buffers: the reference deadlocks on each
DEADLOCKING = [
    ("scc:3", "all-port", "oldest-first", 3),
    ("scc:3", "one-port", "oldest-first", 3),
    ("scc:3", "k-port:2", "fifo", 3),
    ("scc:3", "sdc", "fifo", 3),
    ("ccc:3", "all-port", "fifo", 3),
    ("ccc:3", "one-port", "fifo", 3),
    ("ccc:3", "k-port:2", "oldest-first", 3),
    ("ccc:3", "sdc", "fifo", 3),
    ("star:4", "all-port", "fifo", 0),
    ("ms:2,2", "one-port", "fifo", 3),
]


@pytest.mark.parametrize("spec,kind,order,seed", DEADLOCKING)
def test_engine_equals_reference_up_to_the_deadlock(spec, kind, order, seed):
    topo, model, w = make_job(spec, kind, 1, seed=seed, packets=8)
    ref = run_reference(topo, model, w, order=order, seed=seed)
    assert ref.deadlock_step is not None  # why the job is in this list
    rec = run_engine(topo, model, w, order=order, seed=seed)
    assert_matches_reference(rec, ref, topo)


# -- invariants read from the hop rows -----------------------------------------------------
def buffer_stays(rec, use_cls):
    """``{(node, port, class): [(arrive, leave), ...]}`` of every stay in a link buffer.

    The buffer is the one link (node, port) feeds; a packet holds its slot
    from the step it arrives through the step it leaves (its credit returns
    for the step after), or to the end of the run if it never leaves.
    """
    dest = dict(zip(rec.packets[:, 0].tolist(), rec.packets[:, 2].tolist(), strict=True))
    rows = by_packet(rec.hop_rows).tolist()
    stays = defaultdict(list)
    taken = 0
    for i, (step, pid, frm, to, port) in enumerate(rows):
        taken = taken + 1 if i and rows[i - 1][1] == pid else 1
        if to == dest[pid]:
            continue
        later = i + 1 < len(rows) and rows[i + 1][1] == pid
        leave = rows[i + 1][0] if later else rec.steps + 1
        stays[(frm, port, taken if use_cls else 0)].append((step, leave))
    return stays


def peak_occupancy(stays):
    """Most slots a buffer needs in one step: held at its start plus arriving in it."""
    peak = 0
    for spans in stays.values():
        for s, _ in spans:  # the count only grows at an arrival
            peak = max(peak, sum(a <= s <= b for a, b in spans))
    return peak


INVARIANT_CASES = [
    ("star:4", "all-port", 1, "none", None, 8),
    ("ccc:3", "one-port", 1, "none", None, 8),
    ("scc:4", "all-port", 1, "none", {"local": 2}, 6),
    ("ms:2,2", "k-port:2", 2, "none", None, 8),
    ("hypercube:3", "sdc", 2, "hops", None, 8),
    ("borel:7,2,0,1", "all-port", 1, "hops", {"A": 2}, 8),
]


@pytest.mark.parametrize("spec,kind,buffer,classes,capacity,packets", INVARIANT_CASES)
def test_buffer_occupancy_never_exceeds_its_slots(spec, kind, buffer, classes, capacity, packets):
    topo, model, w = make_job(spec, kind, buffer, classes, capacity, packets=packets)
    rec = run_engine(topo, model, w)
    stays = buffer_stays(rec, classes == "hops")
    assert peak_occupancy(stays) == buffer  # never above B, and B is reached: not vacuous
    # injection buffers: admitted in source order (injection step, id), after the
    # injection step, left after the admission, at most B held at each admission
    first_hop = {}
    for step, pid, *_ in rec.hop_rows.tolist():
        first_hop[pid] = min(step, first_hop.get(pid, step))
    pk = rec.packets[rec.packets[:, 1] != rec.packets[:, 2]]
    for src in np.unique(pk[:, 1]):
        mine = pk[pk[:, 1] == src]
        mine = mine[np.lexsort((mine[:, 0], mine[:, 3]))]
        adm, inj = mine[:, 6], mine[:, 3]
        left = np.array([first_hop.get(p, rec.steps + 1) for p in mine[:, 0].tolist()])
        ok = adm >= 0
        assert (ok[:-1] >= ok[1:]).all() and (np.diff(adm[ok]) >= 0).all()
        assert (adm[ok] >= inj[ok]).all() and (left[ok] > adm[ok]).all()
        assert (left[~ok] > rec.steps).all()
        for s in np.unique(adm[ok]):
            assert ((adm[ok] <= s) & (left[ok] > s)).sum() <= buffer


@pytest.mark.parametrize(
    "spec,kind,order,classes,wl",
    [
        ("star:4", "all-port", "fifo", "none", dict(packets=4)),
        ("ms:2,2", "one-port", "oldest-first", "hops", dict(packets=3)),
        ("ccc:3", "sdc", "fifo", "hops", dict(packets=4)),
        ("borel:7,2,0,1", "k-port:2", "oldest-first", "none", dict(packets=2)),
        ("scc:3", "all-port", "fifo", "none", dict(injection="bernoulli", rate=0.7, steps=8)),
    ],
)
def test_huge_buffer_equals_unbounded(spec, kind, order, classes, wl):
    topo, free, w = make_job(spec, kind, 0, **wl)
    _, huge, _ = make_job(spec, kind, 10**6, classes, **wl)
    a = run_engine(topo, free, w, order=order, tie="random")
    b = run_engine(topo, huge, w, order=order, tie="random")
    assert b.deadlock is None and a.steps == b.steps
    np.testing.assert_array_equal(by_id(a.packets), by_id(b.packets))
    np.testing.assert_array_equal(by_packet(a.hop_rows), by_packet(b.hop_rows))


# -- deadlock -------------------------------------------------------------------------------
def test_deadlock_report():
    # seed 0 of this job deadlocks in the reference (asserted below)
    topo, model, w = make_job("star:4", "all-port", 1, seed=0, packets=8)
    ref = run_reference(topo, model, w, seed=0)
    rec = run_engine(topo, model, w, seed=0)
    assert ref.deadlock_step is not None
    dl = rec.deadlock
    assert dl["step"] == ref.deadlock_step == rec.steps
    pk = by_id(rec.packets)
    stuck = pk[pk[:, 4] < 0]
    assert dl["blocked_packets"] == stuck.shape[0] > 0
    assert np.array_equal(pk[:, 0], np.sort(rec.injected_ids))  # delivered + stuck = injected
    assert f"deadlock in step {dl['step']}" in dl["message"]
    cycle = dl["cycle"]
    assert len(cycle) >= 2
    full = {k: sum(b > rec.steps for _, b in v) for k, v in buffer_stays(rec, False).items()}
    for i, c in enumerate(cycle):
        assert c["next"] == cycle[(i + 1) % len(cycle)]["node"]  # closed
        node, port = topo.parse_label(c["node"]), topo.ports.index(c["port"])
        assert topo.neighbors([node])[0, port] == topo.parse_label(c["next"])  # a real link
        assert c["class"] is None
        assert full.get((node, port, 0), 0) == model.buffer  # the buffer it feeds is full
        assert ref.occupancy.get((node, port, 0), 0) == model.buffer


def test_hop_classes_deliver_the_deadlocking_job():
    topo, model, w = make_job("star:4", "all-port", 1, "hops", seed=0, packets=8)
    ref = run_reference(topo, model, w, seed=0)
    rec = run_engine(topo, model, w, seed=0)
    assert_matches_reference(rec, ref, topo)
    assert rec.deadlock is None and (rec.packets[:, 4] >= 0).all()
    assert rec.packets.shape[0] == 8 * topo.num_nodes


# -- errors -----------------------------------------------------------------------------
def test_buffer_parameters_are_checked():
    with pytest.raises(MpinetError, match=r"model buffer .* must be in \[0,"):
        parse_model("all-port", buffer=-1)
    for buffer in (None, 0):
        with pytest.raises(ModelError, match="needs a finite model buffer"):
            parse_model("all-port", buffer=buffer, buffer_classes="hops")
    with pytest.raises(ModelError, match="buffer_classes must be 'none' or 'hops'"):
        parse_model("all-port", buffer=1, buffer_classes="vc")


def test_route_longer_than_max_hops_is_an_error():
    topo, model, w = make_job("star:5", "all-port", 1, "hops", max_hops=1, packets=1)
    with pytest.raises(CollectiveError, match="max_hops"):
        run_engine(topo, model, w)
    with pytest.raises(ValueError, match="max_hops"):
        run_reference(topo, model, w)
    # the bound is exact: a route of L hops occupies classes 1..L-1 (its last hop
    # delivers), so max_hops = L - 1 for the job's longest L is enough, one less is not
    pid, src, dst = w.injections(0, topo.num_nodes, 0)
    longest = int(make_router("shortest", topo).distance(src, dst).max())
    assert longest >= 3
    _, short, _ = make_job("star:5", "all-port", 1, "hops", max_hops=longest - 2, packets=1)
    with pytest.raises(CollectiveError, match=f"needs buffer class {longest - 1};"):
        run_engine(topo, short, w)
    _, enough, _ = make_job("star:5", "all-port", 1, "hops", max_hops=longest - 1, packets=1)
    rec = run_engine(topo, enough, w)
    assert (rec.packets[:, 4] >= 0).all() and rec.packets[:, 5].max() == longest


# -- regression: a first step with nothing queued ------------------------------------
@pytest.mark.parametrize("buffer,record_hops", [(0, True), (1, False)])
def test_first_step_with_nothing_queued(buffer, record_hops):
    # found by the reference comparison: LinkState.outputs allocated its step buffers only
    # when the step's bound was > 0, so this job raised KeyError 'hop' / TypeError in
    # step 1 (fixed in 1c3e516); a bernoulli job that injects nothing at step 0
    topo = from_spec("hypercube:3")
    wl = dict(injection="bernoulli", rate=0.2, steps=6)
    seed = next(
        s for s in range(100) if Unicast(topo, seed=s, **wl).injections(0, 8, 0)[0].size == 0
    )
    topo, model, w = make_job("hypercube:3", "all-port", buffer, seed=seed, **wl)
    ref = run_reference(topo, model, w, seed=seed)
    assert ref.packets.shape[0] > 0 and (ref.packets[:, 4] >= 0).all()
    rec = run_engine(topo, model, w, seed=seed, record_hops=record_hops)
    np.testing.assert_array_equal(by_id(rec.packets), ref.packets)
    assert rec.steps == ref.steps
    np.testing.assert_array_equal(rec.counters[:, :3], ref.counters)
