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
import math
import os
import re
import resource
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import booksim_kncube  # noqa: E402
import reports  # noqa: E402

BEGIN = "<!-- BEGIN scripts/booksim_check.py -->"
END = "<!-- END scripts/booksim_check.py -->"
SPECS = "scc:6,ms:3,2,hypercube:8,fccn:4"
#: the flit engine's options; {switching} {flits} {vcs} {vc_buffer} {vc_policy} filled in
FLIT_ARGS = (
    "--set model.switching={switching} --set model.flits={flits} --set model.vcs={vcs} "
    "--set model.vc_buffer={vc_buffer} --set model.vc_policy={vc_policy}"
)
#: BookSim's shallowest iq pipeline (docs/booksim.md): 2 cycles per router, 1 per link
PIPELINE = {
    "routing_delay": 0,  # lookahead routing: the route is computed one router ahead
    "vc_alloc_delay": 1,
    "sw_alloc_delay": 1,
    "speculative": 1,  # VC and switch allocation in the same cycle
    "st_prepare_delay": 0,
    "st_final_delay": 1,  # 0 fails an assertion in IQRouter::_SwitchUpdate
    "credit_delay": 0,
}
#: stop a BookSim run that warns of deadlock this often while draining (it would spin)
DRAIN_WARNINGS = 40
_NUM = r"(-?nan|-?inf|[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)"  # nan first: "-nan" is not "-"
_FIELDS = {
    "latency": "Packet latency average = ",
    "network_latency": "Network latency average = ",
    "injected": "Injected packet rate average = ",
    "accepted": "Accepted packet rate average = ",
    "accepted_flits": "Accepted flit rate average ?= ",
    "hops": "Hops average = ",
}


def booksim_config(net: str, flits: int, vcs: int, vc_buffer: int, a: argparse.Namespace) -> str:
    """The BookSim2 configuration (the injection rate goes on the command line)."""
    keys: dict = {
        "topology": "anynet",
        "network_file": net,
        "routing_function": "min",
        "traffic": "uniform",
        "injection_process": "bernoulli",
        "injection_rate_uses_flits": 0,  # packets per node per cycle, as mpinet's load
        "packet_size": flits,
        "num_vcs": vcs,
        "vc_buf_size": vc_buffer,
        **PIPELINE,
        "use_read_write": 0,
        "sim_type": "latency",
        "sample_period": a.sample_period,
        "warmup_periods": a.warmup_periods,
        "max_samples": a.max_samples,
        "latency_thres": a.latency_thres,
        "seed": a.seed,
    }
    keys.update(kv.split("=", 1) for kv in a.booksim_set)  # --booksim-set: ablations
    return "".join(f"{k} = {v};\n" for k, v in keys.items())


def parse_booksim(text: str) -> dict:
    """What one BookSim2 run printed: its overall statistics, else its last sample's.

    ``status``: ``converged``, ``latency_thres`` (mean over it), ``unconverged``
    (``max_samples`` reached), ``deadlock`` (warned while draining), ``incomplete``.
    """
    parts = text.split("====== Overall Traffic Statistics ======")
    body = parts[-1] if len(parts) > 1 else text
    out: dict = {}
    for key, label in _FIELDS.items():
        hits = re.findall(label + _NUM, body)
        out[key] = float(hits[-1]) if hits else math.nan
    warm = text.split("Warmed up ...")
    out["measured_samples"] = warm[-1].count("Class 0:") if len(warm) > 1 else 0
    cyc = re.search(r"Time taken is (\d+) cycles", text)
    out["cycles"] = int(cyc.group(1)) if cyc else None
    run = re.search(r"Total run time " + _NUM, text)
    out["run_seconds"] = float(run.group(1)) if run else None
    out["deadlock_warnings"] = text.count("Possible network deadlock")
    if len(parts) > 1:
        out["status"] = "converged"
    elif "Aborting simulation" in text:
        out["status"] = "latency_thres"
    elif "Too many sample periods needed to converge" in text:
        out["status"] = "unconverged"
    elif "Draining remaining packets" in text and out["deadlock_warnings"]:
        out["status"] = "deadlock"
    else:
        out["status"] = "incomplete"
    return out


def run_booksim(cfg: Path, rate: float, a: argparse.Namespace, nice: int) -> dict:
    """Run BookSim2 at ``rate`` (address space capped); its output is kept beside ``cfg``."""

    def limit() -> None:  # anynet's routing table is N maps of N entries (ms:3,2: 1.6 GB)
        cap = int(a.mem_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        os.nice(nice)

    t0, expired = time.perf_counter(), threading.Event()
    cmd = [a.booksim, cfg.name, f"injection_rate={rate!r}"]
    proc = subprocess.Popen(cmd, cwd=cfg.parent, stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.STDOUT, preexec_fn=limit)  # fmt: skip
    timer = threading.Timer(a.timeout, lambda: (expired.set(), proc.kill()))
    timer.start()
    lines, draining, warned = [], False, 0
    try:
        for line in proc.stdout:
            lines.append(line)
            draining = draining or line.startswith("Draining remaining packets")
            warned += draining and "Possible network deadlock" in line
            if warned == DRAIN_WARNINGS:
                proc.kill()
        proc.wait()
    finally:
        timer.cancel()
    text = "".join(lines)
    (cfg.parent / f"{cfg.stem}-r{rate:.6g}.out").write_text(text)
    row = parse_booksim(text)
    if row["status"] != "converged" and proc.returncode not in (0, 255):  # 255: BookSim's ok
        row["status"] = "timeout" if expired.is_set() else row["status"]
        row["status"] = "deadlock" if warned >= DRAIN_WARNINGS else row["status"]
    row.update(offered=rate, wall_seconds=round(time.perf_counter() - t0, 2))
    return row


def booksim_verdict(row: dict, zero: float, nodes: int, a: argparse.Namespace) -> list[str]:
    """The criteria a BookSim probe fails: its own status, then mpinet sweep's rule."""
    why = [] if row["status"] == "converged" else [row["status"]]
    lat, acc = row["latency"], row["accepted"]
    window = max(1, row["measured_samples"]) * a.sample_period
    in_flight = row["offered"] * nodes * (lat if math.isfinite(lat) else 0.0)
    noise = 3 * math.sqrt(2 * in_flight) / (nodes * window)  # as mpinet sweep's verdict
    if not math.isfinite(acc) or acc < (1 - a.accept_tol) * row["offered"] - noise:
        why.append("throughput")
    if not math.isfinite(lat) or lat > a.latency_factor * zero:
        why.append("latency")
    return why


def mpinet(args: list[str], timeout: float, check: bool = True) -> subprocess.CompletedProcess:
    """One mpinet command from the checkout (exit 1, a check failed, is an answer)."""
    cmd = [sys.executable, "-m", "mpinet", *args]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode not in (0, 1):
        sys.exit(f"booksim_check.py: error: mpinet {shlex.join(args)}: {p.stderr.strip()}")
    return p


def model_args(a: argparse.Namespace, flits: int, flit: bool) -> list[str]:
    """mpinet's model options: the flit engine's keys, else V x B packet slots per port;
    ``--router iq``: BookSim's input-queued router (``model.router = "iq"``) with the
    pipeline and ``--booksim-set`` keys BookSim's side runs (``[model.iq]``)."""
    if not flit:
        return ["--buffer", str(a.vcs * a.vc_buffer)]
    keys = {"switching": a.switching, "flits": flits, "vcs": a.vcs, "vc_buffer": a.vc_buffer}
    out = shlex.split(a.flit_args.format(**keys, vc_policy=a.vc_policy))
    if a.router == "iq":  # BookSim's router on mpinet's side, with BookSim's side's keys
        iq = {**PIPELINE, **dict(kv.split("=", 1) for kv in a.booksim_set)}
        out += ["--set", "model.router=iq"]
        out += [x for k, v in iq.items() for x in ("--set", f"model.iq.{k}={v}")]
    return out


def flit_engine(a: argparse.Namespace, flits: int) -> bool:
    """Whether mpinet's side of an L-flit row runs on the flit engine."""
    return flits > 1 or not a.packet_engine


def mpinet_sweep(spec: str, flits: int, bound: float, flit: bool, a: argparse.Namespace) -> dict:
    """``mpinet sweep`` on the grid of fractions of its own bound (packets per node per step;
    ``bound`` is the packet channel bound, a flit link carries 1 / L of it), and once at
    ``--zero-load`` x that bound (``zero``: its one point)."""
    lo, hi = a.grid[0] * bound / flits, a.grid[-1] * bound / flits
    args = ["sweep", "--topology", spec, "--router", "anynet-min", "--workload", "uniform"]
    common = ["--warmup", str(a.warmup_periods * a.sample_period)]
    common += ["--measure", str(a.max_samples * a.sample_period), "--seed", str(a.seed)]
    common += ["--accept-tol", str(a.accept_tol), "--latency-factor", str(a.latency_factor)]
    common += ["--json", "--quiet", *model_args(a, flits, flit)]
    search = [*args, "--rates", f"{lo:.6g}:{hi:.6g}:auto", "--coarse", str(len(a.grid))]
    search += ["--bisect", str(a.bisect), *common]
    t0 = time.perf_counter()
    doc = json.loads(mpinet(search, a.timeout).stdout)
    doc.update(wall_seconds=round(time.perf_counter() - t0, 1), command=shlex.join(search))
    sw = doc.get("switching")
    if flit and (sw is None or sw["flits"] != flits):  # the row would compare the wrong model
        sys.exit(f"booksim_check.py: error: mpinet sweep did not run {flits}-flit packets on "
                 f"the flit engine: {shlex.join(search)}")  # fmt: skip
    zero = [*args, "--rates", f"{a.zero_load * bound / flits:.6g}", *common]
    doc["zero"] = json.loads(mpinet(zero, a.timeout).stdout)["points"][0]
    return doc


def anynet_bound(spec: str) -> tuple[int, float, float]:
    """``(N, channel bound, mean route length)`` of uniform traffic under ``anynet-min``."""
    sys.path.insert(0, str(ROOT))
    from mpinet.routing import make_router
    from mpinet.routing.channel_load import uniform_load
    from mpinet.topology import from_spec

    topo = from_spec(spec)
    cl = uniform_load(topo, make_router("anynet-min", topo))
    return topo.num_nodes, 1.0 / float(cl.load.max()), float(cl.mean_hops)


class BookSim:
    """The BookSim2 runs of one work directory, cached by their parameters."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a, self.dir = a, Path(a.workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cache_path = self.dir / "cache.json"
        self.cache = json.loads(self.cache_path.read_text()) if self.cache_path.exists() else {}

    def nodes(self, spec: str) -> int:
        sys.path.insert(0, str(ROOT))
        from mpinet.topology import from_spec

        return from_spec(spec).num_nodes

    def config(self, spec: str, flits: int) -> Path:
        """Export ``spec`` once and write its configuration (BookSim's parser wants plain names)."""
        safe = re.sub(r"[^A-Za-z0-9]+", "-", spec)
        net = self.dir / f"{safe}.anynet"
        if not net.exists():
            mpinet(["export", spec, "--format", "anynet", "--out", str(net)], self.a.timeout)
        tag = "".join("-" + re.sub(r"[^A-Za-z0-9]+", "", kv) for kv in self.a.booksim_set)
        cfg = self.dir / f"{safe}-L{flits}-V{self.a.vcs}-B{self.a.vc_buffer}{tag}.cfg"
        cfg.write_text(booksim_config(net.name, flits, self.a.vcs, self.a.vc_buffer, self.a))
        return cfg

    def probe(
        self, spec: str, flits: int, rate: float, timed: bool = False, fresh: bool = False
    ) -> dict:
        """One run, cached; a ``timed`` one runs at niceness 0 (a separate entry); ``fresh``
        runs it again whatever the cache holds (a speed table's window)."""
        a = self.a
        key = json.dumps([spec, flits, a.vcs, a.vc_buffer, round(rate, 12), a.sample_period,
                          a.warmup_periods, a.max_samples, a.latency_thres, a.seed,
                          sorted(a.booksim_set)] + (["timed"] if timed else []))  # fmt: skip
        if fresh or key not in self.cache:
            row = run_booksim(self.config(spec, flits), rate, a, 0 if timed else a.nice)
            print(f"  booksim {spec} L={flits} load {rate:.5g}: {row['status']}, latency "
                  f"{row['latency']:.1f}, accepted {row['accepted']:.5g}, "
                  f"{row['wall_seconds']:.0f} s", file=sys.stderr, flush=True)  # fmt: skip
            self.cache[key] = row
            tmp = self.cache_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.cache, indent=1))
            tmp.replace(self.cache_path)
        return dict(self.cache[key])

    def search(self, spec: str, flits: int, n: int, bound: float) -> dict:
        """The zero-load probe, the grid upwards to the first saturated load, bisection."""
        a, points = self.a, []
        zero = self.probe(spec, flits, round(a.zero_load * bound, 12))

        def stable(rate: float) -> bool:
            row = self.probe(spec, flits, rate)
            row["saturated_by"] = booksim_verdict(row, zero["latency"], n, a)
            points.append(row)
            return not row["saturated_by"]

        lo, hi = 0.0, None
        for f in a.grid:
            if not stable(round(f * bound, 12)):
                hi = round(f * bound, 12)
                break
            lo = round(f * bound, 12)
        for _ in range(a.bisect if hi is not None else 0):
            mid = round((lo + hi) / 2, 12)
            lo, hi = (mid, hi) if stable(mid) else (lo, mid)
        first = [p for p in points if p["saturated_by"] and p["offered"] == hi]
        return {
            "bound": bound, "zero": zero, "points": sorted(points, key=lambda p: p["offered"]),
            "load": (lo + hi) / 2 if hi is not None else None,
            "throughput": max((p["accepted"] for p in points if not p["saturated_by"]),
                              default=math.nan),
            "criteria": first[0]["saturated_by"] if first else [],
            "seconds": round(sum(p["wall_seconds"] for p in [zero, *points]), 1),
        }  # fmt: skip


def speed(
    bs: BookSim, spec: str, flits: int, rate: float, flit: bool, mpinet_only: dict | None = None
) -> dict:
    """BookSim and mpinet once at ``rate`` for the same cycles: wall time, flit-hops/s
    (``mpinet_only``: BookSim's run already made, mpinet alone)."""
    a, n = bs.a, bs.nodes(spec)
    row = mpinet_only or bs.probe(spec, flits, rate, timed=True)
    out = {"spec": spec, "flits": flits, "rate": rate, "booksim": row}
    if row["cycles"] is None:
        return out
    # ejected flits x router-to-router hops (BookSim's hops count routers; self packets 1)
    out["booksim_flit_hops"] = row["accepted_flits"] * n * row["cycles"] * (row["hops"] - 1)
    args = ["run", "--topology", spec, "--router", "anynet-min", "--seed", str(a.seed)]
    args += ["--set", "workload.injection=bernoulli", "--set", f"workload.steps={row['cycles']}"]
    # mpinet's uniform excludes the source: the same link traffic at rate x (N - 1) / N
    args += ["--set", f"workload.rate={rate * (n - 1) / n:.9g}", "--json"]
    args += (
        [f"--set=model.buffer={a.vcs * a.vc_buffer}"] if not flit else model_args(a, flits, True)
    )
    t0 = time.perf_counter()
    doc = json.loads(mpinet(args, a.timeout).stdout)
    hops = doc["stats"].get("flit_hops", doc["stats"]["transmissions"])  # flits, once counted
    out.update(mpinet_wall_seconds=round(time.perf_counter() - t0, 2), command=shlex.join(args))
    out.update(mpinet_engine_seconds=doc["engine_seconds"], mpinet_flit_hops=hops)
    return out


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "—" if x is None or not math.isfinite(x) else format(x, fmt)


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
                f"{r['mean_hops'] + fl - 1:.2f} / {_f(zero, '.2f')}",
                f"{ml:.4g} ({ml / bound:.2f})" if ml else f"> {m['points'][-1]['offered']:.4g}",
                _f(ml / bl if ml and bl else None, ".2f"),
                ",".join(sat["criteria"]) or "—",
                _f(sat["throughput"], ".4g"),
                f"{m['wall_seconds']:.0f} / {b['seconds']:.0f}",
            ]
        out.append(
            f"| `{r['spec']}` | {fl} | {r['mean_hops']:.3f} | {cells[0]} "
            f"| {closed:.2f} / {b['zero']['latency']:.2f} "
            f"| {r['bound'] / fl:.4g} / {b['bound']:.4g} | {cells[1]} | {bsat} | {cells[2]} "
            f"| {cells[3]} / {','.join(b['criteria']) or '—'} "
            f"| {cells[4]} / {_f(b['throughput'], '.4g')} | {cells[5]} |"
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
            f"| {b['wall_seconds']:.1f} ({_f(b['run_seconds'], '.1f')}) "
            f"| {_f(brun and brun / 1e6)} | {_f(s.get('mpinet_wall_seconds'), '.1f')} "
            f"({_f(s.get('mpinet_engine_seconds'), '.2f')}) | {_f(meng and meng / 1e6)} "
            f"| {ratio} |"
        )
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
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
    add("--speed-period", type=int, default=500, help="--speed-table's sample_period (500)")
    add("--speed-timeout", type=float, default=1200.0,
        help="--speed-table: seconds per run, BookSim's setup included (1200)")  # fmt: skip
    add("--booksim-set", action="append", default=[], help="KEY=VALUE for BookSim (ablations)")
    add("--timeout", type=float, default=7200.0, help="seconds per run (default 7200)")
    add("--nice", type=int, default=10, help="niceness of the searches' BookSim runs")
    add("--mem-gb", type=float, default=8.0, help="BookSim's address-space cap (GiB)")
    add("--workdir", default="/tmp/booksim_check", help="exports, configs, outputs, cache")
    add("--out", default=str(ROOT / "docs" / "booksim.md"))
    booksim_kncube.add_args(add)
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
    if a.keys:  # no simulation: BookSim is not needed
        reports.begin(__file__, a.out)
        return booksim_kncube.keys_main(a)
    if not os.access(a.booksim, os.X_OK):
        sys.exit(f"booksim_check.py: error: --booksim {a.booksim} is not an executable file")
    if a.speed_table:
        import booksim_speed

        return booksim_speed.main(a)
    if a.kncube or a.meshconfig:  # BookSim's own mesh and torus, on both simulators
        reports.begin(__file__, a.out)
        return booksim_kncube.meshconfig_main(a) if a.meshconfig else booksim_kncube.kncube_main(a)
    reports.begin(__file__, a.out)
    bs, t0 = BookSim(a), time.perf_counter()
    rows, speeds = [], []
    bounds = {spec: anynet_bound(spec) for spec in dict.fromkeys(s for s, _ in a.rows)}
    for spec, flits in a.rows:
        n, bound, hops = bounds[spec]
        print(f"{spec} L={flits}: bound {bound:.4g}, mean hops {hops:.3f}", file=sys.stderr)
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
        f"{time.perf_counter() - t0:.0f} s; BookSim runs cached in {a.workdir}): V = {a.vcs}, "
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
    path = Path(a.out)
    doc = path.read_text() if path.exists() else f"# BookSim2\n\n{BEGIN}\n{END}\n"
    if BEGIN not in doc or END not in doc:
        sys.exit(f"booksim_check.py: error: {path} lacks the markers {BEGIN} / {END}")
    before, rest = doc.split(BEGIN, 1)
    text = "\n".join(body)
    reports.write(path, f"{before}{BEGIN}\n{text}\n{END}{rest.split(END, 1)[1]}", __file__)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
