"""``mpinet deadlock``: static deadlock analysis of a router (channel dependency graph)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mpinet.cli import agree, collective, get_comm, progress, seed_arg
from mpinet.cli.router_options import add_router_options, router_options
from mpinet.cli.switching_options import add_switching
from mpinet.values import Range, arg, channel_text, json_text, label_rows

HELP = """\
Build the channel dependency graph of a router on a network and say whether
it has a cycle: without one no run can deadlock. Channels are directed links
(with --buffer-classes hops, (link, hop class) pairs); with --switching
wormhole or cut-through, (link, VC) pairs of the flit engine under a
--vc-policy, and the report gives the VCs the policy needs. Runs on one
process; refused in one line if it would not fit. Exit code 0: acyclic; 1: a
cycle; 2: refused. More in docs/commands.md and docs/deadlock-analysis.md.

examples:
  mpinet deadlock star:4 --router shortest --buffer-classes hops
  mpinet deadlock hypercube:6 --router hypercube-ecube --json
  mpinet deadlock star:5 --router shortest --switching wormhole \\
      --vc-policy negative-hop
"""


def vc_level(args: argparse.Namespace) -> bool:
    """Whether the analysis is at VC level (``--switching wormhole`` or ``cut-through``)."""
    return args.switching in ("wormhole", "cut-through")


def check_flags(args: argparse.Namespace) -> None:
    """Refuse flags that the chosen switching would ignore (one line, JobError)."""
    from mpinet.errors import JobError
    from mpinet.routing.vc_policies import VC_POLICIES

    vc = [f for f, v in (("--vc-policy", args.vc_policy), ("--vcs", args.vcs)) if v is not None]
    if vc and not vc_level(args):
        how = (
            "without it the analysis is of store-and-forward packet buffers"
            if args.switching is None
            else f"--switching {args.switching} is analysed with packet buffers"
        )
        raise JobError(
            f"{' and '.join(vc)} {'need' if len(vc) > 1 else 'needs'} --switching wormhole or "
            f"cut-through (virtual channels); {how} (--buffer-classes)"
        )
    if vc_level(args) and args.buffer_classes != "none":
        raise JobError(
            f"--buffer-classes {args.buffer_classes} is for store-and-forward packet buffers; "
            f"with --switching {args.switching} give --vc-policy hops instead"
        )
    if vc_level(args) and args.vc_policy is not None and args.vc_policy not in VC_POLICIES:
        raise JobError(f"unknown --vc-policy {args.vc_policy!r}; valid: {', '.join(VC_POLICIES)}")


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
    add_switching(p, job=False, vcs_help="VCs per directed link (default: the fewest the "
                  "policy needs)")  # fmt: skip
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
    add_router_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    progress.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mpinet.cli.rank0 import wait_for_rank0
    from mpinet.deadlock.analysis import setup
    from mpinet.deadlock.vc import vc_setup
    from mpinet.jobs import netcheck, plans, resources
    from mpinet.routing import make_router
    from mpinet.routing.vc_policies import make_vc_policy

    comm = get_comm()
    here = resources.ranks_on_this_machine(comm)  # collective: before anything can fail

    def plan() -> tuple:
        check_flags(args)
        topo = resources.load_network(args.spec, here)
        router = make_router(args.router, topo, **router_options(args.option))
        if vc_level(args):
            policy = make_vc_policy(args.vc_policy or "any", topo, args.vcs or 1)
            su = vc_setup(policy, args.max_hops, args.destinations)
        else:
            su = setup(topo, args.buffer_classes, args.max_hops, args.destinations)
        # memory and dependencies from the inputs alone, before the first route is followed
        est = plans.plan_deadlock(topo, router, su, comm.Get_size(), here)
        return topo, router, est

    topo, router, est = agree(comm, plan)
    netcheck.same_network(comm, topo)  # one file on every rank (its sha256), before any work
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
    from mpinet.deadlock.analysis import analyze
    from mpinet.deadlock.literature import star_literature, vc_literature
    from mpinet.deadlock.vc import analyze_vc
    from mpinet.errors import MpinetError, ResourceError
    from mpinet.jobs.resources import available_memory, size_text

    head = f"deadlock {topo.spec} {router.name}"

    def tell(phase: str, done: int, total: int) -> None:
        if total > 1:
            bar(lambda: f"{head}: {phase} {100.0 * done / total:.1f}% ({done:,} of {total:,})")
        else:
            bar(lambda: f"{head}: {phase}")

    try:
        if vc_level(args):
            res = analyze_vc(
                topo, router, args.vc_policy or "any", vcs=args.vcs, switching=args.switching,
                max_hops=args.max_hops, destinations=args.destinations, seed=args.seed,
                progress=tell,
            )  # fmt: skip
        else:
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
    rep["literature"] = vc_literature(topo, rep) if vc_level(args) else star_literature(topo, rep)
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


def _routes_text(r: dict) -> str:
    how = {
        "all": "every source to every destination",
        "symmetry": "every source to the translation targets, translated to all destinations",
    }[r["destinations"]]
    routes = f"{r['pairs']:,} routes: {how}"
    if r["random"]:
        routes += f"; every random choice among up to {r['choices']} candidates"
    return routes


def format_vc_report(r: dict) -> str:
    """Human-readable analysis at VC level."""
    from mpinet.routing.vc_policies import VC_POLICIES

    req = r["requirement"]
    policy = f"{r['vc_policy']} ({VC_POLICIES[r['vc_policy']].summary})"
    if r["colours"] is not None:
        policy += f"; {r['colours']} colours"
    given = "given (--vcs)" if r["vcs_given"] else "the fewest the policy needs"
    rows = [
        ("network / router", f"{r['spec']} / {r['router']}"),
        ("switching", f"{r['switching']}: one channel per (link, VC), {r['vcs']} VCs ({given})"),
        ("vc_policy", policy),
        ("routes", _routes_text(r)),
        ("used", f"{r['channels']:,} channels (the network has {r['links']:,} directed links)"),
        ("dependencies", f"{r['dependencies']:,}"),
        ("VCs needed", f"{r['vcs_needed']} ({req['why']})"),
    ]
    if r["acyclic"]:
        rows.append(("graph", f"ACYCLIC: no deadlock is possible with {r['vcs']} VCs"))
    else:
        rows.append(
            (
                "graph",
                f"CYCLIC: {r['core_channels']:,} channels on or between cycles; "
                f"a shortest cycle found has {r['cycle_length']} channels:",
            )
        )
    if r["smallest_vcs"] is not None:
        smallest = str(r["smallest_vcs"])
    else:
        smallest = (
            "none: the graph has a cycle for every V "
            f"(vc_policy {r['vc_policy']} adds no order to the VCs it gives)"
        )
    out = label_rows([*rows, ("smallest V", smallest)])
    # the cycle's channels go under the graph row, before smallest V
    out[-1:-1] = [f"    {channel_text(c)}" for c in r["cycle"] or []]
    if r["smallest_vcs"] is None:
        out.append("  way out: --vc-policy hops or negative-hop, or a router whose")
        out.append("  dependencies are acyclic")
    out += _literature(r, "published bounds (docs/deadlock-analysis.md):")
    return "\n".join(out) + "\n"


def format_report(r: dict) -> str:
    """Human-readable analysis."""
    if "vc_policy" in r:
        return format_vc_report(r)
    if r["buffer_classes"] == "hops":
        bufs = f"one channel per link and hop class 1..{r['max_hops']} (0: injection buffers)"
    else:
        bufs = "one channel per directed link (no classes)"
    routes = _routes_text(r)
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
    out = label_rows(rows)
    out += [f"    {channel_text(c)}" for c in r["cycle"] or []]
    if not r["acyclic"]:
        out.append('  way out: --buffer-classes hops (model.buffer_classes = "hops"), or a router')
        out.append("  whose dependencies are acyclic")
    out += _literature(r, "published bounds (star graph; docs/deadlock-analysis.md):")
    return "\n".join(out) + "\n"


def _literature(r: dict, heading: str) -> list[str]:
    """The published bounds the report cites, under ``heading``; none: no lines."""
    if not r.get("literature"):
        return []
    return [heading] + [
        f"  {e['quantity']}: {e['value']}  [{e['source']}; {e['note']}]" for e in r["literature"]
    ]
