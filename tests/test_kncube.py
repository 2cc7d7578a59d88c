"""mesh:K,N and torus:K,N (BookSim's kncube), dor routing and the torus dateline.

Truth is computed here independently: neighbours from coordinates, distances by a
plain BFS over those neighbours, dor routes by a per-dimension walk written from
BookSim's dor_next_mesh / dor_next_torus description, deadlock verdicts known from
the literature (dor on a mesh is acyclic; on a torus ring it closes a cycle, broken
by the dateline's two classes).
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import replace

import numpy as np
import pytest

from mpinet import theory
from mpinet.deadlock.vc import analyze_vc
from mpinet.deadlock.vc_need import check_vcs, vcs_needed
from mpinet.engine.core import Engine
from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.models import parse_model
from mpinet.engine.report import gather_packets
from mpinet.errors import RoutingError, TopologyError
from mpinet.routing import compiled, make_router
from mpinet.routing.base import HopContext
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec
from mpinet.workloads.unicast import Unicast

SPECS = ["mesh:2,3", "mesh:3,2", "mesh:5,1", "mesh:4,3", "torus:3,2", "torus:4,2", "torus:5,3",
         "torus:6,1", "torus:8,2"]  # fmt: skip


def coord(v, k, n):
    return [(v // k**i) % k for i in range(n)]


def plain_neighbours(fam, k, n, v):
    """Port 2i: +1 along dimension i, 2i+1: -1 (None where a mesh has no link)."""
    c, out = coord(v, k, n), []
    for i in range(n):
        for step in (1, -1):
            x = c[i] + step
            if fam == "mesh" and not 0 <= x < k:
                out.append(None)
                continue
            d = list(c)
            d[i] = x % k
            out.append(sum(d[j] * k**j for j in range(n)))
    return out


def bfs(nb, s):
    dist = {s: 0}
    q = deque([s])
    while q:
        u = q.popleft()
        for w in nb[u]:
            if w is not None and w not in dist:
                dist[w] = dist[u] + 1
                q.append(w)
    return dist


@pytest.mark.parametrize("spec", SPECS)
def test_neighbours_distances_and_closed_forms(spec):
    topo = from_spec(spec)
    fam, (k, n) = topo.family, (topo.k, topo.n)
    N = k**n
    assert topo.num_nodes == N
    nb = {v: plain_neighbours(fam, k, n, v) for v in range(N)}
    got = topo.neighbors(np.arange(N))
    want = np.array([[-1 if w is None else w for w in nb[v]] for v in range(N)])
    assert np.array_equal(got, want)
    rev = topo.reverse_ports(np.arange(N))  # the far end's port back
    for v, p in zip(*np.nonzero(got >= 0), strict=True):
        assert got[got[v, p], rev[v, p]] == v
    dist = np.array([[bfs(nb, s)[d] for d in range(N)] for s in range(N)])
    forms = {cf.quantity: cf.value for cf in theory.closed_forms(fam, (k, n))}
    assert dist.max() == forms["diameter"] == (n * (k - 1) if fam == "mesh" else n * (k // 2))
    assert abs(dist.mean() - forms["avg_distance"]) < 1e-12
    r = make_router("dor", topo)
    s, d = np.divmod(np.arange(N * N), N)
    assert np.array_equal(r.distance(s, d), dist.ravel())


def test_torus_translations_keep_ports():
    topo = from_spec("torus:4,3")
    v = np.arange(topo.num_nodes)
    for dst in (0, 5, 37, 63):
        rel, key = topo.translate(v, np.full(v.size, dst))
        assert rel[dst] == 0 and (key == 0).all()
        # f(nb(x, p)) = nb(f(x), p)
        nb = topo.neighbors(v)
        assert np.array_equal(rel[nb], topo.neighbors(rel))
    with pytest.raises(TopologyError, match="no translation"):
        from_spec("mesh:3,2").translate([0], [1])


def test_labels_round_trip_and_refusals():
    topo = from_spec("mesh:4,3")
    assert topo.label(1 + 4 * 2 + 16 * 3) == "(1,2,3)"
    assert all(topo.parse_label(topo.label(v)) == v for v in range(64))
    with pytest.raises(TopologyError, match="3 coordinates in"):
        topo.parse_label("(1,2)")
    with pytest.raises(TopologyError, match="K in torus:K,N must be >= 3"):
        from_spec("torus:2,4")
    with pytest.raises(TopologyError, match="at most 2\\^40"):
        from_spec("mesh:1024,5")


@pytest.mark.parametrize("spec", ["mesh:3,2", "torus:4,2"])
@pytest.mark.parametrize("fmt,ext", [("edgelist", "edges"), ("graphml", "graphml")])
def test_export_round_trip(spec, fmt, ext, tmp_path):
    """Exported and read back as file:PATH: the same links at every node, and the file
    network's BFS distances are dor's route lengths."""
    import io

    from mpinet.netfile import load_topology
    from mpinet.topology import export

    topo = from_spec(spec)
    buf = io.StringIO()
    export.write(topo, fmt, buf, 5)
    path = tmp_path / f"net.{ext}"
    path.write_text(buf.getvalue())
    back = load_topology(f"file:{path}")
    n = topo.num_nodes
    assert back.num_nodes == n
    ids = np.arange(n)
    # node v of the file is node v (edge lists keep ids; GraphML names them in id order)
    for v, (a, b) in enumerate(zip(topo.neighbors(ids), back.neighbors(ids), strict=True)):
        assert sorted(a[a >= 0].tolist()) == sorted(b[b >= 0].tolist()), v
    dist = make_router("shortest", back).distance
    s, d = np.divmod(np.arange(n * n), n)
    assert np.array_equal(dist(s, d), make_router("dor", topo).distance(s, d))


def walk_dor(fam, k, n, s, d, tie):
    """BookSim's dimension order, step by step: ports of the route from s to d."""
    ports, cur = [], coord(s, k, n)
    dst = coord(d, k, n)
    while cur != dst:
        i = next(j for j in range(n) if cur[j] != dst[j])
        if fam == "mesh":
            up = cur[i] < dst[i]
        else:
            fwd = (dst[i] - cur[i]) % k
            up = fwd < k - fwd or (fwd == k - fwd and tie == "plus")
        ports.append(2 * i if up else 2 * i + 1)
        cur[i] = (cur[i] + (1 if up else -1)) % k
    return ports


@pytest.mark.slow
@pytest.mark.parametrize("spec,tie", [("mesh:4,3", "random"), ("torus:4,2", "plus"),
                                      ("torus:4,2", "minus"), ("torus:5,3", "random"),
                                      ("torus:6,2", "minus")])  # fmt: skip
def test_dor_routes_are_the_per_dimension_walk(spec, tie):
    topo = from_spec(spec)
    router = make_router("dor", topo, tie=tie)
    rule = compiled.rule_of(router)
    assert rule.code == compiled.DOR  # no random ties here: compiled
    n = topo.num_nodes
    for s, d in itertools.product(range(n), repeat=2):
        want, cur, got = walk_dor(topo.family, topo.k, topo.n, s, d, tie), s, []
        while cur != d:
            ctx = HopContext(0, np.array([0]), np.array([len(got)]))
            p = int(router.next_port(np.array([cur]), np.array([d]), np.zeros((1, 0)), ctx)[0][0])
            assert compiled.hop(rule.code, rule.prm, rule.ta, rule.tb, cur, d, 0)[0] == p
            got.append(p)
            cur = int(topo.neighbors([cur])[0, p])
        assert got == want


def test_dor_random_ties_take_both_directions_and_stay_minimal():
    topo = from_spec("torus:4,1")
    router = make_router("dor", topo)
    assert compiled.rule_of(router) is compiled.NO_HOP  # the draw needs the packet
    m = 2000
    ctx = HopContext(0, np.arange(m), np.zeros(m, np.int64), seed=3)
    ports, _ = router.next_port(np.zeros(m, np.int64), np.full(m, 2), np.zeros((m, 0)), ctx)
    assert set(ports.tolist()) == {0, 1} and abs((ports == 0).mean() - 0.5) < 0.05
    with pytest.raises(RoutingError, match="applies to mesh, torus only"):
        make_router("dor", from_spec("hypercube:3"))
    with pytest.raises(RoutingError, match="tie of router 'dor'"):
        make_router("dor", topo, tie="first")


@pytest.mark.parametrize("spec,policy,vcs,acyclic", [
    ("mesh:4,2", "any", 1, True), ("mesh:3,3", "any", 1, True),
    ("torus:4,2", "any", 1, False), ("torus:5,2", "any", 2, False), ("torus:6,1", "any", 1, False),
    # K = 3: one hop per ring, so no ring dependency at all, and dimension order is acyclic
    ("torus:3,3", "any", 1, True),
    ("torus:4,2", "dateline", 2, True), ("torus:5,2", "dateline", 2, True),
    ("torus:8,2", "dateline", 4, True), ("torus:3,3", "dateline", 3, True),
])  # fmt: skip
def test_deadlock_verdicts(spec, policy, vcs, acyclic):
    topo = from_spec(spec)
    rep = analyze_vc(topo, make_router("dor", topo), policy, vcs=vcs).report
    assert rep["acyclic"] is acyclic


@pytest.mark.parametrize("vcs", [2, 3, 8])
def test_torus_dateline_needs_two_vcs_whatever_v(vcs):
    """Two classes need two VCs: the halves V makes do not change what is needed."""
    topo = from_spec("torus:6,2")
    rep = analyze_vc(topo, make_router("dor", topo, tie="plus"), "dateline", vcs=vcs).report
    assert rep["acyclic"] and rep["vcs_needed"] == 2 and rep["smallest_vcs"] == 2
    assert vcs_needed(make_vc_policy("dateline", topo, vcs), make_router("dor", topo)) == 2


def test_torus_dateline_classes_by_hand():
    topo = from_spec("torus:4,2")  # id = x + 4 y
    pol = make_vc_policy("dateline", topo, 4)
    # x: 2 -> 3 -> 0 (crosses) -> then y: 0 -> 3 (crosses) -> 2 (same ring, still class 1)
    path = [2, 3, 0, 12, 8]
    state, got = np.zeros((1, 1), np.int64), []
    for a, b in itertools.pairwise(path):
        lo, hi, state = pol.hop([a], [b], [0], state)
        got.append((int(lo[0]), int(hi[0])))
    assert got == [(0, 2), (2, 4), (2, 4), (2, 4)]
    # a turn into dimension 1 without crossing: class 0 again
    lo, hi, _ = pol.hop([0], [4], [0], np.array([[2 * 1 + 1]]))
    assert (int(lo[0]), int(hi[0])) == (0, 2)
    with pytest.raises(RoutingError, match="needs vcs >= 2"):
        check_vcs(make_vc_policy("dateline", topo, 1), make_router("dor", topo))
    with pytest.raises(RoutingError, match="orders nothing on mesh:4,2"):
        make_vc_policy("dateline", from_spec("mesh:4,2"), 2)


def _flit_model(topo, policy, vcs):
    m = parse_model("all-port", dict.fromkeys(topo.port_classes, 1))
    return replace(m, flit=True, switching="wormhole", flits=4, vcs=vcs, vc_buffer=4,
                   vc_policy=policy)  # fmt: skip


def test_flit_runs_on_the_torus_with_dateline_deliver_everything():
    topo = from_spec("torus:4,2")
    router = make_router("dor", topo, tie="plus")
    out = []
    for steps in (True, False):  # compiled dor hop vs the router's next_port
        pol = make_vc_policy("dateline", topo, 2)
        eng = FlitEngine(topo, router, _flit_model(topo, "dateline", 2), pol,
                         compiled_steps=steps)  # fmt: skip
        w = Unicast(topo, "booksim-uniform", injection="bernoulli", rate=0.3, steps=200, seed=4)
        out.append(eng.run(w))
    a, b = out
    assert a.deadlock is None and (a.packets[:, 4] >= 0).all()
    assert np.array_equal(a.packets, b.packets)


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def _packets(engine, spec, comm, pattern="tornado"):
    topo = from_spec(spec)
    router = make_router("dor", topo)  # random ties on even tori
    w = Unicast(topo, pattern, injection="on_off", rate=0.2, steps=60, seed=7)
    if engine == "flit":
        pol = make_vc_policy("dateline" if topo.family == "torus" else "any", topo, 2)
        eng = FlitEngine(topo, router, _flit_model(topo, pol.name, 2), pol, comm, seed=7)
        rec = eng.run(w)
        pk = rec.packets
        if comm is not None:
            pk = np.concatenate(comm.allgather(pk))
        return pk[np.argsort(pk[:, 0], kind="stable")]
    eng = Engine(topo, router, parse_model("all-port"), comm, seed=7)
    rec = eng.run(w)
    pk, _ = gather_packets(rec, w.pid_space, eng.comm)
    return np.concatenate(comm.allgather(pk)) if comm is not None else pk


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("engine", ["packet", "flit"])
@pytest.mark.parametrize("spec", ["mesh:4,2", "torus:4,2", "torus:5,2"])
def test_runs_identical_on_any_rank_count(comm, engine, spec):
    par, ser = _packets(engine, spec, comm), _packets(engine, spec, None)
    assert ser.shape[0] > 0
    assert np.array_equal(par, ser)
