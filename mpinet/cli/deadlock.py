"""``mpinet deadlock``: static deadlock analysis of a router (channel dependency graph)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mpinet.cli import agree, get_comm, seed_arg

HELP = """\
Build the channel (buffer) dependency graph of a router on a network and say
whether it has a cycle. A channel is a directed link (node, port), with
--buffer-classes hops a (link, hop class) pair as in the engine's structured
buffer pool; channel c1 depends on c2 when a packet that arrived over c1 can
wait for c2 as its next hop (a hop that delivers takes no buffer). With finite
buffers (model.buffer) a run can deadlock only if this graph has a cycle, and
the engine's runtime wait-for cycles are cycles of it.

Routes are followed from every source to every destination, or, on a
vertex-transitive network (and by default above 256 nodes), only to the
translation targets, with the rest obtained by the port-preserving
automorphisms after a sampled check that the router commutes with them.
Random routers (shortest with tie=random, scc-random, choice=random) are
followed through every choice they can make. The analysis runs on one
process (rank 0 under mpiexec). Exit code 0: acyclic; 1: a cycle; 2: bad input.

examples:
  mpinet deadlock star:4 --router shortest
  mpinet deadlock star:4 --router shortest --buffer-classes hops
  mpinet deadlock hypercube:6 --router hypercube-ecube --json
  mpinet deadlock scc:5 --router scc-random --destinations all
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "deadlock",
        help="static deadlock analysis: is a router's channel dependency graph acyclic?",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", metavar="SPEC", help="topology spec, e.g. star:4")
    p.add_argument("--router", required=True, metavar="NAME", help="router name")
    p.add_argument(
        "--buffer-classes",
        choices=("none", "hops"),
        default="none",
        help="none: one channel per link; hops: one per link and hop class",
    )
    p.add_argument(
        "--max-hops",
        type=int,
        default=None,
        metavar="H",
        help="with hops: the highest class, as model.max_hops (classes 0..H, routes up to "
        "H + 1 hops; default 32); without: the longest route followed",
    )
    p.add_argument(
        "--destinations",
        choices=("auto", "all", "symmetry"),
        default="auto",
        help="follow routes to every destination, or to the translation targets only",
    )
    p.add_argument(
        "--seed", type=seed_arg, default=0, help="seed the random choices are drawn under"
    )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="router option, e.g. --option tie=random (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mpinet.cli.routes import _options
    from mpinet.errors import SpecError
    from mpinet.routing import make_router
    from mpinet.routing.deadlock_analysis import analyze, star_literature
    from mpinet.topology import from_spec

    comm = get_comm()

    def work() -> dict | None:
        if args.max_hops is not None and not 1 <= args.max_hops <= 1 << 16:
            raise SpecError(f"--max-hops must be in [1, 65536], got {args.max_hops}")
        topo = from_spec(args.spec)
        router = make_router(args.router, topo, **_options(args.option))
        if comm.Get_rank() != 0:  # serial analysis: the other ranks only agree
            return None
        res = analyze(
            topo,
            router,
            buffer_classes=args.buffer_classes,
            max_hops=args.max_hops,
            destinations=args.destinations,
            seed=args.seed,
        )
        rep = res.report
        rep["literature"] = star_literature(topo, rep)
        return rep

    rep = agree(comm, work)
    if comm.Get_rank() != 0:
        return 0
    if args.json:
        json.dump(rep, sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_report(rep))
    sys.stdout.flush()
    return 0 if rep["acyclic"] else 1


def format_report(r: dict) -> str:
    """Human-readable analysis."""
    if r["buffer_classes"] == "hops":
        bufs = f"one channel per link and hop class 1..{r['max_hops']} (0: injection buffers)"
    else:
        bufs = "one channel per directed link (no classes)"
    how = {
        "all": "every source to every destination",
        "symmetry": "every source to the translation targets, translated to all destinations",
    }[r["destinations"]]
    routes = f"{r['pairs']:,} routes: {how}"
    if r["random"]:
        routes += f"; every random choice among up to {r['choices']} candidates"
    rows = [
        ("network / router", f"{r['spec']} / {r['router']}"),
        ("channels", bufs),
        ("routes", routes),
        ("used", f"{r['channels']:,} channels (the network has {r['links']:,} directed links)"),
        ("dependencies", f"{r['dependencies']:,}"),
        (
            "longest route",
            f"{r['max_route_length']} hops: hop classes need {r['classes_needed']} classes "
            f"(0..{r['classes_needed'] - 1}, model.max_hops >= {r['classes_needed'] - 1}; "
            "the last hop takes no buffer)",
        ),
    ]
    if r["acyclic"]:
        rows.append(("graph", "ACYCLIC: no buffer deadlock is possible"))
    else:
        rows.append(
            (
                "graph",
                f"CYCLIC: {r['core_channels']:,} channels on or between cycles; "
                f"a shortest cycle found has {r['cycle_length']} channels:",
            )
        )
    width = max(len(k) for k, _ in rows)
    out = [f"{k:<{width}}  {v}" for k, v in rows]
    for c in r["cycle"] or []:
        cls = "" if c["class"] is None else f" (class {c['class']})"
        out.append(f"    {c['node']} --{c['port']}--> {c['next']}{cls}")
    if not r["acyclic"]:
        out.append('  way out: --buffer-classes hops (model.buffer_classes = "hops"), or a router')
        out.append("  whose dependencies are acyclic")
    if r.get("literature"):
        out.append("published bounds (star graph; docs/deadlock-analysis.md):")
        for e in r["literature"]:
            out.append(f"  {e['quantity']}: {e['value']}  [{e['source']}; {e['note']}]")
    return "\n".join(out) + "\n"
