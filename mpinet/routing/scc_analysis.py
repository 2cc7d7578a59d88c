"""Route-cost analysis of SCC_n (paper 000, sections 3 and 5).

Splits route lengths into lateral, move-in and move-between links (eq. 8)
(:func:`scc_cost_split`, used by ``mpinet routes`` through the engine) and
computes exact averages over all routes Alg. 1 can take (min, expected,
worst case) by dynamic programming; the kernels are in
:mod:`mpinet.routing.scc_cycles`.
"""

from __future__ import annotations

import math

import numpy as np

from mpinet import perm
from mpinet.routing.scc_cycles import b_mask, mi_local, relative, ring_distances
from mpinet.topology.scc import SCC

#: modes of :func:`exhaustive_route_costs`
MODES = ("min", "mean", "max")
_BATCH = 1 << 18


def scc_cost_split(
    topo: SCC, src: object, dst: object, lengths: object, lateral_counts: object
) -> dict[str, np.ndarray]:
    """Split route lengths into lateral, move-in (MI) and move-between (MB) local links.

    ``mi_local`` is eq. 8 of paper 000 summed over the cycles of the relative
    permutation (it depends on the pair only, not on the router, provided the
    router's lateral links execute those cycles as eq. 2/3 do);
    ``mb_local = lengths - lateral_counts - mi_local``.

    Parameters
    ----------
    topo : SCC
    src, dst : array_like of int
        Node ids of the routes' ends (broadcast against each other).
    lengths, lateral_counts : array_like of int
        Hops and lateral hops of each route (e.g. from :func:`lateral_hops`).

    Returns
    -------
    dict
        ``lat``, ``mi_local``, ``mb_local``: (M,) int64 arrays.
    """
    s, d = np.broadcast_arrays(np.asarray(src), np.asarray(dst))
    sigma, _, _ = relative(topo, topo.check_ids(s, "src"), topo.check_ids(d, "dst"))
    lat = np.asarray(lateral_counts, dtype=np.int64).ravel()
    mi = mi_local(sigma)
    mb = np.asarray(lengths, dtype=np.int64).ravel() - lat - mi
    return {"lat": lat, "mi_local": mi, "mb_local": mb}


def lateral_hops(topo: SCC, paths: np.ndarray) -> np.ndarray:
    """Lateral hops per route from :func:`~mpinet.routing.walk.walk` ``paths`` (-1 padded)."""
    p = np.asarray(paths, dtype=np.int64)
    a, b = p[:, :-1], p[:, 1:]
    moved = (a >= 0) & (b >= 0)
    return (moved & (a // topo.ring != b // topo.ring)).sum(axis=1)


def exhaustive_route_costs(n: int, dest_pos: int = 1, mode: str = "min") -> np.ndarray:
    """Exact costs over every route whose lateral links are taken from ``B`` (Alg. 1's routes).

    Dynamic programming over the star-distance levels of all ``n!``
    relative permutations, towards the node ``<dest_pos + 1, identity>``.

    Parameters
    ----------
    n : int
        SCC dimension (``n!`` x ``n-1`` states; n = 9 takes a few seconds).
    dest_pos : int
        Ring position of the destination, 0-based (1 = the identity node ``<2, 12..n>``).
    mode : {"min", "mean", "max"}
        The cheapest route (the minimal-lateral optimum), the expected cost
        when every lateral link is drawn uniformly from ``B`` (Alg. 1 as
        :class:`~mpinet.routing.scc.SCCRandom` does; ring moves the shorter
        way), or the costliest route (Table 2's worst case).

    Returns
    -------
    (n! * (n-1),) float64 costs, indexed by SCC node id (source ``<i, sigma>``).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    count = math.factorial(n)
    sig = perm.unrank(np.arange(count), n)
    bm = b_mask(sig)[:, 1:]
    level = perm.star_distance(sig)
    child = np.empty((count, n - 1), dtype=np.int64)
    for b in range(1, n):
        moved = sig.copy()
        moved[:, [0, b]] = moved[:, [b, 0]]
        child[:, b - 1] = perm.rank(moved)
    dist = ring_distances(n)[1:, 1:].astype(np.float64)
    cost = np.full((count, n - 1), np.nan)
    cost[0] = dist[:, dest_pos - 1]
    cols = np.arange(n - 1)[None, :]
    for k in range(1, int(level.max(initial=0)) + 1):
        idx = np.flatnonzero(level == k)
        ok = bm[idx]
        after = np.where(ok, 1.0 + cost[np.where(ok, child[idx], 0), cols], 0.0)
        total = dist[None, :, :] + after[:, None, :]  # [perm, here, link]
        if mode == "min":
            cost[idx] = np.where(ok[:, None, :], total, np.inf).min(axis=2)
        elif mode == "max":
            cost[idx] = np.where(ok[:, None, :], total, -np.inf).max(axis=2)
        else:
            weight = ok / ok.sum(axis=1, keepdims=True)
            cost[idx] = (total * weight[:, None, :]).sum(axis=2)
    return cost.ravel()
