"""scripts/iq_floor.py's floor is a simulator, not a toy: on bench_iq.py's mesh:4,2 case every
packet is delivered, its flit-hops are the exact run's (the same routes and packets), its two
layouts deliver alike, and lone packets take docs/iq-router.md's zero-load latency (the
floor's own pipeline: it has no speculation or speedup, which this case's keys ask of iq)."""

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
