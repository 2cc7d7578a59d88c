"""An estimate of one command's peak memory per rank and work, by part, and its words.

The parts every plan shares (:mod:`mpinet.jobs.resources` for runs,
:mod:`mpinet.jobs.plans_flit` for the flit engine's own, :mod:`mpinet.jobs.plans` for
the other commands): the :class:`Estimate`, how a network and a size are named in a
refusal, and the guess of the mean route length the work is counted with.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from mpinet import theory
from mpinet.topology.base import Topology

#: the phases of a run's estimate: queues, pool and step buffers, then the records
RUN, END = "run", "end"


def size_text(nbytes: float) -> str:
    """``1.5 GiB``, ``300.0 MiB`` or ``512 bytes``."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{int(nbytes):,} bytes"


@dataclass
class Estimate:
    """Peak memory of one rank (the largest) by part, and the work, of one command."""

    what: str  # e.g. "run on scc:6 (4,320 nodes, degree 3)"
    parts: dict[str, int] = field(default_factory=dict)
    work: float = 0.0
    work_unit: str = ""
    #: part -> the phase it lives in (``"run"`` or ``"end"``); other parts live throughout
    phases: dict[str, str] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        """The peak: the parts held throughout plus the larger phase.

        A run's queues, pool and step buffers are freed before its records are
        gathered and sorted, so the two never coexist (summing them made the
        estimate twice the measured peak of fccn:8 and scc:10).
        """
        phase: dict[str, int] = {}
        held = 0
        for name, b in self.parts.items():
            if name in self.phases:
                phase[self.phases[name]] = phase.get(self.phases[name], 0) + b
            else:
                held += b
        return int(held + max(phase.values(), default=0))

    def add(self, name: str, nbytes: float, phase: str | None = None) -> None:
        if nbytes > 0:
            self.parts[name] = self.parts.get(name, 0) + int(nbytes)
            if phase is not None:
                self.phases[name] = phase

    def largest(self, k: int = 3) -> str:
        """The ``k`` largest parts, e.g. ``packet records 3.2 GiB, packet pool 1.1 GiB``."""
        top = sorted(self.parts.items(), key=lambda kv: -kv[1])[:k]
        return ", ".join(f"{name} {size_text(b)}" for name, b in top)

    def as_dict(self) -> dict:
        return {
            "bytes_per_rank": self.bytes,
            "parts": dict(self.parts),
            "phases": dict(self.phases),
            "work": self.work,
            "work_unit": self.work_unit,
        }


def describe(topo: Topology) -> str:
    return f"{topo.spec} ({topo.num_nodes:,} nodes, degree {topo.degree})"


def node_bytes(num_nodes: int) -> int:
    """Bytes of one node id in the engine's tables (int32 below 2**31 nodes)."""
    return 4 if num_nodes < 2**31 else 8


def mean_hops(topo: Topology) -> float:
    """A guess of the mean route length, for the work estimate: half the papers'
    diameter where there is one, else ``log N / log(degree - 1)``."""
    params = tuple(int(x) for x in re.findall(r"\d+", topo.spec.partition(":")[2]))
    try:
        forms = theory.closed_forms(topo.family, params)
    except (ValueError, TypeError):
        forms = []
    avg = [cf.value for cf in forms if cf.quantity == "avg_distance"]
    if avg:
        return float(avg[0])
    diam = [cf.value for cf in forms if cf.quantity == "diameter"]
    if diam:
        return max(1.0, float(diam[0]) / 2)
    return max(1.0, math.log(max(topo.num_nodes, 2)) / math.log(max(topo.degree - 1, 2)))
