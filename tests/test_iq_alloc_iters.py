"""``alloc_iters`` in a BookSim configuration run by ``mpinet booksim`` (docs/booksim.md):
BookSim2's iq router builds its allocators without the configuration (``iq_router.cpp``'s
``Allocator::NewAllocator`` calls pass none), so its iSLIP runs one iteration whatever the
key says; measured, BookSim2's output is the same for 1, 2 and 3. The key is accepted,
listed as treated differently, and the iq model runs one iteration as BookSim's does."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpinet.jobs.booksim_config import read_config
from mpinet.jobs.booksim_map import to_job

MESH = ("topology = mesh; k = 4; n = 2; routing_function = dor; num_vcs = 16; "
        "vc_buf_size = 8; routing_delay = 0; credit_delay = 2;\n")  # fmt: skip


@pytest.mark.parametrize("iters", [None, 1, 2, 3])
def test_alloc_iters_reaches_no_allocator(tmp_path: Path, iters):
    p = tmp_path / "c.cfg"
    p.write_text(MESH + (f"alloc_iters = {iters};\n" if iters is not None else ""))
    raw, _, info = to_job(read_config(str(p), []))
    assert raw["model"]["router"] == "iq"
    assert raw["model"]["iq"]["alloc_iters"] == 1
    assert raw["model"]["iq"]["credit_delay"] == 2  # the router's other keys still map
    if iters is not None:
        assert "alloc_iters" in info["treated_differently"]
