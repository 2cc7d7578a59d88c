"""``booksim_check.py --speed-table``: BookSim2 and mpinet timed alternately on several networks.

For each network and packet length L, at ``--speed-load`` (0.4) x the flit bound of anynet's
routes: BookSim2 once (never cached: a fresh timed run at niceness 0), then mpinet with the
cycles BookSim ran (``mpinet run --router anynet-min``, the flit engine, V and B as in the
searches), fresh (after a short untimed run of the same command that fills numba's disk
cache), and warm (``mpinet bench --repeat 3``: the best of three runs in one
process, its compiled kernels loaded before: a fresh run's engine time includes loading
them). BookSim's engine time is its "Total run time" (its network and routing-table setup
excluded; the wall time beside it includes that setup); mpinet's is ``engine_seconds``.
Flit-hops: mpinet's own count; BookSim's from its accepted flit rate x N x cycles x link hops.
The table goes between the speed markers of docs/booksim.md (the searches' table is kept).
BookSim's cycles are bounded by its own sample settings, taken here from ``--speed-period``
(``sample_period``, 500; 1 warm-up period, at most 10 samples), so a row's simulation is short;
its setup is not (anynet's tables: minutes on N of 3,600-5,040), and dominates the wall time.
BookSim builds them again in every run: one process runs one configuration (``sim_count``
repeats the same one), and anynet keeps no table on disk, so the L = 1 and L = 16 rows of a
network cannot share a setup without changing BookSim.

A row's load is ``--speed-loads`` (``SPEC:L=X``) or ``--speed-load``; where BookSim passes its
``latency_thres`` there (no cycle count for mpinet), the row runs again at x ``--speed-step``
down to ``--speed-min-load``, and says so. ``--speed-from`` puts the rows of earlier runs'
``speed_table.json`` (several processes, one network each) in one block without running.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import os
import re
import time
from pathlib import Path

import booksim_runs as br
import reports

BEGIN = "<!-- BEGIN scripts/booksim_check.py --speed-table -->"
END = "<!-- END scripts/booksim_check.py --speed-table -->"
PRIME_STEPS = 200  # prime()'s steps: injection, moves and the drain, every kernel called


def speed_args(a: argparse.Namespace) -> argparse.Namespace:
    """The search settings with BookSim's sampling shortened for the timed runs."""
    s = copy.copy(a)
    s.sample_period, s.warmup_periods, s.max_samples = a.speed_period, 1, 10
    s.timeout = min(a.timeout, a.speed_timeout)
    return s


def row_loads(text: str) -> dict[tuple[str, int], float]:
    """``--speed-loads`` (``SPEC:L=X;...``): a row's load, x bound, instead of ``--speed-load``.

    Raises ``ValueError`` naming the item that is not ``SPEC:L=X`` with ``0 < X <= 1``."""
    out = {}
    for item in filter(None, (x.strip() for x in text.split(";"))):
        m = re.fullmatch(r"([a-z]+:[0-9+]+(?:,[0-9+]+)*):([0-9]+)=([0-9.]+)", item)
        x = float(m[3]) if m and m[3].count(".") <= 1 and m[3] != "." else None
        if x is None or not 0 < x <= 1 or int(m[2]) < 1:
            raise ValueError(f"--speed-loads item {item!r} is not SPEC:L=X with L >= 1 and "
                             f"0 < X <= 1 (e.g. 'scc:6:16=0.3')")  # fmt: skip
        out[(m[1], int(m[2]))] = x
    return out


def steps(start: float, step: float, floor: float) -> list[float]:
    """The loads tried, x bound: ``start``, then x ``step`` while BookSim passes its
    ``latency_thres`` and the load stays at or above ``floor`` (``step`` 0: ``start`` only)."""
    out = [start]
    while 0 < step < 1 and out[-1] * step >= floor - 1e-12:
        out.append(out[-1] * step)
    return out


def row(bs: br.BookSim, spec: str, flits: int, a: argparse.Namespace) -> dict:
    """BookSim once, then mpinet twice, at the row's load x the flit bound of anynet's routes;
    where BookSim does not sustain that load, the next lower of ``steps`` (each one more
    BookSim run, its setup included)."""
    n, bound, hops = br.anynet_bound(spec)
    start = a.row_loads.get((spec, flits), a.speed_load)
    load = os.getloadavg()[0]  # the machine is shared: how busy it was, beside the times
    past = []  # the loads BookSim did not sustain (x bound)
    for frac in steps(start, a.speed_step, a.speed_min_load):
        rate_bs = frac * bound * n / (n - 1) / flits  # BookSim's uniform includes the source
        row = bs.probe(spec, flits, round(rate_bs, 12), timed=True, fresh=True)
        if row["status"] not in ("latency_thres", "unconverged"):  # a timeout: no lower try
            break
        past.append(frac)
    out = {"loadavg": load, "spec": spec, "nodes": n, "flits": flits, "rate": rate_bs,
           "fraction": frac, "past": past, "booksim": row, "mpinet": []}  # fmt: skip
    if row["cycles"] is None:  # not converged: no cycle count to give mpinet
        out["loadavg_end"] = os.getloadavg()[0]
        return out
    out["booksim_flit_hops"] = row["accepted_flits"] * n * row["cycles"] * (row["hops"] - 1)
    flit = br.flit_engine(a, flits)
    prime(spec, flits, rate_bs * (n - 1) / n, row["cycles"], flit, a)
    before = newest_cache()
    out["mpinet"].append(br.speed(bs, spec, flits, rate_bs, flit, mpinet_only=row))
    out["mpinet"][-1]["compiled"] = newest_cache() > before  # the table says so if it did
    out["warm"] = warm(spec, flits, rate_bs * (n - 1) / n, row["cycles"], flit, a)
    out["loadavg_end"] = os.getloadavg()[0]
    return out


def prime(spec: str, flits: int, rate: float, cycles: int, flit: bool, a) -> None:
    """The fresh run's command for at most ``PRIME_STEPS`` steps, untimed: the fresh run then
    loads its kernels from numba's disk cache instead of compiling them (in a new source tree
    or after a kernel changed, the compilation was most of a fresh run's engine time)."""
    br.mpinet(br.run_args(a, spec, flits, rate, min(cycles, PRIME_STEPS), flit), a.timeout)


def newest_cache(root: Path = br.ROOT / "mpinet") -> float:
    """The last modification time of numba's cache files under ``root`` (0 if none): a run
    that changes it compiled a kernel."""
    times = []
    for p in root.rglob("*.nb[ic]"):
        with contextlib.suppress(FileNotFoundError):  # numba may replace one meanwhile
            times.append(p.stat().st_mtime)
    return max(times, default=0.0)


def warm(spec: str, flits: int, rate: float, cycles: int, flit: bool, a) -> dict:
    """The same run under ``mpinet bench --repeat 3``: its kernels loaded, the best run."""
    args = ["bench", "--specs", f"{spec}@anynet-min", "--trace", "none", "--repeat", "3",
            "--json", "--set", "workload.injection=bernoulli", "--set", f"seed={a.seed}",
            "--set", f"workload.steps={cycles}", "--set", f"workload.rate={rate:.9g}"]  # fmt: skip
    args += br.model_args(a, flits, True) if flit else ["--buffer", str(a.vcs * a.vc_buffer)]
    doc = json.loads(br.mpinet(args, a.timeout).stdout.strip().splitlines()[-1])
    return {"engine_seconds": doc["engine_seconds"], "flit_hops": doc["packet_hops"]}


def table(rows: list[dict]) -> list[str]:
    """One line per (network, L): both simulators' engine times and flit-hop rates."""
    out = [
        "| network | N | L | load: x bound (packets/node/cycle) | cycles | BookSim s: run (wall) "
        "| BookSim M flit-hops/s | mpinet engine s: fresh / warm | mpinet M flit-hops/s: "
        "fresh / warm | mpinet / BookSim (engine time): fresh / warm | load average "
        "| measured (UTC) |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if "printed" in r:  # imported: the row as an earlier page printed it
            out.append(f"{r['printed']} {r.get('measured', '—')} |")
            continue
        b, bfh = r["booksim"], r.get("booksim_flit_hops")
        brate = bfh / b["run_seconds"] if bfh and b["run_seconds"] else None
        runs = [(m["mpinet_engine_seconds"], m["mpinet_flit_hops"]) for m in r["mpinet"]]
        if "warm" in r:
            runs.append((r["warm"]["engine_seconds"], r["warm"]["flit_hops"]))
        cells = ["—", "—", "—"]
        if runs:
            rates = [h / e for e, h in runs]
            times = [f"{e:.3f}" for e, _ in runs]
            if r["mpinet"] and r["mpinet"][0].get("compiled"):  # not the engine's speed
                times[0] += " (compiled)"
            cells[0] = " / ".join(times)
            cells[1] = " / ".join(f"{x / 1e6:.2f}" for x in rates)
            if brate:
                cells[2] = " / ".join(f"{x / brate:.0f}x" for x in rates)
        run = br.cell(b["run_seconds"], ".2f")
        sustained = r.get("fraction") not in (None, *r.get("past", ()))
        frac = f"{r['fraction']:.3g}" if sustained else "—"
        frac += f" ({r['rate']:.4g})"
        if r.get("past"):  # the loads tried before, past BookSim's saturation
            frac += f"; {', '.join(f'{x:.3g}' for x in r['past'])} past saturation"
        load = f"{r.get('loadavg', math.nan):.1f}"
        if "loadavg_end" in r:
            load += f"-{r['loadavg_end']:.1f}"
        out.append(
            f"| `{r['spec']}` | {r['nodes']:,} | {r['flits']} | {frac} "
            f"| {b['cycles'] or '— (' + b['status'] + ')'} | {run} ({b['wall_seconds']:.0f}) "
            f"| {br.cell(brate and brate / 1e6)} | {cells[0]} | {cells[1]} | {cells[2]} "
            f"| {load} | {r.get('measured', '—')} |"
        )
    return out


def main(a: argparse.Namespace, run: reports.Run) -> int:
    """Run the table and write it between the speed markers of ``a.out`` (refused before
    the work if the page lacks them). Every row measured is kept in ``a.speed_data`` (the
    block shows all rows kept there, so a run of one network keeps the others' rows)."""
    run.text(a.out, (BEGIN, END))
    try:
        a.row_loads = row_loads(a.speed_loads)
    except ValueError as e:
        run.fail(str(e), 2)
    s = speed_args(a)
    todo = [(spec, flits) for spec in a.specs for flits in a.speed_flits]
    if a.speed_from:  # no simulation: the rows of earlier runs in one block
        try:
            rows = stored_rows(a.speed_from.split(","), todo)
        except (OSError, ValueError, KeyError, TypeError) as e:
            run.fail(f"--speed-from: {e}", 2)
        print(write(a, s, run, keep(a.speed_data, rows), rows))
        return run.finish()
    bs, rows, text = br.BookSim(s, run.progress), [], ""
    for spec, flits in todo:  # the page is rewritten after every row: a long run keeps them
        run.progress(f"speed {spec} L={flits}")
        rows.append(dict(row(bs, spec, flits, s), measured=utc()))
        text = write(a, s, run, keep(a.speed_data, rows[-1:]), rows)
        (bs.dir / "speed_table.json").write_text(json.dumps(rows, indent=1))
    print(text)
    return run.finish()


def utc(t: float | None = None) -> str:
    """``t`` (now) as the table's UTC minute."""
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))


def keep(path: str | Path, rows: list[dict]) -> list[dict]:
    """The rows kept in ``path`` with ``rows`` in place of the same (network, L), the new ones
    appended; written back, and returned."""
    path = Path(path)
    kept = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    at = {(r["spec"], int(r["flits"])): i for i, r in enumerate(kept)}
    for r in rows:
        k = (r["spec"], int(r["flits"]))
        if k in at:
            kept[at[k]] = r
        else:
            at[k] = len(kept)
            kept.append(r)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
    return kept


def write(a: argparse.Namespace, s: argparse.Namespace, run: reports.Run, rows: list,
          new: list) -> str:  # fmt: skip
    """``rows`` (the kept ones) between the markers of ``a.out`` (read again: it may have
    changed); ``new``: the rows this run measured or brought by ``--speed-from``."""
    data = os.path.relpath(Path(a.speed_data).resolve(), br.ROOT)
    head = (
        f"Generated by `python scripts/booksim_check.py --speed-table` "
        f"({utc()} UTC, {len(new)} of the {len(rows)} rows {source(a, run)}, the others "
        f"kept in `{data}` with the time each was measured): load {a.speed_load:g} x the "
        f"flit bound of anynet's routes{overrides(a)}{stepped(a)}, V = {a.vcs}, "
        f"B = {a.vc_buffer}, mpinet's flit engine "
        f"({a.switching}, vc_policy {a.vc_policy}); BookSim `sample_period` "
        f"{s.sample_period}, `warmup_periods` 1, `max_samples` 10; per row BookSim once, "
        f"then mpinet for the cycles BookSim ran: a fresh `mpinet run`, and warm (the best of "
        f"`mpinet bench --repeat 3`)."
    )
    text = "\n".join([head, "", *table(rows)])
    run.write(a.out, run.block(run.text(a.out), BEGIN, END, text))
    return text


def overrides(a: argparse.Namespace) -> str:
    """The rows given another load by ``--speed-loads``, for the table's header."""
    items = sorted(a.row_loads.items())
    return "".join(f", {x:g} on {spec} L = {flits}" for (spec, flits), x in items)


def stepped(a: argparse.Namespace) -> str:
    """The step down past BookSim's saturation, for the table's header."""
    if not 0 < a.speed_step < 1:
        return ""
    return (f" (a row BookSim does not sustain, at `latency_thres`: x {a.speed_step:g} "
            f"down to {a.speed_min_load:g}, the loads tried first in parentheses)")  # fmt: skip


def stored_rows(paths: list[str], todo: list[tuple[str, int]]) -> list[dict]:
    """The rows of earlier runs' ``speed_table.json`` in ``todo``'s order; a (network, L)
    in several files: the one of the file named last. Raises ``ValueError`` if a file is not
    a list of rows."""
    found = {}
    for path in paths:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(rows, list):
            raise ValueError(f"{path} is not a list of speed rows")
        found.update({(r["spec"], int(r["flits"])): r for r in rows})
    return [found[k] for k in todo if k in found]


def source(a: argparse.Namespace, run: reports.Run) -> str:
    """Which rows this run gave: measured (in how long), or stored by earlier runs."""
    if not a.speed_from:
        return f"measured by this run in {run.seconds():.0f} s"
    files = [Path(p).resolve() for p in a.speed_from.split(",")]
    names = [f.parent.name if f.name == "speed_table.json" else f.name for f in files]
    return "from " + ", ".join(f"`{f}`" for f in names)
