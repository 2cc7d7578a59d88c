"""Jobs whose workload runs on the collective engine (``WorkloadKind.engine ==
"collective"``: broadcast, mnb): run the node program and describe the result for
the CLI and the trace.

The program itself comes from the workload kind (:mod:`mpinet.workloads.kinds`).
"""

from __future__ import annotations

from typing import Any

from mpinet.engine.collective import run_collective
from mpinet.engine.models import Model
from mpinet.topology.base import Topology


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
