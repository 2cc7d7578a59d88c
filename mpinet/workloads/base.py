"""What a workload kind gives the jobs layer: :class:`WorkloadKind`.

A job's ``workload.kind`` names one class registered in
:mod:`mpinet.workloads.registry`. The class reads the job's ``[workload]``
section (a plain dict, every key present), builds the router and the traffic
(unicast engine) or the node program (collective engine), and summarises its
run. :mod:`mpinet.jobs.execute` only calls these methods, so a new workload is
one class plus one line in the registry's table. See docs/architecture.md,
"The engine's interface to a workload".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mpinet.engine.models import Model
from mpinet.routing.base import Router
from mpinet.topology.base import Topology

UNICAST = "unicast"  # packets move, one row each: mpinet.engine.core.Engine
COLLECTIVE = "collective"  # messages are copied: mpinet.engine.collective.run_collective
ENGINES = (UNICAST, COLLECTIVE)


@dataclass(frozen=True)
class Footprint:
    """What a workload puts in the engine, known from the job alone (nothing built).

    Counts are for the whole network; :mod:`mpinet.jobs.resources` turns them
    into bytes per rank before anything is allocated.
    """

    #: packets injected over the run (each leaves a record at the end)
    packets: int = 0
    #: most packets in the engine at once
    in_flight: int = 0
    #: most packets injected in one step (the routing temporaries of that step)
    per_step: int = 0
    #: every packet is delivered at one node, so one rank holds all the records
    concentrated: bool = False
    #: collective engine: messages each node may hold (a (node, message) table)
    messages: int = 0


class WorkloadKind:
    """One workload kind of a job (base class).

    Parameters
    ----------
    kind : str
        The job's ``workload.kind`` (one of :attr:`names`).
    workload : dict
        The job's ``[workload]`` section.
    topo : Topology
    seed : int
        The job's seed.

    Notes
    -----
    ``__init__`` checks what needs only the topology; :meth:`build` the rest,
    once the job's router and model exist. After :meth:`build`, ``router`` is
    the router the run uses and ``traffic`` (unicast engine: ``pid_space``,
    ``last_injection_step``, ``injections``) or ``program`` (collective engine)
    is set.
    """

    #: the ``workload.kind`` values this class runs
    names: ClassVar[tuple[str, ...]] = ()
    #: :data:`UNICAST` or :data:`COLLECTIVE`
    engine: ClassVar[str] = UNICAST

    def __init__(self, kind: str, workload: dict, topo: Topology, seed: int = 0) -> None:
        self.kind, self.workload, self.topo, self.seed = kind, workload, topo, int(seed)
        self.model: Model | None = None
        self.router: Router | None = None
        self.traffic: Any = None
        self.program: Any = None
        #: why the job's ``[router]`` has no effect on this run (set by :meth:`build`), or
        #: None when the run follows it; a job that names a router is then refused
        self.ignores_router: str | None = None

    @classmethod
    def footprint(cls, workload: dict, topo: Topology) -> Footprint | None:
        """Packets or messages of this kind on ``topo``, before anything is built.

        None (the default) means unknown: only the engine's own state is estimated.
        """
        return None

    @classmethod
    def unused_keys(cls, kind: str, workload: dict) -> dict[str, str]:
        """Keys of ``[workload]`` this kind would ignore as configured, each with the reason.

        A job that sets one of them is refused rather than silently ignored
        (:func:`mpinet.jobs.run_plan.plan`). Default: none.
        """
        return {}

    def build(self, model: Model, router: Router) -> None:
        """Build the run's router, traffic or program; ``router`` is the job's ``[router]``.

        The default keeps the job's router; subclasses set ``traffic`` or ``program``.
        """
        self.model, self.router = model, router

    def summarize(
        self, steps: int, packets: np.ndarray | None, comm: Any
    ) -> tuple[dict[str, dict], list[dict]]:
        """Result sections this kind adds (e.g. ``{"te": {...}}``) and its own checks.

        Called on every rank (it may reduce over ``comm``). ``packets`` is this
        rank's share of the packet records (``engine.report.gather_packets``
        layout) on the unicast engine, None on the collective one.
        """
        return {}, []

    def trace_attrs(self, sections: dict[str, dict]) -> dict:
        """Trace root attributes: each section's keys prefixed with its name (``te_ratio``)."""
        return {f"{name}_{k}": v for name, sec in sections.items() for k, v in sec.items()}
