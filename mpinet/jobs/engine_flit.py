"""The flit engine's side of a job (:data:`mpinet.jobs.engines.ENGINES` ``"flit"``): its
kernels' preload, its build from a plan, and its memory plan (:mod:`mpinet.jobs.plans_flit`,
:mod:`mpinet.jobs.plans_iq`), imported only by a job that runs it."""

from __future__ import annotations

from typing import Any

from mpinet.engine.flit.engine import FlitEngine, preload_kernels
from mpinet.jobs import plans_flit, plans_iq


class FlitEngineJobs:
    """Preload, checks, build and memory plan of the flit engine (ideal and iq routers)."""

    name = "flit"
    preload = staticmethod(preload_kernels)
    #: the memory plan's parts (:func:`mpinet.jobs.resources.estimate_run` reads them)
    injects_late = staticmethod(plans_flit.injects_late)
    in_flight = staticmethod(plans_flit.in_flight)
    flit_state = staticmethod(plans_flit.flit_state)
    check_buffers = staticmethod(plans_flit.check_buffers)
    iq_state = staticmethod(plans_iq.iq_state)
    walked = staticmethod(plans_flit.walked)

    @staticmethod
    def check_model(job: Any, model: Any, router: Any, faults: Any, topo: Any) -> None:
        """Nothing more: :func:`mpinet.jobs.switching.check_switching` checks a flit job."""

    @staticmethod
    def build(p: Any, comm: Any, **kw: Any) -> FlitEngine:
        """The engine of plan ``p`` (keywords as :class:`~mpinet.engine.core.Engine` takes;
        ``order``, ``queues`` and ``faults``, the packet engine's, are dropped)."""
        for key in ("order", "queues", "faults"):
            kw.pop(key, None)
        return FlitEngine(p.topo, p.router, p.model, p.policy, comm, **kw)
