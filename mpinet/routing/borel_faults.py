"""The d-balls of ``borel-cr`` around faults: per-node tables of the live walks.

Without faults every node of a class shares its class's d-ball table
(:class:`~mpinet.routing.borel.BorelCRRouter`). A node within ``d - 1`` hops of
an end of a failed link may lose walks of its ball, so it gets a table of its
own, built from its *live* walks (every link of the walk live): the first
live walk to each node (fewest hops, then the class table's port order), the
node itself left out. Every other node keeps its class table.
"""

from __future__ import annotations

import numpy as np

from mpinet.topology.base import Topology


def affected(topo: Topology, faults, d: int) -> np.ndarray:
    """Sorted ids of the nodes within ``d - 1`` hops of an end of a failed link."""
    ends = np.unique(np.asarray(faults.links, dtype=np.int64) // topo.degree)
    near = ends
    front = ends
    for _ in range(d - 1):
        if front.size == 0:
            break
        nb = topo.neighbors(front).ravel()
        nb = np.unique(nb[nb >= 0])
        front = np.setdiff1d(nb, near, assume_unique=True)
        near = np.union1d(near, front)
    return near


def live_balls(
    topo: Topology, faults, ring, nodes: np.ndarray, d: int, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Offsets, port words and hops of the live d-ball of each of ``nodes``, padded.

    Same layout as the class tables of ``borel-cr``: per row the candidates in
    (hops, port word) order, padding with offset 0 and ``d + 1`` hops.
    """
    n, deg = topo.num_nodes, topo.degree
    a = nodes.size
    if a == 0:
        empty = np.zeros((0, 1), dtype=dtype)
        return empty, np.zeros((0, 1), dtype=np.int32), empty
    cr0 = ring.to_cr(nodes)
    cur = nodes[:, None]
    live = np.ones((a, 1), dtype=bool)
    word = np.zeros((a, 1), dtype=np.int64)
    offs, words, hops, lives = [], [], [], []
    for h in range(1, d + 1):  # walks in the class tables' order: index = previous * 4 + port
        flat = cur.ravel()
        down = faults.link_down(np.repeat(flat, deg), np.tile(np.arange(deg), flat.size))
        live = np.repeat(live, deg, axis=1) & ~down.reshape(a, -1)
        cur = topo.neighbors(flat).reshape(a, -1)
        word = (word[:, :, None] + deg ** (h - 1) * np.arange(deg)).reshape(a, -1)
        offs.append((ring.to_cr(cur.ravel()).reshape(a, -1) - cr0[:, None]) % n)
        words.append(word)
        hops.append(np.full(cur.shape, h, dtype=np.int64))
        lives.append(live)
    o, wd, hh, lv = (np.concatenate(x, axis=1) for x in (offs, words, hops, lives))
    o = np.where(lv, o, n)  # a dead walk: an offset no node has
    order = np.argsort(o, axis=1, kind="stable")
    so = np.take_along_axis(o, order, axis=1)
    first = np.ones(so.shape, dtype=bool)
    first[:, 1:] = so[:, 1:] != so[:, :-1]
    keep = np.zeros(o.shape, dtype=bool)
    np.put_along_axis(keep, order, first & (so != 0) & (so != n), axis=1)
    width = max(int(keep.sum(axis=1).max(initial=0)), 1)
    sel = np.argsort(~keep, axis=1, kind="stable")[:, :width]
    valid = np.take_along_axis(keep, sel, axis=1)
    o = np.take_along_axis(o, sel, axis=1)
    o = np.where(o > n // 2, o - n, o)
    o = np.where(valid, o, 0).astype(dtype)
    wd = np.where(valid, np.take_along_axis(wd, sel, axis=1), 0).astype(np.int32)
    hh = np.where(valid, np.take_along_axis(hh, sel, axis=1), d + 1).astype(dtype)
    return o, wd, hh
