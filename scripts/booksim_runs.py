"""The two simulators' runs for ``booksim_check.py``: BookSim2's configuration, its runs
(address space capped, stopped when it spins in a deadlock), its printed statistics read
back and cached per work directory; mpinet's side (``mpinet sweep`` and ``mpinet run`` with
the model options of a row) and the rule both are judged by.

Part of ``scripts/booksim_check.py`` (its tables and its command line); also used by
``booksim_speed.py`` and ``booksim_kncube.py``.
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
from collections.abc import Callable
from pathlib import Path

import booksim_data

ROOT = Path(__file__).resolve().parent.parent

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

    def __init__(self, a: argparse.Namespace, progress: Callable[[str], None] | None = None):
        self.a, self.dir = a, Path(a.workdir)
        self.progress = progress or (lambda m: print(m, file=sys.stderr, flush=True))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cache_path = self.dir / "cache.json"  # timed runs: a window's, not kept
        self.cache = json.loads(self.cache_path.read_text()) if self.cache_path.exists() else {}
        self.data_path = Path(getattr(a, "data", None) or booksim_data.DATA)
        self.data = booksim_data.load(self.data_path)

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

    def config_text(self, spec: str, flits: int) -> str:
        """The configuration :meth:`config` writes (its ``network_file`` left out)."""
        return booksim_config("", flits, self.a.vcs, self.a.vc_buffer, self.a)

    def stored(self, spec: str, flits: int, rate: float) -> dict | None:
        """The run at ``rate`` from the data file, if it is there."""
        key = booksim_data.run_key(spec, self.config_text(spec, flits), rate)
        row = self.data["runs"].get(key)
        return None if row is None else dict(row)

    def probe(
        self, spec: str, flits: int, rate: float, timed: bool = False, fresh: bool = False
    ) -> dict:
        """One run, cached; a ``timed`` one runs at niceness 0 (a separate entry); ``fresh``
        runs it again whatever the cache holds (a speed table's window)."""
        a = self.a
        if not timed:  # kept in the data file, keyed by the whole configuration
            key = booksim_data.run_key(spec, self.config_text(spec, flits), rate)
            if fresh or key not in self.data["runs"]:
                row = self._run(spec, flits, rate, a.nice)
                row["measured"] = booksim_data.now()
                self.data = booksim_data.save(self.data_path, {key: row})
            return dict(self.data["runs"][key])
        key = json.dumps([spec, flits, a.vcs, a.vc_buffer, round(rate, 12), a.sample_period,
                          a.warmup_periods, a.max_samples, a.latency_thres, a.seed,
                          sorted(a.booksim_set), "timed"])  # fmt: skip
        if fresh or key not in self.cache:
            self.cache[key] = self._run(spec, flits, rate, 0)
            tmp = self.cache_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.cache, indent=1))
            tmp.replace(self.cache_path)
        return dict(self.cache[key])

    def _run(self, spec: str, flits: int, rate: float, nice: int) -> dict:
        row = run_booksim(self.config(spec, flits), rate, self.a, nice)
        self.progress(f"booksim {spec} L={flits} load {rate:.5g}: {row['status']}, "
                      f"latency {row['latency']:.1f}, accepted {row['accepted']:.5g}, "
                      f"{row['wall_seconds']:.0f} s")  # fmt: skip
        return row

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


def run_args(a: argparse.Namespace, spec: str, flits: int, rate: float, cycles: int,
             flit: bool) -> list[str]:  # fmt: skip
    """``mpinet run``'s arguments for a speed row: ``rate`` in mpinet's packets per node per
    step (its uniform excludes the source), ``cycles`` steps, the row's model."""
    args = ["run", "--topology", spec, "--router", "anynet-min", "--seed", str(a.seed)]
    args += ["--set", "workload.injection=bernoulli", "--set", f"workload.steps={cycles}"]
    args += ["--set", f"workload.rate={rate:.9g}", "--json"]
    args += (
        [f"--set=model.buffer={a.vcs * a.vc_buffer}"] if not flit else model_args(a, flits, True)
    )
    return args


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
    # mpinet's uniform excludes the source: the same link traffic at rate x (N - 1) / N
    args = run_args(a, spec, flits, rate * (n - 1) / n, row["cycles"], flit)
    t0 = time.perf_counter()
    doc = json.loads(mpinet(args, a.timeout).stdout)
    hops = doc["stats"].get("flit_hops", doc["stats"]["transmissions"])  # flits, once counted
    out.update(mpinet_wall_seconds=round(time.perf_counter() - t0, 2), command=shlex.join(args))
    out.update(mpinet_engine_seconds=doc["engine_seconds"], mpinet_flit_hops=hops)
    return out


def cell(x: float | None, fmt: str = ".3f") -> str:
    """A table cell: ``x`` formatted, or a dash for a figure that is missing or not finite."""
    return "—" if x is None or not math.isfinite(x) else format(x, fmt)
