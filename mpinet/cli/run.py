"""``mpinet run``: run a job (TOML file and/or flags) on the engine."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from mpinet.cli import agree, collective, get_comm, progress
from mpinet.cli.switching_options import add_switching, switching_sets
from mpinet.values import channel_text, label_rows

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
    from mpinet.jobs import load_job, parse_set
    from mpinet.jobs.execute import execute, plan, reserve_trace
    from mpinet.jobs.netcheck import same_network
    from mpinet.jobs.resources import ranks_on_this_machine

    comm = get_comm(args.timeout)
    here = ranks_on_this_machine(comm)  # collective: before anything can fail

    def make_plan():
        sets = [parse_set(s) for s in args.set]
        for attr, key in FLAG_KEYS.items():
            value = getattr(args, attr)
            if value is not None:
                sets.append((key.split("."), value))
        sets += switching_sets(args)
        job = load_job(args.job, sets)
        return plan(job, out=args.out, force=args.force, ranks=comm.Get_size(), ranks_here=here)

    p = agree(comm, make_plan)
    same_network(comm, p.topo)  # one file on every rank (its sha256), before any work
    res = agree(comm, lambda: reserve_trace(p, comm))  # the trace's temporary file, now
    rank0 = comm.Get_rank() == 0
    bar = progress.for_command(args, comm.Get_rank())
    argv = ["mpinet", *sys.argv[1:]]
    if rank0 and not args.json:
        from mpinet.engine.calendar import eligible
        from mpinet.engine.kernel_cache import cache_is_warm

        why = eligible(p.model, p.job.model["order"], p.router, p.faults, p.topo.num_nodes)
        path = "calendar" if why is None and p.job.model["queues"] != "links" else "links"
        if p.model.flit:
            path = "iq" if p.job.model.get("router") == "iq" else "flit"
        elif p.workload.engine != "unicast":
            path = "collective"
        if not cache_is_warm(path):
            sys.stderr.write(
                "[mpinet] first run: compiling the engine's kernels (once per installation, "
                "up to a minute; cached afterwards)\n"
            )
            sys.stderr.flush()
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


def format_collective(r: dict) -> str:
    """Human summary of a broadcast / mnb run."""
    s, job = r["stats"], r["job"]
    rows = [
        ("network", f"{r['spec']} ({r['nodes']:,} nodes) on {r['ranks']} rank(s)"),
        ("collective", f"{s['collective']}, {s['messages']:,} message(s)"),
        ("algorithm", r.get("router", "-")),
        ("model", job["model"]["kind"]),
        ("steps", f"{s['steps']:,} (measured)"),
        ("steps per class", "  ".join(f"{c} {n}" for c, n in s["class_steps"].items())),
        ("transmissions", f"{s['transmissions']:,}, duplicates {s['duplicates']:,}"),
        ("complete", "yes" if s["complete"] else f"NO: {s['missing']:,} (node, message) missing"),
        *_collective_fault_rows(s),
        ("time", f"{r['seconds']:.2f} s"),
    ]
    if r["trace"] or r.get("trace_error"):
        rows.append(("trace", r["trace"] or "NOT WRITTEN (see the error on stderr)"))
    return "\n".join(label_rows(rows)) + "\n"


def _collective_fault_rows(s: dict) -> list[tuple[str, str]]:
    """Faults of a collective: what failed, the copies lost, the nodes not reached."""
    f = s.get("faults")
    if not f:
        return []
    when = _when(f, s)
    miss = f"{f['unreached']:,} surviving node(s) miss a message"
    if f["unreached"]:
        miss += f", e.g. {', '.join(f['unreached_nodes'][:5])}"
    if f.get("messages_from_failed_nodes"):
        miss += f"; {f['messages_from_failed_nodes']:,} message(s) started at failed nodes only"
    return [
        (
            "faults",
            f"{f['failed_nodes']:,} nodes and {f['failed_links']:,} links {when}; "
            f"{f['lost']:,} copies lost on failed links",
        ),
        ("not reached", miss),
    ]


def _when(f: dict, s: dict) -> str:
    """``failed from step T``; NOT APPLIED when the run ended before the faults' step."""
    if f.get("applied", True):
        return "failed " + ("from the start" if not f["step"] else f"from step {f['step']:,}")
    return f"would fail from step {f['step']:,}, NOT APPLIED: the run ended at step {s['steps']:,}"


def _fault_rows(s: dict) -> list[tuple[str, str]]:
    f = s.get("faults")
    if not f:
        return []
    when = _when(f, s)
    how = "routes around them" if f["router_tolerates_faults"] else "does not route around them"
    return [
        (
            "faults",
            f"{f['failed_nodes']:,} nodes and {f['failed_links']:,} links {when}; the router {how}",
        )
    ]


def _delivered(s: dict) -> str:
    """Delivered of injected, then drops by reason (faults) and packets left in flight."""
    out = f"{s['delivered']:,} of {s['injected']:,}"
    drops = {k: v for k, v in s.get("drops", {}).items() if v}
    if drops:
        why = ", ".join(f"{v:,} {k}" for k, v in drops.items())
        out += f"; dropped {s['dropped']:,} ({why})"
    if s.get("undelivered"):
        out += f"; {s['undelivered']:,} still in flight at the end"
    return out


def _buffers(model: dict) -> str:
    """``, buffer B per input port (hop classes ...)``, or nothing for unbounded buffers."""
    b = model.get("buffer") or 0
    if not b:
        return ""
    cls = model.get("buffer_classes", "none")
    extra = f", hop classes 0..{model.get('max_hops', 32)}" if cls == "hops" else ""
    return f", buffer {b} per input port{extra}"


def _router_model(r: dict, job: dict) -> str:
    """``shortest / all-port (fifo), buffer ...``; with switching keys the flit model."""
    router, m = r.get("router", job["router"]["name"]), job["model"]
    sw = r.get("switching")
    if sw:
        return (
            f"{router} / {m['kind']}, {sw['mode']}: {sw['flits']} flit(s) per packet, "
            f"{sw['vcs']} VC(s) of {sw['vc_buffer']} flits per link, vc_policy {sw['vc_policy']}"
            + (f"; {sw['steps']}" if sw.get("steps") else "")
        )
    return f"{router} / {m['kind']} ({m['order']}){_buffers(m)}"


def _time(r: dict, hops: int) -> str:
    """Engine seconds and rate without the kernels' compilation, which is named apart."""
    compiled = min(r.get("compile_seconds") or 0.0, r["engine_seconds"])
    engine = r["engine_seconds"] - compiled
    rate = hops / max(engine, 1e-9) / r["ranks"] / 1e6
    kind = "flit" if r.get("switching") else "packet"
    first = f" + {compiled:.2f} s compiling the kernels" if compiled >= 0.005 else ""
    # two significant digits below 0.01 (0.0031): a small run's rate is not 0
    digits = 2 if rate >= 0.01 or rate <= 0 else 1 - math.floor(math.log10(rate))
    shown = f"{rate:.{digits}f}"
    return (f"{engine:.2f} s engine{first}, {r['seconds']:.2f} s in all; "
            f"{shown} M {kind}-hops/s per rank")  # fmt: skip


def format_result(r: dict) -> str:
    """Human summary of a run."""
    if "collective" in r["stats"]:
        return format_collective(r)
    s, job = r["stats"], r["job"]
    w = job["workload"]
    if w["kind"] == "emulate-star":
        inj = "one packet per star transmission, injected when its star step begins"
    elif w["kind"] == "te" and r.get("te", {}).get("algorithm") == "schedule":
        inj = "every ordered pair once, each offset the step before its first hop"
    elif w["kind"] == "te":
        inj = "every ordered pair once, at step 0"
    elif w["injection"] == "once":
        inj = f"{w['packets']} per node at step 0"
    else:  # bernoulli, on_off (its rate the mean), per flit with rate_uses_flits
        unit = " flits" if w.get("rate_uses_flits") else ""
        inj = f"{w['injection']} rate {w['rate']}{unit} for {w['steps']} steps"
    lat, hops = s["latency"], s["hops"]
    rows = [
        ("network", f"{r['spec']} ({r['nodes']:,} nodes) on {r['ranks']} rank(s)"),
        ("workload", f"{w['kind']}, {inj}: {s['injected']:,} packets"),
        ("router / model", _router_model(r, job)),
        *_fault_rows(s),
        ("steps", f"{s['steps']:,} (last delivery in step {s['completion_step']:,})"),
    ]
    if "te" in r:
        te = r["te"]
        rows.append(("lower bound", f"{te['lower_bound']:,} steps (ratio {te['ratio']})"))
    if "emulation" in r:
        e = r["emulation"]
        rows.append(
            (
                "emulation",
                f"star {e['algorithm']} in {e['star_steps']:,} star steps -> "
                f"{e['ms_steps']:,} MS steps ({e['mode']}, slowdown {e['slowdown']}); "
                f"{e['paper_source']}: {e['paper_steps']:,}",
            )
        )
    rows += [
        ("delivered", _delivered(s)),
    ]
    if lat.get("count"):
        rows.append(
            (
                "latency",
                f"mean {lat['mean']:.2f}  p50 {lat['p50']:.0f}  p99 {lat['p99']:.0f}  "
                f"max {lat['max']} steps",
            )
        )
        rows.append(("hops", f"mean {hops['mean']:.3f}  max {hops['max']}"))
    if "stretch" in s and lat.get("count"):  # nothing delivered: no stretch to show
        st = s["stretch"]
        rows.append(
            (
                "stretch",
                f"mean {st['mean']:.4f}  max {st['max']:.3f}  "
                f"shortest {100 * st['fraction_shortest']:.1f}% (vs exact BFS distance)",
            )
        )
    unit = "flits" if r.get("switching") else "packets"
    hop = "flit-hops" if r.get("switching") else "hops"
    for cls, ll in s["link_load"].items():
        rows.append(
            (
                f"load {cls}",
                f"max {ll['max']}  mean {ll['mean']:.2f} {unit} per link "
                f"({ll['links']:,} directed links)",
            )
        )
    rows.append(
        ("cross-rank", f"{100 * s['cross_rank_fraction']:.1f}% of {s['transmissions']:,} {hop}")
    )
    failed = [c for c in s["checks"] if not c["ok"]]
    rows.append(("checks", "all passed" if not failed else f"{len(failed)} FAILED"))
    rows.append(("time", _time(r, s["transmissions"])))
    if r["trace"]:
        rows.append(("trace", f"{r['trace']} ({job['trace']['level']})"))
    elif r.get("trace_error"):
        rows.append(("trace", "NOT WRITTEN (see the error on stderr)"))
    out = label_rows(rows)
    for c in failed:
        got = f"expected {c['expected']}, measured {c['measured']}"
        out.append(f"  FAILED: {c['name']}: {got}. {c['detail']}")
    dl = s.get("deadlock")
    if dl:
        what = "virtual channels" if r.get("switching") else "full buffers"
        blocked = f"{dl['blocked_packets']:,} packets blocked"
        if dl.get("found") == "check" and "dead_fronts" in dl:  # the flit engine's search
            blocked = (f"found while packets were injected; {dl['dead_fronts']:,} worm pieces "
                       f"can never move, {dl['blocked_packets']:,} undelivered")  # fmt: skip
        elif dl.get("found") == "check":  # found while packets still moved (engine/deadlock.py)
            blocked = (f"its cycle closed in step {dl['closed']:,}; {dl['dead_packets']:,} packets "
                       f"can never move, {dl['blocked_packets']:,} undelivered")  # fmt: skip
        out.append(
            f"  DEADLOCK in step {dl['step']:,}: {blocked}; "
            f"one wait-for cycle of {len(dl['cycle'])} {what}:"
        )
        sw = r.get("switching")
        for c in dl["cycle"]:
            out.append(f"    {channel_text(c)} {'waits' if sw else 'is full'}")
        if sw and sw["vc_policy"] == "any":
            out.append(
                '  way out: model.vc_policy = "hops" or "negative-hop" with enough model.vcs '
                "(mpinet deadlock --switching ... says how many), or another router"
            )
        elif not sw and job["model"].get("buffer_classes", "none") == "none":
            out.append(
                '  way out: model.buffer_classes = "hops", a larger model.buffer, or another router'
            )
    for sp in s.get("stuck_packets", []):
        where = f"{sp['source']} -> {sp['dest']} at {sp['at']}"
        out.append(f"  stuck: packet {sp['id']} {where} after {sp['hops']} hops")
    return "\n".join(out) + "\n"
