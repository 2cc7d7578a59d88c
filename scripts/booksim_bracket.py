"""``booksim_check.py --router iq --iq-loads 'SPEC:L=R,...;...'``: both simulators at chosen
loads of a row's saturation search, at the run's ``--seed`` (an ablation: does a verdict near
the knee move with the seed?).

Each load given is snapped to the nearest load of the shared search (the grid of
``--grid`` x BookSim's bound and its bisection midpoints, ``--bisect`` deep), so the runs
are those of the search when the seed is its own. mpinet's side (``mpinet booksim CFG
router=iq``) is cached in the work directory, BookSim's read from and added to the data
file (``--booksim-runs none``: none run). Each verdict is :func:`booksim_runs.booksim_verdict`
against that side's zero-load latency: mpinet's probe at ``--zero-load`` x the bound with the
same seed; BookSim's stored run there with the same seed, else the zero of its stored seed-0
search, else (BookSim allowed to run) its probe there (the head says which). The rows go
to the block ``--iq-tag`` names, merged with the rows there.

Part of ``scripts/booksim_check.py``; used by ``booksim_iq.py``.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import booksim_data
import booksim_iq as bi
import booksim_runs as br
import reports

HEADER = [
    "| network | L | seed | load (x BookSim's bound) | mpinet iq: verdict, mean latency, "
    "accepted | BookSim: verdict, mean latency, accepted | BookSim measured (UTC) "
    "| seconds mpinet: wall (CPU) / BookSim: wall |",
    "|---|---:|---:|---:|---|---|---|---:|",
]


def parse(text: str) -> list[tuple[str, int, list[float]]]:
    """``'SPEC:L=R,R;...'`` as (network, L, loads)."""
    out = []
    for item in filter(None, text.split(";")):
        row, loads = item.split("=", 1)
        spec, flits = row.rsplit(":", 1)
        out.append((spec, int(flits), [float(x) for x in loads.split(",")]))
    return out


def search_loads(bound: float, a: argparse.Namespace) -> list[float]:
    """Every load the search can run: the grid and its bisection midpoints, rounded as
    :meth:`booksim_runs.BookSim.search` rounds them."""
    grid = [round(f * bound, 12) for f in a.grid]
    loads = set(grid)
    pairs = list(zip([0.0, *grid[:-1]], grid, strict=True))
    for _ in range(a.bisect):
        nxt = []
        for lo, hi in pairs:
            mid = round((lo + hi) / 2, 12)
            loads.add(mid)
            nxt += [(lo, mid), (mid, hi)]
        pairs = nxt
    return sorted(loads)


def snap(rate: float, loads: list[float]) -> float:
    """The search's load nearest to ``rate``."""
    return min(loads, key=lambda x: abs(x - rate))


def cell(row: dict | None, zero: float | None, n: int, a: argparse.Namespace) -> str:
    if row is None:
        return "— (not run)"
    why = br.booksim_verdict(row, zero if zero is not None else math.nan, n, a)
    return (f"{','.join(why) or 'converged'}; {br.cell(row['latency'], '.1f')}; "
            f"{br.cell(row['accepted'], '.4g')}")  # fmt: skip


def measure(spec: str, flits: int, rates: list[float], bs: br.BookSim, mp: bi.MpinetIQ,
            a: argparse.Namespace) -> tuple[dict, str]:  # fmt: skip
    """The rows of one network and L, by (network, L, seed, load); which zero BookSim's
    verdicts used."""
    n, bound, _ = br.anynet_bound(spec)
    bound_bs = bound * n / (n - 1) / flits  # as booksim_iq.measure
    loads = search_loads(bound_bs, a)
    zrate = round(a.zero_load * bound_bs, 12)
    zm = mp.probe(spec, flits, zrate)["latency"]
    zrow = bs.stored(spec, flits, zrate)
    if zrow is not None:
        zb, zsrc = zrow["latency"], f"its run at seed {a.seed}"
    else:  # the stored search of the same configuration at seed 0
        a0 = argparse.Namespace(**{**vars(a), "seed": 0})
        cfg0 = br.booksim_config("", flits, a.vcs, a.vc_buffer, a0)
        s = bs.data["searches"].get(booksim_data.search_key(spec, cfg0, bi.rule(a0)))
        zb, zsrc = (s["zero"], "its seed-0 search's") if s else (None, "not run")
        if s is None and a.booksim_runs != "none":  # none stored: BookSim's own probe
            zb, zsrc = bs.probe(spec, flits, zrate)["latency"], f"its run at seed {a.seed}"
    rows = {}
    for rate in sorted({snap(r, loads) for r in rates}):
        m = mp.probe(spec, flits, rate)
        b = bs.stored(spec, flits, rate)
        if b is None and a.booksim_runs != "none":
            b = bs.probe(spec, flits, rate)
        rows[(spec, flits, a.seed, float(f"{rate:.4g}"))] = (
            f"| `{spec}` | {flits} | {a.seed} | {rate:.4g} ({rate / bound_bs:.3f}) "
            f"| {cell(m, zm, n, a)} | {cell(b, zb, n, a)} | {(b or {}).get('measured', '—')} "
            f"| {m['wall_seconds']:.0f} ({m.get('cpu_seconds') or 0:.0f}) / "
            f"{br.cell(b and b['wall_seconds'], '.0f')} |"
        )
    return rows, f"{spec} L={flits}: {zsrc}"


def rows_of(block: str) -> dict[tuple, str]:
    """A block's rows by (network, L, seed, load as printed)."""
    out = {}
    for line in block.splitlines():
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(c) > 4:
            out[(c[0].strip("`"), int(c[1]), int(c[2]), float(c[3].split()[0]))] = line
    return out


def main(a: argparse.Namespace, run: reports.Run) -> int:
    """The rows of ``--iq-loads``, written to the block ``--iq-tag`` names after each row."""
    bs, mp = br.BookSim(a, run.progress), bi.MpinetIQ(a, run.progress)
    begin, end = bi.markers(a)
    done, zeros = [], []
    for spec, flits, rates in parse(a.iq_loads):
        run.progress(f"{spec} L={flits} seed {a.seed} at {rates} (mpinet router iq)")
        new, zsrc = measure(spec, flits, rates, bs, mp, a)
        done.append(f"{spec} L={flits}")
        zeros.append(zsrc)
        doc = run.text(a.out, default="# BookSim2\n")
        rows = rows_of(reports.between(doc, begin, end) or "")
        rows.update(new)
        rank = {s: i for i, s in enumerate(bi.ORDER)}
        keys = sorted(rows, key=lambda k: (rank.get(k[0], len(rank)), k))
        head = (
            "Generated by `python scripts/booksim_check.py --router iq --iq-loads ...` "
            f"({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average "
            f"{os.getloadavg()[0]:.1f}, rows {', '.join(done)} at `seed` {a.seed}; rows not "
            f"listed were kept from an earlier run): the configuration and rule of the block "
            f"above (V = {a.vcs}, B = {a.vc_buffer}, `sample_period` {a.sample_period}, "
            f"`warmup_periods` {a.warmup_periods}, `max_samples` {a.max_samples}, more keys "
            f"on both: {' '.join(a.booksim_set) or 'none'}), each load one of the search's "
            f"(loads {a.grid[0]:g}..{a.grid[-1]:g} x BookSim's bound, {a.bisect} "
            f"bisections); BookSim's verdicts against the zero-load latency of "
            f"{'; '.join(zeros)}; BookSim's runs from {os.path.relpath(a.data, br.ROOT)}."
        )
        text = "\n".join([head, "", *HEADER, *(rows[k] for k in keys)])
        run.write(a.out, run.block(doc, begin, end, text, append=True))
        for k in new:
            print(new[k], flush=True)
    return run.finish()
