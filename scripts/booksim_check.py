#!/usr/bin/env python3
"""BookSim2 and mpinet side by side: zero-load latency, saturation and speed (docs/booksim.md).

Per network and packet length L: export the network (``mpinet export --format anynet``),
write a BookSim2 configuration with matching parameters (L flits, V VCs of B flits,
uniform Bernoulli traffic, anynet ``min`` routing, the shallowest pipeline: lookahead
routing, VC and switch allocation speculatively in one cycle, one cycle of switch
traversal), run BookSim at a low load (zero-load latency) and on a grid of loads
(fractions of the channel bound of anynet's routes) upwards to the first saturated one,
then bisect. mpinet runs ``mpinet sweep --router anynet-min`` on the same fractions of its
own bound (the flit channel bound: the packet bound / L) on the flit engine, with
``--flit-args`` (``--set model.switching=wormhole --set model.flits=L --set model.vcs=V
--set model.vc_buffer=B --set model.vc_policy=any`` by default: any VC in any order, as
anynet's ``min``), at every L; ``--packet-engine`` runs the L = 1 rows on the packet engine
with ``--buffer V*B`` instead (no VCs). Both also run once at ``--zero-load`` x their bound
(the measured zero-load latency). One rule for both: a load is saturated when its mean
latency exceeds F x the zero-load latency, when accepted < (1 - T) x offered, or when the
run does not finish (BookSim: ``latency_thres`` passed, not converged in ``max_samples``,
or deadlocked while draining; mpinet: its sweep's verdict, with ``deadlocked`` for a VC
deadlock). ``--speed SPEC:L:RATE`` runs both once at that load for the same cycles: wall
time and flit-hops per second. BookSim runs are cached in ``WORKDIR/cache.json``; its
outputs are kept there too. BookSim2 is never vendored.

    python scripts/booksim_check.py --booksim /work/booksim/build/booksim \\
        [--specs hypercube:8,scc:6] [--flits 1,4,16] [--speed 'ms:3,2:16:0.005'] [--out FILE]

``--kncube`` (the mesh:8,2 and torus:8,2 rows, meshconfig's keys, ``--rows`` a subset,
``--router ideal|iq`` mpinet's side) and ``--meshconfig`` (meshconfig itself on both, timed):
scripts/booksim_kncube.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import booksim_iq  # noqa: E402
import booksim_kncube  # noqa: E402
import booksim_speed  # noqa: E402
import reports  # noqa: E402
from booksim_runs import BookSim, anynet_bound, cell, flit_engine, mpinet_sweep, speed  # noqa: E402

BEGIN = "<!-- BEGIN scripts/booksim_check.py -->"
END = "<!-- END scripts/booksim_check.py -->"
SPECS = "scc:6,ms:3,2,hypercube:8,fccn:4"
#: the flit engine's options; {switching} {flits} {vcs} {vc_buffer} {vc_policy} filled in
FLIT_ARGS = (
    "--set model.switching={switching} --set model.flits={flits} --set model.vcs={vcs} "
    "--set model.vc_buffer={vc_buffer} --set model.vc_policy={vc_policy}"
)


def booksim_zero_load(hops: float, flits: int, vc_buffer: int) -> float:
    """BookSim's zero-load latency with the shallowest pipeline (docs/booksim.md).

    ``3 H + 5`` for the head; the body follows one flit per cycle while a VC of B flits
    covers the credit round trip (5 cycles: ST, link, VA+SA, credit link, and the cycle
    the credit is read), else B flits per round trip.
    """
    rtt, body = 5, flits - 1
    serial = body if vc_buffer >= rtt else rtt * (body // vc_buffer) + body % vc_buffer
    return 3 * hops + 5 + serial


def results_table(rows: list[dict], vc_buffer: int) -> list[str]:
    """One row per (network, L): zero-load latency, saturation (x own bound), their ratio."""
    out = [
        "| network | L | mean hops H | zero-load mpinet: H+L-1 / measured "
        "| zero-load BookSim: 3H'+5+S / measured "
        "| bound mpinet / BookSim | saturation mpinet (x bound) | saturation BookSim (x bound) "
        "| ratio | fired first: mpinet / BookSim | sustained mpinet / BookSim | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        b, m, n, fl = r["booksim"], r.get("mpinet"), r["nodes"], r["flits"]
        bl = b["load"]
        bsat = f"{bl:.4g} ({bl / b['bound']:.2f})" if bl else f"> {b['points'][-1]['offered']:.4g}"
        closed = booksim_zero_load(r["mean_hops"] * (n - 1) / n, fl, vc_buffer)
        cells = ["—"] * 5 + [f"— / {b['seconds']:.0f}"]
        if m is not None:
            sat, bound = m["saturation"], r["bound"] / fl
            ml = sat["load"]
            zero = m.get("zero", {}).get("latency", {}).get("mean")
            cells = [
                f"{r['mean_hops'] + fl - 1:.2f} / {cell(zero, '.2f')}",
                f"{ml:.4g} ({ml / bound:.2f})" if ml else f"> {m['points'][-1]['offered']:.4g}",
                cell(ml / bl if ml and bl else None, ".2f"),
                ",".join(sat["criteria"]) or "—",
                cell(sat["throughput"], ".4g"),
                f"{m['wall_seconds']:.0f} / {b['seconds']:.0f}",
            ]
        out.append(
            f"| `{r['spec']}` | {fl} | {r['mean_hops']:.3f} | {cells[0]} "
            f"| {closed:.2f} / {b['zero']['latency']:.2f} "
            f"| {r['bound'] / fl:.4g} / {b['bound']:.4g} | {cells[1]} | {bsat} | {cells[2]} "
            f"| {cells[3]} / {','.join(b['criteria']) or '—'} "
            f"| {cells[4]} / {cell(b['throughput'], '.4g')} | {cells[5]} |"
        )
    return out


def speed_table(speeds: list[dict]) -> list[str]:
    """Wall time and flit-hops per second of both simulators on the same run."""
    out = [
        "| network | L | load | cycles | BookSim s: wall (run) | BookSim M flit-hops/s "
        "| mpinet s: wall (engine) | mpinet M flit-hops/s | ratio: engine / wall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in speeds:
        b, bfh, mfh = s["booksim"], s.get("booksim_flit_hops"), s.get("mpinet_flit_hops")
        brun = bfh / b["run_seconds"] if bfh and b["run_seconds"] else None
        meng = mfh / s["mpinet_engine_seconds"] if mfh else None
        ratio = "—"
        if brun and meng:
            wall = (mfh / s["mpinet_wall_seconds"]) / (bfh / b["wall_seconds"])
            ratio = f"{meng / brun:.0f} / {wall:.0f}"
        out.append(
            f"| `{s['spec']}` | {s['flits']} | {s['rate']:.4g} | {b['cycles'] or '—'} "
            f"| {b['wall_seconds']:.1f} ({cell(b['run_seconds'], '.1f')}) "
            f"| {cell(brun and brun / 1e6)} | {cell(s.get('mpinet_wall_seconds'), '.1f')} "
            f"({cell(s.get('mpinet_engine_seconds'), '.2f')}) | {cell(meng and meng / 1e6)} "
            f"| {ratio} |"
        )
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = reports.arguments(__doc__, out=ROOT / "docs" / "booksim.md", check=True,
                           out_help="the page whose blocks are rewritten")  # fmt: skip
    add = ap.add_argument
    add("--booksim", default="", help="the BookSim2 binary (built outside the repository)")
    add("--specs", default=SPECS, help=f"networks (default {SPECS})")
    add("--flits", default="1", help="packet lengths L, comma-separated (default 1)")
    add("--extra", default="", help="more rows, SPEC:L;... (e.g. 'ms:3,2:16')")
    add("--vcs", type=int, default=2, help="V, VCs per link (default 2)")
    add("--vc-buffer", type=int, default=4, help="B, flits per VC (default 4)")
    add("--switching", default="wormhole", help="mpinet's switching (flit engine)")
    add("--vc-policy", default="any", help="mpinet's VC policy (anynet: any VC, any order)")
    add("--flit-args", default=FLIT_ARGS, help="mpinet's flit-engine options, a template")
    add(
        "--packet-engine",
        action="store_true",
        help="L = 1 rows on mpinet's packet engine (--buffer V*B; L > 1: the flit engine)",
    )
    add("--sample-period", type=int, default=500, help="BookSim's (mpinet: the same cycles)")
    add("--warmup-periods", type=int, default=2)
    add("--max-samples", type=int, default=6)
    add("--latency-thres", type=float, default=500.0)
    add("--grid", default="0.2:1.2:6", help="LO:HI:N fractions of each one's bound")
    add("--bisect", type=int, default=2)
    add("--zero-load", type=float, default=0.02, help="BookSim's zero-load probe, x bound")
    add("--latency-factor", type=float, default=3.0)
    add("--accept-tol", type=float, default=0.05)
    add("--seed", type=int, default=0)
    add("--speed", default="", help="SPEC:L:RATE;... both once at RATE (packets/node/cycle)")
    add(
        "--speed-table",
        action="store_true",
        help="BookSim once and mpinet twice on every --specs network at --speed-load x its "
        "flit bound, L in --speed-flits; the table between docs/booksim.md's speed markers",
    )
    add("--speed-flits", default="1,16", help="--speed-table's packet lengths (1,16)")
    add("--speed-load", type=float, default=0.4, help="--speed-table's load, x bound (0.4)")
    add("--speed-loads", default="", help="--speed-table: SPEC:L=X;... a row's load, x bound")
    add("--speed-step", type=float, default=0.75,
        help="--speed-table: a row past BookSim's saturation again at x this (0.75)")  # fmt: skip
    add("--speed-min-load", type=float, default=0.2, help="--speed-step's lowest load (0.2)")
    add("--speed-from", default="", help="--speed-table: FILE,... rows of earlier runs' "
        "speed_table.json in one block, no simulation")  # fmt: skip
    add("--speed-data", default=str(ROOT / "docs" / "data" / "booksim_speed.json"),
        help="--speed-table: the rows kept, each with its time "
        "(docs/data/booksim_speed.json)")  # fmt: skip
    add("--speed-period", type=int, default=500, help="--speed-table's sample_period (500)")
    add("--speed-timeout", type=float, default=3600.0,
        help="--speed-table: seconds per run, BookSim's setup included (3600)")  # fmt: skip
    add("--booksim-set", action="append", default=[], help="KEY=VALUE for BookSim (ablations)")
    add("--timeout", type=float, default=7200.0, help="seconds per run (default 7200)")
    add("--nice", type=int, default=10, help="niceness of the searches' BookSim runs")
    add("--mem-gb", type=float, default=8.0, help="BookSim's address-space cap (GiB)")
    add("--workdir", default="/tmp/booksim_check", help="exports, configs, outputs, cache")
    booksim_kncube.add_args(add)
    booksim_iq.add_args(add)
    a = ap.parse_args(argv)
    booksim_kncube.fix_args(a)
    lo, hi, k = a.grid.split(":")
    a.grid = [float(x) for x in np.linspace(float(lo), float(hi), int(k))]
    a.specs = re.findall(r"[a-z]+:[0-9+]+(?:,[0-9+]+)*", a.specs)
    a.flits = [int(x) for x in a.flits.split(",")]
    a.speed_flits = [int(x) for x in a.speed_flits.split(",")]
    a.rows = [(s, f) for s in a.specs for f in a.flits]
    a.rows += [(s, int(f)) for s, f in (x.rsplit(":", 1) for x in a.extra.split(";") if x)]
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.check and not a.keys:  # the other tables are measured: no run makes them again
        print("booksim_check.py: error: --check goes with --keys only (the other tables are "
              "measured, not computed)", file=sys.stderr)  # fmt: skip
        return 2
    run = reports.Run(__file__, a, a.out)
    if a.keys:  # no simulation: BookSim is not needed
        booksim_kncube.keys_main(a, run)
        return run.finish()
    if a.import_results or a.iq_from:  # no simulation: stored BookSim side; combined rows
        return booksim_iq.main(a, run)
    if not os.access(a.booksim, os.X_OK) and a.booksim_runs != "none" and not a.speed_from:
        run.fail(f"--booksim {a.booksim} is not an executable file", 2)
    if a.speed_table:
        return booksim_speed.main(a, run)
    if a.kncube or a.meshconfig:  # BookSim's own mesh and torus, on both simulators
        return (
            booksim_kncube.meshconfig_main(a, run)
            if a.meshconfig
            else booksim_kncube.kncube_main(a, run)
        )
    if a.router == "iq":  # the anynet rows on BookSim's router model: mpinet booksim
        return booksim_iq.main(a, run)
    doc = run.text(a.out, (BEGIN, END), default=f"# BookSim2\n\n{BEGIN}\n{END}\n")
    bs = BookSim(a, run.progress)
    rows, speeds = [], []
    bounds = {spec: anynet_bound(spec) for spec in dict.fromkeys(s for s, _ in a.rows)}
    for spec, flits in a.rows:
        n, bound, hops = bounds[spec]
        run.progress(f"{spec} L={flits}: bound {bound:.4g}, mean hops {hops:.3f}")
        row = {"spec": spec, "nodes": n, "flits": flits, "bound": bound, "mean_hops": hops}
        row["booksim"] = bs.search(spec, flits, n, bound * n / (n - 1) / flits)
        row["mpinet"] = mpinet_sweep(spec, flits, bound, flit_engine(a, flits), a)
        rows.append(row)
    for item in filter(None, a.speed.split(";")):
        spec, flits, rate = item.rsplit(":", 2)
        speeds.append(speed(bs, spec, int(flits), float(rate), flit_engine(a, int(flits))))
    (bs.dir / "results.json").write_text(json.dumps({"rows": rows, "speeds": speeds}, indent=1))
    head = (
        f"Generated by `python scripts/booksim_check.py` ({time.strftime('%Y-%m-%d')}, "
        f"{run.seconds():.0f} s; BookSim runs cached in {a.workdir}): V = {a.vcs}, "
        f"B = {a.vc_buffer}; BookSim `sample_period` {a.sample_period}, `warmup_periods` "
        f"{a.warmup_periods}, `max_samples` {a.max_samples}; mpinet `--warmup "
        f"{a.warmup_periods * a.sample_period} --measure {a.max_samples * a.sample_period}`; "
        f"loads {a.grid[0]:g}..{a.grid[-1]:g} x bound in {len(a.grid)} steps, {a.bisect} "
        f"bisections; mpinet: the flit engine ({a.switching}, vc_policy {a.vc_policy}, router "
        f"{a.router}) "
        + ("at L > 1, the packet engine with `--buffer "
           f"{a.vcs * a.vc_buffer}` at L = 1." if a.packet_engine else "at every L.")
    )  # fmt: skip
    body = [head, ""] + (results_table(rows, a.vc_buffer) if rows else [])
    body += ["", *speed_table(speeds)] if speeds else []
    text = "\n".join(body)
    run.write(a.out, run.block(doc, BEGIN, END, text))
    print(text)
    return run.finish()


if __name__ == "__main__":
    sys.exit(main())
