"""``mpinet run``: run a job (TOML file and/or flags) on the engine."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mpinet.cli import agree, collective, get_comm, progress
from mpinet.cli.run_text import format_collective, format_result
from mpinet.cli.switching_options import add_switching, job_sets

__all__ = ["add_parser", "format_collective", "format_result", "run"]

HELP = """\
Run unicast traffic hop by hop on a network spread over the MPI ranks (same
results for any number) and report latency, hops, stretch, link load and the
end-of-run checks. The job is a TOML file (jobs/), flags, or both: flags and
--set override the file. Exit code 0: checks passed; 1: a check failed; 2:
refused; 3: trace not written. More in docs/commands.md.

examples:
  mpiexec -n 2 mpinet run jobs/paper000-scc-routing/hotspot-one-port.toml
  mpinet run --topology hypercube:6 --router hypercube-ecube --switching \\
      wormhole --flits 8 --vcs 2
"""

#: exit code of a run whose results were printed but whose trace could not be written
TRACE_NOT_WRITTEN = 3

FLAG_KEYS = {
    "topology": "topology",
    "workload": "workload.kind",
    "packets": "workload.packets",
    "injection": "workload.injection",
    "rate": "workload.rate",
    "steps": "workload.steps",
    "router": "router.name",
    "model": "model.kind",
    "order": "model.order",
    "buffer": "model.buffer",
    "buffer_classes": "model.buffer_classes",
    "seed": "seed",
    "max_steps": "max_steps",
    "trace_level": "trace.level",
}


def add_parser(sub: Any) -> None:
    from mpinet.jobs.spec import key_arg
    from mpinet.values import TIMEOUT, arg

    p = sub.add_parser(
        "run",
        usage="%(prog)s [-h] [JOB.toml] [options]",
        help="run a job: packets hop by hop on the engine",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("job", nargs="?", metavar="JOB.toml", help="job file (optional with --topology)")
    p.add_argument("--out", metavar="PATH", help="write the HDF5 trace here (overrides trace.path)")
    p.add_argument("--force", action="store_true", help="replace an existing trace file")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a job key, e.g. workload.packets=8 (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    progress.add_arguments(p)
    p.add_argument(
        "--baseline",
        action="store_true",
        help="with [faults]: also run without them; report the cost",
    )
    p.add_argument(
        "--timeout",
        type=arg(TIMEOUT),
        default=None,
        metavar="S",
        help="abort if a rank waits S s in one MPI call (900)",
    )
    g = p.add_argument_group("job keys as flags")
    g.add_argument("--topology", metavar="SPEC", help="e.g. scc:6, ms:3,2, fccn:3")
    g.add_argument("--workload", metavar="KIND", help="uniform | permutation | hotspot | ...")
    g.add_argument(
        "--packets", type=key_arg("workload.packets"), metavar="P", help="packets per node"
    )
    g.add_argument("--injection", metavar="HOW", help="once | bernoulli | on_off")
    g.add_argument(
        "--rate",
        type=key_arg("workload.rate"),
        metavar="R",
        help="bernoulli, on_off: packets per node per step",
    )
    g.add_argument(
        "--steps", type=key_arg("workload.steps"), metavar="S", help="bernoulli injection steps"
    )
    g.add_argument("--router", metavar="NAME", help="e.g. shortest, hypercube-ecube")
    g.add_argument("--model", metavar="MODEL", help="all-port | one-port | k-port:K | sdc")
    g.add_argument("--order", metavar="ORDER", help="fifo | oldest-first")
    g.add_argument(
        "--buffer",
        type=key_arg("model.buffer"),
        metavar="B",
        help="slots per input port (0 = unbounded, the default)",
    )
    g.add_argument(
        "--buffer-classes",
        dest="buffer_classes",
        metavar="HOW",
        help="none | hops (a class per hop taken: deadlock-free)",
    )
    g.add_argument("--seed", type=key_arg("seed"), help="key of every random draw (default 0)")
    g.add_argument(
        "--max-steps",
        type=key_arg("max_steps"),
        dest="max_steps",
        metavar="N",
        help="stop after N steps, report stuck packets (100000)",
    )
    g.add_argument("--trace-level", dest="trace_level", metavar="LEVEL", help="none|summary|hops")
    add_switching(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mpinet.jobs import load_job
    from mpinet.jobs.execute import execute, plan, reserve_trace
    from mpinet.jobs.netcheck import same_network
    from mpinet.jobs.resources import ranks_on_this_machine

    comm = get_comm(args.timeout)
    here = ranks_on_this_machine(comm)  # collective: before anything can fail

    def make_plan():
        job = load_job(args.job, job_sets(args, FLAG_KEYS))
        return plan(job, out=args.out, force=args.force, ranks=comm.Get_size(), ranks_here=here)

    p = agree(comm, make_plan)
    same_network(comm, p.topo)  # one file on every rank (its sha256), before any work
    res = agree(comm, lambda: reserve_trace(p, comm))  # the trace's temporary file, now
    rank0 = comm.Get_rank() == 0
    bar = progress.for_command(args, comm.Get_rank())
    argv = ["mpinet", *sys.argv[1:]]
    from mpinet.engine.compile_clock import CompileClock

    try:
        with CompileClock() as clock:  # numba's compilation (cache misses), this rank's
            result = collective(
                comm,
                lambda: execute(
                    p,
                    comm,
                    # off: no callback, so the compiled steps run long calls (no Python a step)
                    progress=bar.engine if bar.enabled else None,
                    collective_progress=bar.collective if bar.enabled else None,
                    argv=argv,
                    reservation=res,
                    keep_local=args.baseline,
                ),
            )
        # compiled while the engine's timer ran (its rate is computed without it)
        result["compile_seconds"] = round(clock.in_engine, 4)
        # loaded from numba's cache while it ran: engine time, named apart (docs/performance.md)
        result["load_seconds"] = round(clock.loads_in_engine, 4)
    finally:
        bar.close()  # the line off the terminal before any result or error
        if res is not None:  # whatever happened, no temporary file stays
            res.discard(final_parts=rank0)
    if args.baseline:
        result["fault_cost"] = _baseline(p, result, comm, here)
    if rank0:
        if args.json:
            from mpinet.values import json_text

            sys.stdout.write(json_text(result) + "\n")  # strict: NaN and inf as null
        else:
            sys.stdout.write(format_result(result))
            if "fault_cost" in result:
                from mpinet.jobs.fault_cost import format_cost

                sys.stdout.write(format_cost(result["fault_cost"]))
        sys.stdout.flush()
    if result.get("trace_error"):  # the results above are all there is: say so, exit 3
        if rank0:
            print(f"mpinet: error: trace not written: {result['trace_error']}", file=sys.stderr)
        return TRACE_NOT_WRITTEN
    return 0 if result["stats"]["ok"] else 1


def _baseline(p: Any, result: dict, comm: Any, here: int) -> dict:
    """Run the job without faults (no trace) and compare (:mod:`mpinet.jobs.fault_cost`)."""
    from mpinet.jobs import fault_cost
    from mpinet.jobs.execute import execute

    p0 = agree(comm, lambda: fault_cost.baseline_plan(p, comm.Get_size(), here))
    base = collective(comm, lambda: execute(p0, comm, keep_local=True))
    cost = fault_cost.compare(result, base, comm)
    result.pop("_local", None)
    return cost
