"""``mpinet info``: exact metrics of a network by BFS, beside the papers' formulas."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mpinet.cli import agree, collective, get_comm, progress, seed_arg
from mpinet.values import label_rows

HELP = """\
Compute a network's exact metrics by breadth-first search: nodes, degree,
diameter, average distance (with and without the source at distance 0) and
the distance histogram, each beside the papers' closed form where one exists,
every disagreement flagged (docs/errata.md). The work is split over the MPI
ranks; the answer is the same for any number. Sampled sources (--sources),
disconnected files and faults: docs/commands.md.

examples:
  mpinet info scc:5
  mpiexec -n 4 mpinet info ms:3,3 --json
  mpinet info fccn:3 --histogram
  mpinet info ms:2,2 --faults 'random_links=0.05,seed=3'
  mpinet info file:jobs/networks/cubic40.edges
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "info",
        help="exact metrics of a network (BFS) beside the papers' formulas",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "spec", metavar="SPEC", help="topology spec, e.g. scc:6, ms:3,2, fccn:3, file:net.graphml"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument(
        "--source",
        metavar="LABEL",
        help="BFS from this node only (paper notation, e.g. '<3, 34125>', or '#ID')",
    )
    p.add_argument("--histogram", action="store_true", help="also print the distance histogram")
    p.add_argument(
        "--sources",
        metavar="K",
        type=_sources_k,
        help="BFS from K sampled sources (networks that are not vertex-transitive and too "
        "large for all sources): an ESTIMATE, labelled as one",
    )
    p.add_argument(
        "--seed", type=seed_arg, default=0, help="seed of the --sources sample (default 0)"
    )
    p.add_argument(
        "--allow-disconnected",
        action="store_true",
        help="read a file network of several components (reported; distances within them)",
    )
    progress.add_arguments(p)
    from mpinet.cli.info_faults import FAULTS_HELP

    p.add_argument("--faults", metavar="KEY=VALUE,...", help=FAULTS_HELP)
    p.add_argument("--faults-file", metavar="JOB", help="take the faults from a job's [faults]")
    p.add_argument(
        "--fault-diameter",
        metavar="K",
        type=_fault_k,
        help="exact fault diameter for 1..K failed nodes and links (K <= 2)",
    )
    p.set_defaults(func=run)


def _sources_k(text: str) -> int:
    """``--sources K``: a positive integer."""
    from mpinet.values import Range, arg

    return arg(Range(1, None, integer=True), "K")(text)


def _fault_k(text: str) -> int:
    """``--fault-diameter K``: an integer in [1, MAX_K] (``engine.fault_info``)."""
    from mpinet.engine.fault_info import MAX_K
    from mpinet.values import Range, arg

    return arg(Range(1, MAX_K, integer=True), "K")(text)


def run(args: argparse.Namespace) -> int:
    from mpinet.engine.info import network_info, plan_info

    comm = get_comm()

    from mpinet.jobs import machine, netcheck

    here = machine.ranks_on_this_machine(comm)  # collective: before anything can fail

    def plan() -> tuple:
        from mpinet.jobs.plans_info import plan_info as plan_memory

        topo = machine.load_network(args.spec, here, args.allow_disconnected)
        src = None if args.source is None else topo.parse_label(args.source)
        # memory (MemAvailable or MPINET_MEMORY_LIMIT) and a lower bound of the work first:
        # refused in seconds, before the orbits or any table exist
        plan_memory(topo, comm.Get_size(), src, here, args.sources)
        plan_info(topo, comm.Get_size(), src, here, args.sources)
        return topo, src, _plan_faults(args, topo, comm.Get_size(), here)

    topo, src, faults = agree(comm, plan)
    netcheck.same_network(comm, topo)  # one file on every rank (its sha256), before any work
    bar = progress.for_command(args, comm.Get_rank())
    try:
        tell = bar.counter(f"info {topo.spec}: BFS")
        info = collective(
            comm,
            _memory_guard(
                lambda: network_info(topo, src, comm, tell, sources=args.sources, seed=args.seed),
                f"info {topo.spec}",
            ),
        )
        extra = collective(
            comm,
            _memory_guard(
                lambda: _fault_metrics(args, topo, faults, info, comm), f"info {topo.spec} (faults)"
            ),  # fmt: skip
        )
    finally:
        bar.close()
    info.update(extra)
    if comm.Get_rank() == 0:
        if args.json:
            from mpinet.values import json_text

            sys.stdout.write(json_text(info) + "\n")
        else:
            sys.stdout.write(format_info(info, args.histogram))
            sys.stdout.write(_format_faults(info))
        sys.stdout.flush()
    return 0


def _memory_guard(fn: Any, what: str) -> Any:
    """``fn`` with a MemoryError the plan did not foresee turned into one line (exit 2 on
    one rank; on more, the failing rank's line and the job aborted, never a traceback)."""
    from mpinet.jobs.machine import out_of_memory

    def guarded() -> Any:
        try:
            return fn()
        except MemoryError:
            raise out_of_memory(what) from None

    return guarded


def _plan_faults(args: argparse.Namespace, topo: Any, size: int, here: int) -> Any:
    """The FaultSet of --faults / --faults-file (or None); refuse work that cannot fit."""
    from mpinet.cli import info_faults
    from mpinet.engine import fault_info
    from mpinet.errors import JobError

    if args.faults and args.faults_file:
        raise JobError("give --faults or --faults-file, not both")
    if args.fault_diameter is not None:
        fault_info.plan_fault_diameter(topo, args.fault_diameter)
    if not (args.faults or args.faults_file):
        return None
    opts = (
        info_faults.parse_faults(args.faults)
        if args.faults
        else info_faults.faults_from_file(args.faults_file)
    )
    fault_info.plan_surviving(topo, size, here)
    return info_faults.make(topo, opts)


def _fault_metrics(args: argparse.Namespace, topo: Any, faults: Any, info: dict, comm: Any):
    """``surviving`` and ``fault_diameter`` entries of the result, where asked for."""
    from mpinet.engine import fault_info

    out: dict = {}
    if faults is not None:
        out["surviving"] = fault_info.surviving_info(topo, faults, comm)
    if args.fault_diameter is not None:
        out["fault_diameter"] = [
            fault_info.fault_diameter(topo, k, kind, comm)
            for k in range(1, args.fault_diameter + 1)
            for kind in fault_info.KINDS
        ]
    return out


def _format_faults(info: dict) -> str:
    from mpinet.cli import info_faults

    out = ""
    if "surviving" in info:
        out += info_faults.format_surviving(info["surviving"])
    if "fault_diameter" in info:
        d = info["diameter"] if info["diameter"] is not None else info["eccentricity"]
        out += info_faults.format_fault_diameters(info["fault_diameter"], d)
    return out


def _theory_lines(info: dict) -> list[str]:
    lines = []
    for c in info["theory"]:
        conv = {"incl": " (incl. source)", "excl": " (excl. source)"}.get(c["convention"], "")
        kind = "upper bound" if c["kind"] == "upper_bound" else "claims"
        verdict = "agrees" if c["agrees"] else "DISAGREES (docs/errata.md)"
        val = c["value"]
        sval = (
            f"{val:.4f}" if isinstance(val, float) and not float(val).is_integer() else f"{val:g}"
        )
        lines.append(f"  {c['quantity']:<13} {c['source']} {kind} {sval}{conv}: {verdict}")
    return lines


def format_info(info: dict, histogram: bool = False) -> str:
    """Human-readable table of :func:`mpinet.engine.info.network_info`'s result."""
    pairs = zip(info["ports"], info["port_classes"], strict=True)
    ports = ", ".join(f"{p} ({c})" for p, c in pairs)
    rows = [
        ("network", f"{info['spec']}  ({info['family']})"),
        ("nodes", f"{info['nodes']:,}"),
        ("degree", f"{info['degree']}{'' if info['regular'] else ' (max; not regular)'}"),
        ("ports", ports),
        ("vertex-transitive", "yes" if info["vertex_transitive"] else "no"),
        ("BFS", info["scope"] + (f"; source {info['source']}" if info["source"] else "")),
    ]
    if info.get("components", 1) > 1:
        rows.append(("components", f"{info['components']:,} (distances within components)"))
    if info.get("estimate"):
        rows.append(("diameter", f">= {info['diameter_lower_bound']} (estimate: sampled sources)"))
    elif info["diameter"] is not None:
        rows.append(("diameter", str(info["diameter"])))
    else:
        rows.append(("eccentricity", str(info["eccentricity"])))
    est = "ESTIMATE, " if info.get("estimate") else ""
    rows.append(("avg distance", f"{info['avg_distance']:.6f} ({est}incl. source, as paper 000)"))
    rows.append(("", f"{info['avg_distance_excl_source']:.6f} (excl. source)"))
    rows.append(("ranks / time", f"{info['ranks']} / {info['seconds']:.2f} s"))
    mem = f"{info['peak_rss_mib']:.0f} MiB max per rank, "
    mem += f"{info['peak_rss_mib_all_ranks']:.0f} MiB in all"
    rows.append(("peak memory", mem))
    out = label_rows(rows)
    if info["theory"]:
        out.append("papers' closed forms:")
        out.extend(_theory_lines(info))
    if histogram:
        out.append(f"distance histogram ({info['histogram_counts']}):")
        out.extend(f"  {d:>4}  {c:,}" for d, c in enumerate(info["histogram"]))
    return "\n".join(out) + "\n"
