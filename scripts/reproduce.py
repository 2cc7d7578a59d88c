#!/usr/bin/env python3
"""Reproduce the papers' tables by running the job library; write one report.

Every measured number comes from ``mpinet run JOB --json`` (the jobs in
``jobs/``, swept with ``--set``) or ``mpinet verify --json``, launched under
the current MPI launcher (``mpiexec -n R``; for R = 1 mpinet runs directly).
The papers' values come from ``scripts/routing_report.py`` and from the
collectives' catalogue; each is printed beside mpinet's with a verdict, and a
disagreement links its entry in ``docs/errata.md``. Figures come from
``mpinet analyze TRACE --plot DIR``. Run::

    python scripts/reproduce.py [--quick] [--ranks R] [--only KEY[,KEY]]
                                [--out docs/reproduction.md] [--figures docs/figures] [--check]

The sections (one per paper table) are the list ``SECTIONS`` of
``scripts/reproduce_sections.py``; ``--only`` keeps the sections whose key
contains one of the words.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOBS = ROOT / "jobs"
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import reports  # noqa: E402
from launcher import launch_prefix  # noqa: E402
from reproduce_sections import SECTIONS, verify_rows  # noqa: E402
from reproduce_tables import Ctx, errata_anchors, row  # noqa: E402
from wormhole_report import BLOCKS  # noqa: E402

from mpinet import __version__  # noqa: E402

__all__ = ["SECTIONS", "Runner", "errata_anchors", "main"]


# ---------------------------------------------------------------- launching mpinet


class Runner:
    """Runs ``mpinet`` commands under the launcher and caches their JSON.

    Parameters
    ----------
    ranks : int
        MPI ranks of every ``mpinet run`` / ``verify``; 1 runs mpinet directly.
    workdir : Path
        Where traces are written.
    quick : bool
        Smaller sweeps and the quick verify catalogue.
    """

    def __init__(self, ranks: int, workdir: Path, quick: bool) -> None:
        self.ranks, self.workdir, self.quick = ranks, workdir, quick
        mpinet = [sys.executable, "-m", "mpinet"]
        self.serial = mpinet
        try:
            self.parallel = [*launch_prefix(ranks), *mpinet]
        except FileNotFoundError as exc:
            sys.exit(f"reproduce: {exc}")
        self.env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.env.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")
        self._verify: dict[tuple[str, bool], list[dict]] = {}
        self.runs = 0

    def call(self, args: list[str], parallel: bool = True) -> str:
        """Run ``mpinet ARGS``; return its stdout, or exit with its stderr."""
        cmd = [*(self.parallel if parallel else self.serial), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=self.env, cwd=ROOT)
        self.runs += 1
        if proc.returncode not in (0, 1) or not proc.stdout.strip():
            sys.exit(f"reproduce: {' '.join(cmd)} failed:\n{proc.stderr}")
        return proc.stdout

    def run(self, job: str, trace: Path | None = None, **sets: object) -> dict:
        """``mpinet run jobs/JOB --json --set KEY=VALUE ...``: the result object."""
        args = ["run", str(JOBS / job), "--json"]
        for key, val in sets.items():
            args += ["--set", f"{key.replace('__', '.')}={val}"]
        args += ["--out", str(trace), "--force"] if trace else ["--trace-level", "none"]
        return json.loads(self.call(args).strip().splitlines()[-1])

    def verify(self, only: str = "", full: bool = False) -> list[dict]:
        """Rows of ``mpinet verify --json [--only ONLY]``, each catalogue run once.

        ``full`` asks for the full catalogue (ignored by a quick run).
        """
        key = (only, full and not self.quick)
        if key not in self._verify:
            args = ["verify", "--json", "--full" if key[1] else "--quick"]
            out = self.call([*args, "--only", only] if only else args)
            self._verify[key] = [json.loads(line) for line in out.strip().splitlines()]
        return self._verify[key]

    def plot(self, job: str, key: str, figdir: Path) -> list[Path]:
        """Run ``job`` with a summary trace and ``mpinet analyze --plot``; the PNGs made."""
        trace = self.workdir / f"{key}.h5"
        self.run(job, trace=trace)
        out = figdir / key  # created if missing; only figures mpinet drew are replaced
        res = self.call(["analyze", str(trace), "--plot", str(out), "--force", "--json"],
                        parallel=False)  # fmt: skip
        plots = [Path(p) for p in json.loads(res.strip().splitlines()[-1]).get("plots", [])]
        for svg in [p for p in plots if p.suffix == ".svg"]:  # the report links the PNGs only
            svg.unlink()
        return sorted(p for p in plots if p.suffix == ".png")


# ---------------------------------------------------------------- the report


def figure_lines(pngs: list[Path], out: Path) -> list[str]:
    """Markdown images for the PNGs, relative to the report."""
    rel = [os.path.relpath(p, out.parent) for p in pngs]
    return [f"![{Path(r).stem}]({r})" for r in rel] or ["(no figures were produced)"]


def kept_blocks(out: Path) -> list[str]:
    """The blocks scripts/wormhole_report.py owns in ``out`` (between its markers, in the
    order it writes them), kept at the end of the rewritten report."""
    text = out.read_text(encoding="utf-8") if out.exists() else ""
    keep: list[str] = []
    for b, e in BLOCKS.values():
        body = reports.between(text, b, e)
        if body is not None:
            keep += [b, *body.split("\n"), e, ""]
    return keep


#: what changes from run to run (masked by --check): the date, counts and times
VOLATILE = [r"on \d{4}-\d\d-\d\d, mpinet", r"\d+ mpinet commands in \d+ s", r"(?m)\| \d+ s \|$"]


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__, out=ROOT / "docs" / "reproduction.md", check=True)
    ap.add_argument("--quick", action="store_true", help="smaller sweeps (a couple of minutes)")
    ap.add_argument("--ranks", type=int, default=1, help="MPI ranks of every mpinet run")
    ap.add_argument("--only", help="comma-separated words; keep sections whose key has one")
    ap.add_argument("--figures", type=Path, default=None,
                    help="default: figures/ beside --out (--check: none written)")  # fmt: skip
    ap.add_argument("--no-figures", action="store_true", help="skip traces and plots")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    figdir = (args.figures or out.parent / "figures").resolve()
    sections = SECTIONS
    if args.only:
        words = args.only.split(",")
        sections = [s for s in SECTIONS if any(w in s.key for w in words)]
    if not args.check:
        out.parent.mkdir(parents=True, exist_ok=True)  # the report's directory, with figures/
    run = reports.Run(__file__, args, out, volatile=VOLATILE)  # refused now; signals clean up
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mpinet-reproduce-") as tmp:
        runner = Runner(args.ranks, Path(tmp), args.quick)
        drawn = Path(tmp) / "figures" if args.check else figdir  # --check writes none of them
        ctx = Ctx(
            runner,
            args.quick,
            os.path.relpath(ROOT / "docs" / "errata.md", out.parent),
            errata_anchors(),
        )
        body, summary = [], []
        for s in sections:
            t0 = time.perf_counter()
            body += [f"## {s.title}", ""]
            if s.table is not None:
                body += [*s.table(ctx), ""]
            if s.verify is not None:
                level = "--full" if s.verify_full and not args.quick else "--quick"
                body += [f"Catalogue rows (`mpinet verify {level} --json`):", ""]
                body += [*verify_rows(ctx, s), ""]
            if s.figure and not args.no_figures:
                body += [f"Figures: `mpinet analyze` of a trace of `jobs/{s.figure}`.", ""]
                pngs = runner.plot(s.figure, s.key, drawn)
                if args.check:  # named as if drawn where the report's figures are
                    pngs = [figdir / os.path.relpath(p, drawn) for p in pngs]
                body += [*figure_lines(pngs, out), ""]
            secs = time.perf_counter() - t0
            summary.append(row(f"[{s.key}](#{slug(s.title)})", s.title, f"{secs:.0f} s"))
            run.progress(f"{s.key}: {secs:.1f} s")
    cmd = reports.command(__file__, argv or sys.argv[1:])
    total = time.perf_counter() - t_all
    jobs_rel = os.path.relpath(JOBS / "README.md", out.parent)
    head = [
        "# Reproducing the papers: every table beside mpinet's measurement",
        "",
        f"Generated by `{cmd}` (do not edit by hand) on {dt.date.today().isoformat()}, mpinet "
        f"{__version__}, {args.ranks} MPI rank(s), {'quick' if args.quick else 'full'} run, "
        f"{runner.runs} mpinet commands in {total:.0f} s.",
        "",
        f"Every measured value comes from a job of [`jobs/`]({jobs_rel}) run by `mpinet run` "
        "(swept with `--set`) or from the collectives' catalogue `mpinet verify`, under the MPI "
        "launcher; results do not depend on the number of ranks. Verdicts: `equal` (same printed "
        "digits), `agrees (sampled)` (a random sample within three standard errors), `within "
        "bound`, or a difference linked to its explanation in "
        f"[errata.md]({ctx.errata}). Exhaustive route tables: [routing.md](routing.md); the "
        "whole collectives' catalogue: [collectives.md](collectives.md).",
        "",
        "The sections on switching at the end (between `scripts/wormhole_report.py` markers) "
        "are written by that script and kept as they are by this one.",
        "",
        "| section | table | time |",
        "|---|---|---|",
        *summary,
        "",
    ]
    body += kept_blocks(out)
    run.write(out, "\n".join(head + body).rstrip() + "\n")
    if not args.check:
        print(f"wrote {out} in {total:.0f} s")
    return run.finish()


def slug(title: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


if __name__ == "__main__":
    sys.exit(main())
