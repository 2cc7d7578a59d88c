"""``mpinet analyze``: summarise a trace file (or compare two) without MPI."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mpinet.cli import launch_rank, progress
from mpinet.values import Range, arg, json_text

HELP = """\
Summarise a trace written by `mpinet run --out TRACE.h5`, serially and without
MPI: what ran, latency, hops, exact distances and stretch, link load per port
class, the checks stored in the trace and cross-checks between its tables
(flit traces: flit-hops and packet-hops kept apart, the switching named).
Tables are read in blocks of --chunk-rows, so memory stays bounded; every
dataset's checksum is verified. A sweep file (mpinet sweep --out) prints its
table. Exit code 0: sound; 1: damaged data or a cross-check FAILED; 2: not a
trace or refused; 3: summary printed, a figure not written. What each check,
figure and memory figure means: docs/commands.md and docs/analysis.md.

examples:
  mpinet analyze run.h5
  mpinet analyze greedy.h5 --compare shortest.h5
  mpinet analyze run.h5 --plot plots/
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "analyze",
        help="summarise a trace file (latency, hops, stretch, link load), or compare two",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("trace", metavar="TRACE.h5", help="trace written by mpinet run --out")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument(
        "--compare", metavar="OTHER.h5", help="compare with another trace (delta = OTHER - TRACE)"
    )
    p.add_argument("--plot", metavar="DIR", help="write PNG and SVG plots into DIR (matplotlib)")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace existing figures in DIR (only figures mpinet drew; never other files)",
    )
    p.add_argument(
        "--chunk-rows",
        type=arg(Range(1, 1 << 24, integer=True)),
        default=None,
        metavar="ROWS",
        help="rows read per block (default 262144); bounds the memory used",
    )
    p.add_argument(
        "--no-stretch", action="store_true", help="skip stretch (no exact-distance tables)"
    )
    progress.add_arguments(p)
    p.set_defaults(func=run)


def _fail(message: str) -> int:
    if launch_rank() == 0:
        print(f"mpinet: error: {message}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    """Run ``mpinet analyze``: 0, or 1 for a damaged or inconsistent trace (one line).

    Raises :class:`~mpinet.errors.MpinetError` on bad input (exit 2).
    """
    from mpinet.cli import gc_resume
    from mpinet.errors import CorruptTraceError, MpinetError

    gc_resume()  # the console script's start-up pause ends (no MPI here: no get_comm)

    try:
        return _run(args)
    except CorruptTraceError as exc:
        return _fail(str(exc))
    except MpinetError:
        raise
    except MemoryError:  # beyond what the plan foresaw: the machine, not the trace
        from mpinet.errors import ResourceError

        raise ResourceError(
            f"cannot analyze {args.trace}: out of memory; way out: --no-stretch, a smaller "
            "--chunk-rows, fewer ranks on this machine, or a machine with more memory"
        ) from None
    except (ArithmeticError, LookupError, OSError, TypeError, ValueError) as exc:
        # damage the checks above did not foresee: still one line, never a traceback
        text = " ".join(str(exc).split())
        return _fail(f"cannot analyze {args.trace}: damaged data ({type(exc).__name__}: {text})")


def _run(args: argparse.Namespace) -> int:
    from mpinet.analysis import DEFAULT_CHUNK_ROWS
    from mpinet.errors import TraceError

    chunk = DEFAULT_CHUNK_ROWS if args.chunk_rows is None else args.chunk_rows
    if chunk < 1:
        raise TraceError(f"--chunk-rows must be >= 1, got {chunk}")
    stretch = not getattr(args, "no_stretch", False)
    from mpinet.analysis.sweep import is_sweep

    sweep = is_sweep(args.trace)
    figs = _reserve_figures(args, sweep) if args.plot is not None else None
    try:
        if sweep:  # a file of mpinet sweep: its table and curves
            return _sweep(args, figs)
        return _trace(args, chunk, stretch, figs)
    finally:
        if figs is not None:
            figs.discard()


def _reserve_figures(args: argparse.Namespace, sweep: bool) -> Any:
    """Every figure --plot may write, checked and locked before the (possibly long) reading."""
    from mpinet.analysis import plot
    from mpinet.outputs.figures import FigureSet, plan_figures

    plot.pyplot()  # matplotlib missing: refused now
    if sweep:
        from mpinet.analysis.sweep import figure_names, sweep_stem

        names = figure_names(sweep_stem(args.trace, "", ""))
    else:
        names = plot.figure_names([args.trace, *([args.compare] if args.compare else [])])
    return FigureSet(args.plot, plan_figures(args.plot, names, force=args.force),
                     force=args.force)  # fmt: skip


def _trace(args: argparse.Namespace, chunk: int, stretch: bool, figs: Any) -> int:
    from mpinet.analysis import compare, format_compare, format_summary, summarize
    from mpinet.errors import OutputError
    from mpinet.jobs.plans_io import plan_analyze

    # memory from the traces' attributes: stretch skipped, or the analysis refused, before
    # a row is read when it would not fit (histograms grow with the steps)
    stretch, skipped = plan_analyze([args.trace, args.compare], chunk, stretch)
    bar = progress.for_command(args, launch_rank())
    try:
        tell = bar.counter(f"analyze {os.path.basename(args.trace)}: rows read")
        a = summarize(args.trace, chunk_rows=chunk, stretch=stretch, progress=tell)
        b = None
        if args.compare:
            tell = bar.counter(f"analyze {os.path.basename(args.compare)}: rows read")
            b = summarize(args.compare, chunk_rows=chunk, stretch=stretch, progress=tell)
    finally:
        bar.close()
    for s in (a, b) if skipped else ():
        if s is not None and (s.get("stretch") or {}).get("skipped"):
            s["stretch"]["skipped"] = skipped  # the plan's reason, not --no-stretch
    plots: list[str] = []
    failed = None
    if figs is not None:
        from mpinet.analysis.plot import plot_compare, plot_summary  # matplotlib: only to draw

        try:
            plot_summary(a, figs, chunk_rows=chunk)
            if b is not None:
                plot_summary(b, figs, chunk_rows=chunk)
                if a["kind"] == b["kind"]:  # a unicast and a collective run share no figure
                    plot_compare([a, b], figs, chunk_rows=chunk)
        except OutputError as exc:  # a full disk: the summary is printed all the same
            failed = str(exc)
        plots = list(figs.written)
    if launch_rank() != 0:
        return 0
    if args.json:
        obj: dict[str, Any] = compare(a, b) if b is not None else dict(a)
        if b is not None:
            obj["summaries"] = [a, b]
        if plots:
            obj["plots"] = plots
        sys.stdout.write(json_text(obj) + "\n")
    else:
        sys.stdout.write(format_compare(compare(a, b)) if b is not None else format_summary(a))
        if plots:
            sys.stdout.write("plots:\n" + "".join(f"  {p}\n" for p in plots))
    sys.stdout.flush()
    if failed:
        print(f"mpinet: error: {failed}", file=sys.stderr)
        return OUTPUT_NOT_WRITTEN
    for s in (a, b):
        bad = [c for c in (s or {}).get("consistency", []) if not c["ok"]]
        if bad:
            c = bad[0]
            return _fail(
                f"trace {s['path']} failed {len(bad)} consistency check(s): {c['name']} "
                f"(expected {c['expected']}, measured {c['measured']})"
            )
    return 0


def _sweep(args: argparse.Namespace, figs: Any) -> int:
    """``mpinet analyze SWEEP.h5``: the sweep's table (or JSON) and, with --plot, its curves."""
    from mpinet.analysis.sweep import read_sweep, sweep_stem
    from mpinet.analysis.sweep_plot import plot_sweep
    from mpinet.cli.sweep import print_sweep
    from mpinet.errors import OutputError

    res = read_sweep(args.trace)
    plots, failed = [], None
    if figs is not None:
        try:
            plots = plot_sweep(res, figs, stem=sweep_stem(args.trace, "", ""))
        except OutputError as exc:
            failed, plots = str(exc), list(figs.written)
    if launch_rank() != 0:
        return 0
    res.pop("_hists")
    print_sweep(res, plots, args.json)
    if failed:
        print(f"mpinet: error: {failed}", file=sys.stderr)
        return OUTPUT_NOT_WRITTEN
    return 0


#: exit code of an analysis whose summary was printed but a figure could not be written
OUTPUT_NOT_WRITTEN = 3
