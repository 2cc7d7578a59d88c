"""``mpinet routes``: how good a router's routes are, against exact distances."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mpinet.cli import agree, collective, get_comm, progress, seed_arg
from mpinet.cli.router_options import add_router_options, router_options
from mpinet.values import label_rows

HELP = """\
Route pairs of nodes with a router, without contention, and compare each route
with the exact shortest distance (BFS): average and maximum route length,
average shortest distance, percentage of shortest routes, the distribution of
route lengths (paper 000's D_I x N_I curve), hops per port class (for SCC:
lateral and local links; the SCC routers also split local links into the
papers' MI and MB parts), and the header size the router needs.

Pairs: to-identity (every node to the identity; the papers' convention, which
includes the identity's own zero-length route), from-identity (the identity to
every node: paper 003's convention, for routers that are not vertex-transitive),
all (every ordered pair of distinct nodes), or
sample:K (K random pairs of distinct nodes, keyed by --seed). The pairs are
split over the ranks of the MPI job; the report does not depend on their number.
--engine also routes the pairs on the engine (one packet each, all-port) and
checks that the route lengths agree pair by pair.

Routers that route around faults (a job's [faults]; docs/reliability.md):
shortest, borel-table, scc-random, ms-balls-to-boxes, ms-merged, borel-cr. The
others run unchanged, and the engine drops a packet they send towards a failed
link ("no route").

examples:
  mpinet routes scc:6 --router scc-greedy
  mpiexec -n 2 mpinet routes ms:3,2 --router ms-balls-to-boxes --pairs all --json
  mpinet routes fccn:3 --router fccn-sroute --pairs sample:10000 --engine
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "routes",
        help="route-quality report of a router against exact distances",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", metavar="SPEC", help="topology spec, e.g. scc:6")
    p.add_argument(
        "--router",
        required=True,
        metavar="NAME",
        help="router name, e.g. shortest or scc-greedy; one that does not apply to SPEC is "
        "refused with the list of those that do (docs/commands.md#mpinet-routes has them all)",
    )
    p.add_argument(
        "--pairs", default="to-identity", help="to-identity | from-identity | all | sample:K"
    )
    p.add_argument(
        "--seed", type=seed_arg, default=0, help="seed of random routers and sampled pairs"
    )
    add_router_options(p, "lookahead=3")
    p.add_argument("--engine", action="store_true", help="also route on the engine and compare")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    progress.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mpinet.engine.routes import engine_lengths, parse_pairs, route_report
    from mpinet.jobs import netcheck, plans, resources
    from mpinet.routing import make_router

    comm = get_comm()
    here = resources.ranks_on_this_machine(comm)  # collective: before anything can fail

    def plan():
        topo = resources.load_network(args.spec, here)
        resources.check_ids(topo, comm.Get_size())
        router = make_router(args.router, topo, **router_options(args.option))
        kind, total = parse_pairs(args.pairs, topo)
        # the pair cap and the memory (tables, BFS, engine) before any pair is routed
        plans.plan_routes(topo, router, kind, total, comm.Get_size(), here, engine=args.engine)
        return topo, router

    topo, router = agree(comm, plan)
    netcheck.same_network(comm, topo)  # one file on every rank (its sha256), before any work
    bar = progress.for_command(args, comm.Get_rank())
    try:
        share = " (rank 0's share)" if comm.Get_size() > 1 else ""
        tell = bar.counter(f"routes {topo.spec} {router.name}: pairs routed{share}")
        rep = collective(
            comm, lambda: route_report(topo, router, args.pairs, comm, args.seed, progress=tell)
        )
        if args.engine:
            eng = collective(
                comm,
                lambda: engine_lengths(
                    topo, router, args.pairs, comm, args.seed, progress=bar.engine
                ),
            )
    finally:
        bar.close()
    code = 0
    if args.engine:
        agree_ = eng["histogram"] == rep["histogram"] and eng["checksum"] == rep["checksum"]
        rep["engine"] = {"agrees": agree_, "steps": eng["steps"]}
        code = 0 if agree_ else 1
    if comm.Get_rank() == 0:
        if args.json:
            from mpinet.values import json_text

            sys.stdout.write(json_text(rep) + "\n")
        else:
            sys.stdout.write(format_report(rep))
        sys.stdout.flush()
    return code


def format_report(r: dict) -> str:
    """Human-readable route report."""
    kind = {
        "to-identity": "every node to the identity (incl. itself)",
        "from-identity": "the identity to every node (incl. itself)",
        "all": "all ordered pairs of distinct nodes",
    }
    how = "distributed" if r["distributed"] else "source-based"
    rows = [
        ("network / router", f"{r['spec']} / {r['router']} ({how}, header {r['header_bytes']} B)"),
        ("pairs", f"{r['pairs']:,}: {kind.get(r['pair_kind'], 'random pairs of distinct nodes')}"),
        ("route length", f"avg {r['avg_length']:.4f}  max {r['max_length']}"),
        ("shortest", f"avg {r['avg_shortest']:.4f}  max {r['max_shortest']}"),
        ("shortest routes", f"{r['pct_shortest']:.2f}%"),
        ("hops per class", "  ".join(f"{c} {v:.4f}" for c, v in r["class_hops"].items())),
    ]
    if "split" in r:
        rows.append(("SCC cost split", "  ".join(f"{k} {v:.4f}" for k, v in r["split"].items())))
    if "engine" in r:
        e = r["engine"]
        rows.append(("engine", "same route lengths, pair by pair" if e["agrees"] else "DISAGREES"))
    out = label_rows(rows)
    out.append("route length histogram (length: routes / shortest distances):")
    h, s = r["histogram"], r["shortest_histogram"]
    for d in range(max(len(h), len(s))):
        a = h[d] if d < len(h) else 0
        b = s[d] if d < len(s) else 0
        out.append(f"  {d:>4}  {a:>12,}  {b:>12,}")
    return "\n".join(out) + "\n"
