"""scripts/iq_floor.py's floor is a simulator, not a toy: on bench_iq.py's mesh:4,2 case every
packet is delivered, its flit-hops are the exact run's (the same routes and packets), its two
layouts deliver alike, and lone packets take docs/iq-router.md's zero-load latency (the
floor's own pipeline: it has no speculation or speedup, which this case's keys ask of iq).
With the exact model's allocation rules added (scripts/iq_floor_x.py) it delivers every
packet of bench_iq.py's hypercube:8 case in the exact run's cycle, and with the rules of
meshconfig's keys (lookahead routing, ``credit_delay``, ``wait_for_tail_credit``, 16 VCs) and
mesh88_lat's (input speedup) every packet of a mesh:4,2 under those keys."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import iq_floor  # noqa: E402


def test_the_floor_delivers_every_packet_on_mesh_4_2():
    fl = iq_floor.Floor("mesh4-osp2")
    pk = fl.rec.packets
    runs = {layout: fl.run(layout) for layout in iq_floor.LAYOUTS}
    _, deliv, stats = runs["router"]
    assert stats[3] == pk.shape[0] > 1000
    assert (deliv[pk[:, 0]] > pk[:, 3]).all()
    assert stats[1] == int(fl.rec.link_load.sum()) == int((fl.hops * fl.prm[4]).sum())
    for _, d, s in runs.values():
        np.testing.assert_array_equal(d, deliv)
        np.testing.assert_array_equal(s, stats)
    assert iq_floor.zero_load(fl, 12) == []


def test_the_exact_rules_on_the_floors_shape_deliver_as_the_exact_run():
    """iq_floor_x with iSLIP's switch and VC allocation and the route stage (mode 7) delivers
    every packet of bench_iq.py's hypercube:8 case in the exact iq run's cycle; the floor's
    own allocation in the same pass (mode 0) does not."""
    fl = iq_floor.Floor("hc8-L16")
    pk = fl.rec.packets
    _, d7, s7 = fl.run_x(7)
    _, d0, s0 = fl.run_x(0)
    np.testing.assert_array_equal(d7[pk[:, 0]], pk[:, 4])
    np.testing.assert_array_equal(fl.run_x(135)[1], d7)
    assert s7[1] == s0[1] == int(fl.rec.link_load.sum())
    assert (d0[pk[:, 0]] > pk[:, 3]).all() and (d0[pk[:, 0]] != pk[:, 4]).any()


def test_the_mesh_keys_rules_deliver_as_the_exact_run_on_mesh_4_2():
    """Mode 127 (every rule, each key as the case's) delivers every packet of mesh:4,2 under
    meshconfig's keys, and under mesh88_lat's (input speedup 2, iSLIP, 8 VCs), in the exact iq
    run's cycle; without any one rule the keys ask for, some packet arrives in another cycle."""
    x = iq_floor.iq_floor_x
    mesh = (x.M_SA, x.M_VA, x.M_WT, x.M_CD, x.M_LA)
    for case, rules in (("mesh4-meshc", mesh), ("mesh4-88", (*mesh, x.M_IS))):
        fl = iq_floor.Floor(case)
        pk = fl.rec.packets
        _, d, s = fl.run_x(127)
        np.testing.assert_array_equal(d[pk[:, 0]], pk[:, 4])
        assert s[3] == pk.shape[0] > 500 and s[1] == int(fl.rec.link_load.sum())
        for bit in rules:
            assert (fl.run_x(127 & ~bit)[1][pk[:, 0]] != pk[:, 4]).any(), (case, bit)
        np.testing.assert_array_equal(fl.run_x(255)[1], d)  # M_VQ: the same grants
