"""Cycle search on a directed graph given as edge arrays (vectorized numpy).

The channel dependency graphs of :mod:`mpinet.deadlock.analysis`
have up to tens of millions of edges, so nothing here loops over edges in
Python: Kahn's peeling removes whole frontiers at a time (rounds = longest
path, short for these graphs), and the shortest cycle through a vertex is a
frontier-at-a-time BFS.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: ``progress(done, total)``
Progress = Callable[[int, int], None]


def distinct(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a sort; much faster than ``np.unique`` on numpy 2.4)."""
    a = np.sort(a, kind="stable")
    keep = np.ones(a.size, dtype=bool)
    keep[1:] = a[1:] != a[:-1]
    return a[keep]


def distinct_rows(rows: np.ndarray) -> np.ndarray:
    """Distinct rows of a 2-D int64 array (sorted lexicographically)."""
    if rows.shape[0] < 2:
        return rows
    rows = rows[np.lexsort(rows.T[::-1])]
    keep = np.ones(rows.shape[0], dtype=bool)
    keep[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    return rows[keep]


def first_of_each(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of ``a`` and the index of each one's first occurrence."""
    order = np.argsort(a, kind="stable")
    s = a[order]
    keep = np.ones(s.size, dtype=bool)
    keep[1:] = s[1:] != s[:-1]
    return s[keep], order[keep]


def _counts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of ``a`` and how often each occurs."""
    s = np.sort(a)
    start = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    return s[start], np.diff(np.r_[start, s.size])


def _csr(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row pointers and targets of the edges sorted by source."""
    order = np.argsort(src, kind="stable")
    # counts, not a searchsorted over a sorted copy of src: one array of E less at the peak
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return ptr, dst[order]


def _gather(ptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Indices of every entry of the CSR rows ``rows`` (concatenated)."""
    lo, hi = ptr[rows], ptr[rows + 1]
    cnt = hi - lo
    total = int(cnt.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    starts = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt)
    return starts + np.arange(total)


def peel(
    n: int,
    src: np.ndarray,
    dst: np.ndarray,
    alive: np.ndarray | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """Vertices left after repeatedly removing those without incoming edges (Kahn).

    Parameters
    ----------
    n : number of vertices ``0..n-1``
    src, dst : (E,) int64 edges
    alive : (n,) bool, optional
        Consider only these vertices (and the edges between them).
    progress : callable, optional
        ``progress(removed, n)`` after each frontier.

    Returns
    -------
    (n,) bool: the survivors; none survive iff the (sub)graph is acyclic.
    """
    alive = np.ones(n, dtype=bool) if alive is None else alive.copy()
    if not (alive.all() if alive.size else True):
        keep = alive[src] & alive[dst]
        src, dst = src[keep], dst[keep]
        del keep
    ptr, tgt = _csr(n, src, dst)
    indeg = np.bincount(dst, minlength=n)
    del src, dst
    frontier = np.flatnonzero(alive & (indeg == 0))
    removed = n - int(alive.sum())
    while frontier.size:
        alive[frontier] = False
        removed += frontier.size
        if progress is not None:
            progress(removed, n)
        t = tgt[_gather(ptr, frontier)]
        if not t.size:
            break
        u, c = _counts(t)
        indeg[u] -= c
        frontier = u[indeg[u] == 0]
    return alive


def core(n: int, src: np.ndarray, dst: np.ndarray, progress: Progress | None = None) -> np.ndarray:
    """Vertices on a cycle or on a path between two cycles (peeled from both sides)."""
    alive = peel(n, src, dst, progress=progress)
    if not alive.any():
        return alive
    return peel(n, dst, src, alive)


def _bfs_cycle(ptr: np.ndarray, tgt: np.ndarray, n: int, start: int) -> list[int]:
    """A shortest cycle through ``start`` in the CSR graph ``(ptr, tgt)`` ([] if none)."""
    parent = np.full(n, -1, dtype=np.int64)
    frontier = np.array([start], dtype=np.int64)
    while frontier.size:
        idx = _gather(ptr, frontier)
        t = tgt[idx]
        owner = np.repeat(frontier, ptr[frontier + 1] - ptr[frontier])
        if (t == start).any():
            path = [int(owner[np.flatnonzero(t == start)[0]])]
            while path[-1] != start:
                path.append(int(parent[path[-1]]))
            return path[::-1]
        new = parent[t] < 0
        t, owner = t[new], owner[new]
        t, first = first_of_each(t)
        parent[t] = owner[first]
        frontier = t
    return []


def find_cycle(
    n: int, src: np.ndarray, dst: np.ndarray, tries: int = 8, progress: Progress | None = None
) -> tuple[bool, list[int], int]:
    """Whether the graph is acyclic, a short cycle if not, and the size of its core.

    The cycle is the shortest through one of the first ``tries`` core vertices
    (vertex-transitive networks make every start alike); the core's edges are
    sorted once for all the tries. ``progress(removed, n)`` follows the first
    peeling, the long part on an acyclic graph.

    Returns
    -------
    acyclic : bool
    cycle : list of vertices (empty when acyclic), each followed by the next
    core_size : vertices on cycles or between them
    """
    alive = core(n, src, dst, progress)
    size = int(alive.sum())
    if size == 0:
        return True, [], 0
    keep = alive[src] & alive[dst]
    ptr, tgt = _csr(n, src[keep], dst[keep])
    del keep
    best: list[int] = []
    for v in np.flatnonzero(alive)[:tries]:
        cyc = _bfs_cycle(ptr, tgt, n, int(v))
        if cyc and (not best or len(cyc) < len(best)):
            best = cyc
    return False, best, size
