"""``booksim_check.py --router iq`` on the anynet rows: BookSim2 and ``mpinet booksim ...
router=iq`` on the same configuration file.

Per row (network, L): the configuration :func:`booksim_runs.booksim_config` writes (anynet
``min``, uniform Bernoulli traffic, L flits, V VCs of B flits, the shallowest pipeline:
lookahead routing, speculative VA+SA, one cycle of crossbar, no credit delay) is run by
BookSim2 and by ``mpinet booksim CFG router=iq`` (mpinet's model of BookSim's input-queued
router, docs/iq-router.md, with the same keys). Both outputs are read by one parser, and
both sides are searched alike (:meth:`booksim_runs.BookSim.search`): a zero-load probe at
``--zero-load`` x BookSim's channel bound, the same grid of loads upwards to the first
saturated one, bisections, and one rule (:func:`booksim_runs.booksim_verdict`, each
against its own zero-load latency). Then both run at half of BookSim's saturation load.

BookSim's runs and searches are read from and added to the data file
(``docs/data/booksim_runs.json``, :mod:`booksim_data`); ``--booksim-runs half`` takes a
stored search (measured, or imported from an earlier table with ``--import-results``) and
runs only the half-saturation probe if it is missing; ``none`` runs no BookSim at all.
mpinet's runs are cached in the work directory. Each row is written to docs/booksim.md's
block as soon as it is measured, the other rows kept.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import time
from pathlib import Path

import booksim_data
import booksim_kncube as kn
import booksim_runs as br
import reports

BEGIN = "<!-- BEGIN scripts/booksim_check.py --router iq -->"
END = "<!-- END scripts/booksim_check.py --router iq -->"
ORDER = ("hypercube:8", "scc:6", "ms:3,2", "fccn:4")


class MpinetIQ(br.BookSim):
    """``mpinet booksim CFG router=iq`` on the configuration BookSim runs, searched the same
    way; its runs cached in the work directory (``cache-mpinet-iq.json``)."""

    def __init__(self, a: argparse.Namespace, progress=None):
        super().__init__(a, progress)
        self.cache_path = self.dir / "cache-mpinet-iq.json"
        self.cache = json.loads(self.cache_path.read_text()) if self.cache_path.exists() else {}

    def probe(self, spec: str, flits: int, rate: float, timed: bool = False,
              fresh: bool = False) -> dict:  # fmt: skip
        key = booksim_data.run_key(spec, self.config_text(spec, flits), rate)
        if fresh or key not in self.cache:
            cfg = self.config(spec, flits)
            ns = argparse.Namespace(**{**vars(self.a), "router": "iq"})
            keep = cfg.parent / f"{cfg.stem}-r{rate:.6g}-mpinet.out"
            row = kn.run_sim("mpinet", cfg, [f"injection_rate={rate!r}"], ns, keep)
            if row["status"] != "converged" and (
                row.get("deadlock_warnings") or "deadlock" in (row["reason"] or "")
            ):
                row["status"] = "deadlock"  # mpinet found a VC wait-for cycle and stopped
            row.update(offered=rate, measured=booksim_data.now())
            self.progress(f"mpinet iq {spec} L={flits} load {rate:.5g}: {row['status']}, "
                          f"latency {row['latency']:.1f}, accepted {row['accepted']:.5g}, "
                          f"{row['wall_seconds']:.0f} s")  # fmt: skip
            self.cache[key] = row
            tmp = self.cache_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.cache, indent=1))
            tmp.replace(self.cache_path)
        return dict(self.cache[key])


def rule(a: argparse.Namespace) -> dict:
    """The search rule a stored search was made with (part of its key)."""
    return {"grid": [a.grid[0], a.grid[-1], len(a.grid)], "bisect": a.bisect,
            "zero_load": a.zero_load, "latency_factor": a.latency_factor,
            "accept_tol": a.accept_tol}  # fmt: skip


def summary(res: dict) -> dict:
    """What a table needs of one search, and when its runs were measured."""
    runs = [res["zero"], *res["points"]]
    when = sorted(r["measured"] for r in runs if r.get("measured"))
    return {
        "zero": res["zero"]["latency"], "bound": res["bound"], "load": res["load"],
        "criteria": res["criteria"], "throughput": res["throughput"],
        "seconds": res["seconds"], "loads": [p["offered"] for p in res["points"]],
        "cpu_seconds": round(sum(r.get("cpu_seconds") or 0.0 for r in runs), 1),
        "measured": f"{when[0]} .. {when[-1]}" if when else "",
        "source": "measured",
    }  # fmt: skip


def import_results(a: argparse.Namespace, run: reports.Run) -> None:
    """The BookSim side of docs/booksim.md's Results table (the ideal router's, generated
    earlier, its runs' cache gone) stored as searches, each saying where it came from."""
    doc = Path(a.out).read_text()
    block = reports.between(doc, "<!-- BEGIN scripts/booksim_check.py -->",
                            "<!-- END scripts/booksim_check.py -->") or ""  # fmt: skip
    new = {}
    for r in booksim_data.import_results_table(block):
        keep = ("vcs", "vc_buffer", "sample_period", "warmup_periods", "max_samples", "bisect")
        ns = argparse.Namespace(**{**vars(a), **{k: r[k] for k in keep}})
        lo, hi, k = r["grid"]
        ns.grid = [lo + (hi - lo) * i / (k - 1) for i in range(k)]
        cfg = br.booksim_config("", r["flits"], r["vcs"], r["vc_buffer"], ns)
        key = booksim_data.search_key(r["network"], cfg, rule(ns))
        new[key] = {
            "zero": r["zero_latency"], "bound": r["bound"], "load": r["load"],
            "criteria": r["criteria"], "throughput": r["throughput"], "seconds": r["seconds"],
            "measured": f"on or before {r['table_date']}",
            "source": f"imported from docs/booksim.md's Results table generated "
                      f"{r['table_date']} (its figures as printed, 4 digits; its runs' "
                      "cache, /tmp/booksim_check, is gone)",
        }  # fmt: skip
        run.progress(f"imported {r['network']} L={r['flits']}: saturation {r['load']}")
    booksim_data.save(a.data, searches=new)


def booksim_side(bs: br.BookSim, spec: str, flits: int, n: int, bound: float,
                 a: argparse.Namespace) -> dict | None:  # fmt: skip
    """BookSim's search: the stored one (``--booksim-runs half|none``), else run (its runs
    read from the data file where they are there) and stored."""
    key = booksim_data.search_key(spec, bs.config_text(spec, flits), rule(a))
    stored = bs.data["searches"].get(key)
    if stored is not None and a.booksim_runs != "all":
        return dict(stored)
    if a.booksim_runs == "none":
        return None
    out = summary(bs.search(spec, flits, n, bound))
    bs.data = booksim_data.save(bs.data_path, searches={key: out})
    return out


def pct(m: float | None, b: float | None) -> str:
    ok = m is not None and b is not None and math.isfinite(m) and math.isfinite(b) and b
    return f"({100 * (m - b) / b:+.1f} %)" if ok else ""


def table_row(r: dict) -> str:
    f, m, b = br.cell, r["mpinet"], r["booksim"]
    bound = r["bound"]

    def sat(x: dict | None) -> str:
        if x is None:
            return "—"
        return f"{x['load']:.4g} ({x['load'] / bound:.2f})" if x["load"] else "none found"

    hm, hb = r["half"].get("mpinet"), r["half"].get("booksim")
    bl = b["load"] if b else None
    when = f"search {b['measured']}" if b else "—"
    when += " (imported)" if b and b.get("source", "measured") != "measured" else ""
    when += f"; half {r['half']['booksim_measured']}" if r["half"].get("booksim_measured") else ""
    return (
        f"| `{r['spec']}` | {r['flits']} "
        f"| {f(m['zero'], '.2f')} / {f(b and b['zero'], '.2f')} {pct(m['zero'], b and b['zero'])} "
        f"| {f(hm, '.2f')} / {f(hb, '.2f')} {pct(hm, hb)} "
        f"| {sat(m)} / {sat(b)} {pct(m['load'], bl)} "
        f"| {','.join(m['criteria']) or '—'} / {','.join(b['criteria']) if b else '—'} "
        f"| {f(m['throughput'], '.4g')} / {f(b and b['throughput'], '.4g')} | {when} "
        f"| {m['seconds']:.0f} ({m['cpu_seconds']:.0f}) / {f(b and b['seconds'], '.0f')} |"
    )


HEADER = [
    "| network | L | zero-load latency mpinet iq / BookSim | mean latency at half of BookSim's "
    "saturation mpinet iq / BookSim | saturation load mpinet iq / BookSim (x BookSim's bound) "
    "| fired first mpinet iq / BookSim | sustained mpinet iq / BookSim | BookSim measured (UTC) "
    "| seconds mpinet: wall (CPU) / BookSim: wall |",
    "|---|---:|---:|---:|---:|---|---:|---|---:|",
]


def merge(old: str, new: dict[tuple, str]) -> list[str]:
    """``old``'s rows with ``new`` replacing those of the same network and L, in order."""
    rows = rows_of(old)
    rows.update(new)
    rank = {s: i for i, s in enumerate(ORDER)}
    return [rows[k] for k in sorted(rows, key=lambda k: (rank.get(k[0], len(rank)), k))]


def measure(spec: str, flits: int, bs: br.BookSim, mp: MpinetIQ, a: argparse.Namespace) -> dict:
    """One row: both searches at the same loads, then both at half of BookSim's saturation."""
    n, bound, _ = br.anynet_bound(spec)
    bound_bs = bound * n / (n - 1) / flits  # BookSim's uniform draws the source too
    b = booksim_side(bs, spec, flits, n, bound_bs, a)
    res = mp.search(spec, flits, n, bound_bs)
    m = summary(res)
    half: dict = {}
    if b and b["load"]:
        load = round(b["load"] / 2, 12)
        half["mpinet"] = mp.probe(spec, flits, load)["latency"]
        row = bs.stored(spec, flits, load)
        if row is None and a.booksim_runs != "none":
            row = bs.probe(spec, flits, load)
        if row is not None:
            half["booksim"], half["booksim_measured"] = row["latency"], row.get("measured")
    m["seconds"] = round(sum(r["wall_seconds"] for r in [res["zero"], *res["points"]]), 1)
    return {"spec": spec, "flits": flits, "bound": bound_bs, "mpinet": m, "booksim": b,
            "half": half}  # fmt: skip


def main(a: argparse.Namespace, run: reports.Run) -> int:
    """The iq rows measured one by one, each merged into the page's block at once."""
    if a.import_results:
        import_results(a, run)
        return run.finish()
    if a.iq_from:  # no simulation: the rows of pages written by earlier processes
        try:
            combine(a, run)
        except (OSError, ValueError) as e:
            run.fail(f"--iq-from: {e}", 2)
        return run.finish()
    if a.iq_loads:  # an ablation: both at chosen loads of the search, at --seed
        import booksim_bracket

        return booksim_bracket.main(a, run)
    bs, mp = br.BookSim(a, run.progress), MpinetIQ(a, run.progress)
    begin, end = markers(a)
    done = []
    for spec, flits in a.rows:
        run.progress(f"{spec} L={flits} (mpinet router iq)")
        r = measure(spec, flits, bs, mp, a)
        done.append(f"{spec} L={flits}")
        doc = run.text(a.out, default="# BookSim2\n")  # the page as it is now
        lines = merge(reports.between(doc, begin, end) or "", {(spec, flits): table_row(r)})
        head = (
            "Generated by `python scripts/booksim_check.py --router iq` "
            f"({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average "
            f"{os.getloadavg()[0]:.1f}, rows {', '.join(done)}; rows not listed were kept from "
            f"an earlier run): V = {a.vcs}, B = {a.vc_buffer}, BookSim's shallowest pipeline "
            f"on both (mpinet: `mpinet booksim CFG router=iq` on BookSim's file); "
            f"`sample_period` {a.sample_period}, `warmup_periods` {a.warmup_periods}, "
            f"`max_samples` {a.max_samples}; zero load at {a.zero_load:g} x BookSim's bound; "
            f"loads {a.grid[0]:g}..{a.grid[-1]:g} x that bound in {len(a.grid)} steps, "
            f"{a.bisect} bisections, the same loads on both; `seed` {a.seed}; more keys on "
            f"both: {' '.join(a.booksim_set) or 'none'}; BookSim's figures from "
            f"{os.path.relpath(a.data, br.ROOT)}, with the time each was measured."
        )
        text = "\n".join([head, "", *HEADER, *lines])
        run.write(a.out, run.block(doc, begin, end, text, append=True))
        print(table_row(r), flush=True)
    return run.finish()


_HEAD = re.compile(
    r"^Generated by `python scripts/booksim_check.py --router iq`(?: in \d+ "
    r"process(?:es)?)? \((?P<when>.*?)(?:; rows not listed were kept from an earlier "
    r"run)?\): (?P<setup>.*)$"
)


def combine(a: argparse.Namespace, run: reports.Run) -> None:
    """The rows of the pages in ``--iq-from`` (other processes' ``--out``) merged into the
    block of ``--out``: of each page the rows its head says its process measured, a row in
    several pages the one of the page named last. The head keeps each process's window
    (time, load average, rows); the processes must share their setup (the head's text after
    the window). Raises ``ValueError``."""
    begin, end = markers(a)
    doc = run.text(a.out, (begin, end))
    old = reports.between(doc, begin, end) or ""
    whens, setups, new = [], set(), {}
    data = os.path.relpath(a.data, br.ROOT)
    for path in a.iq_from.split(","):
        block = reports.between(Path(path).read_text(encoding="utf-8"), begin, end) or ""
        head = _HEAD.match(block.split("\n", 1)[0])
        if head is None:
            raise ValueError(f"{path} has no block {begin} written by this script")
        done = {(s, int(f)) for s, f in re.findall(r"(\S+) L=(\d+)", head["when"])}
        whens += head["when"].split("; ")  # a combined head: a window each
        # a process may have kept BookSim's runs in a file of its own, whose runs the caller
        # adds to --data (booksim_data.save): the head names --data
        setups.add(re.sub(r"BookSim's figures from \S+,", f"BookSim's figures from {data},",
                          head["setup"]))  # fmt: skip
        new.update({k: v for k, v in rows_of(block).items() if k in done})
    if len(setups) != 1:
        raise ValueError(f"the pages' setups differ: {' | '.join(sorted(setups))}")
    keep = "; rows not listed were kept from an earlier run" if set(rows_of(old)) - set(new) else ""
    head = (f"Generated by `python scripts/booksim_check.py --router iq` in {len(whens)} "
            f"process{'es' if len(whens) > 1 else ''} ({'; '.join(whens)}{keep}): "
            f"{setups.pop()}")  # fmt: skip
    lines = merge(old, new)
    run.write(a.out, run.block(doc, begin, end, "\n".join([head, "", *HEADER, *lines])))


def rows_of(block: str) -> dict[tuple, str]:
    """A block's table rows by (network, L)."""
    rows = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) > 2:
            rows[(cells[0].strip("`"), int(cells[1]))] = line
    return rows


def markers(a: argparse.Namespace) -> tuple[str, str]:
    """The block's markers: ``--iq-tag`` names another block (an ablation's table)."""
    if not a.iq_tag:
        return BEGIN, END
    return BEGIN[:-4] + f" {a.iq_tag} -->", END[:-4] + f" {a.iq_tag} -->"


def add_args(add) -> None:
    add("--iq-tag", default="", help="--router iq: write the block of this name (ablations)")
    add("--data", default=str(booksim_data.DATA), help="BookSim's stored runs (JSON)")
    add("--booksim-runs", default="all", choices=("all", "half", "none"),
        help="--router iq: all: run BookSim where the data file lacks a run; half: take a "
             "stored search, run only the half-saturation probe; none: run no BookSim")  # fmt: skip
    add("--iq-loads", default="",
        help="--router iq: SPEC:L=RATE,...;... both simulators at these loads of a row's "
             "search (snapped to its loads) at --seed, to --iq-tag's block")  # fmt: skip
    add("--iq-from", default="",
        help="--router iq: PAGE,... the rows other processes wrote to their --out, merged "
             "into --out's block (no simulation)")  # fmt: skip
    add("--import-results", action="store_true",
        help="store the Results table's BookSim searches in the data file (no run)")  # fmt: skip
