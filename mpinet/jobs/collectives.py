"""Jobs whose workload runs on the collective engine (``WorkloadKind.engine ==
"collective"``: broadcast, mnb): run the node program and describe the result for
the CLI and the trace.

The program itself comes from the workload kind (:mod:`mpinet.workloads.kinds`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mpinet.engine.collective import run_collective
from mpinet.engine.exchange import exchange_rows
from mpinet.engine.models import Model
from mpinet.engine.partition import block_bounds
from mpinet.topology.base import Topology


def execute_collective(
    topo: Topology,
    program: Any,
    model: Model,
    comm: Any,
    max_steps: int,
    faults: Any = None,
    *,
    record_hops: bool = False,
    progress: Callable[[int, int, int, int], None] | None = None,
) -> dict:
    """Run the program; the global result as plain data (identical on every rank).

    With ``faults`` the copies sent over failed links are lost; the surviving
    nodes left without a message are reported (``faults.unreached``), and the
    completeness check then states them instead of failing: missing what a
    fault cut off is the faults' cost, not an error of the emulation.

    ``record_hops``: the result's ``hops`` holds this rank's share of one row per
    transmission (:func:`gather_hops`); ``progress``: see
    :func:`~mpinet.engine.collective.run_collective`.
    """
    res = run_collective(
        topo,
        program,
        model,
        comm,
        max_steps=max_steps,
        faults=faults,
        record_hops=record_hops,
        progress=progress,
    )
    complete = {
        "name": "every node holds every message it should",
        "expected": 0,
        "measured": res.missing,
        "ok": res.complete,
        "detail": "" if res.complete else f"{res.missing} (node, message) pairs missing",
    }
    if faults is not None:
        f = res.faults
        complete["name"] = "every surviving node holds every message it should, or is reported"
        complete["ok"] = True
        complete["detail"] = (
            f"{f['unreached']:,} surviving node(s) not reached "
            f"(e.g. {', '.join(f['unreached_nodes'][:3])}); {f['lost']:,} copies lost on failed "
            "links"
            if f["unreached"]
            else f"all reached; {f['lost']:,} copies lost on failed links"
        )
        # the steps run: faults whose step the collective never reached did not apply
        res.faults.update(faults.describe(steps=len(res.per_step)))
    checks = [
        complete,
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
        "hops": gather_hops(res.hops, int(program.messages), comm) if record_hops else None,
        "checks": checks,
        "ok": complete["ok"],
    }


def gather_hops(rows: np.ndarray, messages: int, comm: Any) -> np.ndarray:
    """Transmission rows moved to the owner of their message (a block of message indices),
    sorted by (message, step, from_node, port): the same file for any number of ranks."""
    size = comm.Get_size()
    if size > 1:
        bounds = block_bounds(max(messages, 1), size)
        rows = exchange_rows(comm, rows, np.searchsorted(bounds, rows[:, 1], side="right") - 1)
    return rows[np.lexsort((rows[:, 4], rows[:, 2], rows[:, 0], rows[:, 1]))]
