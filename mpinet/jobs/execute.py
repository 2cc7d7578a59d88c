"""Turn a validated :class:`~mpinet.jobs.spec.Job` into a run: plan, then execute.

:func:`plan` (:mod:`mpinet.jobs.run_plan`, re-exported here) builds every object and
checks everything that can fail before the ranks start to exchange packets (the CLI
agrees on its outcome across ranks); :func:`execute` runs the engine, reduces the
statistics and writes the trace.
"""

from __future__ import annotations

import resource
import time
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mpinet import trace  # its writer (h5py) is imported at the first trace written
from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.engine.faults import counts
from mpinet.engine.report import gather_hops, gather_packets, summarize
from mpinet.errors import MpinetError, TraceError
from mpinet.jobs.collectives import execute_collective
from mpinet.jobs.run_plan import Plan, plan, reserve_trace
from mpinet.jobs.switching import make_engine
from mpinet.jobs.trace_attrs import run_attrs, unit_attrs
from mpinet.routing import exact_distance
from mpinet.topology.base import Topology
from mpinet.trace.columns import FLIT_COLUMNS
from mpinet.workloads.base import COLLECTIVE

__all__ = ["Plan", "execute", "plan", "reserve_trace"]

#: networks up to this many nodes get exact stretch even when the router is not "shortest"
STRETCH_TABLE_LIMIT = 4_000_000
#: neighbour-table entries of a rank's block above which every port counts as a link in the
#: link-load statistics (only FCCN lacks ports; the engine kept the same limit for its table)
LINK_TABLE_LIMIT = 1 << 26


def _distance_fn(p: Plan):
    """Exact distances for stretch: the shortest router's tables, when they fit."""
    if hasattr(p.router, "distance") and p.faults is None:  # exact (routing/base.py)
        return p.router.distance
    try:
        if p.topo.family in ("fccn", "ccc", "hypercube"):
            return exact_distance(p.topo)
        if p.topo.num_nodes > STRETCH_TABLE_LIMIT:
            return None
        return exact_distance(p.topo)
    except MpinetError:
        return None


def execute(
    p: Plan,
    comm: Any,
    *,
    progress=None,
    argv: list[str] | None = None,
    reservation: Any = None,
    keep_local: bool = False,
    collective_progress=None,
) -> dict:
    """Run the planned job on all ranks of ``comm``; return the global result.

    ``progress`` is the unicast engine's callback, ``collective_progress`` the collective
    engine's (:class:`~mpinet.engine.core.Engine`,
    :func:`~mpinet.engine.collective.run_collective`).

    ``keep_local``: also return this rank's packet records and link loads under
    ``"_local"`` (for :mod:`mpinet.jobs.fault_cost`; not JSON, pop it before printing).

    ``reservation``: the trace's names reserved before the run
    (:func:`mpinet.trace.reserve.reserve`; without one the writer reserves them). A trace
    that cannot be written leaves the result whole, with ``trace`` None and
    ``trace_error`` saying why.
    """
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    comm = resolve(comm)
    if p.workload.engine == COLLECTIVE:
        return _execute_collective(p, comm, started, t0, argv, reservation, collective_progress)
    job = p.job
    engine = make_engine(
        p,
        comm,
        seed=job.seed,
        max_steps=job.max_steps,
        order=job.model["order"],
        queues=job.model["queues"],
        record_hops=job.trace["level"] == "hops" and p.trace_path is not None,
        progress=progress,
        faults=p.faults,
    )
    traffic = p.workload.traffic
    rec = engine.run(traffic)
    packets, injected = gather_packets(rec, traffic.pid_space, comm)
    stats = summarize(
        rec,
        p.topo,
        packets,
        injected,
        comm,
        distance=_distance_fn(p),
        link_exists=_link_exists(p.topo, rec.lo, rec.hi),
    )
    stats["stuck_packets"] = rec.stuck
    if rec.deadlock is not None:
        stats["deadlock"] = rec.deadlock
    if p.faults is not None:
        stats["faults"] = p.faults.describe(steps=rec.steps)  # applied: False if never reached
        stats["faults"]["router_tolerates_faults"] = bool(p.router.fault_tolerant)
        mine = counts(rec.drops)
        stats["drops"] = {k: comm.allreduce(v, op=sum_op()) for k, v in mine.items()}
    size = comm.Get_size()
    result = {
        "job": job.as_dict(),
        "spec": p.topo.spec,
        "nodes": p.topo.num_nodes,
        "ranks": size,
        "engine_seconds": round(rec.seconds, 4),
        "stats": stats,
        "router": p.router.name,
        "trace": None,
    }
    if p.model.flit:  # the flit engine: what its transmissions and loads count
        m = p.model
        result["switching"] = {"mode": m.switching, "flits": m.flits, "vcs": m.vcs,
                               "vc_buffer": m.vc_buffer, "vc_policy": m.vc_policy,
                               "steps": getattr(engine, "steps_path", None),
                               "calls": getattr(engine, "calls_path", None),
                               "routes": getattr(engine, "routes", None)}  # fmt: skip
        if getattr(engine, "block_calls", None) is not None:  # the iq router's compiled calls
            result["switching"]["block_calls"] = engine.block_calls
    if keep_local:
        result["_local"] = {"packets": packets, "link_load": rec.link_load}
    sections, checks = p.workload.summarize(rec.steps, packets, comm)
    result.update(sections)
    stats["checks"] += checks
    stats["ok"] = stats["ok"] and all(c["ok"] for c in checks)
    if p.trace_path is not None:
        hops = gather_hops(rec, traffic.pid_space, comm) if rec.hop_rows is not None else None
        attrs = run_attrs(p, size, rec.steps, started, argv)
        attrs.update(p.workload.trace_attrs(sections))
        attrs.update(unit_attrs(p))
        tables = {
            "packets": {
                name: np.ascontiguousarray(packets[:, i])
                for i, name in enumerate(
                    ["id", "source", "dest", "inject_step", "deliver_step", "hops", "admit_step"]
                )
            },
            "links": {"load": rec.link_load},
        }
        c = rec.counters if comm.Get_rank() == 0 else rec.counters[:0]
        tables["steps"] = {"step": np.arange(1, len(c) + 1, dtype=np.int64)}
        tables["steps"] |= {
            name: np.ascontiguousarray(c[:, i])
            for i, name in enumerate(["transmissions", "delivered", "in_flight", "cross_rank"])
        }
        if hops is not None:
            tables["hops"] = {
                name: np.ascontiguousarray(hops[:, i])
                for i, name in enumerate(["step", "packet", "from_node", "to_node", "port"])
            }

        meta = FLIT_COLUMNS if p.model.flit else None
        _write(p, comm, result, attrs, tables, stats["checks"], reservation, meta)
    result["seconds"] = round(time.perf_counter() - t0, 4)
    result.update(_peak_rss(comm))
    if p.estimate is not None:  # the plan's estimate beside the measured peak
        result["plan"] = p.estimate.as_dict()
    return result


def _link_exists(topo: Topology, lo: int, hi: int) -> np.ndarray | None:
    """Which ports of nodes ``[lo, hi)`` lead somewhere, for the link-load statistics.

    None (every port counts) when the block's table would exceed :data:`LINK_TABLE_LIMIT`
    entries. Only the rank's block is computed, never the whole network's table.
    """
    if (hi - lo) * topo.degree > LINK_TABLE_LIMIT:
        return None
    out = np.empty((hi - lo, topo.degree), dtype=bool)
    chunk = 1 << 16  # bounds the int64 neighbour temporaries
    for a in range(lo, hi, chunk):
        b = min(a + chunk, hi)
        out[a - lo : b - lo] = topo.neighbors(np.arange(a, b, dtype=np.int64)) >= 0
    return out


def _peak_rss(comm: Any) -> dict:
    """Peak resident memory of the largest rank and of all ranks, MiB (Linux ru_maxrss)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "peak_rss_mib": round(comm.allreduce(rss, op=max_op()), 1),
        "peak_rss_mib_all_ranks": round(comm.allreduce(rss, op=sum_op()), 1),
    }


def _write(p: Plan, comm: Any, result: dict, attrs, tables, checks, reservation, meta=None) -> None:
    """Write the trace; on failure (on all ranks alike) keep the result and say why."""
    try:
        result["trace"] = trace.write_trace(
            p.trace_path,
            comm,
            attrs=attrs,
            tables=tables,
            checks=checks,
            force=p.force,
            reservation=reservation,
            meta=meta,
        )
    except TraceError as exc:
        result["trace"] = None
        result["trace_error"] = str(exc)


#: /hops columns of a collective trace whose meaning differs from a unicast trace's
COLLECTIVE_HOPS_META = {
    "hops": {
        "packet": (
            "message index",
            "the message copied: broadcast, its number 0..messages-1 (pipelined messages); "
            "mnb, the id of the node whose message it is",
        ),
        "from_node": ("node id", "node that sent the copy (and keeps the message)"),
        "to_node": (
            "node id",
            "node at the other end of the link (a copy lost on a failed link still counts)",
        ),
    }
}


def _execute_collective(
    p: Plan,
    comm: Any,
    started: str,
    t0: float,
    argv,
    reservation: Any = None,
    progress=None,
) -> dict:
    """A node program on the collective engine, and its trace.

    The trace names the program's algorithm as its ``router`` (the workload kind's
    ``router_name``; the job's ``[router]`` only steers a routed MNB), and at level
    ``hops`` has one ``/hops`` row per transmission, sorted by (message, step, from_node,
    port), ``packet`` being the message index (:data:`COLLECTIVE_HOPS_META`).
    """
    record = p.job.trace["level"] == "hops" and p.trace_path is not None
    res = execute_collective(
        p.topo,
        p.workload.program,
        p.model,
        comm,
        p.job.max_steps,
        faults=p.faults,
        record_hops=record,
        progress=progress,
    )
    per_step = res.pop("per_step")
    hops = res.pop("hops")
    router = getattr(p.workload, "router_name", None) or p.router.name
    result = {
        "job": p.job.as_dict(),
        "spec": p.topo.spec,
        "nodes": p.topo.num_nodes,
        "ranks": comm.Get_size(),
        "engine_seconds": res["seconds"],
        "stats": res,
        "router": router,
        "trace": None,
    }
    sections, checks = p.workload.summarize(res["steps"], None, comm)
    result.update(sections)
    res["checks"] += checks
    res["ok"] = res["ok"] and all(c["ok"] for c in checks)
    if p.trace_path is not None:
        rows = per_step if comm.Get_rank() == 0 else per_step[:0]
        tables = {"steps": {"step": np.arange(1, len(rows) + 1, dtype=np.int64)}}
        tables["steps"] |= {
            name: np.ascontiguousarray(rows[:, i])
            for i, name in enumerate(["transmissions", "informed", "duplicates"])
        }
        attrs = run_attrs(p, comm.Get_size(), res["steps"], started, argv)
        attrs["collective"] = res["collective"]
        attrs["router"] = router
        attrs.update(p.workload.trace_attrs(sections))
        meta = None
        if hops is not None:
            cols = ["step", "packet", "from_node", "to_node", "port"]
            tables["hops"] = {c: np.ascontiguousarray(hops[:, i]) for i, c in enumerate(cols)}
            meta = COLLECTIVE_HOPS_META
        _write(p, comm, result, attrs, tables, res["checks"], reservation, meta)
    result["seconds"] = round(time.perf_counter() - t0, 4)
    return result
