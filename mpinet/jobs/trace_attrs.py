"""The root attributes ``mpinet run`` gives its traces (layout 1.2: :mod:`mpinet.trace`).

``p`` is a :class:`mpinet.jobs.run_plan.Plan`. A unicast trace says what its link loads and
transmissions count (``load_unit``) and, on the flit engine, its switching
(:mod:`mpinet.analysis.switching` reads them back); a file network's trace says which
file it ran on (sha256, absolute path, format).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from typing import Any


def run_attrs(p: Any, size: int, steps: int, started: str, argv: list[str] | None) -> dict:
    """The root attributes of every trace of ``mpinet run``: what ran, where, when."""
    job = p.job
    return {
        "topology": p.topo.spec,
        **network_attrs(p.topo),
        "nodes": p.topo.num_nodes,
        "degree": p.topo.degree,
        "ports": list(p.topo.ports),
        "port_classes": list(p.topo.port_classes),
        "model": p.model.name,
        "order": job.model["order"],
        "buffer": p.model.buffer,
        "buffer_classes": p.model.classes,
        "workload": job.workload["kind"],
        "router": p.router.name,
        "seed": job.seed,
        "mpi_size": size,
        "steps": int(steps),
        "trace_level": job.trace["level"],
        "command_line": " ".join(argv if argv is not None else sys.argv),
        "job": json.dumps(job.as_dict(), default=str),
        "start_time": started,
        "end_time": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def network_attrs(topo: Any) -> dict:
    """A file network's contents (sha256) and where it was read: the absolute path and the
    format, so that analyze finds it from any directory and never pairs the trace with
    another file (the spec keeps the path as given, often relative)."""
    info = getattr(topo, "file_info", None)
    if not info:
        return {}
    out = {"network_sha256": info["sha256"]}
    if info.get("path"):
        out["network_path"] = os.path.abspath(str(info["path"]))
        out["network_format"] = str(info.get("format") or "")
    return out


def unit_attrs(p: Any) -> dict:
    """What a unicast trace's loads and transmissions count and, on the flit engine, its
    switching (layout 1.2; :mod:`mpinet.analysis.switching` reads them)."""
    m = p.model
    if not m.flit:
        return {"load_unit": "packets"}
    # "order": the flit engine arbitrates oldest first whatever model.order says
    return {"load_unit": "flits", "switching": m.switching, "flits": int(m.flits),
            "vcs": int(m.vcs), "vc_buffer": int(m.vc_buffer), "vc_policy": str(m.vc_policy),
            "order": "oldest-first",
            "capacities": [int(c) for c in m.port_capacities(p.topo)]}  # fmt: skip
