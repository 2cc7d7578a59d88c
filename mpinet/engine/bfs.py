"""Exact distances by breadth-first search, split over the ranks of ``comm``.

Two algorithms, both giving identical answers for any number of ranks:

* :func:`bfs_from` -- level-synchronous BFS from one source. Each rank owns a
  block of node ids (:func:`block_bounds`); a level expands the local frontier
  with ``topology.neighbors``, deduplicates through a byte map the size of the
  graph (no sort), and ships each target to its owner with one ``Alltoallv``.
  This is a flooding broadcast; for vertex-transitive graphs one source gives
  the whole distance distribution.
* :func:`bfs_all_sources` -- for graphs that are not vertex-transitive (FCCN):
  the sources are split over the ranks, every rank runs a bit-parallel BFS of
  64 sources per machine word over the whole graph, and histograms are summed.
  Sources can be weighted orbit representatives (``topology.source_orbits``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpinet.engine.comm import block_bounds, max_op, resolve, sum_op
from mpinet.errors import ResourceError
from mpinet.topology.base import Topology

_FRONTIER_CHUNK = 1 << 19
_SOURCE_WORDS = 16  # 1024 sources per bit-parallel batch


@dataclass
class Distances:
    """Exact distance distribution of a network.

    ``histogram[d]`` counts (source, target) pairs at distance ``d`` over
    ``sources`` sources weighted to ``pairs_sources`` (N for all sources).
    """

    histogram: np.ndarray
    sources: int
    all_sources: bool
    levels_seconds: list[float] = field(default_factory=list)

    @property
    def diameter(self) -> int:
        return int(self.histogram.size - 1)

    def averages(self, num_nodes: int) -> tuple[float, float]:
        """Average distance including the source (paper 000) and excluding it."""
        total = float(np.dot(np.arange(self.histogram.size, dtype=np.float64), self.histogram))
        per_source = total / self.sources
        return per_source / num_nodes, per_source / max(num_nodes - 1, 1)


def available_memory() -> int:
    """Bytes of memory available to this machine (MemAvailable), best effort."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def estimate_bfs_bytes(topo: Topology, size: int) -> int:
    """Peak memory of :func:`bfs_from` over all ranks on one machine, bytes."""
    n = topo.num_nodes
    per_rank_fixed = 120 << 20  # interpreter, numpy, chunk temporaries
    chunk = _FRONTIER_CHUNK * topo.degree * 48
    return size * (n + per_rank_fixed + chunk) + 12 * n


def estimate_all_sources_bytes(topo: Topology, size: int) -> int:
    """Peak memory of :func:`bfs_all_sources` over all ranks, bytes."""
    n = topo.num_nodes
    table = n * topo.degree * 8
    bits = n * _SOURCE_WORDS * 8 * 4
    return size * (table + bits + (120 << 20))


def check_memory(need: int, what: str) -> None:
    """Raise :class:`ResourceError` when ``need`` bytes exceed what is free."""
    have = available_memory()
    if need > have:
        raise ResourceError(
            f"{what} needs about {need / 2**30:.1f} GiB but {have / 2**30:.1f} GiB is available; "
            "use a smaller network"
        )


def bfs_from(
    topo: Topology,
    source: int,
    comm: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> Distances:
    """Distances from ``source`` to every node, computed by all ranks of ``comm``.

    Parameters
    ----------
    topo : Topology
    source : int
        Node id of the source.
    comm : mpi4py communicator or None
        ``None`` runs serially.
    """
    comm = resolve(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    source = int(topo.check_ids([source], "source")[0])
    n = topo.num_nodes
    bounds = block_bounds(n, size)
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    dist = np.full(hi - lo, -1, dtype=np.int16)
    seen = np.zeros(n, dtype=bool)  # byte map of this level's targets
    fresh = np.zeros(hi - lo, dtype=bool)
    frontier = np.array([source], dtype=np.int64) if lo <= source < hi else np.empty(0, np.int64)
    if frontier.size:
        dist[source - lo] = 0
    hist = [1]
    send_counts = np.zeros(size, dtype=np.int64)
    recv_counts = np.zeros(size, dtype=np.int64)
    level = 0
    while True:
        for c in range(0, frontier.size, _FRONTIER_CHUNK):
            nb = topo.neighbors(frontier[c : c + _FRONTIER_CHUNK]).ravel()
            seen[nb[nb >= 0]] = True
        targets = np.flatnonzero(seen)
        seen[targets] = False
        # targets are sorted and blocks are contiguous: owners are runs
        send_counts[:] = np.diff(np.searchsorted(targets, bounds))
        comm.Alltoall(send_counts, recv_counts)
        incoming = np.empty(int(recv_counts.sum()), dtype=np.int64)
        comm.Alltoallv(
            [targets, (send_counts, _displ(send_counts))],
            [incoming, (recv_counts, _displ(recv_counts))],
        )
        local = incoming - lo
        fresh[local] = True
        fresh &= dist < 0
        new = np.flatnonzero(fresh)
        fresh[new] = False
        level += 1
        if level > np.iinfo(np.int16).max:
            raise ResourceError("BFS depth exceeds 32767 levels")
        dist[new] = level
        frontier = new + lo
        count = comm.allreduce(int(new.size), op=sum_op())
        if count == 0:
            break
        hist.append(count)
        if progress is not None:
            progress(sum(hist), n)
    return Distances(np.array(hist, dtype=np.int64), sources=1, all_sources=False)


def _displ(counts: np.ndarray) -> np.ndarray:
    d = np.zeros_like(counts)
    np.cumsum(counts[:-1], out=d[1:])
    return d


def bfs_all_sources(
    topo: Topology, comm: Any = None, progress: Callable[[int, int], None] | None = None
) -> Distances:
    """Distance distribution over all ordered pairs, sources split over ranks.

    Uses ``topo.source_orbits()`` (representatives and weights under
    automorphisms) when the topology provides it, else every node once.
    ``progress(done, total)``: called after each batch with this rank's source words.
    """
    comm = resolve(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    n = topo.num_nodes
    if hasattr(topo, "source_orbits"):
        reps, weights = topo.source_orbits()
    else:
        reps, weights = np.arange(n, dtype=np.int64), np.ones(n, dtype=np.int64)
    # words of 64 sources of equal weight, so a level's weighted count is a popcount
    srcs, wword = _pack_by_weight(reps, weights)
    bounds = block_bounds(wword.size, size)
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    table = topo.neighbors(np.arange(n, dtype=np.int64))
    local = np.zeros(1, dtype=np.int64)
    for w in range(lo, hi, _SOURCE_WORDS):
        top = min(w + _SOURCE_WORDS, hi)
        h = _bitset_bfs(table, srcs[64 * w : 64 * top], wword[w:top])
        if h.size > local.size:
            h, local = local, h
        local[: h.size] += h
        if progress is not None:
            progress(top - lo, hi - lo)
    depth = comm.allreduce(int(local.size), op=max_op())
    hist = np.zeros(depth, dtype=np.int64)
    hist[: local.size] = local
    total = np.zeros_like(hist)
    comm.Allreduce(hist, total, op=sum_op())
    return Distances(np.trim_zeros(total, "b"), sources=int(weights.sum()), all_sources=True)


def _pack_by_weight(reps: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sources padded with -1 so each 64-source word holds one weight; word weights."""
    srcs, wword = [], []
    for w in np.unique(weights):
        group = reps[weights == w]
        nwords = (group.size + 63) // 64
        padded = np.full(nwords * 64, -1, dtype=np.int64)
        padded[: group.size] = group
        srcs.append(padded)
        wword.append(np.full(nwords, w, dtype=np.int64))
    return np.concatenate(srcs), np.concatenate(wword)


def _bitset_bfs(table: np.ndarray, sources: np.ndarray, word_weights: np.ndarray) -> np.ndarray:
    """Weighted distance histogram from 64 sources per word (``-1`` = no source)."""
    n, deg = table.shape
    words = word_weights.size
    bit = np.flatnonzero(sources >= 0)
    front = np.zeros((n, words), dtype=np.uint64)
    front[sources[bit], bit // 64] |= np.left_shift(np.uint64(1), (bit % 64).astype(np.uint64))
    visited = front.copy()
    hist = [int(np.dot(np.bitwise_count(front).sum(axis=0, dtype=np.int64), word_weights))]
    ports = [(table[:, p] >= 0, table[:, p]) for p in range(deg)]
    while True:
        new = np.zeros_like(front)
        for ok, idx in ports:
            if ok.all():
                new |= front[idx]
            else:
                new[ok] |= front[idx[ok]]
        new &= ~visited
        counts = np.bitwise_count(new).sum(axis=0, dtype=np.int64)
        if not counts.any():
            break
        visited |= new
        front = new
        hist.append(int(np.dot(counts, word_weights)))
    return np.array(hist, dtype=np.int64)
