#!/usr/bin/env python3
"""Print one Markdown table that compares networks from the files mpinet wrote.

Each FILE is a trace (``mpinet run --out TRACE.h5``) or a sweep file (``mpinet sweep
--out SWEEP.h5``). Files are grouped by their network spec: one column per network,
in the order first named, one row per figure (a run's latency, hops, link load and
cross-rank share; a sweep's zero-load latency, bound, saturation and throughput);
``-`` where a network has no file giving the figure. Read serially, without MPI, by
:func:`mpinet.analysis.summary.summarize` and :func:`mpinet.analysis.sweep.read_sweep`.

Usage::

    python scripts/network_table.py mine.h5 mine-sweep.h5 ms.h5 ms-sweep.h5 [--json] [--out FILE]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import reports  # noqa: E402

from mpinet.analysis.summary import summarize  # noqa: E402
from mpinet.analysis.sweep import is_sweep, read_sweep  # noqa: E402
from mpinet.errors import MpinetError  # noqa: E402

#: (row label, format), in the order the rows print
ROWS = [
    ("nodes", ",d"),
    ("run: workload", "s"),
    ("run: last delivery (step)", ",d"),
    ("run: latency mean (steps)", ".2f"),
    ("run: latency p99 (steps)", ",d"),
    ("run: hops mean", ".3f"),
    ("run: max link load (packets)", ",d"),
    ("run: cross-rank hops", ".1%"),
    ("sweep: zero-load latency (steps)", ".2f"),
    ("sweep: bound (packets/node/step)", ".4f"),
    ("sweep: saturation load", ".4f"),
    ("sweep: throughput", ".4f"),
    ("sweep: throughput / bound", ".1%"),
]


def run_figures(path: str) -> tuple[str, dict[str, Any]]:
    """The spec of a run trace and its figures (no stretch: no distance tables)."""
    s = summarize(path, stretch=False)
    a = s["attrs"]
    return s["spec"], {
        "nodes": int(a["nodes"]),
        "run: workload": f"{a['workload']}, {s['packets']['total']:,} packets",
        "run: last delivery (step)": s["last_delivery_step"],
        "run: latency mean (steps)": s["latency"]["mean"],
        "run: latency p99 (steps)": int(s["latency"]["p99"]),
        "run: hops mean": s["hops"]["mean"],
        "run: max link load (packets)": int(s["links"]["all"]["max"]),
        "run: cross-rank hops": s["cross_rank"]["fraction"],
    }


def sweep_figures(path: str) -> tuple[str, dict[str, Any]]:
    """The spec of a sweep file and its figures."""
    s = read_sweep(path)
    sat = s["saturation"]
    return s["spec"], {
        "nodes": int(s["nodes"]),
        "sweep: zero-load latency (steps)": s["zero_load_latency"],
        "sweep: bound (packets/node/step)": s["bound"]["ideal"],
        "sweep: saturation load": sat.get("load"),
        "sweep: throughput": sat.get("throughput"),
        "sweep: throughput / bound": sat.get("throughput_fraction_of_bound"),
    }


def cell(value: Any, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def figures(paths: list[str]) -> dict[str, dict[str, Any]]:
    """Each network's figures (by its spec, in the order first named) from the files."""
    columns: dict[str, dict[str, Any]] = {}
    for p in paths:
        spec, figs = sweep_figures(p) if is_sweep(p) else run_figures(p)
        columns.setdefault(spec, {}).update(figs)
    return columns


def table(paths: list[str]) -> str:
    """The Markdown table of the files' figures, one column per network."""
    columns = figures(paths)
    out = ["| | " + " | ".join(f"`{s}`" for s in columns) + " |"]
    out.append("|---" * (len(columns) + 1) + "|")
    for label, fmt in ROWS:
        if any(label in c for c in columns.values()):
            cells = [cell(c.get(label), fmt) for c in columns.values()]
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__, out_help="also write the table to FILE", json_rows=True)
    ap.add_argument("files", nargs="+", metavar="FILE", help="traces and sweep files (.h5)")
    args = ap.parse_args(argv)
    run = reports.Run(__file__, args, args.out)
    try:
        if args.json:  # one object per network: its spec and its figures
            for spec, figs in figures(args.files).items():
                run.emit(json.dumps({"spec": spec, **figs}))
        else:
            run.emit(table(args.files))
    except (MpinetError, OSError, KeyError) as exc:
        print(f"network_table: error: {exc}", file=sys.stderr)
        return 2
    run.save(args.out, argv or sys.argv[1:], args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
