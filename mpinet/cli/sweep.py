"""``mpinet sweep``: latency and accepted throughput of a job against the offered load."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mpinet.cli import agree, collective, get_comm
from mpinet.cli.switching_options import add_switching, job_sets
from mpinet.jobs.spec import key_arg
from mpinet.values import Range, arg

#: the values of the sweep's flags: integers (their bounds and the work they imply are
#: checked with the plan, jobs.sweep_settings.Settings), the saturation test's finite numbers
_INT = Range(integer=True)
_TOL = Range(0, 1, open_lo=True, open_hi=True)
_FACTOR = Range(1, 1e12, open_lo=True)

HELP = """\
Run a unicast job at a series of offered loads (packets per node per step,
Bernoulli or the job's on_off bursts) and report per load the accepted rate and
latency after W warm-up steps, the saturation load and the channel-load bound.
Exit 0: every load passed the engine's checks; 1: a check failed; 2: refused;
3: file not written. Criteria, bound, flits: docs/sweeps.md.

examples:
  mpiexec -n 2 mpinet sweep --topology ms:3,2 --rates 0.01:0.5:auto --out s.h5
  mpinet sweep jobs/sweep/ring.toml --rates 0.1,0.3,0.5 --measure 1000 --json
  mpinet sweep --topology hypercube:6 --switching wormhole --flits 16 --vcs 2
"""

FLAG_KEYS = {
    "topology": "topology",
    "workload": "workload.kind",
    "router": "router.name",
    "model": "model.kind",
    "buffer": "model.buffer",
    "buffer_classes": "model.buffer_classes",
    "seed": "seed",
}


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "sweep",
        usage="%(prog)s [-h] [JOB.toml] [options]",
        help="latency and accepted throughput against offered load; saturation vs the bound",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("job", nargs="?", metavar="JOB.toml", help="unicast job (or --topology)")
    p.add_argument(
        "--rates",
        default="auto",
        help="auto, a:b:auto, a:b:n or r1,r2,... (auto)",
    )
    p.add_argument(
        "--warmup", type=arg(_INT), default=1000, metavar="W", help="warm-up steps (1000)"
    )
    p.add_argument(
        "--measure", type=arg(_INT), default=2000, metavar="M", help="window steps (2000)"
    )
    p.add_argument(
        "--drain",
        type=arg(_INT),
        default=1000,
        metavar="D",
        help="cap on steps after the window (1000)",
    )
    p.add_argument("--tail", type=arg(_INT), metavar="E", help="injection steps after the window")
    p.add_argument("--accept-tol", type=arg(_TOL), default=0.05, dest="accept_tol", metavar="T",
                   help="saturated when accepted < (1 - T) x injected (0.05)")  # fmt: skip
    p.add_argument("--latency-factor", type=arg(_FACTOR), default=3.0, dest="latency_factor",
                   metavar="F", help="saturated when latency > F x zero-load (3)")  # fmt: skip
    p.add_argument("--coarse", type=arg(_INT), default=6, help="auto: grid loads (6)")
    p.add_argument("--bisect", type=arg(_INT), default=6, help="auto: bisection steps (6)")
    p.add_argument("--out", metavar="PATH", help="write the sweep as one HDF5 file")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the --out file and --plot figures mpinet wrote",
    )
    p.add_argument("--plot", metavar="DIR", help="draw the curves into DIR (matplotlib)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true", help="no line per load on stderr")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="set a job key, e.g. model.buffer=4 (repeatable)")  # fmt: skip
    g = p.add_argument_group("job keys as flags")
    g.add_argument("--topology", metavar="SPEC")
    g.add_argument("--workload", metavar="PATTERN", help="uniform | permutation | hotspot | ...")
    g.add_argument("--router", metavar="NAME")
    g.add_argument("--model", metavar="MODEL", help="all-port | one-port | k-port:K | sdc")
    g.add_argument(
        "--buffer",
        type=key_arg("model.buffer"),
        metavar="B",
        help="slots per input port (0 = unbounded)",
    )
    g.add_argument("--buffer-classes", dest="buffer_classes", metavar="HOW", help="none | hops")
    g.add_argument("--seed", type=key_arg("seed"))
    add_switching(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mpinet.analysis.sweep import sweep_stem
    from mpinet.jobs import load_job
    from mpinet.jobs.netcheck import same_network
    from mpinet.jobs.run_plan import plan
    from mpinet.jobs.sweep import check_plan, sweep
    from mpinet.jobs.sweep_settings import Settings, parse_rates
    from mpinet.outputs import check_target, reserve
    from mpinet.outputs.hdf5 import SWEEP

    comm = get_comm()
    rank0 = comm.Get_rank() == 0
    from mpinet.jobs.resources import ranks_on_this_machine

    here = ranks_on_this_machine(comm)  # collective: before anything can fail
    protect = [(args.job, "the job file")] if args.job else []

    def make():
        sets = job_sets(args, FLAG_KEYS)
        sets.append((["trace", "level"], "none"))
        p = plan(load_job(args.job, sets))
        check_plan(p)
        s = Settings(args.warmup, args.measure, args.drain, args.tail, args.accept_tol,
                     args.latency_factor, args.coarse, args.bisect)  # fmt: skip
        s.check()
        # loads, steps, work and the largest load's memory, before the sweep (jobs/sweep_plan.py)
        check_plan(p, parse_rates(args.rates), s, comm.Get_size(), here)
        if args.out is not None:  # every output refused now, not after the sweep
            check_target(args.out, SWEEP, force=args.force, protect=protect)
        stem = sweep_stem(args.out, p.topo.spec, p.router.name)
        figures = _plan_figures(args, stem) if args.plot is not None and rank0 else []
        return p, parse_rates(args.rates), s, (stem, figures)

    p, rates, settings, (stem, figures) = agree(comm, make)
    same_network(comm, p.topo)  # one file on every rank (its sha256), before any work
    out = None
    if args.out is not None:  # the writer lock and the temporary file, now
        out = agree(comm, lambda: reserve(args.out, SWEEP, comm, force=args.force,
                                          protect=protect))  # fmt: skip
    figs = _reserve_figures(args, figures) if rank0 and args.plot is not None else None
    loud = rank0 and not args.quiet

    def show(pt: dict) -> None:
        if loud:
            sys.stderr.write(f"[sweep] {point_line(pt)}\n")
            sys.stderr.flush()

    from mpinet.engine.compile_clock import CompileClock

    try:
        with CompileClock() as clock:  # numba's compilation on this rank (cache misses)
            res = collective(comm, lambda: sweep(p, rates, settings, comm, on_point=show))
        if rank0 and not args.json and clock.seconds >= 0.5:  # in the first loads' seconds
            sys.stderr.write(
                f"[mpinet] {clock.seconds:.1f} s of this sweep compiled the engine's kernels "
                "(cached now; `mpinet warmup` compiles them ahead)\n"
            )
        res["command_line"] = " ".join(["mpinet", *sys.argv[1:]])
        res["out"] = None
        errors = []
        if out is not None:
            from mpinet.errors import OutputError
            from mpinet.jobs.sweep_file import write_sweep

            try:
                res["out"] = write_sweep(out.path, res, comm, reservation=out)
            except OutputError as exc:  # the table is printed all the same: exit 3
                errors.append(str(exc))
                res["out_error"] = str(exc)
        plots = _draw(res, figs, stem, errors) if figs is not None else []
    finally:
        for r in (out, figs):
            if r is not None:
                r.discard()
    res.pop("_hists", None)
    if rank0:
        print_sweep(res, plots, args.json)
        for e in errors:
            print(f"mpinet: error: {e}", file=sys.stderr)
    if errors:
        return OUTPUT_NOT_WRITTEN
    return 0 if all(pt["checks_ok"] for pt in res["points"]) else 1


#: exit code of a command whose results were printed but an output could not be written
OUTPUT_NOT_WRITTEN = 3


def _plan_figures(args: argparse.Namespace, stem: str) -> list[str]:
    from mpinet.analysis.plot import pyplot
    from mpinet.analysis.sweep import figure_names
    from mpinet.outputs.figures import plan_figures

    pyplot()  # matplotlib missing: refused now
    return plan_figures(args.plot, figure_names(stem), force=args.force)


def _reserve_figures(args: argparse.Namespace, paths: list[str]) -> Any:
    from mpinet.outputs.figures import FigureSet

    return FigureSet(args.plot, paths, force=args.force)


def _draw(res: dict, figs: Any, stem: str, errors: list[str]) -> list[str]:
    """Rank 0: the two curves; a failed write is reported, the table still printed."""
    from mpinet.analysis.sweep_plot import plot_sweep
    from mpinet.errors import OutputError

    try:
        return plot_sweep(res, figs, stem=stem)
    except OutputError as exc:
        errors.append(str(exc))
        return list(figs.written)


def print_sweep(res: dict, plots: list[str], as_json: bool) -> None:
    """A sweep's result on stdout (rank 0): its table and figures, or one JSON object."""
    if as_json:
        from mpinet.values import json_text

        sys.stdout.write(json_text(res | {"plots": plots}) + "\n")
    else:
        from mpinet.analysis.sweep import format_sweep

        sys.stdout.write(format_sweep(res))
        if plots:
            sys.stdout.write("plots:\n" + "".join(f"  {x}\n" for x in plots))
    sys.stdout.flush()


def point_line(pt: dict) -> str:
    """One progress line per load."""
    verdict = "stable" if pt["stable"] else "saturated (" + ", ".join(pt["saturated_by"]) + ")"
    if pt.get("deadlocked"):  # unstable, not saturated: the auto search bisects below it
        verdict = f"DEADLOCKED in step {pt['deadlock_step']:,}"
    return (
        f"load {pt['offered']:.4f}: accepted {pt['accepted']:.4f}, latency "
        f"{pt['latency']['mean']:.2f}, {verdict}; {pt['seconds']:.1f} s "
        f"({pt['cpu_seconds']:.1f} s CPU)"
    )
