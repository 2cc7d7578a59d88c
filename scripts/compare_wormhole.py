"""The wormhole table of docs/comparison.md (issue 23 item 5): one router per network
under wormhole switching, L = 8 flits, B = 4 flits per VC, all-port.

For each network of ``jobs/compare/`` the router is its best all-port router of the
packet table (highest throughput; the first listed on a tie). ``mpinet deadlock`` says
whether that router's (link, VC) graph is acyclic under ``any`` and how many VCs
``negative-hop`` and ``hops`` need; the network is swept with ``any`` on V = 2 (the
column the issue asks for: deadlock-free only if the graph is acyclic, else the sweep
reports where it deadlocked) and, when ``any`` can deadlock, again with the policy that
needs fewer VCs, on that many. Entries live in ``data["wormhole"]`` (keyed
``stem|router|policy|V``) and the plans in ``data["wormhole_plans"]``, beside the packet
entries, which they never touch; the markdown is rendered from them alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from compare_claims import best_row
from launcher import launch_prefix

ROOT = Path(__file__).resolve().parent.parent
FLITS, VCS, VC_BUFFER = 8, 2, 4
#: shorter than the packet table's (500, 1,000, 500, 5, 4): see the section's text
SETTINGS = {"warmup": 300, "measure": 600, "drain": 400, "coarse": 5, "bisect": 4}
POLICIES = ("negative-hop", "hops")


def key(stem: str, router: str, policy: str, vcs: int) -> str:
    return f"{stem}|{router}|{policy}|{vcs}"


def router_for(rows: list[dict], stem: str, routers: list[str]) -> str | None:
    """The network's best all-port router in the packet table (on a tie, the first of
    ``routers``, the table's order)."""
    r = best_row(
        sorted(
            rows,
            key=lambda r: routers.index(r["router"]) if r["router"] in routers else len(routers),
        ),
        stem,
        "all-port",
    )
    return None if r is None else r["router"]


def _deadlock(spec: str, router: str, policy: str) -> dict[str, Any]:
    args = [sys.executable, "-m", "mpinet", "deadlock", spec, "--router", router,
            "--switching", "wormhole", "--vc-policy", policy, "--json", "--quiet"]  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"mpinet deadlock {spec} {router} {policy}: exit "
                         f"{proc.returncode}\n{proc.stderr}")  # fmt: skip
    return json.loads(proc.stdout)


def plan(spec: str, router: str) -> dict[str, Any]:
    """Whether ``any`` is deadlock-free, and the VCs each ordered policy needs."""
    out: dict[str, Any] = {"router": router}
    out["any_acyclic"] = bool(_deadlock(spec, router, "any")["acyclic"])
    for p in POLICIES:
        d = _deadlock(spec, router, p)
        if not d["acyclic"]:
            raise SystemExit(f"{spec} {router}: {p} with {d['vcs']} VCs has a cycle")
        out[p] = d["smallest_vcs"]
    return out


def runs_for(p: dict[str, Any]) -> list[tuple[str, int]]:
    """(policy, V) to sweep: ``any`` on 2 VCs, and the cheaper ordered policy if needed."""
    runs = [("any", VCS)]
    if not p["any_acyclic"]:
        pol = min(POLICIES, key=lambda q: (p[q], POLICIES.index(q)))
        runs.append((pol, max(VCS, p[pol])))
    return runs


def measure(stem: str, router: str, policy: str, vcs: int, ranks: int,
            settings: dict) -> dict[str, Any]:  # fmt: skip
    """One wormhole sweep (all-port) under ``mpinet sweep``; the compact result."""
    job = ROOT / "jobs" / "compare" / f"{stem}.toml"
    sets = {"router.name": router, "model.kind": "all-port", "model.switching": "wormhole",
            "model.flits": FLITS, "model.vcs": vcs, "model.vc_buffer": VC_BUFFER,
            "model.vc_policy": policy}  # fmt: skip
    args = [*launch_prefix(ranks), sys.executable, "-m", "mpinet", "sweep", str(job),
            "--json", "--quiet"]  # fmt: skip
    for k, v in sets.items():
        args += ["--set", f"{k}={v}"]
    for k, v in settings.items():
        args += [f"--{k}", str(v)]
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    # exit 1 with the JSON printed: a load deadlocked (its "no deadlock" check failed)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise SystemExit(f"{stem} {router} wormhole {policy} {vcs}: exit "
                         f"{proc.returncode}\n{proc.stderr}")  # fmt: skip
    res = json.loads(proc.stdout)
    sw, sat = res["switching"], res["saturation"]
    pts = sorted(res["points"], key=lambda pt: pt["offered"])
    good = [pt for pt in pts if pt["stable"] and not pt["deadlocked"]]
    best = max(good, key=lambda pt: pt["accepted"], default=None)
    return {
        "stem": stem, "spec": res["spec"], "nodes": res["nodes"], "router": res["router"],
        "model": res["model"], "switching": sw["mode"], "flits": sw["flits"],
        "vcs": sw["vcs"], "vc_buffer": sw["vc_buffer"], "vc_policy": sw["vc_policy"],
        "mean_hops": sw["mean_hops"], "zero_load_latency": res["zero_load_latency"],
        "bound": {k: res["bound"][k] for k in ("ideal", "limited_by", "packet_channel",
                                               "channel", "exact")},
        "saturation": sat,
        # the sustained throughput in flits: the flits of the load giving it
        "throughput_flits": None if best is None else best["accepted_flits"],
        "points": [{"offered": pt["offered"], "accepted": pt["accepted"],
                    "accepted_flits": pt["accepted_flits"], "stable": pt["stable"],
                    "deadlocked": pt["deadlocked"], "latency": pt["latency"]["mean"]}
                   for pt in pts],
        # a deadlock is a result here, reported as such; every other check must pass
        "checks_ok": all(c["ok"] for pt in pts for c in pt["checks"]
                         if not (pt["deadlocked"] and c["name"] == "no deadlock")),
        "settings": settings, "ranks": ranks,
        "seconds": round(time.perf_counter() - t0, 1),
        "cpu_seconds": round(res["cpu_seconds"], 1),
    }  # fmt: skip


def _f(x: float | None, fmt: str = "") -> str:
    """``fmt``, or a load: 4 decimals, 5 below 0.01 (fccn:4's loads are about 0.002)."""
    if x is None:
        return "-"
    return format(x, fmt or (".4f" if x >= 0.01 else ".5f"))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def _sat(r: dict[str, Any]) -> tuple[str, str]:
    """Saturation load in packets (criterion) and in flits, per node per step."""
    sat, n = r["saturation"], r["flits"]
    dead = sat.get("deadlocked") or []
    if sat["criteria"] == ["deadlocked"]:
        return f"deadlocked at {_f(min(dead))}", f"deadlocked at {_f(n * min(dead))}"
    if not sat["found"]:
        return "none", "none"
    tail = f"; deadlocked at {_f(min(dead))}" if dead else ""
    return (f"{_f(sat['load'])} ({', '.join(sat['criteria'])}){tail}",
            _f(n * sat["load"]))  # fmt: skip


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """One computed paragraph: the fractions of the flit bound, and where ``any`` deadlocked."""
    anys = [r for r in rows if r["vc_policy"] == "any"]
    free = [r for r in rows if r["vc_policy"] != "any"]

    def span(rs: list[dict[str, Any]]) -> str:
        fr = sorted(100 * r["saturation"]["throughput_fraction_of_bound"] for r in rs)
        return f"{fr[0]:.0f} %" if fr[0] == fr[-1] else f"{fr[0]:.0f} to {fr[-1]:.0f} %"

    if not anys:
        return []
    dead = [r for r in anys if r["saturation"].get("deadlocked")]
    early = [r for r in dead if r["saturation"]["criteria"] == ["deadlocked"]]
    text = (
        f"*Reading it*: with `any` on {VCS} VCs the networks sustain {span(anys)} of their "
        f"flit bound; {len(dead)} of the {len(anys)} sweeps had a load that deadlocked, "
    )
    if early:
        text += (
            f"in {len(early)} before any load saturated ("
            + ", ".join(f"`{r['spec']}`" for r in early)
            + ")"
        )
    else:
        text += "each above the load where the network had already saturated"
    if free:
        text += (
            f"; the deadlock-free policies, on the VCs they need, sustain {span(free)}, "
            "no load deadlocked"
            if not any(r["saturation"].get("deadlocked") for r in free)
            else f"; the deadlock-free policies sustain {span(free)}"
        )
    return ["", text + "."]


def markdown(data: dict[str, Any], order: list[str]) -> list[str]:
    """The section, from ``data["wormhole"]`` and ``data["wormhole_plans"]``; [] if absent."""
    runs, plans = data.get("wormhole", {}), data.get("wormhole_plans", {})
    if not runs and not plans:
        return []
    rows = sorted(
        runs.values(),
        key=lambda r: (
            order.index(r["stem"]) if r["stem"] in order else len(order),
            r["vc_policy"] != "any",
        ),
    )
    s = rows[0]["settings"] if rows else SETTINGS
    same = all(r["settings"] == s for r in rows)
    secs = sum(r["seconds"] for r in rows)
    cpu = sum(r["cpu_seconds"] for r in rows)
    ranks = sorted({r["ranks"] for r in rows})
    acyclic = [f"`{p['router']}`" for p in plans.values() if p["any_acyclic"]]
    free = "here only " + ", ".join(acyclic) + "'s is" if acyclic else "none here is"
    need = [min(p[q] for q in POLICIES) for p in plans.values() if not p["any_acyclic"]]
    more = f" (more than {VCS} for every one of them)" if need and min(need) > VCS else ""
    out = [
        f"## Wormhole, L = {FLITS}, V = {VCS}, B = {VC_BUFFER}",
        "",
        "Each row is one `mpinet sweep` of the network's job with its best all-port router "
        "of the table above, on the flit engine (docs/switching.md): `--set "
        f"model.switching=wormhole --set model.flits={FLITS} --set model.vcs=V --set "
        f"model.vc_buffer={VC_BUFFER} --set model.vc_policy=P`, the same traffic and seed. "
        "Loads are in packets (of L flits) per node per step; latency runs from the head's "
        "injection to the tail's delivery. `mpinet deadlock SPEC --router R --switching "
        "wormhole --vc-policy P` says whether the router's (link, VC) dependency graph is "
        f"acyclic under `any` ({free}) and how many VCs `negative-hop` and `hops` "
        "need: every network is swept with `any` on 2 VCs (the column asked for; a load "
        "whose run deadlocks is reported as deadlocked, the engine finds the cycle while "
        "injecting), and where `any` can deadlock again with the policy that needs fewer "
        f"VCs, on that many{more}. Shorter windows than the packet table's, to keep these "
        "sweeps within about half an hour of one core: "
        + (
            f"warm-up {s['warmup']:,} steps, measurement window {s['measure']:,}, drain cap "
            f"{s['drain']:,}, {s['coarse']} coarse loads from 5 % to 120 % of the flit bound "
            f"then {s['bisect']} bisections"
            if same
            else "each row's settings are in the JSON"
        )
        + f". The {len(rows)} sweeps took {secs / 60:.1f} minutes (wall, launches "
        f"included; busiest rank's CPU {cpu / 60:.1f} minutes) on "
        f"{', '.join(map(str, ranks)) or '-'} rank(s), niced.",
        "",
        "- **zero-load**: measured, the mean latency at the sweep's lowest load (5 % of the "
        "flit bound); H + L - 1, the closed form with H the router's mean route length.",
        "- **flit bound**: the packet channel bound of the table above / L (a link moves one "
        "flit per step), in packets per node per step.",
        "- **saturation** and **throughput** as above, in packets and in flits per node per "
        "step, with their fraction of the flit bound; *deadlocked at x*: the lowest load "
        "whose run deadlocked (a wait-for cycle of (node, port, VC)).",
        "- **VCs needed**: the fewest VCs with an acyclic (link, VC) graph under "
        "`negative-hop` / `hops` (`any`: cycle, or acyclic on 1 VC).",
        "",
        "| network | router | policy (V) | VCs needed | zero-load measured | H + L - 1 | "
        "flit bound | saturation, packets | flits | % of bound | throughput, packets | "
        "flits | % of bound |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p = plans.get(r["stem"], {})
        need = (f"{p.get('negative-hop', '-')} / {p.get('hops', '-')}"
                f"{'' if p.get('any_acyclic') is not False else ' (any: cycle)'}"
                f"{' (any: 1)' if p.get('any_acyclic') else ''}")  # fmt: skip
        sat, sat_f = _sat(r)
        frac = r["saturation"]["load_fraction_of_bound"]
        if r["saturation"]["criteria"] == ["deadlocked"]:
            frac = None
        low = r["points"][0]["latency"] if r["points"] else None
        tput = r["saturation"]["throughput"]
        b = r["bound"]
        out.append(
            f"| `{r['spec']}` | `{r['router']}` | `{r['vc_policy']}` ({r['vcs']}) | {need} | "
            f"{_f(low, '.2f')} | {r['zero_load_latency']:.2f} | {_f(b['ideal'])}"
            f"{'' if b['exact'] else ' (est.)'} ({b['limited_by']}) | {sat} | {sat_f} | "
            f"{_pct(frac)} | {_f(tput)} | {_f(r['throughput_flits'])} | "
            f"{_pct(r['saturation']['throughput_fraction_of_bound'])} |"
        )
    out += summary(rows)
    missing = []
    for stem in order:
        p = plans.get(stem)
        if p is None:
            missing.append(f"- `{stem}`: not measured (no deadlock analysis in the JSON)")
            continue
        for pol, v in runs_for(p):
            if key(stem, p["router"], pol, v) not in runs:
                missing.append(f"- `{stem}` `{p['router']}` `{pol}` ({v} VCs): not measured")
    if missing:
        out += ["", "Not measured yet (rerun the script; it measures only missing entries):",
                "", *missing]  # fmt: skip
    ok = all(r["checks_ok"] for r in rows)
    out += ["", f"Engine checks at every load of these sweeps: {'all passed' if ok else 'FAILED'}.",
            ""]  # fmt: skip
    return out
