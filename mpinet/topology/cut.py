"""The links a block partition cuts: what a multi-rank step must exchange.

mpinet splits node ids into contiguous blocks, one per rank (the engine's
``block_bounds``, passed in here: the topology layer does not import the engine). A
directed link ``u -> v`` whose ends lie in different blocks carries its flits (and the
credits back) between two ranks, so the cut gives, per rank and block count R, the links
whose traffic leaves the rank and the ranks it must talk to each step. Counted exactly from
the topology's neighbour function, vectorized over chunks of nodes, for every R in one pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpinet.errors import SpecError
from mpinet.topology.base import Topology

#: nodes per chunk of the neighbour function (a chunk's arrays: ~100 MB at degree 5)
CHUNK = 1 << 20


@dataclass
class Cut:
    """The cut of one block partition into ``ranks`` blocks.

    ``out_links[r]``: directed links from block r to another block; ``peers[r]``: the
    number of other blocks they reach; ``links``: directed links in the whole network.
    """

    ranks: int
    links: int
    out_links: np.ndarray
    peers: np.ndarray

    @property
    def fraction(self) -> float:
        """Share of all directed links that cross a block boundary."""
        return float(self.out_links.sum()) / max(self.links, 1)


def block_cuts(topo: Topology, bounds: dict[int, np.ndarray], chunk: int = CHUNK) -> dict:
    """The cut of each block partition in ``bounds`` (R -> the R + 1 block bounds).

    Parameters
    ----------
    topo
        The network.
    bounds
        For each R, the ascending bounds ``b[0] = 0 .. b[R] = N`` (rank r owns
        ``[b[r], b[r+1])``), e.g. ``mpinet.engine.comm.block_bounds(N, R)``.
    chunk
        Nodes per call of the neighbour function.

    Returns
    -------
    dict
        R -> :class:`Cut`.
    """
    n = topo.num_nodes
    for r, b in bounds.items():
        b = np.asarray(b)
        if b.shape != (r + 1,) or b[0] != 0 or b[-1] != n or np.any(np.diff(b) < 0):
            raise SpecError(f"bounds for {r} ranks must rise from 0 to {n} in {r + 1} values")
    if chunk < 1:
        raise SpecError(f"chunk must be >= 1, got {chunk}")
    out = {r: np.zeros(r, np.int64) for r in bounds}
    reach = {r: np.zeros((r, r), bool) for r in bounds}
    links = 0
    for lo in range(0, n, chunk):
        ids = np.arange(lo, min(n, lo + chunk), dtype=np.int64)
        nb = topo.neighbors(ids)
        ok = nb >= 0
        links += int(ok.sum())
        src = np.broadcast_to(ids[:, None], nb.shape)[ok]
        dst = nb[ok]
        for r, b in bounds.items():
            b = np.asarray(b, np.int64)
            ou = np.searchsorted(b, src, side="right") - 1
            ov = np.searchsorted(b, dst, side="right") - 1
            cross = ou != ov
            out[r] += np.bincount(ou[cross], minlength=r)
            reach[r][ou[cross], ov[cross]] = True
    return {r: Cut(r, links, out[r], reach[r].sum(axis=1)) for r in bounds}
