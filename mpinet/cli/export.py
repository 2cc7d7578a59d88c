"""``mpinet export``: write a network for other simulators (BookSim2, networkx, SST)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from mpinet.cli import agree, get_comm, progress, say_error

HELP = """\
Write a network in a format other tools read, streamed in chunks of nodes:

  anynet    BookSim2's anynet network file: one line per router,
            'router <id> node <id> router <nbr> 1 ...' (mpinet node v is router v
            with terminal v; every link latency 1). BookSim numbers ports itself,
            so port names are not carried.
  graphml   directed GraphML (networkx, SST): node attribute 'label', one edge per
            directed link with 'port', 'port_class' and 'port_index'.
  edgelist  one line per directed link: 'source target port port_class' (node ids),
            after '#' comment lines.

An output estimated above 2 GiB is refused before anything is written (the
message gives its lines and time), and so is one chunk's memory beyond the
machine; past 2 s a progress line counts the pieces written (--progress,
--quiet; not over the export itself on a terminal). --out
is checked before any work: an existing file is replaced only with --force and
only if it is an export of the same format (never the job file or another
file); two exports to one path at once: the second is refused at its start.
The file is written under a hidden temporary name and appears complete or not
at all. Runs on one process (rank 0 under mpiexec).

exit codes: 0 written, 2 bad input or --out refused (nothing written), 3 the
write failed (a full disk: one line, nothing left behind), 130 / 143
interrupted (temporary file removed).

examples:
  mpinet export star:5 --format anynet --out star5.anynet
  mpinet export scc:4 --format graphml --out scc4.graphml
  mpinet export fccn:2 --format edgelist | head
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write a network as BookSim2 anynet, GraphML or an edge list",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", metavar="SPEC", help="topology spec, e.g. star:5")
    p.add_argument(
        "--format", required=True, choices=("anynet", "graphml", "edgelist"), help="output format"
    )
    p.add_argument("--out", metavar="FILE", default=None, help="output file (default: stdout)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    progress.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mpinet.cli.rank0 import alone, wait_for_rank0
    from mpinet.errors import OutputError
    from mpinet.jobs import netcheck, plans_io
    from mpinet.jobs.resources import load_network, ranks_on_this_machine
    from mpinet.outputs import EXPORTS, check_target, reserve, write_file
    from mpinet.topology import export

    comm = get_comm()
    kind = EXPORTS[args.format]
    here = ranks_on_this_machine(comm)  # collective: before anything can fail

    def plan():
        topo = load_network(args.spec, here)
        # bytes (2 GiB at most), one chunk's memory on rank 0, the time (jobs/plans_io.py)
        est = plans_io.plan_export(topo, args.format, comm.Get_size(), here)
        if comm.Get_rank() == 0 and args.out is not None:
            check_target(args.out, kind, force=args.force)
        return topo, est

    topo, est = agree(comm, plan)
    netcheck.same_network(comm, topo)  # one file on every rank (its sha256), before any work
    if comm.Get_rank() != 0:
        wait_for_rank0(comm, plans_io.seconds(est), "the export on rank 0")
        return 0
    # not over the export itself on a terminal (stdout), unless asked for
    tty = args.out is None and sys.stdout.isatty() and not args.progress
    bar = progress.Progress() if tty else progress.for_command(args, 0)
    tell = bar.counter(f"export {topo.spec} as {args.format}: pieces written")
    try:  # rank 0 alone: a failure other than a refusal aborts the job, never hangs it
        if args.out is None:
            alone(comm, lambda: export.write(topo, args.format, sys.stdout, progress=tell))
            sys.stdout.flush()
            return 0
        res = reserve(args.out, kind, None, force=args.force)  # a rival export: refused now
        try:  # a complete file or none, published exclusively
            alone(comm, lambda: write_file(res, lambda fh: _write(topo, args.format, fh, tell)))
        except OutputError as exc:  # a full disk, a read-only file system: one line
            bar.close()
            say_error(str(exc))
            return OUTPUT_NOT_WRITTEN
    finally:
        bar.close()
    return 0


def _write(topo, fmt: str, fh, tell) -> None:
    from mpinet.topology import export
    from mpinet.values import env_number

    export.write(topo, fmt, fh, progress=tell)
    if delay := env_number("MPINET_TEST_EXPORT_DELAY", 0):
        time.sleep(delay)  # tests: a signal while the file is still a temporary


#: exit code of an export whose file could not be written (nothing is left behind)
OUTPUT_NOT_WRITTEN = 3
