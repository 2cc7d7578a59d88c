"""``vc_policy = "dateline-turn"``: BookSim2's torus VC classes (``dim_order_torus``).

The truth is computed here from BookSim's rule as its source states it, on routes walked
independently (lowest differing dimension first, the shorter way round, a tie taken one
way): when a packet turns into dimension ``i`` its class is 1 where its coordinate ``i``
is above the destination's, and it keeps that class along the ring. Class 0 takes VCs
``[0, V/2)``, class 1 ``[V/2, V)``. Checked: the policy's ranges hop by hop, the iq router's
compiled ranges (``route_head``), the static analysis (acyclic with two VCs), and runs on
both routers and on 1-4 ranks.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from test_flit_engine import Packets
from test_iq_lean import both, iq_model, same, traffic
from test_kncube import coord, walk_dor

from mpinet.deadlock.vc import analyze_vc
from mpinet.deadlock.vc_need import check_vcs
from mpinet.engine.flit import iq_blocks as ib
from mpinet.engine.flit import iq_moves
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.flit.iq_lean_run import LEAN_PATH
from mpinet.engine.models import parse_model
from mpinet.errors import RoutingError
from mpinet.routing import make_router, torus_rings
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from mpinet.workloads.unicast import Unicast

#: (torus, dor's tie): odd K has no ties
TORI = [("torus:5,2", "plus"), ("torus:4,3", "plus"), ("torus:6,2", "minus"), ("torus:7,1", "plus")]


def booksim_route(topo, nb, src, dst, tie):
    """The hops of the dor route ``src -> dst`` (test_kncube's walk; ``nb`` the neighbour
    table) and each hop's class by BookSim's rule."""
    k, n = topo.k, topo.n
    cur, hops, last_dim, cls = src, [], -1, 0
    for p in walk_dor("torus", k, n, src, dst, tie):
        i = p // 2
        if i != last_dim:  # the turn: the class chosen here, kept along the ring
            cls = int(coord(cur, k, n)[i] > coord(dst, k, n)[i])
        hops.append((cur, int(nb[cur, p]), cls))
        cur, last_dim = hops[-1][1], i
    return hops


def _nb(topo):
    return np.asarray(topo.neighbors(np.arange(topo.num_nodes)), np.int64)


@pytest.mark.parametrize("spec,tie", TORI)
def test_policy_ranges_are_booksims_classes(spec, tie):
    topo = from_spec(spec)
    pol, nb = make_vc_policy("dateline-turn", topo, 4), _nb(topo)
    nodes = range(topo.num_nodes)
    for src, dst in itertools.product(nodes, nodes):
        state = np.zeros((1, 1), np.int64)
        for h, (a, b, cls) in enumerate(booksim_route(topo, nb, src, dst, tie)):
            lo, hi, state = pol.hop([a], [b], [h], state, dst=[dst])
            assert (int(lo[0]), int(hi[0])) == ((2, 4) if cls else (0, 2)), (src, dst, h)


def test_classes_by_hand():
    """torus:4,2, id = x + 4 y: x 2 -> 3 -> 0 (above the destination's 0: class 1 from its
    first hop), then y 0 -> 3 -> 2 down (0 is not above 2: class 0, though it wraps)."""
    topo = from_spec("torus:4,2")
    path, dst = [2, 3, 0, 12, 8], 8
    got = {}
    for name in ("dateline-turn", "dateline"):
        pol, state, got[name] = make_vc_policy(name, topo, 4), np.zeros((1, 1), np.int64), []
        for a, b in itertools.pairwise(path):
            lo, hi, state = pol.hop([a], [b], [0], state, dst=[dst])
            got[name].append((int(lo[0]), int(hi[0])))
    assert got["dateline-turn"] == [(2, 4), (2, 4), (0, 2), (0, 2)]
    assert got["dateline"] == [(0, 2), (2, 4), (2, 4), (2, 4)]  # class 1 from the crossing on


def test_refusals():
    topo = from_spec("torus:5,2")
    with pytest.raises(RoutingError, match="needs vcs >= 2 for dor on torus:5,2"):
        check_vcs(make_vc_policy("dateline-turn", topo, 1), make_router("dor", topo))
    with pytest.raises(RoutingError, match="applies to torus:K,N only, not mesh:4,2"):
        make_vc_policy("dateline-turn", from_spec("mesh:4,2"), 2)
    with pytest.raises(RoutingError, match="needs the packets' destinations"):
        make_vc_policy("dateline-turn", topo, 2).hop([0], [1], [0], np.zeros((1, 1), np.int64))
    big = from_spec("torus:3,21")  # 3^20 >= 2^31: the iq router's link words cannot hold it
    with pytest.raises(RoutingError, match=r"K\^\(N-1\) < 2\^31 .*torus:3,21 is larger"):
        torus_rings.link_words(big, np.array([0]), np.array([1]), True)


@pytest.mark.parametrize("spec,tie", [*TORI, ("torus:8,2", "random"), ("torus:3,3", "random")])
def test_acyclic_with_two_vcs(spec, tie):
    """BookSim's classes are deadlock-free: the (link, VC) graph of every route is acyclic
    with two VCs (class 1 moving down is the packets that do not wrap), and ``any`` is not."""
    topo = from_spec(spec)
    rep = analyze_vc(topo, make_router("dor", topo, tie=tie), "dateline-turn", vcs=2).report
    assert rep["acyclic"] and rep["vcs_needed"] == 2
    if topo.k > 3:
        assert not analyze_vc(topo, make_router("dor", topo, tie=tie), "any", vcs=2).report[
            "acyclic"
        ]


@pytest.mark.parametrize("spec,tie", TORI)
def test_iq_route_head_takes_booksims_classes(spec, tie):
    """The iq router's compiled ranges (``route_head`` with ``link_words``) are the
    policy's, for every pair, every hop of the route, from the state the route leaves."""
    topo = from_spec(spec)
    deg, vcs = topo.degree, 4
    router = make_router("dor", topo, tie=tie)
    nbt = _nb(topo)
    nodes = np.repeat(np.arange(topo.num_nodes), deg)
    words = torus_rings.link_words(topo, nodes, nbt.ravel(), True)
    vrule = (np.int64(iq_moves.TORUS_TURN), np.int64(vcs), words)
    sport = np.tile(np.arange(deg), topo.num_nodes)
    dst_a, hops, st, hdr = (np.zeros(1, np.int64) for _ in range(4))
    hdr = hdr.reshape(1, 1)
    out = np.zeros(3, np.int64)
    for src, dst in itertools.product(range(topo.num_nodes), repeat=2):
        dst_a[0], st[0] = dst, 0
        for a, b, cls in booksim_route(topo, nbt, src, dst, tie):
            e = iq_moves.route_head(a, a, 0, vcs, deg, nbt.ravel(), words, sport, dst_a, hops,
                                    st, hdr, ib.rule_of(router, topo), vrule, out)  # fmt: skip
            assert e == 0 and nbt[a, out[0]] == b
            assert (int(out[1]), int(out[2])) == ((2, 4) if cls else (0, 2)), (src, dst, a)


def test_iq_lean_path_as_general_path():
    topo = from_spec("torus:4,2")
    rows = traffic(topo.num_nodes, 600, 100, seed=4, self_too=False)
    m = iq_model(topo, flits=4, vcs=4, vc_buffer=4, vc_policy="dateline-turn")
    (a, b), (ea, _) = both("torus:4,2", "dor", rows, m, record_hops=True)
    assert ea.steps_path == LEAN_PATH and a.deadlock is None
    same(a, b)


def _ideal(topo, comm=None, rate=0.3):
    m = parse_model("all-port", dict.fromkeys(topo.port_classes, 1))
    m = replace(m, flit=True, switching="wormhole", flits=4, vcs=2, vc_buffer=4,
                vc_policy="dateline-turn")  # fmt: skip
    eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy(m.vc_policy, topo, 2),
                     comm, seed=7)  # fmt: skip
    w = Unicast(topo, "tornado", injection="bernoulli", rate=rate, steps=120, seed=7)
    pk = eng.run(w).packets
    if comm is not None:
        pk = np.concatenate(comm.allgather(pk))
    return pk[np.argsort(pk[:, 0], kind="stable")]


def test_ideal_router_delivers_everything_saturated():
    pk = _ideal(from_spec("torus:6,2"), rate=0.9)
    assert pk.shape[0] > 500 and (pk[:, 4] >= 0).all()


@pytest.mark.mpi(min_size=1)
def test_runs_identical_on_any_rank_count():
    from mpi4py import MPI

    topo = from_spec("torus:5,2")
    assert np.array_equal(_ideal(topo, MPI.COMM_WORLD), _ideal(topo))
    rows = traffic(topo.num_nodes, 400, 60, seed=2, self_too=False)
    m = iq_model(topo, flits=3, vcs=4, vc_buffer=2, vc_policy="dateline-turn")
    rec = []
    for c in (MPI.COMM_SELF, MPI.COMM_WORLD):
        eng = FlitEngine(topo, make_router("dor", topo), m, make_vc_policy(m.vc_policy, topo, 4),
                         c, seed=5)  # fmt: skip
        pk = eng.run(Packets(rows)).packets
        pk = np.concatenate(MPI.COMM_WORLD.allgather(pk)) if c is MPI.COMM_WORLD else pk
        rec.append(pk[np.argsort(pk[:, 0], kind="stable")])
    assert np.array_equal(rec[0], rec[1]) and (rec[0][:, 4] >= 0).all()
