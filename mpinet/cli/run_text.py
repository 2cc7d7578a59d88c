"""The human summary ``mpinet run`` prints: :func:`format_result` (unicast and flit runs,
their faults, deadlock and checks) and :func:`format_collective` (broadcast, mnb)."""

from __future__ import annotations

import math

from mpinet.values import channel_text, label_rows


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
