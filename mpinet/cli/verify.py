"""``mpinet verify``: run the catalogue of collectives and judge the measured steps."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mpinet.cli import agree, collective, get_comm, progress

HELP = """\
Run every collective of the catalogue on the engine (under whatever mpiexec
started it) and compare the measured steps with the paper's formula and the
exact lower bound for the model. Verdicts: equal, better-than-paper,
within-bound (no paper formula), paper-wrong (the paper's number is below the
exact lower bound), FAIL. Exit code 1 if any check fails.

examples:
  mpinet verify                 # the quick catalogue (under a minute)
  mpiexec -n 4 mpinet verify --full --json
  mpinet verify --only scc
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="run the collectives' catalogue and judge measured steps",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="the quick catalogue (default)")
    g.add_argument("--full", action="store_true", help="every check, larger networks")
    p.add_argument(
        "--only", metavar="TEXT", help="checks whose topology or collective contain TEXT"
    )
    p.add_argument(
        "--list", action="store_true", help="list the checks (with --full: all) without running"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per check")
    progress.add_arguments(p)
    p.set_defaults(func=run, compile_notice=lambda a: not a.list)  # --list: no numba


def run(args: argparse.Namespace) -> int:
    comm = get_comm()
    if args.list:  # names only: imports none of the checks' modules (no numba, no engine)
        from mpinet.cli.verify_list import ROWS

        listed = [(t, c, m) for t, c, m, quick in ROWS if args.full or quick]
        rows = agree(comm, lambda: _chosen(args, listed, lambda r: r))
        if comm.Get_rank() == 0:
            for topology, name, model in rows:
                print(f"{topology:<16} {name:<34} {model}")
        return 0

    from mpinet.engine.collective import run_collective
    from mpinet.engine.models import parse_model
    from mpinet.jobs import plans, resources
    from mpinet.values import json_text
    from mpinet.workloads.catalogue import all_checks
    from mpinet.workloads.checks import topology_of, verdict

    here = resources.ranks_on_this_machine(comm)  # collective: before anything can fail

    def plan():
        checks = [c for c in all_checks() if args.full or c.quick]
        checks = _chosen(args, checks, lambda c: (c.topology, c.collective))
        plans.plan_verify(checks, comm.Get_size(), here)  # every check's memory, first
        return checks

    checks = agree(comm, plan)
    rank0 = comm.Get_rank() == 0
    failed = 0
    if rank0 and not args.json:
        print(
            f"{'topology':<16} {'collective':<34} {'model':<9} {'measured':>8} {'paper':>6} "
            f"{'bound':>6}  verdict"
        )
    bar = progress.for_command(args, comm.Get_rank())
    for i, c in enumerate(checks, 1):
        topo = topology_of(c)
        what = f"verify: check {i} of {len(checks)} ({c.topology} {c.collective} {c.model})"
        bar(what)
        tell = _tell(bar, what)
        model = parse_model(c.model)

        def one(c=c, topo=topo, model=model, tell=tell):
            if c.run is not None:
                return c.run(topo, model, comm)
            return run_collective(topo, c.build(topo), model, comm, progress=tell)

        res = collective(comm, one)
        paper = c.paper_steps(topo) if c.paper_steps else None
        lower = c.lower_bound(topo)
        v = verdict(res.steps, res.complete, paper, lower)
        failed += v == "FAIL"
        row = {
            "topology": c.topology,
            "collective": c.collective,
            "model": c.model,
            "measured_steps": res.steps,
            "paper_steps": paper,
            "lower_bound": lower,
            "verdict": v,
            "ratio_to_bound": round(res.steps / lower, 4) if lower else None,
            "paper_source": c.paper_source,
            **{k: val for k, val in res.as_dict().items() if k != "steps"},
            **(c.report(topo, res) if c.report is not None else {}),
        }
        if rank0:
            bar.clear()  # the row goes to stdout, under the line on the terminal
            if args.json:
                print(json_text(row))
            else:
                ps = "-" if paper is None else str(paper)
                print(
                    f"{c.topology:<16} {c.collective:<34} {c.model:<9} {res.steps:>8} {ps:>6} "
                    f"{lower:>6}  {v}"
                )
            sys.stdout.flush()
    bar.close()
    if rank0 and not args.json:
        print(f"{len(checks)} checks, {failed} failed")
    return 1 if failed else 0


def _chosen(args: argparse.Namespace, items: list, names: Any) -> list:
    """The items ``--only`` keeps (``names(item)`` gives its topology and collective).

    Raises
    ------
    JobError
        ``--only`` matches none of them.
    """
    if not args.only:
        return items
    kept = [i for i in items if any(args.only in n for n in names(i)[:2])]
    if not kept:
        from mpinet.errors import JobError

        scope = "" if args.full else " of the quick catalogue (--full has more)"
        raise JobError(
            f"--only {args.only!r} matches no check{scope}; `mpinet verify --list "
            "--full` lists every topology and collective"
        )
    return kept


def _tell(bar: progress.Progress, what: str):
    """The collective engine's progress callback, shown after the check's name."""

    def update(step: int, sent: int, informed: int, to_inform: int) -> None:
        pct = 100.0 * informed / to_inform if to_inform else 100.0
        bar(lambda: f"{what}: step {step:,}, informed {pct:.1f}%")

    return update
