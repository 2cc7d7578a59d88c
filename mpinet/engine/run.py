"""What every engine shares: the traffic source it reads, the record it returns, and how a
failure on one rank becomes the same error on all.

The packet engine (:mod:`mpinet.engine.core`) and the flit engine
(:mod:`mpinet.engine.flit.engine`) both take a :class:`Workload` and return a
:class:`RunRecord`; a rank that fails sets a message, the step's reduction tells every rank,
and :func:`raise_collected` raises the first rank's message everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from mpinet.errors import MpinetError
from mpinet.topology.base import Topology


class CollectiveError(MpinetError):
    """An error raised identically on every rank (no abort needed)."""


class Workload(Protocol):
    """What the engine needs from a traffic source (see docs/architecture.md)."""

    #: every packet id is in [0, pid_space)
    pid_space: int
    #: no packet is injected after this step
    last_injection_step: int

    def injections(self, lo: int, hi: int, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, sources, destinations) injected at ``step`` from sources in [lo, hi)."""


@dataclass
class RunRecord:
    """What one rank holds after a run (local rows; globals are reduced)."""

    steps: int
    counters: np.ndarray  # (steps, 4): transmissions, delivered, in_flight, cross_rank
    packets: np.ndarray  # (rows, 7): id, source, dest, inject, deliver, hops, admit step
    injected_ids: np.ndarray
    link_load: np.ndarray  # (hi - lo, degree)
    hop_rows: np.ndarray | None  # (rows, 5): step, packet, from, to, port
    stuck: list[dict] = field(default_factory=list)
    deadlock: dict | None = None  # the wait-for report when the run deadlocked
    drops: np.ndarray | None = None  # (rows, 4): packet, reason code, step, node (faults)
    seconds: float = 0.0
    lo: int = 0
    hi: int = 0


def joined(pieces: list, width: int = 0) -> np.ndarray:
    """The per-step row blocks ``pieces`` as one int64 array; none: 0 rows of ``width``
    columns (``width`` 0: a 1-D array of none)."""
    if pieces:
        return np.concatenate(pieces)
    return np.empty((0, width) if width else 0, np.int64)


def packet_rows(delivered: list, live: np.ndarray) -> np.ndarray:
    """A run's packet rows (id, source, dest, inject, deliver, hops, admit step): the
    ``delivered`` blocks, then the packets still in flight at the end, from their ``live``
    rows (pid, src, dst, at, inj, hops, adm), with deliver step -1. Both engines end so."""
    packets = joined(delivered, 7)
    if live.shape[0]:
        left = live[:, [0, 1, 2, 4, 4, 5, 6]]
        left[:, 4] = -1
        packets = np.concatenate([packets, left])
    return packets


def raise_collected(comm: Any, message: str | None) -> None:
    """Raise the first rank's failure message on every rank (collective)."""
    msgs = [m for m in comm.allgather(message) if m]
    raise CollectiveError(msgs[0] if msgs else "a rank failed")


def stuck_packets(comm: Any, topo: Topology, live: np.ndarray, limit: int = 10) -> list[dict]:
    """The ``limit`` lowest-id packets of the ranks' ``live`` rows (pid, src, dst, at, _,
    hops, ...), labelled; the same on any rank count (collective)."""
    live = live[np.argsort(live[:, 0], kind="stable")[:limit]]
    mine = [
        {
            "id": int(r[0]),
            "source": topo.label(int(r[1])),
            "dest": topo.label(int(r[2])),
            "at": topo.label(int(r[3])),
            "hops": int(r[5]),
        }
        for r in live
    ]
    everyone = comm.allgather(mine)
    return sorted((d for part in everyone for d in part), key=lambda d: d["id"])[:limit]
