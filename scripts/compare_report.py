#!/usr/bin/env python3
"""Generate docs/comparison.md: networks of about 5,000 nodes under load, side by side.

Every network of ``jobs/compare/`` is swept (``mpinet sweep``, uniform Bernoulli
traffic, unbounded FIFO buffers) with each of its routers under the all-port
and one-port models; the table gives the zero-load latency, the channel-load
bound, the saturation load and throughput and their fraction of the bound,
and the cost (degree x nodes: the ports to build), then the papers' claims
(``scripts/compare_claims.py``) with verdicts computed from the measurements,
and two figures (docs/figures/comparison/). Run::

    python scripts/compare_report.py [--ranks 2] [--only ms-3-2] [--render]

Results are kept in docs/comparison.json (one entry per network, router and
model, with the settings they were measured with); a rerun measures only the
entries that are missing or were measured with other settings, and
``--render`` rewrites the markdown and figures from the JSON alone;
``--fresh`` measures everything again. ``--quick`` uses shorter windows.
The wormhole table (L = 8, V = 2, B = 4; ``scripts/compare_wormhole.py``) is
measured after the packet entries; ``--wormhole`` measures only its entries.
``--check`` renders the markdown from the JSON in memory (as ``--render``, no figures)
and exits 1 with a diff if docs/comparison.md is not that.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import compare_wormhole as cw  # noqa: E402
import reports  # noqa: E402
from compare_claims import best_row, claims_markdown  # noqa: E402
from launcher import launch_prefix  # noqa: E402

from mpinet.topology import from_spec  # noqa: E402

#: job file stem -> routers swept (the first is the family's reference)
NETWORKS = {
    "star-7": ["star-greedy", "shortest"],
    "ms-3-2": ["shortest", "ms-balls-to-boxes", "ms-two-phase", "ms-star-emulation"],
    "ms-2-3": ["shortest", "ms-balls-to-boxes", "ms-two-phase", "ms-star-emulation"],
    "scc-6": ["scc-optimal", "scc-greedy", "scc-random"],
    "fccn-4": ["fccn-shortest", "fccn-sroute"],
    "borel-71": ["borel-table", "borel-cr", "borel-two-phase"],
    "hypercube-12": ["hypercube-ecube"],
    "ccc-9": ["ccc"],
}
MODELS = ("all-port", "one-port")
SETTINGS = {"warmup": 500, "measure": 1000, "drain": 500, "coarse": 5, "bisect": 4}
QUICK = {"warmup": 200, "measure": 500, "drain": 300, "coarse": 4, "bisect": 3}


def key(stem: str, router: str, model: str) -> str:
    return f"{stem}|{router}|{model}"


def measure(stem: str, router: str, model: str, ranks: int, settings: dict) -> dict:
    """One sweep under mpiexec; the compact result kept in the JSON."""
    job = ROOT / "jobs" / "compare" / f"{stem}.toml"
    args = [*launch_prefix(ranks), sys.executable, "-m", "mpinet", "sweep", str(job),
            "--set", f"router.name={router}", "--set", f"model.kind={model}",
            "--json", "--quiet"]  # fmt: skip
    for k, v in settings.items():
        args += [f"--{k}", str(v)]
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{stem} {router} {model}: exit {proc.returncode}\n{proc.stderr}")
    res = json.loads(proc.stdout)
    topo = from_spec(res["spec"])
    return {
        "stem": stem,
        "spec": res["spec"],
        "family": topo.family,
        "nodes": res["nodes"],
        "degree": topo.degree,
        "router": res["router"],
        "model": res["model"],
        "zero_load_latency": res["zero_load_latency"],
        "bound": {
            k: res["bound"][k]
            for k in (
                "ideal",
                "limited_by",
                "channel",
                "model_bound",
                "per_class",
                "method",
                "exact",
            )
        },  # fmt: skip
        "saturation": res["saturation"],
        "loads": len(res["points"]),
        "points": [
            {
                "offered": pt["offered"],
                "accepted": pt["accepted"],
                "stable": pt["stable"],
                "latency": pt["latency"]["mean"],
                "p99": pt["latency"]["p99"],
                "hops": pt["hops"]["mean"],
            }
            for pt in sorted(res["points"], key=lambda pt: pt["offered"])
        ],  # fmt: skip
        "checks_ok": all(pt["checks_ok"] for pt in res["points"]),
        "settings": settings,
        "ranks": ranks,
        "seconds": round(time.perf_counter() - t0, 1),
        # CPU of the busiest rank: the wall time on an otherwise idle machine, without launch
        "cpu_seconds": round(res["cpu_seconds"], 1),
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def structure(stem: str) -> dict:
    """Exact degree, diameter and mean distance of a job's network (``mpinet info``)."""
    spec = tomllib.loads((ROOT / "jobs" / "compare" / f"{stem}.toml").read_text())["topology"]
    proc = subprocess.run([sys.executable, "-m", "mpinet", "info", spec, "--json"],
                          capture_output=True, text=True, cwd=ROOT, check=True)  # fmt: skip
    d = json.loads(proc.stdout)
    return {"spec": d["spec"], "nodes": d["nodes"], "degree": d["degree"],
            "diameter": d["diameter"], "avg_distance": d["avg_distance_excl_source"]}  # fmt: skip


def plots(rows: list[dict], outdir: Path, save: Callable[..., None]) -> list[str]:
    """Latency against offered load (one line per network, its best router) per model,
    and all-port throughput per node against ports per node."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    names = []
    colors = dict(zip(NETWORKS, plt.get_cmap("tab10").colors, strict=False))
    for model in MODELS:
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        for stem in NETWORKS:
            r = best_row(rows, stem, model)
            if r is None:
                continue
            pts = r["points"]
            x = [pt["offered"] for pt in pts]
            y = [pt["latency"] for pt in pts]
            ax.plot(x, y, "-o", ms=3, color=colors[stem], label=f"{r['spec']} {r['router']}")
        ax.set_yscale("log")
        ax.set_xlabel("offered load (packets per node per step)")
        ax.set_ylabel("mean latency (steps)")
        ax.set_title(f"Uniform traffic, {model}, each network with its best router", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        name = f"latency-{model}.png"
        fig.tight_layout()
        save(fig, outdir / name, dpi=110)
        plt.close(fig)
        names.append(name)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for stem in NETWORKS:
        r = best_row(rows, stem, "all-port")
        if r is not None:
            ax.plot(r["degree"], r["saturation"]["throughput"], "o", color=colors[stem])
            ax.annotate(r["spec"], (r["degree"], r["saturation"]["throughput"]), fontsize=8,
                        xytext=(4, 3), textcoords="offset points")  # fmt: skip
    ax.set_xlabel("ports per node (degree)")
    ax.set_ylabel("saturation throughput (packets per node per step)")
    ax.set_title("All-port throughput against cost", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save(fig, outdir / "throughput-vs-degree.png", dpi=110)
    plt.close(fig)
    return [*names, "throughput-vs-degree.png"]


def render(data: dict, settings: dict, figures: list[str]) -> str:
    def order(r: dict) -> tuple:
        routers = NETWORKS[r["stem"]]
        at = routers.index(r["router"]) if r["router"] in routers else len(routers)
        return list(NETWORKS).index(r["stem"]), MODELS.index(r["model"]), at

    rows = sorted(data["runs"].values(), key=order)
    s = settings
    secs = sum(r["seconds"] for r in rows)
    cpu = sum(r.get("cpu_seconds", r["seconds"]) for r in rows)
    out = [
        "# Networks of about 5,000 nodes under load",
        "",
        "Generated by `python scripts/compare_report.py --ranks 2` from `docs/comparison.json`; "
        "do not edit (the claims and their rules are in `scripts/compare_claims.py`). "
        "Each row is one `mpinet sweep` of a job in [jobs/compare/](../jobs/compare/) with the "
        "row's router and model: uniform traffic (each packet to one of the N - 1 other nodes), "
        "Bernoulli injection, unbounded FIFO buffers, link capacity 1, seed 0; warm-up "
        f"{s['warmup']:,} steps, measurement window {s['measure']:,}, drain cap {s['drain']:,}, "
        f"{s['coarse']} coarse loads from 5 % to 120 % of the bound then {s['bisect']} "
        "bisections ([docs/sweeps.md](sweeps.md) defines every column). "
        f"The {len(rows)} sweeps took {secs / 60:.1f} minutes in all on "
        f"{rows[0]['ranks'] if rows else '-'} ranks of this two-core machine (wall time, "
        f"launches included); the busiest rank's CPU time was {cpu / 60:.1f} minutes.",
        "",
        "- **zero-load** latency: the mean route length of the router (steps), exact.",
        "- **bound**: from the router's own routes, the channel-load bound (all-port: a link "
        "carrying L packets per unit load saturates at 1 / L) or the node bound (one-port: a "
        "node sends one packet per step but forwards load x the sum of its links' L, so load "
        "<= 1 / mean hops on a vertex-transitive network); Bernoulli injection caps it at 1; "
        "(est.) marks a sampled estimate.",
        "- **saturation**: the load where the mean latency passes 3 x zero-load, accepted "
        "falls 5 % behind, or a link offered its capacity stays busy (the criterion that fired "
        "is in the column); **throughput**: the highest accepted rate of a stable load, packets "
        "per node per step.",
        "- **cost**: degree x nodes, the ports to build.",
        "",
        "| network | nodes | degree | cost | router | model | zero-load | bound (by) | "
        "saturation (by) | % of bound | throughput | % of bound |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b, sat = r["bound"], r["saturation"]
        load = "none" if not sat["found"] else f"{sat['load']:.4f} ({', '.join(sat['criteria'])})"
        exact = "" if b["exact"] else " (est.)"
        out.append(
            f"| `{r['spec']}` | {r['nodes']:,} | {r['degree']} | {r['degree'] * r['nodes']:,} | "
            f"`{r['router']}` | {r['model']} | {r['zero_load_latency']:.2f} | "
            f"{b['ideal']:.4f}{exact} ({b['limited_by']}) | {load} | "
            f"{_pct(sat['load_fraction_of_bound'])} | {sat['throughput']:.4f} | "
            f"{_pct(sat['throughput_fraction_of_bound'])} |"
        )
    out += ["", *(f"![{f}](figures/comparison/{f})" for f in figures), ""]
    out += cw.markdown(data, list(NETWORKS))
    nets = data["networks"]
    out += ["## The networks", "", "| network | nodes | degree | diameter | mean distance | "
            "degree x diameter |", "|---|---|---|---|---|---|"]  # fmt: skip
    for stem in NETWORKS:
        if stem in nets:
            n = nets[stem]
            out.append(f"| `{n['spec']}` | {n['nodes']:,} | {n['degree']} | {n['diameter']} | "
                       f"{n['avg_distance']:.3f} | {n['degree'] * n['diameter']} |")  # fmt: skip
    out += ["", "Exact, by BFS (`mpinet info SPEC`).", ""]
    out += ["## What the papers claim, and what the sweeps show", ""]
    out += claims_markdown(rows, nets)
    ok = all(r["checks_ok"] for r in rows)
    out.append(f"Engine checks at every load of every sweep: {'all passed' if ok else 'FAILED'}.")
    return "\n".join(out) + "\n"


def wormhole(data: dict, stems: list[str], ranks: int, path: Path, run: reports.Run) -> None:
    """Measure the missing wormhole entries of ``stems`` (compare_wormhole.py)."""
    runs, plans = data.setdefault("wormhole", {}), data.setdefault("wormhole_plans", {})
    for stem in stems:
        router = cw.router_for(list(data["runs"].values()), stem, NETWORKS[stem])
        if router is None:
            run.progress(f"{stem}: no all-port packet entry, no wormhole sweep")
            continue
        if stem not in data["networks"]:
            data["networks"][stem] = structure(stem)
        if plans.get(stem, {}).get("router") != router:
            plans[stem] = cw.plan(data["networks"][stem]["spec"], router)
        for pol, v in cw.runs_for(plans[stem]):
            k = cw.key(stem, router, pol, v)
            if runs.get(k, {}).get("settings") == cw.SETTINGS:
                continue
            r = runs[k] = cw.measure(stem, router, pol, v, ranks, cw.SETTINGS)
            sat = r["saturation"]
            run.progress(f"wormhole {k}: saturation {sat['load']} {sat['criteria']} throughput "
                         f"{sat['throughput']:.4f}; {r['seconds']} s")  # fmt: skip
            run.write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__.splitlines()[0], out=ROOT / "docs" / "comparison.md",
                           check=True)  # fmt: skip
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--only", help="comma list of job stems")
    ap.add_argument("--quick", action="store_true", help="shorter windows")
    ap.add_argument("--render", action="store_true", help="only rewrite the markdown")
    ap.add_argument("--fresh", action="store_true", help="measure every entry again")
    ap.add_argument("--wormhole", action="store_true",
                    help="measure only the wormhole entries (L = 8, V = 2, B = 4)")  # fmt: skip
    ap.add_argument("--json", default=str(ROOT / "docs" / "comparison.json"),
                    help="the measurements, kept between runs")  # fmt: skip
    a = ap.parse_args(argv)
    a.render = a.render or a.check  # a check measures nothing
    run = reports.Run(__file__, a, a.out)  # refused now, not after the sweeps
    if not a.check:
        reports.begin(__file__, a.json)
    settings = QUICK if a.quick else SETTINGS
    path = Path(a.json)
    data = json.loads(path.read_text()) if path.exists() and not a.fresh else {}
    data.setdefault("runs", {})
    data.setdefault("networks", {})
    stems = a.only.split(",") if a.only else list(NETWORKS)
    if not a.render and not a.wormhole:
        for stem in stems:
            data["networks"][stem] = structure(stem)
            for model in MODELS:
                for router in NETWORKS[stem]:
                    k = key(stem, router, model)
                    old = data["runs"].get(k, {})
                    if old.get("settings") == settings and "cpu_seconds" in old:
                        continue
                    r = data["runs"][k] = measure(stem, router, model, a.ranks, settings)
                    run.progress(f"{k}: saturation {r['saturation']['load']} throughput "
                                 f"{r['saturation']['throughput']:.4f} "
                                 f"({_pct(r['saturation']['throughput_fraction_of_bound'])} of "
                                 f"{r['bound']['ideal']:.4f}); {r['seconds']} s")  # fmt: skip
                    run.write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    if not a.render:
        wormhole(data, stems, a.ranks, path, run)
    figdir = Path(a.out).parent / "figures" / "comparison"
    figs = plots(list(data["runs"].values()), figdir, run.figure)
    run.write(a.out, render(data, settings, figs))
    if not a.check:
        print(f"wrote {a.out}")
    return run.finish()


if __name__ == "__main__":
    sys.exit(main())
