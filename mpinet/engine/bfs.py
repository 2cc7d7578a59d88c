"""Exact distances by breadth-first search, split over the ranks of ``comm``.

Two algorithms, both giving identical answers for any number of ranks:

* :func:`bfs_from` -- level-synchronous BFS from one source. Each rank owns a
  block of node ids (:func:`block_bounds`) and keeps one state byte per owned
  node (the code of its level). A level expands the local frontier in batches
  with ``topology.neighbors`` and marks the targets in a byte map of the whole
  graph (deduplication without sorting); the marks then go to their owners by
  ``Alltoall(v)``: as uint32 offsets in one round when the level has few, else
  as bitmaps (8 nodes a byte), one window of every owner's block per round.
  Memory per rank is N + N/R bytes plus buffers bounded by the batch and
  window sizes, whatever the frontier's size (:func:`estimate_bfs_bytes`).
  For vertex-transitive graphs one source gives the whole distribution.
* :func:`bfs_all_sources` -- for graphs that are not vertex-transitive (FCCN):
  the sources are split over the ranks, every rank runs a bit-parallel BFS of
  64 sources per machine word over the whole graph, and histograms are summed.
  Sources can be weighted orbit representatives (``topology.source_orbits``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpinet.engine.bfs_memory import (  # noqa: F401  (re-exported: the plans import them here)
    EXCHANGE_BYTES,
    EXPAND_CHUNK,
    RECV_CHUNK,
    SOURCE_WORDS,
    available_memory,
    check_memory,
    estimate_all_sources_bytes,
    estimate_bfs_bytes,
    id_dtype,
    plan,
)
from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.engine.partition import block_bounds
from mpinet.topology.base import Topology

# state byte of an owned node in bfs_from: unseen, seen long ago, first level code
_UNSEEN, _OLD, _FIRST_CODE = 0, 1, 2


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
        """Average distance including the source (paper 000) and excluding it.

        Over the pairs the BFS reached: on a disconnected network, the pairs
        within a component (on a connected one, ``sources * num_nodes`` pairs).
        """
        total = float(np.dot(np.arange(self.histogram.size, dtype=np.float64), self.histogram))
        pairs = float(self.histogram.sum()) if self.histogram.size else 1.0
        pairs = pairs if pairs > 0 else float(self.sources * num_nodes)
        return total / pairs, total / max(pairs - self.sources, 1.0)


def bfs_from(
    topo: Topology,
    source: int,
    comm: Any = None,
    *,
    chunk: int | None = None,
    exchange: int | None = None,
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
    chunk, exchange : int, optional
        Frontier ids per ``neighbors`` call (:data:`EXPAND_CHUNK`) and bytes sent
        to each rank per exchange round (:data:`EXCHANGE_BYTES`); they bound the
        temporaries and never change the result.
    progress : callable, optional
        Called on every rank after each level as ``progress(reached, N)``.
    """
    comm = resolve(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    source = int(topo.check_ids([source], "source")[0])
    n = topo.num_nodes
    chunk, window, block, sparse = plan(n, size, chunk, exchange)
    bounds = block_bounds(n, size)
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    # state byte of an owned node: 0 unseen, 1 seen long ago, else the code of its
    # level; codes spare two masked rewrites of the N/R bytes per level (scc:10 has 54)
    state = np.zeros(hi - lo, dtype=np.uint8)
    seen = np.zeros(n, dtype=bool)  # byte map of this level's targets, all N nodes
    code = _FIRST_CODE
    new = int(lo <= source < hi)
    if new:
        state[source - lo] = code
    ex = _Exchange(comm, bounds, window, sparse)
    tally, total = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
    hist: list[int] = []
    while True:
        # one reduction per level: the nodes found by the last exchange (the histogram
        # entry; none ends the search) and the targets marked by this expansion
        tally[:] = new, _expand(topo, state, lo, code, seen, chunk)
        comm.Allreduce(tally, total, op=sum_op())
        if total[0] == 0:
            break
        hist.append(int(total[0]))
        if progress is not None:
            progress(sum(hist), n)
        nxt = code + 1
        if nxt > 255:  # out of codes (every 254 levels; the frontier is expanded)
            state[state >= _FIRST_CODE] = _OLD
            nxt = _FIRST_CODE
        if total[1] == 0:
            new = 0
        else:
            # few marks in all: whole blocks as offsets, one round (no rank sends or
            # receives more than the total); else bitmaps, a window per round
            if total[1] <= sparse and block < 2**32:
                ex.offsets(seen, state, nxt)
            else:
                ex.bitmaps(seen, state, nxt)
            new = int(np.count_nonzero(state == nxt))
        code = nxt
    return Distances(np.array(hist, dtype=np.int64), sources=1, all_sources=False)


def _expand(
    topo: Topology, state: np.ndarray, lo: int, code: int, seen: np.ndarray, chunk: int
) -> int:
    """Mark the neighbours of the owned frontier (state ``code``) in ``seen``.

    ``neighbors`` gets batches of ``chunk`` to ``2 * chunk`` ids gathered from
    windows of the block; returns the number of targets (>= the new marks).
    """
    marked, batch, held = 0, [], 0
    for a in range(0, state.size, chunk):
        ids = np.flatnonzero(state[a : a + chunk] == code)
        if ids.size:
            ids += lo + a
            batch.append(ids)
            held += ids.size
        if held >= chunk or (held and a + chunk >= state.size):
            nb = topo.neighbors(np.concatenate(batch))
            nb = nb[nb >= 0]  # -1 is a missing port (FCCN)
            seen[nb] = True
            marked += nb.size
            batch, held = [], 0
    return marked


class _Exchange:
    """Ships a level's marks (``seen``) to the owners, who turn unseen targets into
    the next level (``code``); every buffer is allocated once, of bounded size.

    Messages stay small (``exchange`` bytes to each rank per round): a polled
    communicator (the CLI's watchdog) moves a few hundred KiB per call quickly
    but megabytes slowly.
    """

    def __init__(self, comm: Any, bounds: np.ndarray, window: int, sparse: int) -> None:
        size = bounds.size - 1
        self.comm, self.bounds, self.window = comm, bounds, window
        self.rank = comm.Get_rank()
        self.rounds = -(-int(np.diff(bounds).max()) // window)  # same on every rank
        self.bits_out = np.zeros((size, -(-window // 8)), dtype=np.uint8)
        self.bits_in = np.empty_like(self.bits_out)
        self.offs_out = np.empty(sparse, dtype=np.uint32)
        self.offs_in = np.empty(sparse, dtype=np.uint32)
        self.counts = np.zeros((4, size), dtype=np.int64)  # send, recv; their displs

    def _range(self, j: int, off: int, width: int) -> tuple[int, int]:
        end = int(self.bounds[j + 1])
        a = min(int(self.bounds[j]) + off, end)
        return a, min(a + width, end)

    def bitmaps(self, seen: np.ndarray, state: np.ndarray, code: int) -> None:
        """Dense level: per round one window of every block, packed 8 ids a byte."""
        out, inc = self.bits_out, self.bits_in
        for t in range(self.rounds):
            off = t * self.window
            for j in range(out.shape[0]):
                a, b = self._range(j, off, self.window)
                packed = np.packbits(seen[a:b], bitorder="little")
                out[j, : packed.size] = packed
                out[j, packed.size :] = 0
                seen[a:b] = False
            self.comm.Alltoall(out, inc)
            a, b = self._range(self.rank, off, self.window)
            if b > a:
                bits = np.bitwise_or.reduce(inc, axis=0)
                hit = np.unpackbits(bits, count=b - a, bitorder="little").view(bool)
                st = state[off : off + b - a]
                hit &= st == _UNSEEN
                st[hit] = code

    def offsets(self, seen: np.ndarray, state: np.ndarray, code: int) -> None:
        """Sparse level: each owner's marks as uint32 offsets in its block, one round."""
        send, recv, sdispl, rdispl = self.counts
        pos = 0
        for j in range(send.size):
            a, b = self._range(j, 0, int(self.bounds[j + 1] - self.bounds[j]))
            start = pos
            for c in range(a, b, RECV_CHUNK):  # bounded int64 temporaries
                seg = seen[c : min(c + RECV_CHUNK, b)]
                hit = np.flatnonzero(seg)
                seg[:] = False
                hit += c - a
                self.offs_out[pos : pos + hit.size] = hit
                pos += hit.size
            send[j] = pos - start
        self.comm.Alltoall(send, recv)
        np.cumsum(send[:-1], out=sdispl[1:])
        np.cumsum(recv[:-1], out=rdispl[1:])
        m = int(recv.sum())
        self.comm.Alltoallv(
            [self.offs_out[:pos], (send, sdispl)], [self.offs_in[:m], (recv, rdispl)]
        )
        for c in range(0, m, RECV_CHUNK):  # bounded temporaries
            sel = self.offs_in[c : min(c + RECV_CHUNK, m)]
            state[sel[state[sel] == _UNSEEN]] = code


def bfs_all_sources(
    topo: Topology,
    comm: Any = None,
    progress: Callable[[int, int], None] | None = None,
    sources: np.ndarray | None = None,
    levels: int | None = None,
) -> Distances:
    """Distance distribution over all ordered pairs, sources split over ranks.

    Uses ``topo.source_orbits()`` (representatives and weights under
    automorphisms) when the topology provides it, else every node once; or the
    given ``sources`` (node ids, weight 1 each: a sample).
    ``progress(done, total)``: called after each batch with this rank's source words;
    given the expected ``levels`` of a search, after every level too, in source words x
    levels (a deep network's batch takes minutes).
    """
    comm = resolve(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    n = topo.num_nodes
    if sources is not None:
        reps = topo.check_ids(sources, "sources")
        weights = np.ones(reps.size, dtype=np.int64)
    elif hasattr(topo, "source_orbits"):
        reps, weights = topo.source_orbits()
    else:
        reps, weights = np.arange(n, dtype=np.int64), np.ones(n, dtype=np.int64)
    # words of 64 sources of equal weight, so a level's weighted count is a popcount
    srcs, wword = _pack_by_weight(reps, weights)
    bounds = block_bounds(wword.size, size)
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    table = port_table(topo)
    local = np.zeros(1, dtype=np.int64)
    per = max(int(levels or 1), 1)  # progress units per source word
    for w in range(lo, hi, SOURCE_WORDS):
        top = min(w + SOURCE_WORDS, hi)
        tell = None
        if progress is not None and levels:

            def tell(level: int, w: int = w, top: int = top) -> None:
                progress((w - lo) * per + min(level, per - 1) * (top - w), (hi - lo) * per)

        h = _bitset_bfs(table, srcs[64 * w : 64 * top], wword[w:top], tell)
        if h.size > local.size:
            h, local = local, h
        local[: h.size] += h
        if progress is not None:
            progress((top - lo) * per, (hi - lo) * per)
    depth = comm.allreduce(int(local.size), op=max_op())
    hist = np.zeros(depth, dtype=np.int64)
    hist[: local.size] = local
    total = np.zeros_like(hist)
    comm.Allreduce(hist, total, op=sum_op())
    return Distances(np.trim_zeros(total, "b"), sources=int(weights.sum()), all_sources=True)


def port_table(topo: Topology) -> np.ndarray:
    """``(degree, N + 1)`` neighbour ids per port, built in chunks, in 32 bits where
    they fit; missing ports and the extra sentinel node ``N`` point to ``N``."""
    n = topo.num_nodes
    table = np.full((topo.degree, n + 1), n, dtype=id_dtype(n + 1))
    for a in range(0, n, EXPAND_CHUNK):
        nb = topo.neighbors(np.arange(a, min(a + EXPAND_CHUNK, n), dtype=np.int64))
        table[:, a : a + nb.shape[0]] = np.where(nb >= 0, nb, n).T
    return table


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


def bitset_levels(table: np.ndarray, sources: np.ndarray, words: int) -> Iterator[np.ndarray]:
    """Bit-parallel BFS from 64 sources per word (``-1`` = no source): for each level
    from 0 (the sources), the nodes first reached there, counted per word (int64).

    Rows of ``table`` (:func:`port_table`) are nodes plus the sentinel row ``N``
    (always zero, the target of missing ports), so every port is one gather of whole
    rows, no masks. Stops after the last level that reaches a node.
    """
    deg, rows = table.shape
    bit = np.flatnonzero(sources >= 0)
    front = np.zeros((rows, words), dtype=np.uint64)
    front[sources[bit], bit // 64] |= np.left_shift(np.uint64(1), (bit % 64).astype(np.uint64))
    visited = front.copy()
    new, tmp = np.empty_like(front), np.empty_like(front)
    yield np.bitwise_count(front).sum(axis=0, dtype=np.int64)
    while True:
        np.take(front, table[0], axis=0, out=new)
        for p in range(1, deg):
            np.take(front, table[p], axis=0, out=tmp)
            new |= tmp
        new &= np.invert(visited, out=tmp)
        counts = np.bitwise_count(new).sum(axis=0, dtype=np.int64)
        if not counts.any():
            return
        visited |= new
        front, new = new, front
        yield counts


def _bitset_bfs(
    table: np.ndarray,
    sources: np.ndarray,
    word_weights: np.ndarray,
    on_level: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Weighted distance histogram from 64 sources per word (:func:`bitset_levels`);
    ``on_level(level)`` is called after each level but the sources'."""
    hist = []
    for level, counts in enumerate(bitset_levels(table, sources, word_weights.size)):
        hist.append(int(np.dot(counts, word_weights)))
        if level and on_level is not None:
            on_level(level)
    return np.array(hist, dtype=np.int64)
