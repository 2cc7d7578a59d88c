"""Rings of SCC with faults: which positions of a packet's ring it can still reach.

Helpers of the fault-tolerant ``scc-random`` (:mod:`mpinet.routing.scc`). A
packet at ring position ``here`` of supernode ``pi`` may reach position ``q``
going up (``local+``) or down (``local-``) only over live local links; it can
take the lateral link at ``q`` only if that link is live. Distances are per
packet, over the ``n - 1`` positions of its own ring (0-based index ``q - 1``).
"""

from __future__ import annotations

import numpy as np

#: distance of a position that cannot be reached
FAR = np.iinfo(np.int64).max // 4


def ring_state(faults, n: int, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distances up and down to every position of each packet's ring, and live laterals.

    Returns
    -------
    up, down : (M, n - 1) int64
        Hops to ring index ``j`` (position ``j + 1``) over live ``local+`` (``local-``)
        links only, :data:`FAR` where a failed link is in the way.
    lateral : (M, n - 1) bool
        Whether the lateral link at ring index ``j`` is live.
    """
    ring = n - 1
    nodes = np.asarray(nodes, dtype=np.int64)
    r = nodes % ring
    ring_ids = (nodes - r)[:, None] + np.arange(ring)
    m = nodes.size
    # SCC_3: one local port (0) joins the two nodes of a ring, in both directions
    plus, minus, lat = (0, 0, 1) if n == 3 else (0, 1, 2)

    def live(port: int) -> np.ndarray:
        flat = ring_ids.ravel()
        return ~faults.link_down(flat, np.full(flat.size, port)).reshape(m, ring)

    up_ok, down_ok, lateral = live(plus), live(minus), live(lat)
    rows = np.arange(m)
    up = np.full((m, ring), FAR, dtype=np.int64)
    down = np.full((m, ring), FAR, dtype=np.int64)
    up[rows, r] = 0
    down[rows, r] = 0
    go_up = np.ones(m, dtype=bool)
    go_down = np.ones(m, dtype=bool)
    for j in range(1, ring):
        prev_up, prev_down = (r + j - 1) % ring, (r - j + 1) % ring
        go_up &= up_ok[rows, prev_up]
        go_down &= down_ok[rows, prev_down]
        up[rows, (r + j) % ring] = np.where(go_up, j, FAR)
        down[rows, (r - j) % ring] = np.where(go_down, j, FAR)
    return up, down, lateral


def ring_port(n: int, up: np.ndarray, down: np.ndarray) -> np.ndarray:
    """The local port that goes the shorter live way (up on a tie, as ``ring_ports``).

    ``up`` and ``down``: distances to each packet's target (not both :data:`FAR`).
    """
    if n == 3:
        return np.zeros(up.shape, dtype=np.int64)
    return np.where(up <= down, 0, 1).astype(np.int64)
