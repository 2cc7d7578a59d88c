"""``mpinet export``: write a network for other simulators (BookSim2, networkx, SST)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mpinet.cli import agree, get_comm

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

An output estimated above 2 GiB is refused before anything is written; an
existing file is never overwritten without --force. Runs on one process (rank 0
under mpiexec).

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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mpinet.errors import SpecError
    from mpinet.topology import export, from_spec

    comm = get_comm()

    def plan():
        topo = from_spec(args.spec)
        export.check_size(topo, args.format)
        if comm.Get_rank() == 0 and args.out is not None:
            _check_out(args.out, args.force)
        return topo

    topo = agree(comm, plan)
    if comm.Get_rank() != 0:
        return 0
    if args.out is None:
        export.write(topo, args.format, sys.stdout)
        sys.stdout.flush()
        return 0
    tmp = f"{args.out}.tmp-{os.getpid()}"
    try:  # a complete file or none: write aside, then rename
        with open(tmp, "w", encoding="utf-8") as fh:
            export.write(topo, args.format, fh)
        os.replace(tmp, args.out)
    except OSError as exc:  # a read-only filesystem, a full disk: one line, not a traceback
        raise SpecError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return 0


def _check_out(out: str, force: bool) -> None:
    """Refuse an ``--out`` that cannot become the file, before anything is written."""
    from mpinet.errors import SpecError

    if not out:
        raise SpecError("the export path is empty; give a file name, or no --out for stdout")
    if out.endswith(("/", os.sep)):
        raise SpecError(
            f"export path {out!r} ends in '/', so it names a directory; give a file name"
        )
    if os.path.isdir(out):
        raise SpecError(f"export path {out} is a directory; give a file name")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise SpecError(
            f"cannot write {out}: directory {folder} {what}; create it first or choose another path"
        )
    if not os.access(folder, os.W_OK):
        raise SpecError(f"cannot write {out}: directory {folder} is not writable")
    if os.path.lexists(out) and not force:
        raise SpecError(f"{out} exists; use --force to overwrite it")
