"""One star-graph step as unicast traffic: every node to its star neighbour of dimension j.

Star graphs and macro-stars share their nodes (permutations of ``k`` symbols), and star
dimension ``j`` (2..k) joins ``U`` to ``U * T_j`` (the first and the j-th symbol swapped).
``workload.kind = "star-neighbour"`` makes every node send ``packets`` packets to that
neighbour, all at step 0, along one dimension (``algorithm = "dimension:J"``) or along
every dimension at once (``algorithm = "all-dims"``, the default). On ``star:k`` each
packet takes one hop; on ``ms:l,n`` the job's router decides, and ``ms-star-emulation``
gives the embedding's paths (``T_j`` directly for ``j <= n + 1``, else
``S_i T_j' S_i``, paper 004 Thm 3.1). Unlike ``emulate-star`` the packets are routed, not
scheduled, so the run works on either engine and under any switching (docs/switching.md):
the completion steps of one SDC star step, on the star graph and on the macro-star.

Packet ids are ``(source * dims + d) * packets + c`` for the ``d``-th dimension given and
copy ``c``, so the traffic is the same on any number of ranks.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from mpinet import perm
from mpinet.engine.models import Model
from mpinet.errors import WorkloadError
from mpinet.routing.base import Router
from mpinet.topology.base import Topology
from mpinet.workloads.base import Footprint, WorkloadKind

#: families whose nodes are permutations of all k symbols, star dimension j = T_j
FAMILIES = ("star", "ms", "ims")
#: every [workload] key but ``kind``; this kind reads ``algorithm`` and ``packets``
_KEYS = ("injection", "rate", "steps", "target", "locality", "emulation", "messages",
         "interval", "source")  # fmt: skip


def parse_dimensions(algorithm: str | None, k: int) -> np.ndarray:
    """The star dimensions ``workload.algorithm`` names: ``dimension:J`` or ``all-dims``.

    Raises
    ------
    WorkloadError
        Another value, or ``J`` outside ``2..k``.
    """
    text = "all-dims" if algorithm is None else str(algorithm).strip()
    if text == "all-dims":
        return np.arange(2, k + 1, dtype=np.int64)
    head, _, tail = text.partition(":")
    if head == "dimension" and tail.strip().isdigit() and 2 <= int(tail) <= k:
        return np.array([int(tail)], dtype=np.int64)
    raise WorkloadError(
        f"workload.algorithm for star-neighbour must be 'all-dims' or 'dimension:J' with J in "
        f"2..{k} (star dimensions of {k} symbols); got {algorithm!r}"
    )


def star_neighbours(k: int, nodes: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """``U * T_j`` for node ids ``U`` (permutation ranks of ``k`` symbols) and dims ``j``."""
    p = perm.unrank(np.asarray(nodes, dtype=np.int64), k)
    rows = np.arange(p.shape[0])
    col = np.asarray(dims, dtype=np.int64) - 1
    first = p[:, 0].copy()
    p[:, 0] = p[rows, col]
    p[rows, col] = first
    return perm.rank(p)


class StarNeighbourTraffic:
    """Every node sends ``packets`` packets along each of ``dims``, at step 0."""

    def __init__(self, topo: Topology, dims: np.ndarray, packets: int = 1) -> None:
        self.topo, self.dims, self.packets = topo, np.asarray(dims, dtype=np.int64), int(packets)
        self.per_node = self.dims.size * self.packets
        self.pid_space = topo.num_nodes * self.per_node
        self.last_injection_step = 0

    def injections(self, lo: int, hi: int, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Packets injected at ``step`` by the sources in ``[lo, hi)``: (ids, sources, dests)."""
        hi = min(hi, self.topo.num_nodes)
        if step != 0 or hi <= lo:
            return (np.empty(0, np.int64),) * 3
        src = np.repeat(np.arange(lo, hi, dtype=np.int64), self.per_node)
        pid = lo * self.per_node + np.arange(src.size, dtype=np.int64)
        dims = self.dims[(pid // self.packets) % self.dims.size]
        return pid, src, star_neighbours(self.topo.k, src, dims)  # type: ignore[attr-defined]


class StarNeighbourKind(WorkloadKind):
    """``star-neighbour``: one star step (one dimension, or all) as routed unicast packets."""

    names: ClassVar[tuple[str, ...]] = ("star-neighbour",)

    def __init__(self, kind: str, workload: dict, topo: Topology, seed: int = 0) -> None:
        super().__init__(kind, workload, topo, seed)
        if topo.family not in FAMILIES:
            raise WorkloadError(
                f"workload.kind 'star-neighbour' needs a network whose nodes are the "
                f"permutations of the star graph ({', '.join(FAMILIES)}), not {topo.spec}"
            )
        k = int(topo.k)  # type: ignore[attr-defined]
        packets = int(workload["packets"])
        if packets < 1:
            raise WorkloadError(f"workload.packets must be >= 1, got {packets}")
        self.traffic = StarNeighbourTraffic(topo, parse_dimensions(workload["algorithm"], k),
                                            packets)  # fmt: skip

    @classmethod
    def footprint(cls, workload: dict, topo: Topology) -> Footprint:
        """``packets`` per node per dimension, all injected at step 0."""
        k = int(getattr(topo, "k", 2))
        dims = 1 if str(workload["algorithm"] or "all-dims").startswith("dimension") else k - 1
        total = topo.num_nodes * dims * int(workload["packets"] or 1)
        return Footprint(packets=total, in_flight=total, per_step=total)

    @classmethod
    def unused_keys(cls, kind: str, workload: dict) -> dict[str, str]:
        return {key: f"workload.kind = {kind!r} does not read it" for key in _KEYS}

    def build(self, model: Model, router: Router) -> None:
        self.model, self.router = model, router

    def summarize(
        self, steps: int, packets: np.ndarray | None, comm: Any
    ) -> tuple[dict[str, dict], list[dict]]:
        """The dimensions sent along and the packets per node."""
        dims = self.traffic.dims
        text = str(int(dims[0])) if dims.size == 1 else f"{int(dims[0])}..{int(dims[-1])}"
        section = {"dimensions": text, "packets_per_node": int(self.traffic.per_node)}
        return {"star_neighbour": section}, []
