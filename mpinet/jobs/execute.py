"""Turn a validated :class:`~mpinet.jobs.spec.Job` into a run: plan, then execute.

:func:`plan` builds every object and checks everything that can fail before
the ranks start to exchange packets (the CLI agrees on its outcome across
ranks); :func:`execute` runs the engine, reduces the statistics and writes
the trace.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mpinet.engine.core import Engine
from mpinet.engine.models import Model, parse_model
from mpinet.engine.report import gather_hops, gather_packets, summarize
from mpinet.errors import MpinetError
from mpinet.jobs.collectives import COLLECTIVE_KINDS, build_program, execute_collective
from mpinet.jobs.spec import Job, JobError
from mpinet.routing import exact_distance, make_router
from mpinet.routing.base import Router
from mpinet.topology import from_spec
from mpinet.topology.base import Topology
from mpinet.workloads import Unicast

#: networks up to this many nodes get exact stretch even when the router is not "shortest"
STRETCH_TABLE_LIMIT = 4_000_000


@dataclass
class Plan:
    """Everything a run needs, built and checked."""

    job: Job
    topo: Topology
    router: Router
    model: Model
    workload: Any  # Unicast, AllPairs (te) or None for a collective
    trace_path: str | None
    force: bool
    program: Any = None  # the node program of a broadcast / mnb job


def plan(job: Job, *, out: str | None = None, force: bool = False) -> Plan:
    """Build topology, router, model and workload; check the trace path."""
    topo = from_spec(job.topology)
    w = job.workload
    target = None
    if w["target"] is not None:
        target = topo.parse_label(str(w["target"]))
    program = None
    if w["kind"] in COLLECTIVE_KINDS:
        workload = None
    elif w["kind"] in ("te", "emulate-star"):
        workload = w["kind"]  # built below, with the model (the schedule depends on it)
    else:
        workload = Unicast(
            topo,
            w["kind"],
            packets=w["packets"],
            injection=w["injection"],
            rate=float(w["rate"]),
            steps=w["steps"],
            seed=job.seed,
            target=target,
            locality=w["locality"],
        )
    opts = {k: v for k, v in job.router.items() if k != "name" and v is not None}
    if job.router["name"] != "shortest":
        opts.pop("tie", None)
    router = make_router(job.router["name"], topo, **opts)
    model = parse_model(job.model["kind"], job.model["capacity"])
    model.port_capacities(topo)  # validates capacity classes
    if workload == "te":
        from mpinet.workloads.te import build_te

        router, workload = build_te(topo, model, w["algorithm"], router)
    elif workload == "emulate-star":
        router, workload = _emulation(topo, model, w)
    if workload is None:
        program = build_program(job, topo, model)
    if job.model["order"] not in ("fifo", "oldest-first"):
        raise JobError(f"model.order must be fifo or oldest-first, got {job.model['order']!r}")
    path = out if out is not None else job.trace["path"]
    if job.trace["level"] == "none":
        path = None
    if path is not None and os.path.exists(path) and not force:
        raise JobError(f"trace file {path} exists; pass --force to replace it")
    if path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise JobError(f"trace file {path}: directory {os.path.dirname(path)} does not exist")
    return Plan(job, topo, router, model, workload, path, force, program)


def _emulation(topo: Topology, model: Model, w: dict):
    """(router, workload) of an emulate-star job; the mode must match the model."""
    from mpinet.workloads.emulate_star import MODE_MODEL, EmulateStar

    mode = w["emulation"] or ("all-port" if model.kind == "all-port" else "sdc")
    if MODE_MODEL.get(mode, model.kind) != model.kind:
        raise JobError(
            f"workload.emulation = {mode!r} runs under model {MODE_MODEL[mode]!r}, "
            f"not {model.name!r}; set model = {MODE_MODEL[mode]!r}"
        )
    em = EmulateStar(topo, w["algorithm"] or "all-dims", mode)
    return em.router, em


def _distance_fn(p: Plan):
    """Exact distances for stretch: the shortest router's tables, when they fit."""
    if hasattr(p.router, "distance"):  # by convention the exact distance (routing/base.py)
        return p.router.distance
    try:
        if p.topo.family in ("fccn", "ccc", "hypercube"):
            return exact_distance(p.topo)
        if p.topo.num_nodes > STRETCH_TABLE_LIMIT:
            return None
        return exact_distance(p.topo)
    except MpinetError:
        return None


def execute(p: Plan, comm: Any, *, progress=None, argv: list[str] | None = None) -> dict:
    """Run the planned job on all ranks of ``comm``; return the global result."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    job = p.job
    if p.program is not None:
        return _execute_collective(p, comm, started, t0, argv)
    engine = Engine(
        p.topo,
        p.router,
        p.model,
        comm,
        seed=job.seed,
        max_steps=job.max_steps,
        order=job.model["order"],
        record_hops=job.trace["level"] == "hops" and p.trace_path is not None,
        progress=progress,
    )
    rec = engine.run(p.workload)
    packets, injected = gather_packets(rec, p.workload.pid_space, engine.comm)
    exists = engine.table >= 0 if engine.table is not None else None
    stats = summarize(
        rec, p.topo, packets, injected, engine.comm, distance=_distance_fn(p), link_exists=exists
    )
    stats["stuck_packets"] = rec.stuck
    result = {
        "job": job.as_dict(),
        "spec": p.topo.spec,
        "nodes": p.topo.num_nodes,
        "ranks": engine.size,
        "engine_seconds": round(rec.seconds, 4),
        "stats": stats,
        "router": p.router.name,
        "trace": None,
    }
    if job.workload["kind"] == "te":
        result["te"] = _te_summary(p, rec.steps)
    if job.workload["kind"] == "emulate-star":
        result["emulation"] = _emulation_summary(p, rec.steps, packets, engine.comm)
        stats["checks"] += result["emulation"].pop("checks")
    if p.trace_path is not None:
        from mpinet.trace import write_trace

        hops = (
            gather_hops(rec, p.workload.pid_space, engine.comm)
            if rec.hop_rows is not None
            else None
        )
        attrs = _attrs(p, engine.size, rec.steps, started, argv)
        if "te" in result:
            attrs.update({f"te_{k}": v for k, v in result["te"].items()})
        if "emulation" in result:
            attrs.update({f"emulation_{k}": v for k, v in result["emulation"].items()})
        tables = {
            "packets": {
                name: np.ascontiguousarray(packets[:, i])
                for i, name in enumerate(
                    ["id", "source", "dest", "inject_step", "deliver_step", "hops"]
                )
            },
            "links": {"load": rec.link_load},
        }
        c = rec.counters if engine.rank == 0 else rec.counters[:0]
        tables["steps"] = {
            name: np.ascontiguousarray(c[:, i])
            for i, name in enumerate(["transmissions", "delivered", "in_flight", "cross_rank"])
        }
        if hops is not None:
            tables["hops"] = {
                name: np.ascontiguousarray(hops[:, i])
                for i, name in enumerate(["step", "packet", "from_node", "to_node", "port"])
            }
        checks = stats["checks"]
        result["trace"] = write_trace(
            p.trace_path, engine.comm, attrs=attrs, tables=tables, checks=checks, force=p.force
        )
    result["seconds"] = round(time.perf_counter() - t0, 4)
    result.update(_peak_rss(engine.comm))
    return result


def _te_summary(p: Plan, steps: int) -> dict:
    """How a total exchange was built and its measured steps beside the exact lower bound."""
    from mpinet.workloads.te import te_lower_bound

    lb = te_lower_bound(p.topo, p.model)
    algo = "schedule" if p.router.name == "te-schedule" else "routed"
    return {"algorithm": algo, "lower_bound": lb, "ratio": round(steps / lb, 4)}


def _emulation_summary(p: Plan, steps: int, packets: np.ndarray, comm: Any) -> dict:
    """Star steps, measured MS steps beside the schedule and the theorem, per-packet checks."""
    from mpinet.workloads.emulate_star import packet_checks

    em = p.workload
    paper, source = em.theorem()
    checks = packet_checks(em, packets, comm)
    checks.append(
        {
            "name": "MS steps equal the emulation schedule and are within the theorem",
            "expected": em.promised_steps(),
            "measured": int(steps),
            "ok": steps == em.promised_steps() and steps <= paper,
            "detail": f"{source}: {paper}",
        }
    )
    return {
        "algorithm": em.algo.name,
        "mode": em.mode,
        "star_steps": em.star_steps(),
        "ms_steps": int(steps),
        "schedule_steps": em.promised_steps(),
        "paper_steps": paper,
        "paper_source": source,
        "slowdown": round(steps / max(em.star_steps(), 1), 4),
        "checks": checks,
    }


def _peak_rss(comm: Any) -> dict:
    """Peak resident memory of the largest rank and of all ranks, MiB (Linux ru_maxrss)."""
    import resource

    from mpinet.engine.comm import max_op, sum_op

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "peak_rss_mib": round(comm.allreduce(rss, op=max_op()), 1),
        "peak_rss_mib_all_ranks": round(comm.allreduce(rss, op=sum_op()), 1),
    }


def _attrs(p: Plan, size: int, steps: int, started: str, argv: list[str] | None) -> dict:
    job = p.job
    return {
        "topology": p.topo.spec,
        "nodes": p.topo.num_nodes,
        "degree": p.topo.degree,
        "ports": list(p.topo.ports),
        "port_classes": list(p.topo.port_classes),
        "model": p.model.name,
        "order": job.model["order"],
        "workload": job.workload["kind"],
        "router": p.router.name,
        "seed": job.seed,
        "mpi_size": size,
        "steps": int(steps),
        "trace_level": job.trace["level"],
        "command_line": " ".join(argv if argv is not None else sys.argv),
        "job": repr(job.as_dict()),
        "start_time": started,
        "end_time": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _execute_collective(p: Plan, comm: Any, started: str, t0: float, argv) -> dict:
    """A broadcast / mnb job on the collective engine, and its trace."""
    from mpinet.engine.comm import resolve

    comm = resolve(comm)
    res = execute_collective(p.topo, p.program, p.model, comm, p.job.max_steps)
    per_step = res.pop("per_step")
    result = {
        "job": p.job.as_dict(),
        "spec": p.topo.spec,
        "nodes": p.topo.num_nodes,
        "ranks": comm.Get_size(),
        "engine_seconds": res["seconds"],
        "stats": res,
        "trace": None,
    }
    if p.trace_path is not None:
        from mpinet.trace import write_trace

        rows = per_step if comm.Get_rank() == 0 else per_step[:0]
        tables = {
            "steps": {
                name: np.ascontiguousarray(rows[:, i])
                for i, name in enumerate(["transmissions", "informed", "duplicates"])
            }
        }
        attrs = _attrs(p, comm.Get_size(), res["steps"], started, argv)
        attrs["collective"] = res["collective"]
        result["trace"] = write_trace(
            p.trace_path, comm, attrs=attrs, tables=tables, checks=res["checks"], force=p.force
        )
    result["seconds"] = round(time.perf_counter() - t0, 4)
    return result
