"""Routes walked at injection on the iq router's lean path, one rank (docs/iq-router.md,
"Session 21: routes walked on the lean path"): every walked-route router family runs the
general path's record bit for bit (deliveries, counters, link loads, hop rows), in two waves
so the second runs on rows the first freed; on several ranks too ("Session 22"), the heads
that cross carrying their routes (``-m mpi --with-mpi`` under mpiexec)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from test_flit_engine import Packets
from test_flit_route_carry import FAMILIES, _id
from test_iq_lean import iq_model, same

from mpinet.engine.flit import iq_lean_run
from mpinet.engine.flit import iq_state as iqs
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.iq_config import IQConfig, check_iq
from mpinet.routing import make_router
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.route_tables import PATH_WALKED
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from tests.test_flit_chunk import random_rows

#: every walked family but dor (its torus ties are drawn at injection, no rows)
WALKED = [f for f in FAMILIES if f[1] != "dor"]
#: BookSim's keys the lean path takes, by case (lookahead, speculation, output speedup)
KEYS = [{}, {"routing_delay": 0}, {"speculative": 1, "output_speedup": 2}]


def run(topo, case, m, rows, lean, comm=None):
    _, name, opts, wrap = case
    router = make_router(name, topo, **opts)
    if wrap:
        router = SourceRouted(router, release="engine")
    eng = FlitEngine(topo, router, m, make_vc_policy(m.vc_policy, topo, m.vcs), comm,
                     record_hops=True, seed=7, max_steps=20000)  # fmt: skip
    eng.iq_lean = lean
    return eng, eng.run(Packets(rows))


@pytest.mark.parametrize("keys", KEYS, ids=["default", "lookahead", "spec-osp2"])
@pytest.mark.parametrize("case", WALKED, ids=_id)
def test_walked_routes_on_the_lean_path(case, keys):
    topo = from_spec(case[0])
    rng = np.random.default_rng(len(case[0]) + len(case[1]))
    rows = random_rows(rng, topo.num_nodes, 300, 40)
    rows += [(300 + i, s, d, t + 90) for i, (_, s, d, t) in enumerate(rows[:120])]
    m = iq_model(topo, flits=4, vcs=2, vc_buffer=2, **keys)
    ea, a = run(topo, case, m, rows, True)
    eb, b = run(topo, case, m, rows, False)
    assert isinstance(ea.router, SourceRouted) and (case[3] or ea.routes == PATH_WALKED)
    assert a.packets.shape[0] == 420
    if a.deadlock is None and not (a.packets[:, 4] < 0).any():
        assert ea.steps_path == iq_lean_run.LEAN_PATH, ea.steps_path
    same(a, b)
    assert a.deadlock == b.deadlock


def test_walked_routes_take_the_lean_path_on_any_rank_count():
    topo = from_spec("star:4")
    router = SourceRouted(make_router("shortest", topo, tie="random"), release="engine")
    iq = IQConfig(**check_iq("model.iq", {}))
    prm = iqs.make_params(topo.num_nodes, topo.degree, 2, 4, 4, iq, False)
    for size in (1, 2):
        eng = SimpleNamespace(model=SimpleNamespace(iq=iq), router=router, size=size)
        assert iq_lean_run.why_not_lean(eng, prm, ()) is None


@pytest.mark.mpi
@pytest.mark.parametrize("keys", KEYS, ids=["default", "lookahead", "spec-osp2"])
@pytest.mark.parametrize("case", WALKED, ids=_id)
def test_walked_routes_on_the_lean_path_on_ranks(case, keys):
    """On R ranks (docs/iq-router.md, "Session 22"): a head that crosses carries the rest of
    its route in the lean path's exchange; the run gathered is the one-rank lean run's, row
    for row, on the lean path wherever the one-rank run took it."""
    from mpi4py import MPI
    from test_flit_ranks import gathered

    comm = MPI.COMM_WORLD
    topo = from_spec(case[0])
    rng = np.random.default_rng(len(case[0]) + len(case[1]))
    rows = random_rows(rng, topo.num_nodes, 300, 40)
    rows += [(300 + i, s, d, t + 90) for i, (_, s, d, t) in enumerate(rows[:120])]
    m = iq_model(topo, flits=4, vcs=2, vc_buffer=2, **keys)
    runs, paths = [], []
    for c in (MPI.COMM_SELF, comm):
        eng, rec = run(topo, case, m, rows, True, c)
        runs.append(gathered(c, rec))
        paths.append(eng.steps_path)
    one, many = runs
    assert paths[1] == paths[0], paths
    for key, a in one.items():
        b = many[key]
        if key == "counters":  # (the flits that crossed ranks: 0 on one rank)
            a, b = a[:, :3], b[:, :3]
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, key
    if paths[0] == iq_lean_run.LEAN_PATH and comm.Get_size() > 1:
        assert many["counters"][:, 3].sum() > 0  # heads crossed ranks
