"""``mpinet deadlock``: static deadlock analysis of a router (channel dependency graph)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mpinet.cli import agree, collective, get_comm, progress, seed_arg
from mpinet.values import Range, arg, json_text

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
process (rank 0 under mpiexec). Before it starts, its memory and work are
estimated from the network and router alone, and an analysis that would not
fit this machine (or whose dependency graph would exceed 2**27 edges) is
refused in one line; past 2 s a progress line says what it is doing.
Exit code 0: acyclic; 1: a cycle; 2: bad input or refused.

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
        type=arg(Range(1, 1 << 16, integer=True)),
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
    progress.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mpinet.cli.rank0 import wait_for_rank0
    from mpinet.cli.routes import _options
    from mpinet.jobs import plans, resources
    from mpinet.routing import make_router
    from mpinet.routing.deadlock_analysis import setup
    from mpinet.topology import from_spec

    comm = get_comm()
    here = resources.ranks_on_this_machine(comm)  # collective: before anything can fail

    def plan() -> tuple:
        topo = from_spec(args.spec)
        router = make_router(args.router, topo, **_options(args.option))
        su = setup(topo, args.buffer_classes, args.max_hops, args.destinations)
        # memory and dependencies from the inputs alone, before the first route is followed
        est = plans.plan_deadlock(topo, router, su, comm.Get_size(), here)
        return topo, router, est

    topo, router, est = agree(comm, plan)
    outcome: tuple = (None, None)
    if comm.Get_rank() == 0:
        bar = progress.for_command(args, 0)
        try:  # anything but a refusal or a MemoryError aborts the whole MPI job
            outcome = collective(comm, lambda: _analysis(args, topo, router, est, bar))
        finally:
            bar.close()
    else:  # rank 0's death ends the job (hydra); its errors come through agree below
        wait_for_rank0(comm, est.work / _SLOW_RATE, "the deadlock analysis on rank 0")
    rep = agree(comm, lambda: _outcome(outcome))
    if comm.Get_rank() != 0:
        return 0
    if args.json:
        sys.stdout.write(json_text(rep) + "\n")
    else:
        sys.stdout.write(format_report(rep))
    sys.stdout.flush()
    return 0 if rep["acyclic"] else 1


#: route hops a second (the estimate's unit) at least: about 7 million measured here
_SLOW_RATE = 1e6


def _analysis(args: argparse.Namespace, topo: Any, router: Any, est: Any, bar: Any) -> tuple:
    """Rank 0's analysis: ``(report, None)``, or ``(None, error)`` for every rank to raise."""
    from mpinet.errors import MpinetError, ResourceError
    from mpinet.jobs.resources import available_memory, size_text
    from mpinet.routing.deadlock_analysis import analyze
    from mpinet.routing.deadlock_literature import star_literature

    head = f"deadlock {topo.spec} {router.name}"

    def tell(phase: str, done: int, total: int) -> None:
        if total > 1:
            bar(lambda: f"{head}: {phase} {100.0 * done / total:.1f}% ({done:,} of {total:,})")
        else:
            bar(lambda: f"{head}: {phase}")

    try:
        res = analyze(
            topo,
            router,
            buffer_classes=args.buffer_classes,
            max_hops=args.max_hops,
            destinations=args.destinations,
            seed=args.seed,
            progress=tell,
        )
    except MpinetError as exc:
        return None, exc
    except MemoryError:  # the estimate was short of the machine: one line on every rank
        return None, ResourceError(
            f"{est.what} ran out of memory (estimated {size_text(est.bytes)}; "
            f"{_memory_now(available_memory())}); way out: a smaller network"
        )
    rep = res.report
    rep["literature"] = star_literature(topo, rep)
    # the plan beside what it planned for (docs/reliability.md compares the two)
    rep["plan"] = est.as_dict()
    rep["peak_rss_mib"] = round(_peak_rss_mib(), 1)
    return rep, None


def _peak_rss_mib() -> float:
    """This process's peak resident memory (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _memory_now(available: int) -> str:
    """What memory there is now: available, and this process's address-space cap if any."""
    import resource

    from mpinet.jobs.resources import size_text

    text = f"{size_text(available)} available now"
    cap = resource.getrlimit(resource.RLIMIT_AS)[0]
    if cap != resource.RLIM_INFINITY:
        text += f", address space capped at {size_text(cap)} (ulimit -v)"
    return text


def _outcome(outcome: tuple) -> Any:
    """The report, or rank 0's error raised (``agree`` raises it on every rank)."""
    rep, err = outcome
    if err is not None:
        raise err
    return rep


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
