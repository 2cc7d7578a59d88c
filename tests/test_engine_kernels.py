"""Memory layout of the engine's kernels: link records, aligned packet records, serving order."""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.engine import kernels as kn
from mpinet.engine import kernels_check as kc
from mpinet.engine.core import Engine
from mpinet.engine.models import parse_model
from mpinet.engine.pool import Pool
from mpinet.engine.state import LinkState
from mpinet.routing import make_router
from mpinet.topology import from_spec
from mpinet.workloads import Unicast


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


@pytest.mark.parametrize(
    "kind,buffer,classes", [("all-port", 0, None), ("one-port", 4, None), ("all-port", 2, "hops")]
)
def test_link_fields_share_one_aligned_record(kind, buffer, classes):
    m = parse_model(kind, buffer=buffer, buffer_classes=classes, max_hops=6)
    nbt = np.arange(5 * 3, dtype=np.int32)
    st = LinkState(5, 3, m, Pool(15, 0), nbt)
    assert st.links.dtype.itemsize == 32 and st.links.ctypes.data % 64 == 0
    # what a hop touches at a link is in its record: one cache line
    fields = [st.lcount, st.nbt, st.load, st.lstamp]
    if st.ncls == 1:
        fields += [st.qhead, st.qtail, st.credit]
    for f in fields:
        assert _root(f) is _root(st.links["count"]) and f.strides == (32,)
    assert st.nbt.tolist() == nbt.tolist() and (st.qhead == -1).all()
    assert st.qhead.size == 15 * st.ncls and (st.credit == m.buffer).all()
    st.load[:] = np.arange(15)
    load = st.link_load()
    assert load.dtype == np.int64 and load.flags.c_contiguous and load.shape == (5, 3)
    assert load.ravel().tolist() == list(range(15))


@pytest.mark.parametrize("hw", [0, 1, 2])
def test_packet_records_are_cache_lines(hw):
    p = Pool(1000, hw, capacity=100_000)
    assert p.dtype.itemsize == 64 and p.rec.ctypes.data % 64 == 0
    s = p.alloc(150_000)  # grows: still aligned, headers kept
    assert p.rec.ctypes.data % 64 == 0 and p.hdr.shape == (p.cap, hw)
    p.hdr[s] = np.arange(s.size * hw).reshape(s.size, hw)
    p.alloc(200_000)
    assert p.hdr[s].ravel().tolist() == list(range(s.size * hw))
    if hw == 1:  # a one-word header lives in the record
        assert _root(p.hdr) is _root(p.rec)


def test_check_moves_small_scratch_catches_overload():
    caps = np.array([1, 2], np.int64)
    lcnt = np.zeros(8, np.uint8)
    ncnt = np.zeros(4, np.int32)
    ok = np.array([0, 3, 3, 5], np.int64)  # link 3 = (node 1, port 1): capacity 2
    assert kc.check_moves(ok, 2, caps, kn.KIND_ALL, 0, -1, lcnt, ncnt) == (-1, 0)
    bad = np.array([3, 0, 3, 3], np.int64)
    assert kc.check_moves(bad, 2, caps, kn.KIND_ALL, 0, -1, lcnt, ncnt) == (3, 1)
    two = np.array([2, 0, 1], np.int64)  # node 0 on ports 0 and 1
    assert kc.check_moves(two, 2, caps, kn.KIND_K, 1, -1, lcnt, ncnt) == (2, 2)
    assert kc.check_moves(two, 2, caps, kn.KIND_SDC, 0, 0, lcnt, ncnt) == (2, 3)
    assert not lcnt.any() and not ncnt.any()  # left zeroed, also after a violation
    st = LinkState(4, 2, parse_model("all-port"), Pool(8, 0), np.zeros(8, np.int32))
    st.set_max_capacity(np.array([300, 1]))  # a uint8 count could wrap before 300
    assert st.lcnt.dtype == np.int32


def _run(spec, model, buffer, order, shuffle, seed=3):
    topo = from_spec(spec)
    m = parse_model(model, buffer=buffer)
    real = kn.select
    rng = np.random.default_rng(seed)

    moved = [0]

    def shuffled(*args):  # serve the active links in a random order
        act, na = args[19], args[20]
        assert na.shape == (1,) and act.size == args[17].size  # (lcount)
        before = act[: na[0]].copy()
        act[: na[0]] = rng.permutation(before)
        moved[0] += int((act[: na[0]] != before).sum())
        return real(*args)

    # the per-link queues' serving order (all-port would take the departure calendar)
    eng = Engine(topo, make_router("shortest", topo), m, seed=seed, order=order,
                 record_hops=True, queues="links")  # fmt: skip
    if shuffle:
        kn.select = shuffled
    try:
        rec = eng.run(Unicast(topo, packets=2, seed=seed))
    finally:
        kn.select = real
    assert moved[0] > 0 or not shuffle
    pk = rec.packets[np.argsort(rec.packets[:, 0])]
    hops = rec.hop_rows[np.lexsort(rec.hop_rows.T[::-1])]
    return pk, rec.counters, rec.link_load, hops


@pytest.mark.parametrize(
    "spec,model,buffer,order",
    [
        ("star:6", "all-port", 0, "fifo"),
        ("scc:5", "all-port", 2, "oldest-first"),
        ("ms:2,2", "one-port", 0, "fifo"),
        ("star:5", "k-port:2", 3, "fifo"),
        ("hypercube:7", "sdc", 0, "oldest-first"),
    ],
)
def test_results_do_not_depend_on_the_order_links_are_served(spec, model, buffer, order):
    # dense steps are served in link order, sparse ones in activation order:
    # a random order must give the same packets, steps, loads and hops
    plain = _run(spec, model, buffer, order, shuffle=False)
    mixed = _run(spec, model, buffer, order, shuffle=True)
    for a, b in zip(plain, mixed, strict=True):
        assert np.array_equal(a, b)
