"""Networks that are one ring: where the ``dateline`` VC policy can cut a cycle.

A dateline (Dally & Seitz 1987) is a link of a ring whose crossings raise a packet's VC.
CCC and SCC define one per ring (:class:`~mpinet.routing.vc_policies.DatelineVC`); any
other network has one ring to cut exactly when it is a cycle: connected, every node of
degree 2, no two links between one pair. :func:`ring_cut` finds that link, or says why
there is none.
"""

from __future__ import annotations

import numpy as np

from mpinet.topology.base import Topology

#: where dateline orders the VCs (its refusal names them)
APPLIES = (
    "ccc:N, scc:N (N >= 4) and networks that are one ring (every node of degree 2, connected: "
    "a cycle)"
)


def ring_cut(topo: Topology) -> tuple[int, int] | str:
    """The dateline link ``(0, first neighbour of 0)`` of a network that is one ring, or
    why ``topo`` is not one (a phrase after "it")."""
    n = topo.num_nodes
    if topo.degree != 2:
        return f"has nodes of degree {topo.degree}, not one ring"
    if getattr(topo, "num_components", 1) != 1:
        return f"has {topo.num_components} components, not one ring"
    step = 1 << 20
    for lo in range(0, n, step):
        nb = topo.neighbors(np.arange(lo, min(n, lo + step), dtype=np.int64))
        if (nb < 0).any():
            return "has nodes of degree 1 (a path), not one ring"
        if (nb[:, 0] == nb[:, 1]).any():
            return "has two links between one pair of nodes, not one ring"
    # connected and 2-regular without parallel links: a cycle of n >= 3 nodes
    return 0, int(topo.neighbors([0])[0, 0])
