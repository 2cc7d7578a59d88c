"""``booksim_check.py --kncube`` and ``--meshconfig``: BookSim2 and ``mpinet booksim`` on
BookSim's own k-ary n-cubes, each simulator run on the same configuration in turn.

``--kncube``: per row (``mesh:8,2`` and ``torus:8,2``; ``uniform``, ``transpose``,
``tornado``), BookSim2's ``runfiles/meshconfig`` (jobs/booksim/meshconfig) with the row's
``topology``, ``k``, ``n``, ``routing_function`` (mesh ``dor``, torus ``dim_order``) and
``traffic``, given to both ``booksim CFG KEY=VALUE ...`` and ``mpinet booksim CFG
router=ROUTER KEY=VALUE ...`` (``--router``: mpinet's ``ideal``, or ``iq``, BookSim's
input-queued router, once mpinet has it). Both read the configuration, measure as BookSim
does and print BookSim's lines, parsed here alike (:func:`booksim_check.parse_booksim`).
Per row: the zero-load latency (the mean packet latency at ``--kn-zero`` packets per node
per cycle), the saturation load (a grid of loads upwards to the first unstable one, then
``--bisect`` bisections; unstable: not converged, mean latency above ``--latency-factor``
x the zero-load one, or accepted below ``1 - --accept-tol`` x injected), and the mean latency
at half of BookSim's saturation load (the same offered load on both). The two searches run
in lockstep, BookSim's run then mpinet's at each step, so their seconds (wall, and CPU of the
process tree) are measured in one window. ``--rows`` runs a subset and rewrites those rows
of the table, keeping the others.

``--meshconfig``: ``booksim meshconfig`` and ``mpinet booksim meshconfig router=ROUTER``
unchanged, alternately ``--repeat`` times: the figures BookSim prints and both times.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import booksim_runs as br
import reports
from booksim_examples import timed

ROOT = Path(__file__).resolve().parent.parent
MESHCONFIG = ROOT / "jobs" / "booksim" / "meshconfig"
BEGIN = "<!-- BEGIN scripts/booksim_check.py --kncube -->"
END = "<!-- END scripts/booksim_check.py --kncube -->"
BEGIN_MC = "<!-- BEGIN scripts/booksim_check.py --meshconfig -->"
END_MC = "<!-- END scripts/booksim_check.py --meshconfig -->"
ROWS = [f"{s}:{t}" for s in ("mesh:8,2", "torus:8,2") for t in ("uniform", "transpose", "tornado")]
#: loads (packets per node per cycle) the searches climb, up to the first unstable one
GRID = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)


def row_keys(row: str) -> list[str]:
    """``mesh:8,2:uniform`` -> the overrides that make meshconfig that row."""
    m = re.fullmatch(r"(mesh|torus):(\d+),(\d+):([a-z_]+)", row)
    if m is None:
        sys.exit(f"booksim_check.py: error: --rows takes mesh:K,N:TRAFFIC or torus:K,N:TRAFFIC, "
                 f"got {row!r}")  # fmt: skip
    topo, k, n, traffic = m.groups()
    rf = "dor" if topo == "mesh" else "dim_order"
    return [f"topology={topo}", f"k={k}", f"n={n}", f"routing_function={rf}", f"traffic={traffic}"]


def command(sim: str, cfg: Path, keys: list[str], a: argparse.Namespace) -> list[str]:
    """The command line of one run of ``sim`` (``booksim`` or ``mpinet``)."""
    if sim == "booksim":
        return [a.booksim, cfg.name, *keys]
    return [sys.executable, "-m", "mpinet", "booksim", str(cfg), f"router={a.router}", *keys]


def run_sim(
    sim: str, cfg: Path, keys: list[str], a: argparse.Namespace, keep: Path | None = None
) -> dict:
    """One run: BookSim's figures as printed, its wall and CPU seconds (the process tree);
    ``keep``: its output written there; ``reason``: mpinet's line saying why it stopped."""
    cmd = command(sim, cfg, keys, a)
    # mpinet from this checkout: run from the configuration's directory, ``-m mpinet`` would
    # import the installed one (an editable install points at another checkout)
    env = dict(os.environ, PYTHONPATH=str(ROOT)) if sim == "mpinet" else None
    p, wall, cpu = timed(cmd, cfg.parent, env, timeout=a.timeout, partial=True)
    text, code = p.stdout, p.returncode
    if sim == "mpinet" and code not in (0, None):  # a refusal is no figure: stop, say why
        sys.exit(f"booksim_check.py: error: {shlex.join(cmd)}: {p.stderr.strip()}")
    if keep is not None:
        keep.write_text(text)
    row = br.parse_booksim(text)
    why = re.findall(r"^mpinet booksim: unstable: (.*)$", text, re.M)
    row["reason"] = why[-1] if why else None
    if code is None:
        row["status"] = "timeout"
    row.update(wall_seconds=round(wall, 3), cpu_seconds=round(cpu, 3), command=shlex.join(cmd))
    return row


def unstable(row: dict, zero: float, offered: float, a: argparse.Namespace) -> list[str]:
    """The criteria a run fails: its own status, then the latency and throughput rule."""
    why = [] if row["status"] == "converged" else [row["status"]]
    lat, acc = row["latency"], row["accepted"]
    if not math.isfinite(lat) or lat > a.latency_factor * zero:
        why.append("latency")
    inj = row["injected"] if math.isfinite(row["injected"]) else offered  # not the draw's noise
    if not math.isfinite(acc) or acc < (1 - a.accept_tol) * min(offered, inj):
        why.append("throughput")
    return why


def search(zero: float, a: argparse.Namespace) -> Iterator[float]:
    """Loads to run, each sent back with its verdict (``gen.send(stable)``); the bracket is
    left in the generator's return value."""
    lo, hi = 0.0, None
    for load in a.kn_grid:
        if (yield load):
            lo = load
        else:
            hi = load
            break
    for _ in range(a.bisect if hi is not None else 0):
        mid = round((lo + hi) / 2, 9)
        if (yield mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


def measure_row(row: str, a: argparse.Namespace, cfg: Path, progress: Callable) -> dict:
    """Both simulators on one row, in lockstep: zero load, searches, half of saturation
    (``progress``: a line per run)."""
    keys = row_keys(row) + list(a.kn_set)
    sims = ("booksim", "mpinet")
    runs: dict[str, list[dict]] = {s: [] for s in sims}

    def one(sim: str, load: float) -> dict:
        r = run_sim(sim, cfg, [*keys, f"injection_rate={load!r}"], a)
        r["offered"] = load
        runs[sim].append(r)
        progress(f"{row} {sim} {load:.4g}: {r['status']}, latency {r['latency']:.2f}, "
                 f"accepted {r['accepted']:.4g}, {r['wall_seconds']:.1f} s")  # fmt: skip
        return r

    zero = {s: one(s, a.kn_zero)["latency"] for s in sims}
    gens = {s: search(zero[s], a) for s in sims}
    nxt = {s: next(gens[s]) for s in sims}
    bracket: dict[str, tuple] = {}
    while nxt:
        for s in list(nxt):
            r = one(s, nxt[s])
            r["unstable"] = unstable(r, zero[s], nxt[s], a)
            try:
                nxt[s] = gens[s].send(not r["unstable"])
            except StopIteration as stop:
                bracket[s], _ = stop.value, nxt.pop(s)
    sat = {s: None if bracket[s][1] is None else (bracket[s][0] + bracket[s][1]) / 2 for s in sims}
    half = {}
    if sat["booksim"] is not None:
        load = round(sat["booksim"] / 2, 9)
        half = {s: one(s, load)["latency"] for s in sims}
    out = {"row": row, "router": a.router, "zero": zero, "saturation": sat, "bracket": bracket,
           "half": half, "runs": runs}  # fmt: skip
    for s in sims:
        out[f"{s}_wall"] = sum(r["wall_seconds"] for r in runs[s])
        out[f"{s}_cpu"] = sum(r["cpu_seconds"] for r in runs[s])
        first = next((r for r in runs[s] if r.get("unstable")), None)
        out[f"{s}_criteria"] = first["unstable"] if first else []
    return out


def _pct(m: float | None, b: float | None) -> str:
    if m is None or b is None or not (math.isfinite(m) and math.isfinite(b)) or b == 0:
        return "—"
    return f"{100 * (m - b) / b:+.1f} %"


def table_row(r: dict) -> str:
    z, h, s = r["zero"], r["half"], r["saturation"]
    f = br.cell
    spec, traffic = r["row"].rsplit(":", 1)
    return (
        f"| `{spec}` | {traffic} | {r['router']} "
        f"| {f(z['mpinet'], '.2f')} / {f(z['booksim'], '.2f')} ({_pct(z['mpinet'], z['booksim'])}) "
        f"| {f(h.get('mpinet'), '.2f')} / {f(h.get('booksim'), '.2f')} "
        f"({_pct(h.get('mpinet'), h.get('booksim'))}) "
        f"| {f(s['mpinet'], '.4g')} / {f(s['booksim'], '.4g')} ({_pct(s['mpinet'], s['booksim'])}) "
        f"| {','.join(r['mpinet_criteria']) or '—'} / {','.join(r['booksim_criteria']) or '—'} "
        f"| {r['mpinet_wall']:.0f} ({r['mpinet_cpu']:.0f}) / {r['booksim_wall']:.0f} "
        f"({r['booksim_cpu']:.0f}) |"
    )


HEADER = [
    "| network | traffic | mpinet router | zero-load latency mpinet / BookSim | mean latency at "
    "half of BookSim's saturation mpinet / BookSim | saturation load mpinet / BookSim "
    "| fired first mpinet / BookSim | seconds: wall (CPU) mpinet / BookSim |",
    "|---|---|---|---:|---:|---:|---|---:|",
]


def merge(old: str, new: dict[tuple, str]) -> list[str]:
    """The table's rows: ``old``'s (the text between the markers) with ``new`` replacing
    those of the same network, traffic and router; in :data:`ROWS` order, then the rest."""
    rows: dict[tuple, str] = {}
    for line in old.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 3:
            rows[(cells[0].strip("`"), cells[1], cells[2])] = line
    rows.update(new)
    order = {tuple(r.rsplit(":", 1)): i for i, r in enumerate(ROWS)}
    return [rows[k] for k in sorted(rows, key=lambda k: (order.get(k[:2], len(order)), k))]


def kncube_main(a: argparse.Namespace, run: reports.Run) -> int:
    """The --kncube rows measured, merged into the page's table (the rows not run kept)."""
    path = Path(a.out)
    rows = a.rows_kn or ROWS
    cfg = _workcopy(a)
    results = []
    for row in rows:
        run.progress(f"{row} (router {a.router})")
        results.append(measure_row(row, a, cfg, run.progress))
    stamp = time.strftime("%Y%m%d-%H%M")
    dump = Path(a.workdir) / f"kncube-{a.router}-{stamp}.json"
    dump.write_text(json.dumps(results, indent=1))  # every run of both, for the data file
    new = {}
    for r in results:
        spec, traffic = r["row"].rsplit(":", 1)
        new[(spec, traffic, r["router"])] = table_row(r)
    doc = run.text(path, default="# BookSim2\n")  # read after the work: the page as it is now
    lines = merge(reports.between(doc, BEGIN, END) or "", new)
    extra = " ".join(a.kn_set) or "none"
    head = (
        "Generated by `python scripts/booksim_check.py --kncube` "
        f"({time.strftime('%Y-%m-%d %H:%M')} UTC, load average {os.getloadavg()[0]:.1f}, rows "
        f"{', '.join(rows)}: {run.seconds():.0f} s; rows not listed were kept from "
        "an earlier run): BookSim2's meshconfig with each row's topology, routing "
        f"function and traffic, more keys: {extra}; zero load at {a.kn_zero:g} packets per node "
        f"per cycle; loads {a.kn_grid[0]:g}..{a.kn_grid[-1]:g} upwards, {a.bisect} bisections; "
        f"unstable: not converged, latency > {a.latency_factor:g} x zero-load, or accepted < "
        f"{1 - a.accept_tol:g} x injected; (±%): mpinet against BookSim; seconds: the row's "
        "runs of each, alternated in one window."
    )
    text = [head, "", *HEADER, *lines]
    run.write(path, run.block(doc, BEGIN, END, "\n".join(text), append=True))
    print("\n".join(text))
    return run.finish()


def _bytecode() -> str:
    """What mpinet's process starts from: an installed package has its modules' bytecode."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return (
            "Python's bytecode: none written (`PYTHONDONTWRITEBYTECODE`), so each mpinet run "
            "compiles its modules' sources (about 0.14 s of CPU here)."
        )
    return "Python's bytecode: cached, as an installed package has it."


def _workcopy(a: argparse.Namespace) -> Path:
    """meshconfig in the work directory (BookSim reads its file from the working directory)."""
    d = Path(a.workdir)
    d.mkdir(parents=True, exist_ok=True)
    cfg = d / "meshconfig"
    cfg.write_text(MESHCONFIG.read_text())
    return cfg


def meshconfig_main(a: argparse.Namespace, run: reports.Run) -> int:
    """``booksim meshconfig`` and ``mpinet booksim meshconfig`` alternately: figures, times."""
    cfg = _workcopy(a)
    runs: dict[str, list[dict]] = {"booksim": [], "mpinet": []}
    for i in range(a.repeat):
        for sim in runs:
            r = run_sim(sim, cfg, list(a.kn_set), a)
            runs[sim].append(r)
            run.progress(f"meshconfig {sim} #{i + 1}: {r['status']}, {r['wall_seconds']:.1f} s")
    b, m = runs["booksim"][-1], runs["mpinet"][-1]
    f = br.cell
    rows = [
        "| figure | mpinet | BookSim2 | mpinet - BookSim |",
        "|---|---:|---:|---:|",
    ]
    for key, name in (("latency", "Packet latency average"),
                      ("network_latency", "Network latency average"),
                      ("injected", "Injected packet rate average"),
                      ("accepted", "Accepted packet rate average"),
                      ("hops", "Hops average")):  # fmt: skip
        rows.append(
            f"| {name} | {f(m[key], '.5g')} | {f(b[key], '.5g')} | {_pct(m[key], b[key])} |"
        )
    rows.append(f"| status | {m['status']} | {b['status']} | |")
    rows.append(f"| cycles (Time taken) | {m['cycles']} | {b['cycles']} | |")

    def secs(sim: str, key: str) -> str:
        return " / ".join(f(r[key], ".2f") for r in runs[sim])

    times = ["| seconds (each run, in the order run) | mpinet | BookSim2 |", "|---|---:|---:|"]
    for name, key in (("wall", "wall_seconds"), ("CPU (user + system)", "cpu_seconds"),
                      ("Total run time (printed)", "run_seconds")):  # fmt: skip
        times.append(f"| {name} | {secs('mpinet', key)} | {secs('booksim', key)} |")
    best = {s: min(r["cpu_seconds"] for r in runs[s]) for s in runs}
    head = (
        f"Generated by `python scripts/booksim_check.py --meshconfig --repeat {a.repeat}` "
        f"({time.strftime('%Y-%m-%d %H:%M')} UTC, load average {os.getloadavg()[0]:.1f}): "
        f"`{shlex.join(command('booksim', cfg, list(a.kn_set), a)[1:]) or 'meshconfig'}` on "
        f"BookSim2 and `mpinet booksim meshconfig router={a.router}`, alternately; figures of "
        f"the last run of each. Best CPU time mpinet / BookSim2: {best['mpinet']:.2f} / "
        f"{best['booksim']:.2f} s = {100 * best['mpinet'] / max(best['booksim'], 1e-9):.0f} %. "
        + _bytecode()
    )
    text = [head, "", *rows, "", *times]
    doc = run.text(a.out, default="# BookSim2\n")  # after the work: the page as it is now
    run.write(a.out, run.block(doc, BEGIN_MC, END_MC, "\n".join(text), append=True))
    print("\n".join(text))
    return run.finish()


KEYS_BEGIN = "<!-- BEGIN booksim_keys.markdown -->"
KEYS_END = "<!-- END booksim_keys.markdown -->"


def keys_main(a: argparse.Namespace, run: reports.Run) -> None:
    """docs/booksim.md's key table rewritten from mpinet/jobs/booksim_keys.py (each key's
    class: modeled, treated differently, iq router, refused unless default); ``--check``:
    compared instead."""
    sys.path.insert(0, str(ROOT))
    from mpinet.jobs.booksim_keys import markdown

    doc = run.text(a.out, default="# BookSim2\n")
    run.write(a.out, run.block(doc, KEYS_BEGIN, KEYS_END, markdown(), append=True))


def add_args(add) -> None:
    """booksim_check.py's options for these two tables."""
    add("--kncube", action="store_true", help="the mesh/torus table (meshconfig's keys)")
    add("--meshconfig", action="store_true", help="meshconfig on both, --repeat times")
    add("--keys", action="store_true", help="the key table from mpinet/jobs/booksim_keys.py")
    add("--rows", dest="rows_kn", default="", help="--kncube rows, SPEC:TRAFFIC;... "
        f"(default {';'.join(ROWS)})")  # fmt: skip
    add("--router", default="ideal", help="mpinet booksim's router: ideal or iq (default ideal)")
    add("--kn-set", action="append", default=[], help="KEY=VALUE given to both simulators")
    add("--kn-zero", type=float, default=0.01, help="--kncube's zero-load rate (0.01)")
    add("--repeat", type=int, default=3, help="--meshconfig's runs per simulator (3)")
    add("--kn-grid", default=",".join(map(str, GRID)), help="--kncube's loads, upwards")


def fix_args(a: argparse.Namespace) -> None:
    a.rows_kn = [r for r in a.rows_kn.split(";") if r]
    a.kn_grid = [float(x) for x in a.kn_grid.split(",")]
    for r in a.rows_kn:
        row_keys(r)
    if a.router not in ("ideal", "iq"):
        sys.exit(f"booksim_check.py: error: --router takes ideal or iq, got {a.router!r}")
