"""The packet engine's side of a job (:data:`mpinet.jobs.engines.ENGINES` ``"packet"``):
store-and-forward of whole packets on :class:`~mpinet.engine.core.Engine`."""

from __future__ import annotations

from typing import Any

from mpinet.engine.calendar import QUEUES, eligible
from mpinet.engine.core import Engine
from mpinet.jobs.spec import JobError


class PacketEngineJobs:
    """Preload, checks and build of the packet engine (its memory plan is
    :func:`mpinet.jobs.resources.engine_state`, which every run's plan reads)."""

    name = "packet"

    @staticmethod
    def preload(model: dict, ranks: int) -> None:
        """Nothing: the packet engine's kernels load at their first call."""

    @staticmethod
    def build(p: Any, comm: Any, **kw: Any) -> Engine:
        """The engine of plan ``p`` (keywords as :class:`~mpinet.engine.core.Engine` takes)."""
        return Engine(p.topo, p.router, p.model, comm, **kw)

    @staticmethod
    def check_model(job: Any, model: Any, router: Any, faults: Any, topo: Any) -> None:
        """``model.queues``: a known value, and ``calendar`` only where it applies.

        Raises
        ------
        JobError
            An unknown value, or ``calendar`` for a job it does not apply to (the reason).
        """
        q = job.model["queues"]
        if q not in QUEUES:
            raise JobError(f"model.queues must be one of {', '.join(QUEUES)}, got {q!r}")
        why = eligible(model, job.model["order"], router, faults, topo.num_nodes)
        if q == "calendar" and why is not None:
            raise JobError(
                f"model.queues = 'calendar' does not apply to this job: {why}; "
                "use 'auto' (per-link queues where the calendar does not apply)"
            )
