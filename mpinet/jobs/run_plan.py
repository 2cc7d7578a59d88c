"""Plan a run: build every object of a validated :class:`~mpinet.jobs.spec.Job` and check
everything that can fail before the ranks start to exchange packets.

:func:`plan` is the first half of a run (the CLI agrees on its outcome across ranks);
:func:`mpinet.jobs.execute.execute` the second, which runs the engine on the plan.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mpinet.engine.models import Model, parse_model, switching_model
from mpinet.jobs.engines import ENGINES, job_engine, run_engine
from mpinet.jobs.iq_job import iq_model
from mpinet.jobs.resources import load_network, plan_run
from mpinet.jobs.settings import check_settings
from mpinet.jobs.spec import Job, JobError
from mpinet.jobs.switching import check_switching
from mpinet.jobs.trace_attrs import run_attrs, unit_attrs
from mpinet.routing import make_router
from mpinet.routing.base import Router
from mpinet.topology.base import Topology
from mpinet.topology.faults import make_faults
from mpinet.trace.encode import check_attrs
from mpinet.trace.reserve import check_target, reserve
from mpinet.workloads.base import WorkloadKind
from mpinet.workloads.registry import make_workload


@dataclass
class Plan:
    """Everything a run needs, built and checked."""

    job: Job
    topo: Topology
    router: Router  # the run's: the job's [router], or a schedule-driven workload's own
    model: Model
    workload: WorkloadKind  # built: its traffic (unicast engine) or program (collective)
    trace_path: str | None
    force: bool
    faults: Any = None  # a FaultSet, or None
    estimate: Any = None  # the plan's resources.Estimate (memory per rank, work)
    policy: Any = None  # the VC policy of a job with switching keys (docs/switching.md)


def plan(
    job: Job,
    *,
    out: str | None = None,
    force: bool = False,
    ranks: int = 1,
    ranks_here: int | None = None,
) -> Plan:
    """Build topology, workload, router and model; check the trace path.

    Before anything sizeable is built, the job's settings are checked
    (:func:`~mpinet.jobs.settings.check_settings`) and its memory on ``ranks``
    ranks, ``ranks_here`` of them on this machine, is estimated and checked
    (:func:`~mpinet.jobs.resources.plan_run`); once the router exists, again with
    its header and tables.
    """
    topo = load_network(job.topology, ranks_here or ranks)
    trace_path = _trace_target(job, out, force)  # refused before any work
    check_settings(job, out)
    plan_run(job, topo, ranks, ranks_here, trace_path=trace_path)
    # the flit steps' kernel loads while the rest is built (the engine's module imported
    # by the job that runs it only: a packet run imports none of the flit engine's)
    ENGINES[job_engine(job.model)].preload(job.model, ranks)
    # the workload's checks that need only the topology first, then the router's and the
    # model's, then the workload's build, which needs both
    workload = make_workload(job.workload["kind"], job.workload, topo=topo, seed=job.seed)
    # no default tie: a router without that option refuses it instead of ignoring it
    opts = {k: v for k, v in job.router.items() if k != "name" and v is not None}
    faults = _faults(job, topo)  # collectives too: copies over failed links are lost
    router = make_router(job.router["name"], topo, faults=faults, **opts)
    model = parse_model(
        job.model["kind"],
        job.model["capacity"],
        buffer=job.model["buffer"],
        buffer_classes=job.model["buffer_classes"],
        max_hops=job.model["max_hops"],
    )
    m = job.model
    model = switching_model(model, m["switching"], m["flits"], m["vcs"], m["vc_buffer"],
                            m["vc_policy"])  # fmt: skip
    model = iq_model(model, m, job.source, ranks)
    model.port_capacities(topo)  # validates capacity classes
    est = plan_run(job, topo, ranks, ranks_here, trace_path=trace_path, router=router)
    workload.build(model, router)
    _check_router_used(job, workload)
    if job.model["order"] not in ("fifo", "oldest-first"):
        raise JobError(f"model.order must be fifo or oldest-first, got {job.model['order']!r}")
    policy = check_switching(job, model, workload, workload.router, faults)
    ENGINES[run_engine(model)].check_model(job, model, workload.router, faults, topo)
    p = Plan(job, topo, workload.router, model, workload, trace_path, force, faults, estimate=est,
             policy=policy)  # fmt: skip
    if trace_path is not None:  # every value the trace will store, refused now, not at the end
        check_attrs(run_attrs(p, ranks, 0, "", None) | unit_attrs(p))
    return p


def _check_router_used(job: Job, workload: Any) -> None:
    """A ``[router]`` the run would not follow is an error, like every ignored setting."""
    given = sorted(k for k in job.given if k.startswith("router."))
    if workload.ignores_router and given:
        key = given[0]
        value = job.router[key.partition(".")[2]]
        raise JobError(
            f"{job.source}: {key} = {value!r} has no effect: {workload.ignores_router}; remove it"
        )


def reserve_trace(p: Plan, comm: Any) -> Any:
    """Create the trace's temporary file before the run; collective. None without a trace.

    See :func:`mpinet.trace.reserve.reserve`; pass the result to :func:`execute` and
    ``discard`` it afterwards (removes what is left; a no-op once the trace is written).
    """
    if p.trace_path is None:
        return None

    job_file = p.job.source if os.path.isfile(p.job.source) else None
    return reserve(p.trace_path, comm, force=p.force, job_file=job_file)


def _trace_target(job: Job, out: str | None, force: bool) -> str | None:
    """The absolute trace path, checked (:func:`mpinet.trace.reserve.check_target`), or None."""
    path = out if out is not None else job.trace["path"]
    if path is None or job.trace["level"] == "none":
        return None

    job_file = job.source if os.path.isfile(job.source) else None
    return check_target(path, force=force, job_file=job_file)["path"]


def _faults(job: Job, topo: Topology) -> Any:
    """The job's FaultSet, or None when [faults] names none."""
    f = job.faults
    if not (f["links"] or f["nodes"] or f["random_links"] or f["random_nodes"]):
        return None

    return make_faults(
        topo,
        links=f["links"],
        nodes=f["nodes"],
        random_links=float(f["random_links"]),
        random_nodes=float(f["random_nodes"]),
        seed=job.seed,
        step=f["step"],
    )
