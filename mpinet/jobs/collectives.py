"""Collective jobs (``workload.kind = "broadcast" | "mnb"``): build the node program,
run it on the collective engine, and describe the result for the CLI and the trace.

``te`` (total exchange) is unicast traffic with every ordered pair and runs on
the unicast engine like any other workload (see :mod:`mpinet.jobs.execute`).
"""

from __future__ import annotations

from typing import Any

from mpinet.engine.collective import run_collective
from mpinet.engine.models import Model
from mpinet.jobs.spec import Job, JobError
from mpinet.topology.base import Topology

COLLECTIVE_KINDS = ("broadcast", "mnb")
BROADCASTS = ("flooding", "tree", "scc-one-port", "scc-multi-port", "hypercube", "greedy", "ccc")


def build_program(job: Job, topo: Topology, model: Model) -> Any:
    """The node program of a collective job (validated)."""
    w = job.workload
    if w["kind"] == "mnb":
        return _mnb(job, topo, model)
    algo = w["algorithm"] or ("flooding" if model.kind == "all-port" else "tree")
    if algo not in BROADCASTS:
        raise JobError(f"workload.algorithm must be one of {', '.join(BROADCASTS)}; got {algo!r}")
    source = topo.identity if w["source"] is None else topo.parse_label(str(w["source"]))
    msgs = int(w["messages"])
    if msgs < 1:
        raise JobError(f"workload.messages must be >= 1, got {msgs}")
    if algo in ("flooding", "tree") and msgs != 1:
        raise JobError(f"workload.algorithm {algo!r} broadcasts one message (messages = 1)")
    from mpinet.workloads import baseline_broadcast as bb
    from mpinet.workloads import scc_broadcast as sb
    from mpinet.workloads.broadcast import FloodingBroadcast, TreeBroadcast

    family_of = {
        "scc-one-port": "scc",
        "scc-multi-port": "scc",
        "hypercube": "hypercube",
        "ccc": "ccc",
    }
    need = family_of.get(algo)
    if need and topo.family != need:
        raise JobError(f"workload.algorithm {algo!r} needs a {need} topology, not {topo.spec}")
    if algo == "flooding":
        return FloodingBroadcast(topo, source)
    if algo == "tree":
        return TreeBroadcast(topo, source)
    if algo == "scc-one-port":
        return sb.SCCOnePortBroadcast(topo, source, msgs, w["interval"])
    if algo == "scc-multi-port":
        return sb.SCCMultiPortBroadcast(topo, source, msgs, w["interval"])
    cls = {
        "hypercube": bb.HypercubeBroadcast,
        "greedy": bb.GreedyOnePortBroadcast,
        "ccc": bb.CCCBroadcast,
    }[algo]
    return cls(topo, source, msgs)


def _mnb(job: Job, topo: Topology, model: Model) -> Any:
    """``tree`` (star, ms: translated spanning trees) or ``routed`` (any topology)."""
    from mpinet.routing import make_router
    from mpinet.workloads.mnb_routed import RoutedMNB
    from mpinet.workloads.mnb_te import TreeMNB

    algo = job.workload["algorithm"] or ("tree" if topo.family in ("star", "ms") else "routed")
    if algo == "tree":
        if model.kind not in ("sdc", "one-port", "all-port"):
            raise JobError(
                f"mnb algorithm 'tree' runs under sdc, one-port or all-port, not {model.name}"
            )
        return TreeMNB(topo, model.kind)
    if algo != "routed":
        raise JobError(f"workload.algorithm for mnb must be tree or routed, got {algo!r}")
    opts = {k: v for k, v in job.router.items() if k != "name" and v is not None}
    if job.router["name"] != "shortest":
        opts.pop("tie", None)
    return RoutedMNB(topo, make_router(job.router["name"], topo, **opts), model)


def execute_collective(
    topo: Topology, program: Any, model: Model, comm: Any, max_steps: int
) -> dict:
    """Run the program; the global result as plain data (identical on every rank)."""
    res = run_collective(topo, program, model, comm, max_steps=max_steps)
    checks = [
        {
            "name": "every node holds every message it should",
            "expected": 0,
            "measured": res.missing,
            "ok": res.complete,
            "detail": "" if res.complete else f"{res.missing} (node, message) pairs missing",
        },
        {
            "name": "model held at every step",
            "expected": "yes",
            "measured": "yes",
            "ok": True,
            "detail": "checked at every step",
        },
    ]
    return {
        "collective": program.name,
        "messages": int(program.messages),
        **res.as_dict(),
        "per_step": res.per_step,
        "checks": checks,
        "ok": res.complete,
    }
