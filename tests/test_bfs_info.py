"""Exact metrics: BFS against networkx, the papers' formulas where exact, info()."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from mpinet import theory
from mpinet.engine import bfs_memory
from mpinet.engine.bfs import bfs_all_sources, bfs_from, estimate_bfs_bytes
from mpinet.engine.info import network_info, plan_info, ranks_on_this_machine
from mpinet.errors import ResourceError, TopologyError
from mpinet.topology import from_spec

SMALL = ["star:4", "scc:3", "scc:4", "ms:2,2", "ms:1,3", "hypercube:4", "ccc:3", "fccn:2"]


def to_networkx(topo) -> nx.Graph:
    nb = topo.neighbors(np.arange(topo.num_nodes))
    g = nx.Graph()
    g.add_nodes_from(range(topo.num_nodes))
    for p in range(topo.degree):
        ok = nb[:, p] >= 0
        g.add_edges_from(zip(np.flatnonzero(ok).tolist(), nb[ok, p].tolist(), strict=True))
    return g


def nx_histogram(g: nx.Graph, source: int) -> list[int]:
    d = nx.single_source_shortest_path_length(g, source)
    return np.bincount(list(d.values())).tolist()


@pytest.mark.parametrize("spec", SMALL)
def test_bfs_from_matches_networkx(spec):
    topo = from_spec(spec)
    g = to_networkx(topo)
    for src in {0, topo.num_nodes // 3, topo.num_nodes - 1}:
        assert bfs_from(topo, src).histogram.tolist() == nx_histogram(g, src)


@pytest.mark.parametrize("spec", ["fccn:1", "fccn:2", "scc:4", "ccc:3"])
def test_all_sources_matches_networkx(spec):
    topo = from_spec(spec)
    g = to_networkx(topo)
    want = np.zeros(64, dtype=np.int64)
    for src in range(topo.num_nodes):
        h = nx_histogram(g, src)
        want[: len(h)] += h
    got = bfs_all_sources(topo)
    assert got.histogram.tolist() == np.trim_zeros(want, "b").tolist()
    assert got.sources == topo.num_nodes


@pytest.mark.parametrize("spec", ["scc:4", "ms:2,2", "star:5", "hypercube:5"])
def test_vertex_transitive_single_source_equals_all_sources(spec):
    topo = from_spec(spec)
    single = bfs_from(topo, topo.identity).histogram
    assert (bfs_all_sources(topo).histogram == topo.num_nodes * single).all()


@pytest.mark.parametrize("n", range(3, 8))
def test_star_closed_forms_are_exact(n):
    topo = from_spec(f"star:{n}")
    d = bfs_from(topo, 0)
    assert d.diameter == theory.star_diameter(n)
    assert d.averages(topo.num_nodes)[0] == pytest.approx(theory.star_avg_distance(n), abs=1e-12)


def test_scc_diameter_formula_holds_only_up_to_n6_and_n8():
    measured = {n: bfs_from(from_spec(f"scc:{n}"), 0).diameter for n in range(3, 9)}
    assert measured == {3: 6, 4: 8, 5: 16, 6: 19, 7: 30, 8: 34}
    for n, d in measured.items():
        # paper 001 eq. 9 is right except for odd n >= 7 (docs/errata.md)
        assert (theory.scc_diameter(n) == d) == (n != 7)
    assert theory.scc_diameter(7) == 31


# paper 000 Table 1, last row; the exact BFS agrees to the printed 3 decimals
SCC_AVG_TABLE1 = {3: 3.000, 4: 5.306, 5: 8.808, 6: 12.121, 7: 16.517, 8: 20.802}


@pytest.mark.parametrize("n", sorted(SCC_AVG_TABLE1))
def test_scc_average_distance_matches_paper000_table1(n):
    topo = from_spec(f"scc:{n}")
    incl, _ = bfs_from(topo, 0).averages(topo.num_nodes)
    assert round(incl, 3) == SCC_AVG_TABLE1[n]
    assert incl <= theory.scc_avg_distance_bound(n) + 1e-12  # eq. 16 is a bound


def test_hypercube_and_ccc_closed_forms():
    for n in range(3, 8):
        d = bfs_from(from_spec(f"ccc:{n}"), 0)
        assert d.diameter == theory.ccc_diameter(n)
        h = from_spec(f"hypercube:{n}")
        assert bfs_from(h, 0).averages(h.num_nodes)[0] == pytest.approx(n / 2)


def test_network_info_keys_and_conventions():
    info = network_info(from_spec("scc:4"))
    keys = ["spec", "nodes", "degree", "diameter", "avg_distance"]
    keys += ["avg_distance_excl_source", "histogram", "vertex_transitive", "theory"]
    for key in keys:
        assert key in info
    assert info["nodes"] == 72 and info["degree"] == 3 and info["diameter"] == 8
    hist = np.array(info["histogram"])
    assert hist.sum() == 72
    total = float(np.dot(np.arange(hist.size), hist))
    assert info["avg_distance"] == pytest.approx(total / 72)
    assert info["avg_distance_excl_source"] == pytest.approx(total / 71)
    assert all(c["agrees"] for c in info["theory"])


def test_info_flags_the_wrong_scc7_diameter():
    info = network_info(from_spec("scc:7"))
    diam = [c for c in info["theory"] if c["quantity"] == "diameter"]
    assert diam and not any(c["agrees"] for c in diam)
    assert info["diameter"] == 30


def test_fccn_info_uses_all_sources_and_source_option():
    topo = from_spec("fccn:2")
    info = network_info(topo)
    assert info["vertex_transitive"] is False
    assert sum(info["histogram"]) == 64 * 64
    assert info["diameter"] == theory.fccn_diameter(2)
    one = network_info(topo, source=topo.parse_label("(0 7)"))
    assert one["diameter"] is None and sum(one["histogram"]) == 64
    assert one["eccentricity"] <= info["diameter"]


def test_memory_guard():
    with pytest.raises(ResourceError, match="GiB"):
        network_info(from_spec("star:14"))


def test_fccn_orbits_give_the_same_histogram_as_every_source():
    topo = from_spec("fccn:3")
    reps, weights = topo.source_orbits()
    assert weights.sum() == topo.num_nodes and reps.size < topo.num_nodes // 10

    class EverySource:  # the same graph without source_orbits
        num_nodes, degree = topo.num_nodes, topo.degree

        def neighbors(self, ids):
            return topo.neighbors(ids)

    plain = bfs_all_sources(EverySource())
    assert plain.histogram.tolist() == bfs_all_sources(topo).histogram.tolist()


class Ring:
    """A cycle, or open a path (-1 ports at its ends): BFS deeper than 255 levels."""

    degree = 2

    def __init__(self, n: int, closed: bool = True):
        self.num_nodes, self.closed = n, closed

    def check_ids(self, ids, name="ids"):
        return np.asarray(ids, dtype=np.int64).ravel()

    def neighbors(self, ids):
        ids = self.check_ids(ids)
        nb = np.stack([ids - 1, ids + 1], axis=1)
        if self.closed:
            return nb % self.num_nodes
        nb[nb >= self.num_nodes] = -1
        return nb


# chunk / exchange small enough that every level takes several neighbour batches
# and (past the first levels) several exchange rounds
CHUNKED = [{}, dict(chunk=1, exchange=1), dict(chunk=5, exchange=3), dict(chunk=2, exchange=64)]
# under mpiexec every round is two collectives (slow on oversubscribed cores)
MPI_CHUNKED = [{}, dict(chunk=5, exchange=64)]
DEEP = [{}, dict(chunk=64, exchange=4)]  # 600 levels; bitmap windows of 32 ids


@pytest.mark.parametrize("spec", SMALL)
def test_chunked_bfs_equals_unchunked_and_networkx(spec):
    topo = from_spec(spec)
    g = to_networkx(topo)
    for src in {0, topo.num_nodes // 2, topo.num_nodes - 1}:
        want = nx_histogram(g, src)
        for kw in CHUNKED:
            assert bfs_from(topo, src, **kw).histogram.tolist() == want, kw


@pytest.mark.parametrize("kw", DEEP)
def test_bfs_deeper_than_the_level_codes(kw):
    # 255 level codes per state byte: past them older levels are folded into one
    assert bfs_from(Ring(700), 0, **kw).histogram.tolist() == [1] + [2] * 349 + [1]
    assert bfs_from(Ring(601, closed=False), 0, **kw).histogram.tolist() == [1] * 601
    path = bfs_from(Ring(601, closed=False), 300, **kw).histogram.tolist()
    assert path == [1] + [2] * 300


def test_bfs_rejects_bad_chunk_sizes():
    with pytest.raises(TopologyError, match="chunk"):
        bfs_from(from_spec("scc:4"), 0, chunk=0)
    with pytest.raises(TopologyError, match="exchange"):
        bfs_from(from_spec("scc:4"), 0, exchange=0)


def test_memory_estimate_follows_the_plan():
    topo = from_spec("ms:2,5")  # nothing is allocated: only the estimate
    n = topo.num_nodes
    one, two = estimate_bfs_bytes(topo, 1), estimate_bfs_bytes(topo, 2)
    assert n + n <= one < n + n + (200 << 20)  # byte map + state bytes + bounded buffers
    assert n + n // 2 <= two < one
    assert estimate_bfs_bytes(topo, 2, chunk=1 << 10) < two  # smaller batches, less memory


def test_memory_guard_names_the_estimate_and_a_way_out(monkeypatch):
    topo = from_spec("scc:7")
    per_rank = estimate_bfs_bytes(topo, 2)
    monkeypatch.setattr(bfs_memory, "available_memory", lambda: per_rank * 3 // 2)
    assert plan_info(topo, 2, None, ranks_here=1) == "single"
    with pytest.raises(ResourceError, match=r"GiB per rank.*run at most 1 rank\(s\) per machine"):
        plan_info(topo, 2, None, ranks_here=2)
    big = from_spec("star:13")  # the N/R state bytes: more ranks make a rank fit
    monkeypatch.setattr(bfs_memory, "available_memory", lambda: 10 << 30)
    with pytest.raises(ResourceError, match="use 2 or more ranks, at most 1 per machine"):
        plan_info(big, 1, None, ranks_here=1)
    monkeypatch.setattr(bfs_memory, "available_memory", lambda: 4 << 30)
    with pytest.raises(ResourceError, match="smaller network"):
        plan_info(big, 1, None, ranks_here=1)


def test_ranks_on_this_machine_serial():
    assert ranks_on_this_machine(None) == 1


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.mpi
@pytest.mark.parametrize("spec", ["scc:5", "ms:2,3", "fccn:3", "ccc:5", "star:5"])
def test_chunked_bfs_under_mpi_equals_serial(comm, spec):
    topo = from_spec(spec)
    for src in (0, topo.num_nodes - 1):
        want = bfs_from(topo, src).histogram.tolist()
        for kw in MPI_CHUNKED:
            assert bfs_from(topo, src, comm, **kw).histogram.tolist() == want, kw


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.parametrize("kw", DEEP)
def test_deep_bfs_under_mpi(comm, kw):
    # 701 nodes: blocks of unequal size on 2 and 3 ranks
    assert bfs_from(Ring(701), 5, comm, **kw).histogram.tolist() == [1] + [2] * 350
    assert bfs_from(Ring(601, closed=False), 600, comm, **kw).histogram.tolist() == [1] * 601


@pytest.mark.mpi
def test_ranks_on_this_machine_under_mpi(comm):
    assert ranks_on_this_machine(comm) == comm.Get_size()  # mpiexec on one host
