"""The iq router's arrays in the memory plan (:mod:`mpinet.jobs.plans_iq`) against the
arrays a run allocates (``nbytes`` of :func:`~mpinet.engine.flit.iq_state.make_arrays`'s,
as the run left them, and of a rank's share on several ranks)."""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_engine import Packets

from mpinet.engine.flit import iq_ranks
from mpinet.engine.flit import iq_state as iqs
from mpinet.engine.flit import route_carry as rc
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.models import parse_model, switching_model
from mpinet.jobs import plans_iq
from mpinet.jobs.estimate import Estimate
from mpinet.jobs.iq_job import iq_model
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec

MODELS = [
    {"router": "iq", "flits": 4, "vcs": 3, "vc_buffer": 2},
    {"router": "iq", "vcs": 16, "vc_buffer": 8,
     "iq": {"routing_delay": 0, "input_speedup": 2, "internal_speedup": 1.5}},
]  # fmt: skip


def _engine_model(topo, model):
    m = switching_model(parse_model("all-port", dict.fromkeys(topo.port_classes, 1)),
                        "wormhole", model.get("flits"), model.get("vcs"),
                        model.get("vc_buffer"), None)  # fmt: skip
    return iq_model(m, model)


@pytest.mark.parametrize("model", MODELS)
def test_the_plan_is_a_runs_arrays(model):
    topo = from_spec("mesh:5,2")
    n = topo.num_nodes
    m = _engine_model(topo, model)
    eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy("any", topo, m.vcs))
    rng = np.random.default_rng(1)
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), i // 3) for i in range(3000)]
    eng.run(Packets(rows))
    s = eng.iq_state[0]
    real = sum(a.nbytes for a in s)
    keys = plans_iq.iq_keys(model)
    assert plans_iq.iq_bytes(n, n, topo.degree, keys, 0, s.pk_pid.size) == real
    est = Estimate("run")
    plans_iq.iq_state(est, n, 1, topo.degree, model, 0, 1500)  # the run's slots: 2 x 1500
    if plans_iq.lean(topo.degree, keys):  # the run's path: the lean arrays (tested below)
        real = plans_iq.lean_bytes(n, topo.degree, keys, 0, s.pk_pid.size)
    assert est.parts["iq router arrays"] >= real


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("size", [2, 3])
def test_a_ranks_share_is_its_arrays(model, size):
    """On several ranks a rank keeps its nodes' arrays, the links' and its rows to the
    others."""
    topo = from_spec("torus:6,2")
    n, deg = topo.num_nodes, topo.degree
    flits, vcs, buf, iq = plans_iq.iq_keys(model)
    own = -(-n // size)
    prm = iqs.make_params(n, deg, vcs, buf, flits, iq, False, 0, own)
    z = np.zeros(own * deg, np.int64)  # the links' tables: the rank's rows
    arrays = iqs.make_arrays(prm, z, z, z, 1, 700, iq_ranks.ROW + 1)
    real = sum(a.nbytes for a in arrays)
    assert plans_iq.iq_bytes(n, own, deg, (flits, vcs, buf, iq), 1, 700) == real


def test_only_iq_jobs_are_counted():
    assert plans_iq.iq_keys({"switching": "wormhole"}) is None
    assert plans_iq.iq_keys({"router": "iq", "iq": {"routing_delay": -3}}) is None


@pytest.mark.parametrize("spec,hw", [("mesh:5,2", 0), ("torus:9,3", 2), ("hypercube:7", 1)])
@pytest.mark.parametrize("slots", [1024, 3000])
def test_the_lean_plan_is_the_lean_arrays(spec, hw, slots):
    """One rank on the lean path: the plan is the bytes make_lean allocates, for any size
    (the routers' bit set is not linear: 128 nodes need two words)."""
    from mpinet.engine.flit import iq_lean_state as ils

    topo = from_spec(spec)
    n, deg = topo.num_nodes, topo.degree
    keys = plans_iq.iq_keys({"router": "iq", "flits": 4, "vcs": 3, "vc_buffer": 2})
    flits, vcs, buf, iq = keys
    prm = iqs.make_params(n, deg, vcs, buf, flits, iq, False)
    z = np.zeros(n * deg, np.int64)
    real = sum(a.nbytes for a in ils.make_lean(prm, z, z, z, z, hw, slots))  # lcount: a link's
    assert plans_iq.lean_bytes(n, deg, keys, hw, slots) == real


def test_the_plan_counts_the_path_that_runs():
    """The lean arrays where the run takes the lean path (one rank, a compiled hop, the keys
    it takes), the general arrays elsewhere; the engine's own choice agrees."""
    topo = from_spec("mesh:5,2")
    n, deg = topo.num_nodes, topo.degree
    plain, slow = MODELS[0], {**MODELS[0], "flits": 65}  # (over 64 flits: the general path)

    def planned(model, size=1, walked=False):
        est = Estimate("run")
        plans_iq.iq_state(est, n, size, deg, model, 0, None, walked)
        return est.parts["iq router arrays"]

    lean_b = plans_iq.lean_bytes(n, deg, plans_iq.iq_keys(plain), 0, plans_iq.START_SLOTS)
    assert planned(plain) == lean_b
    assert planned(plain, walked=True) == lean_b  # routes walked: the lean path too
    keys = plans_iq.iq_keys(plain)
    # several ranks: the lean arrays of a rank's block and its exchange (from the cut)
    est = Estimate("run")
    plans_iq.iq_state(est, n, 2, deg, plain, 0, None, False, topo)
    assert est.parts["iq router arrays"] == plans_iq.lean_ranks_bytes(topo, 2, keys, 0, 1024)
    assert planned(plain, size=2) == plans_iq.iq_bytes(n, 13, deg, keys, 0, 1024)  # no topo
    assert planned(slow) == plans_iq.iq_bytes(n, n, deg, plans_iq.iq_keys(slow), 0, 1024)
    for model, lean in ((plain, True), (slow, False)):
        assert plans_iq.lean(deg, plans_iq.iq_keys(model)) is lean
        m = _engine_model(topo, model)
        eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy("any", topo, m.vcs))
        eng.run(Packets([(i, i % n, (3 * i + 1) % n, i) for i in range(50)]))
        assert ("lean path" in eng.steps_path) is lean, eng.steps_path


#: a lean run on R ranks: network, router (walked: its routes walked at injection), model
RANKS = [
    ("mesh:8,2", "dor", False, MODELS[0]),
    ("ms:2,2", "shortest", True, {"router": "iq", "flits": 4, "vcs": 2, "vc_buffer": 2,
                                  "iq": {"speculative": 1, "output_speedup": 2}}),
]  # fmt: skip


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("case", RANKS, ids=["mesh-dor", "ms-walked"])
def test_the_lean_ranks_plan_is_a_ranks_arrays(case, monkeypatch):
    """On R ranks the lean path's arrays of a rank (its routers' lean arrays, the packet map
    and flags, the exchange's buffers and requests) are the plan's bytes for that rank, with
    the MPI library's handle and status widths, and within the plan's figure (the most of
    the ranks); tracemalloc's peak while the lean path runs, within twice it (the rest: a
    block's injections and delivery rows, which the plan counts apart)."""
    import tracemalloc

    from mpi4py import MPI

    from mpinet.engine.flit import iq_lean_ranks as ilr
    from mpinet.engine.flit import mpi_native
    from mpinet.engine.flit.iq_lean_run import LEAN_PATH
    from mpinet.routing.route_rows import SourceRouted

    comm = MPI.COMM_WORLD
    spec, rname, walk, model = case
    topo = from_spec(spec)
    n, deg, size = topo.num_nodes, topo.degree, comm.Get_size()
    m = _engine_model(topo, model)
    seen, made, peaks = {}, [], []
    call, ranks, lean_run = ilr._call, iq_ranks.Ranks, ilr.run

    def keep(eng, fns, args):
        seen["args"] = args
        return call(eng, fns=fns, args=args)

    def build(*a, **k):
        made.append(ranks(*a, **k))
        return made[-1]

    def measured(*a, **k):  # the peak above what the run held when the lean path began
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = lean_run(*a, **k)
        peaks.append(tracemalloc.get_traced_memory()[1] - before)
        return out

    monkeypatch.setattr(ilr, "_call", keep)
    monkeypatch.setattr(ilr, "run", measured)
    monkeypatch.setattr(iq_ranks, "Ranks", build)
    rng = np.random.default_rng(4)
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), i // 4) for i in range(800)]

    def run():
        router = make_router(rname, topo, **({"tie": "random"} if walk else {}))
        if walk:
            router = SourceRouted(router, release="engine")
        eng = FlitEngine(
            topo, router, m, make_vc_policy("any", topo, m.vcs), comm, seed=3, record_hops=False
        )  # (hop rows: the plan's trace part)
        eng.run(Packets(rows))
        assert eng.steps_path == LEAN_PATH, eng.steps_path
        return eng

    run()  # compiled, warmed
    tracemalloc.start()
    try:
        eng = run()
        peak = peaks[-1]
    finally:
        tracemalloc.stop()
    a = seen["args"]
    s, ex2, net2, rmap, away, rx = a[8], a[16], a[17], a[19], a[20], made[-1]
    nb = lambda xs: sum(x.nbytes for x in xs if isinstance(x, np.ndarray))  # noqa: E731
    real = nb(s) + rmap.nbytes + away.nbytes + nb(rx.ex) + nb(rx.net)
    real += sum(nb((e.send, e.nsend, e.recv)) for e in ex2)
    real += sum(nb((x.cap, x.reqs, x.mine, x.tot)) for x in net2)
    keys = plans_iq.iq_keys(model)
    hw = 1 if walk else 0
    cells = comm.allreduce(eng.router.longest if walk else 0, op=MPI.MAX)
    words = rc.words_per_head(cells) if walk else 0
    nat = mpi_native.native(comm)
    mine = plans_iq.lean_ranks_bytes(topo, size, keys, hw, s.pk_pid.size, words, comm.rank,
                                     np.dtype(nat.handle).itemsize, nat.status_words)  # fmt: skip
    assert mine == real
    est = Estimate("run")
    plans_iq.iq_state(est, n, size, deg, model, hw, 2 * len(rows), walk, topo)
    planned = est.parts["iq router arrays"]
    assert real <= planned and peak <= 2 * planned, (real, peak, planned)
    print(f"rank {comm.rank}: arrays {real}, peak {peak}, planned {planned}")
