"""Exact metrics of a network with faults (``mpinet info --faults``, ``--fault-diameter``).

Conventions. The *surviving graph* is the network without its failed nodes
and links (:class:`~mpinet.topology.faults.SurvivingGraph`); failed nodes are
not part of it. Its connectivity is reported as the number of components
among surviving nodes, the size of the largest and the surviving nodes cut
off from it. Its diameter and average distances are those *within the
largest component*, over all ordered pairs of its nodes (the average
including the source at distance 0, as paper 000, and excluding it).

The *fault diameter* for ``k`` failed nodes (links) is the largest diameter of
the surviving graph over every set of ``k`` failed nodes (links), infinite
when some set disconnects it (as Krishnamoorthy and Krishnamurthy define
it, ref. [4] of paper 001). Every case is an exact all-sources BFS (64
sources per machine word). Symmetry keeps the cases few: on a
vertex-transitive network the first failed node is node 0 and the first
failed link one of node 0's links (an automorphism maps any set to one of
these), elsewhere the first is a representative of its orbit
(``topology.source_orbits``) when the family provides them; the other
``k - 1`` range over everything. Cases are split over the ranks.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mpinet import theory
from mpinet.engine.bfs import (
    available_memory,
    bfs_all_sources,
    bfs_from,
    bitset_levels,
    estimate_all_sources_bytes,
)
from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.engine.info import spec_params
from mpinet.errors import ResourceError
from mpinet.topology.base import Topology
from mpinet.topology.faults import FaultSet, SurvivingGraph
from mpinet.values import check_int

#: word operations (64 sources each) of an all-sources BFS of the surviving graph
MAX_SURVIVING_WORK = 4e10
#: word operations of all the cases of a fault diameter
MAX_FAULT_DIAMETER_WORK = 4e10
#: largest k of ``--fault-diameter``
MAX_K = 2
KINDS = ("nodes", "links")
#: networks small enough for a BFS while planning (a work estimate)
_QUICK_BFS = 1 << 20
_SOURCE_WORDS = 16  # 1024 sources per bit-parallel batch


def _levels(topo: Topology) -> int:
    """BFS levels for work estimates: the diameter + 3 (one BFS when vertex-transitive
    and small), else the papers' diameter + 3, else 64."""
    if topo.vertex_transitive and topo.num_nodes <= _QUICK_BFS:
        return bfs_from(topo, topo.identity).diameter + 3
    forms = theory.closed_forms(topo.family, spec_params(topo))
    depths = [int(cf.value) for cf in forms if cf.quantity == "diameter" and cf.value > 0]
    return max(depths) + 3 if depths else 64


def _bfs_work(sources: int, topo: Topology) -> float:
    return sources / 64 * (topo.num_nodes + 1) * topo.degree * _levels(topo)


def plan_surviving(topo: Topology, size: int, ranks_here: int) -> None:
    """Refuse (:class:`ResourceError`) a surviving-graph BFS too large for this machine."""
    need = estimate_all_sources_bytes(topo, size) * max(ranks_here, 1)
    have = available_memory()
    if need > have:
        raise ResourceError(
            f"all-sources BFS on the surviving graph of {topo.spec} needs about "
            f"{need / 2**30:.1f} GiB on this machine, {have / 2**30:.1f} GiB is available; "
            "use a smaller network or fewer ranks per machine"
        )
    if _bfs_work(topo.num_nodes, topo) > MAX_SURVIVING_WORK:
        raise ResourceError(
            f"the surviving graph of {topo.spec} ({topo.num_nodes:,} nodes) has no symmetry "
            "left, and an all-sources BFS of it is too large for one machine; "
            "use a smaller network"
        )


def port_table(topo: Topology) -> np.ndarray:
    """``(degree, N + 1)`` neighbours per port; missing ports and the sentinel row ``N``
    point to the sentinel ``N`` (32-bit ids where they fit)."""
    n = topo.num_nodes
    dt = np.int32 if n + 1 < 2**31 else np.int64
    table = np.full((topo.degree, n + 1), n, dtype=dt)
    chunk = 1 << 17
    for a in range(0, n, chunk):
        nb = topo.neighbors(np.arange(a, min(a + chunk, n), dtype=np.int64))
        table[:, a : a + nb.shape[0]] = np.where(nb >= 0, nb, n).T
    return table


def _bitset_bfs(table: np.ndarray, sources: np.ndarray) -> tuple[int, int]:
    """Eccentricity (largest level) and pairs reached from 64 sources per word (-1: none)."""
    depth, reached = 0, 0
    for level, counts in enumerate(bitset_levels(table, sources, sources.size // 64)):
        depth, reached = level, reached + int(counts.sum())
    return depth, reached


def components(topo: Topology) -> np.ndarray:
    """Component label of every node (the smallest id in its component), int64.

    Min-label propagation with pointer jumping over the whole neighbour table;
    a failed node is a component of its own (it has no links).
    """
    n = topo.num_nodes
    nbt = port_table(topo)  # (degree, N + 1), missing ports -> sentinel N
    lab = np.arange(n + 1, dtype=np.int64)
    while True:
        new = lab.copy()
        for p in range(nbt.shape[0]):
            np.minimum(new, lab[nbt[p]], out=new)
        new[n] = n
        while True:  # pointer jumping: a label's label is smaller still
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, lab):
            return lab[:n]
        lab = new


class _Component(SurvivingGraph):
    """The surviving graph whose BFS sources are the nodes of one component."""

    def __init__(self, faults: FaultSet, nodes: np.ndarray) -> None:
        super().__init__(faults)
        self._nodes = nodes

    def source_orbits(self) -> tuple[np.ndarray, np.ndarray]:
        return self._nodes, np.ones(self._nodes.size, dtype=np.int64)


def surviving_info(topo: Topology, faults: FaultSet, comm: Any = None) -> dict:
    """Connectivity, diameter and average distances of the surviving graph.

    Distances are those within the largest component (module docstring);
    the all-sources BFS is split over the ranks of ``comm``.
    """
    comm = resolve(comm)
    t0 = time.perf_counter()
    g = SurvivingGraph(faults)
    lab = components(g)
    alive = np.ones(topo.num_nodes, dtype=bool)
    alive[faults.nodes] = False
    sizes = np.bincount(lab[alive], minlength=topo.num_nodes)
    count = int((sizes > 0).sum())
    big = int(np.argmax(sizes))  # ties: the component of the smallest id
    members = np.flatnonzero((lab == big) & alive)
    dist = bfs_all_sources(_Component(faults, members), comm)
    m = members.size
    total = float(np.dot(np.arange(dist.histogram.size), dist.histogram))
    cut = np.flatnonzero(alive & (lab != big))
    return {
        **faults.describe(),
        "surviving_nodes": int(alive.sum()),
        "components": count,
        "largest_component": int(m),
        "cut_off": int(cut.size),
        "cut_off_nodes": topo.labels(cut[:10]),
        "connected": count == 1,
        "diameter": dist.diameter,
        "avg_distance": total / (m * m),
        "avg_distance_excl_source": total / (m * max(m - 1, 1)),
        "histogram": dist.histogram.tolist(),
        "convention": "distances within the largest component, all ordered pairs of its nodes",
        "seconds": round(comm.allreduce(time.perf_counter() - t0, op=max_op()), 3),
    }


# ------------------------------------------------------------------ fault diameter
def _edges(topo: Topology, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every undirected link once, as (node, port) with the smaller directed id."""
    n, deg = topo.num_nodes, topo.degree
    node = np.repeat(np.arange(n, dtype=np.int64), deg)
    port = np.tile(np.arange(deg, dtype=np.int64), n)
    nb = table[port, node].astype(np.int64)
    back = np.where(nb < n, topo.reverse_of(node, port), 0)
    keep = (nb < n) & (node * deg + port < nb * deg + back)
    return node[keep], port[keep]


def _firsts(topo: Topology, kind: str, table: np.ndarray) -> np.ndarray:
    """The first failed node (or directed link id) of each orbit of cases."""
    n, deg = topo.num_nodes, topo.degree
    if topo.vertex_transitive:
        reps = np.array([topo.identity], dtype=np.int64)
    elif hasattr(topo, "source_orbits"):
        reps = np.asarray(topo.source_orbits()[0], dtype=np.int64)
    else:
        reps = np.arange(n, dtype=np.int64)
    if kind == "nodes":
        return reps
    ports = np.arange(deg, dtype=np.int64)
    nb = table[:, reps].T  # (reps, degree)
    link = (reps[:, None] * deg + ports)[nb < n]
    # a link between two representatives would be counted twice: keep the smaller id
    rev = topo.reverse_of(np.repeat(reps, deg), np.tile(ports, reps.size)).reshape(nb.shape)
    back = (nb.astype(np.int64) * deg + rev)[nb < n]
    twice = np.isin(back, link) & (back < link)
    return link[~twice]


def fault_cases(topo: Topology, k: int, kind: str, table: np.ndarray | None = None) -> np.ndarray:
    """``(cases, k)`` fault sets covering every set of ``k`` failed nodes or links.

    Nodes by id; links by directed id ``node * degree + port`` (either direction).
    """
    table = port_table(topo) if table is None else table
    first = _firsts(topo, kind, table)
    if k == 1:
        return first[:, None]
    if kind == "nodes":
        every = np.arange(topo.num_nodes, dtype=np.int64)
    else:
        node, port = _edges(topo, table)
        every = node * topo.degree + port
    a = np.repeat(first, every.size)
    b = np.tile(every, first.size)
    if kind == "links":  # the same undirected link twice is not a set of two
        deg = topo.degree
        back_a = table[a % deg, a // deg].astype(np.int64) * deg + topo.reverse_of(
            a // deg, a % deg
        )
        same = (a == b) | (back_a == b)
    else:
        same = a == b
    return np.stack([a[~same], b[~same]], axis=1)


def plan_fault_diameter(topo: Topology, k: int) -> int:
    """An upper bound on the cases of the fault diameter for 1..``k`` (both kinds).

    Raises
    ------
    ResourceError
        The BFS of all the cases would exceed :data:`MAX_FAULT_DIAMETER_WORK`.
    """
    k = check_int("--fault-diameter K", k, 1, MAX_K)
    n, deg = topo.num_nodes, topo.degree
    if topo.vertex_transitive:
        reps = 1
    elif hasattr(topo, "source_orbits"):
        reps = int(np.asarray(topo.source_orbits()[0]).size)
    else:
        reps = n
    edges = n * deg // 2  # at most (missing ports make it fewer)
    per_k = {1: reps + reps * deg, 2: reps * (n - 1) + reps * deg * (edges - 1)}
    cases = sum(per_k[j] for j in range(1, k + 1))
    work = cases * n / 64 * (n + 1) * deg  # one level each: refuse before any BFS
    if work <= MAX_FAULT_DIAMETER_WORK:
        work = cases * _bfs_work(n, topo)
    if work > MAX_FAULT_DIAMETER_WORK:
        raise ResourceError(
            f"the fault diameter of {topo.spec} for up to {k} failed nodes and links needs "
            f"up to {cases:,} all-sources BFS of {n:,} nodes (about {work:.1e} word "
            f"operations, limit {MAX_FAULT_DIAMETER_WORK:.0e}); use a smaller K or network"
        )
    return cases


def _cut(table: np.ndarray, topo: Topology, case: np.ndarray, kind: str) -> list[tuple]:
    """Point the failed directed links of ``case`` at the sentinel; returns what to restore."""
    n, deg = topo.num_nodes, topo.degree
    saved = []
    links = []
    if kind == "nodes":
        for v in case:
            links += [(int(v), p) for p in range(deg) if table[p, v] < n]
    else:
        links = [(int(x) // deg, int(x) % deg) for x in case]
    for u, p in links:
        w = int(table[p, u])
        if w < n:
            q = int(topo.reverse_of(np.array([u]), np.array([p]))[0])
            saved += [(p, u, w), (q, w, u)]
            table[p, u] = n
            table[q, w] = n
    return saved


def _diameter_of(table: np.ndarray, alive: np.ndarray) -> tuple[int, bool]:
    """Diameter of the graph of ``table`` on the ``alive`` nodes, and whether it is connected."""
    src = np.flatnonzero(alive)
    words = -(-src.size // 64)
    padded = np.full(words * 64, -1, dtype=np.int64)
    padded[: src.size] = src
    depth, reached = 0, 0
    for w in range(0, words, _SOURCE_WORDS):
        top = min(w + _SOURCE_WORDS, words)
        d, r = _bitset_bfs(table, padded[64 * w : 64 * top])
        depth, reached = max(depth, d), reached + r
    return depth, reached == src.size * src.size


def fault_diameter(topo: Topology, k: int, kind: str, comm: Any = None) -> dict:
    """The fault diameter for ``k`` failed nodes or links (module docstring), exact.

    Returns
    -------
    dict: ``k``, ``kind``, ``cases``, ``diameter`` (None when some set
    disconnects the network), ``disconnecting`` (cases that do), ``worst``
    (labels of one worst set) and ``seconds``.
    """
    comm = resolve(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    t0 = time.perf_counter()
    n, deg = topo.num_nodes, topo.degree
    table = port_table(topo)
    cases = fault_cases(topo, k, kind, table)
    best, worst, cut_count = -1, -1, 0
    alive = np.ones(n + 1, dtype=bool)
    alive[n] = False
    for i in range(rank, cases.shape[0], size):
        saved = _cut(table, topo, cases[i], kind)
        if kind == "nodes":
            alive[cases[i]] = False
        d, connected = _diameter_of(table, alive[:n])
        if kind == "nodes":
            alive[cases[i]] = True
        for p, u, w in saved:
            table[p, u] = w
        if not connected:
            d = np.iinfo(np.int32).max
            cut_count += 1
        if d > best:
            best, worst = d, i
    cut_count = comm.allreduce(cut_count, op=sum_op())
    mine = (best, -worst)
    best, worst = max(comm.allgather(mine))
    worst = -worst
    if worst >= 0 and kind == "nodes":
        label = topo.labels(cases[worst])
    elif worst >= 0:
        nb = table[cases[worst] % deg, cases[worst] // deg]
        label = [
            f"{topo.label(int(u))} - {topo.label(int(w))}"
            for u, w in zip(cases[worst] // deg, nb, strict=True)
        ]
    else:
        label = []
    return {
        "k": k,
        "kind": kind,
        "cases": int(cases.shape[0]),
        "diameter": None if cut_count else int(best),
        "disconnecting": int(cut_count),
        "worst": label,
        "seconds": round(comm.allreduce(time.perf_counter() - t0, op=max_op()), 3),
    }
