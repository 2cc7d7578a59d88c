"""Router ``hypercube-ecube``: dimension-order (e-cube) routing on the hypercube.

Each hop corrects the lowest bit in which the node and the destination
differ, so a packet takes ``popcount(src ^ dst)`` hops, a shortest path, and
the routes are deadlock-free. Distributed, no header.
"""

from __future__ import annotations

import numpy as np

from mpinet.routing.base import HopContext, Router


class HypercubeEcube(Router):
    """Dimension-order routing: port = lowest set bit of ``node ^ dest``."""

    name = "hypercube-ecube"
    summary = "dimension-order routing, lowest differing bit first (hypercube)"
    families = ("hypercube",)
    distributed = True

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """Port of the lowest differing bit; headers are passed through (empty)."""
        x = np.asarray(nodes, dtype=np.int64) ^ np.asarray(dests, dtype=np.int64)
        return np.bitwise_count((x & -x) - 1).astype(np.int64), headers

    def distance(self, src: object, dst: object) -> np.ndarray:
        """Route length = Hamming distance, int64 (arrays broadcast)."""
        s, d = np.broadcast_arrays(np.asarray(src), np.asarray(dst))
        x = self.topo.check_ids(s, "src") ^ self.topo.check_ids(d, "dst")
        return np.bitwise_count(x).astype(np.int64)
