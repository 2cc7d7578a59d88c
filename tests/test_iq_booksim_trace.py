"""The iq router against BookSim2's own cycle-by-cycle traces: BookSim's first packets under
load (tests/data/booksim/iq-trace-*.txt, made by scripts/booksim_trace.py) replayed on
mpinet's iq router retire at BookSim's cycles, packet for packet, wherever the trace is
complete (docs/iq-router.md, "Near saturation: the same router, cycle for cycle"). Every
allocation, credit and pointer move of both simulators feeds these retirements, so one
differing decision shows as a differing cycle. The ``anynet-*`` traces are BookSim's anynet
on a network's export, whose routers number their ports their own way (docs/iq-router.md,
"Port numbers")."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_iq_router import iq_model, run

from mpinet.routing import make_router
from mpinet.topology import from_spec

DATA = Path(__file__).parent / "data" / "booksim"
CASES = sorted(p.stem.removeprefix("iq-trace-") for p in DATA.glob("iq-trace-*.txt"))


def load(name: str) -> tuple[dict, int, np.ndarray]:
    """The case's model, window and rows ``(pid, src, dst, created, retired)``."""
    text = (DATA / f"iq-trace-{name}.txt").read_text().splitlines()
    head = {ln[2:].split(":", 1)[0]: ln[2:].split(":", 1)[1].strip() for ln in text
            if ln.startswith("# ") and ":" in ln}  # fmt: skip
    rows = np.array([ln.split() for ln in text if not ln.startswith("#")], np.int64)
    return json.loads(head["model"]), int(head["window"]), rows


def replay(model: dict, rows: np.ndarray, vc_policy: str | None = None, **iq) -> np.ndarray:
    """mpinet's retirement cycle of each row's packet, in the rows' order."""
    topo = from_spec(model.get("topology") or f"mesh:{model['k']},2")
    m = iq_model(topo, flits=model["flits"], vcs=model["vcs"], vc_buffer=model["vc_buffer"],
                 **{**model["iq"], **iq})  # fmt: skip
    m = replace(m, vc_policy=vc_policy or model.get("vc_policy", "any"))
    router = make_router(model.get("routing", "dor"), topo)
    rec, _ = run(topo, router, rows[:, :4].tolist(), m, max_steps=50000)
    p = rec.packets[np.argsort(rec.packets[:, 0])]
    assert (p[:, 0] == rows[:, 0]).all()
    assert (p[:, 3] == rows[:, 3]).all()
    return p[:, 4]


def test_the_traces_are_here():
    assert set(CASES) >= {"meshconfig", "wormhole", "separable", "input-speedup", "speedup",
                          "anynet-hypercube-5", "anynet-hypercube-5-speedup", "torus", "stages",
                          "stages-speculative", "stages-internal"}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_booksims_packets_retire_at_booksims_cycles(name):
    model, window, rows = load(name)
    mine = replay(model, rows)
    seen = rows[:, 4] <= window  # every packet it met was traced
    assert seen.sum() > 0.6 * len(rows)
    bad = np.flatnonzero(seen & (mine != rows[:, 4]))
    assert bad.size == 0, [(rows[i].tolist(), int(mine[i])) for i in bad[:5]]
    # and no packet mpinet retires inside the window is one BookSim retired after it
    assert (mine[~seen] > window).all()


def test_a_second_islip_iteration_would_not_match():
    """BookSim2's iq router runs one iSLIP iteration whatever ``alloc_iters`` says
    (docs/iq-router.md): the model with two iterations leaves BookSim's cycles."""
    model, window, rows = load("meshconfig")
    mine = replay(model, rows, alloc_iters=2)
    seen = rows[:, 4] <= window
    assert (mine[seen] != rows[seen, 4]).sum() > 10


def test_mpinets_own_port_numbers_would_not_match(monkeypatch):
    """The anynet trace needs BookSim's port numbers (docs/iq-router.md, "Port numbers"):
    with the ports in mpinet's order (the export's, terminal last) ties break otherwise."""
    from mpinet.engine.flit import iq_ports

    def own(topo, nbt):  # the state's ports mpinet's, BookSim's numbers the same
        return np.tile(np.arange(nbt.shape[1], dtype=np.int64), (nbt.shape[0], 1)), 0

    monkeypatch.setattr(iq_ports, "booksim_order", own)
    model, window, rows = load("anynet-hypercube-5")
    mine = replay(model, rows)
    seen = rows[:, 4] <= window
    assert (mine[seen] != rows[seen, 4]).sum() > 10


def test_the_textbook_dateline_would_not_match():
    """BookSim's torus takes a packet's VC class as it turns into a dimension
    (``dateline-turn``, docs/booksim.md): with the class raised at the wrap link instead
    (``dateline``) the torus trace's packets retire at other cycles."""
    model, window, rows = load("torus")
    assert model["vc_policy"] == "dateline-turn"
    mine = replay(model, rows, vc_policy="dateline")
    seen = rows[:, 4] <= window
    assert (mine[seen] != rows[seen, 4]).sum() > 10
