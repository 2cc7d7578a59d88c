"""What faults cost: a job against the same job without faults (``mpinet run --baseline``).

The baseline is the job with its ``[faults]`` emptied and no trace, on the
same ranks. Packets are compared one by one where both runs delivered them
(same ids, same sources and destinations: the traffic depends on the seed
only): extra hops and extra latency. Link loads are compared link by link:
the largest load of each port class in both runs, the largest rise of one
link, and the *load shift*, the share of the baseline's link traversals that
moved, ``sum |load_f - load_0| / (2 sum load_0)`` (0: the same links carried
the same traffic; it also counts the traversals the dropped packets no
longer make). Collectives compare steps and transmissions.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np

from mpinet.engine.comm import max_op, sum_op
from mpinet.jobs.run_plan import plan
from mpinet.jobs.spec import JobError
from mpinet.values import label_rows

_NO_FAULTS = {"links": [], "nodes": [], "random_links": 0.0, "random_nodes": 0.0, "step": 0}


def baseline_plan(p: Any, ranks: int, ranks_here: int | None = None) -> Any:
    """The plan of ``p``'s job without faults and without a trace.

    Raises
    ------
    JobError
        The job has no faults (there is nothing to compare).
    """
    if p.faults is None:
        raise JobError("--baseline compares a job with faults with the same job without; "
                       "this job has no [faults]")  # fmt: skip
    job = dataclasses.replace(
        p.job,
        faults=copy.deepcopy(_NO_FAULTS),
        trace={**p.job.trace, "level": "none", "path": None},
        given=frozenset(k for k in p.job.given if not k.startswith("faults.")),
    )
    return plan(job, ranks=ranks, ranks_here=ranks_here)


def compare(faulty: dict, intact: dict, comm: Any) -> dict:
    """The ``fault_cost`` section from two results run with ``keep_local=True``."""
    f, i = faulty["stats"], intact["stats"]
    if "collective" in f:
        return {
            "steps": [f["steps"], i["steps"]],
            "transmissions": [f["transmissions"], i["transmissions"]],
            "missing": [f["missing"], i["missing"]],
        }
    pf, pi = faulty["_local"]["packets"], intact["_local"]["packets"]
    both_f = pf[np.isin(pf[:, 0], pi[pi[:, 4] >= 0, 0]) & (pf[:, 4] >= 0)]
    both_i = pi[np.isin(pi[:, 0], both_f[:, 0])]
    n = comm.allreduce(int(both_f.shape[0]), op=sum_op())
    d_hops = comm.allreduce(int((both_f[:, 5] - both_i[:, 5]).sum()), op=sum_op())
    lat_f, lat_i = both_f[:, 4] - both_f[:, 3], both_i[:, 4] - both_i[:, 3]
    d_lat = comm.allreduce(int((lat_f - lat_i).sum()), op=sum_op())
    longer = comm.allreduce(int((both_f[:, 5] > both_i[:, 5]).sum()), op=sum_op())
    lf, li = faulty["_local"]["link_load"], intact["_local"]["link_load"]
    moved = comm.allreduce(int(np.abs(lf - li).sum()), op=sum_op())
    total = comm.allreduce(int(li.sum()), op=sum_op())
    rise = comm.allreduce(int((lf - li).max(initial=0)), op=max_op())
    return {
        "delivered": [f["delivered"], i["delivered"]],
        "dropped": f["dropped"],
        "compared_packets": n,
        "extra_hops_mean": d_hops / n if n else 0.0,
        "extra_latency_mean": d_lat / n if n else 0.0,
        "longer_routes": longer,
        "hops_mean": [f["hops"].get("mean"), i["hops"].get("mean")],
        "latency_mean": [f["latency"].get("mean"), i["latency"].get("mean")],
        "latency_p99": [f["latency"].get("p99"), i["latency"].get("p99")],
        "steps": [f["steps"], i["steps"]],
        "max_link_load": {
            cls: [f["link_load"][cls]["max"], i["link_load"][cls]["max"]] for cls in i["link_load"]
        },
        "largest_link_rise": rise,
        "load_shift": moved / (2 * total) if total else 0.0,
    }


def format_cost(c: dict) -> str:
    """The ``cost of faults`` block of the run summary."""
    if "compared_packets" not in c:
        rows = [
            ("steps", f"{c['steps'][0]:,} with faults, {c['steps'][1]:,} without"),
            ("transmissions", f"{c['transmissions'][0]:,} vs {c['transmissions'][1]:,}"),
        ]
    else:
        lat = c["latency_mean"]
        rows = [
            ("delivered", f"{c['delivered'][0]:,} with faults, {c['delivered'][1]:,} without"),
            (
                "extra hops",
                f"{c['extra_hops_mean']:+.3f} per packet delivered in both runs "
                f"({c['compared_packets']:,}; {c['longer_routes']:,} took longer routes)",
            ),
            ("extra latency", f"{c['extra_latency_mean']:+.3f} steps per packet"),
            (
                "latency",
                f"mean {_num(lat[0])} vs {_num(lat[1])}, p99 {_num(c['latency_p99'][0])} "
                f"vs {_num(c['latency_p99'][1])}",
            ),
            ("steps", f"{c['steps'][0]:,} vs {c['steps'][1]:,}"),
        ]
        for cls, (a, b) in c["max_link_load"].items():
            rows.append((f"max load {cls}", f"{a:,} vs {b:,} packets per link"))
        rows.append(
            (
                "load shift",
                f"{100 * c['load_shift']:.1f}% of link traversals moved; one link rose by "
                f"{c['largest_link_rise']:,}",
            )
        )
    out = ["cost of faults (this run vs the same job without faults):"]
    out += label_rows(rows, indent="  ")
    return "\n".join(out) + "\n"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"
