#!/usr/bin/env python3
"""Run mpinet's whole test suite: serial tests, then the MPI tests under
``mpiexec -n 1, 2, 3, 4`` (oversubscribed on small machines), and print one
honest summary line at the end.

A stage fails if pytest fails on *any* rank, if mpiexec dies, or if an MPI
stage ran no MPI test at all (pytest-mpi skips them silently without
``--with-mpi``). ``--quick`` is the newcomer's tier: lint, the serial tests not
marked ``slow`` and the quick MPI tests on 2 ranks; CI runs the whole suite. The serial
stage runs on pytest-xdist workers (``--workers``, a test file each). Measured 2026-11-29 on
this 2-core machine, idle (load 1.5-2.4): ``--quick`` 3 min 01 s (3,806 tests); the whole suite
15 min 48 s from a fresh clone (20:12 UTC, load 1.3-3.3: 5,422 tests; the serial stage 14 min
14 s on two workers, the MPI stages 7 / 18 / 28 / 31 s). Before the summary line it names
what was not tested and why (optional stages such as parallel HDF5, and every other skip
reason). The stages write Python's bytecode
(``__pycache__``, git-ignored) even under ``PYTHONDONTWRITEBYTECODE``: each of the suite's
~1,000 Python processes would otherwise compile mpinet and pytest's test modules again. The
MPI stages' ranks collect only the files that hold MPI tests (:func:`mpi_files`). Usage::

    python scripts/run_tests.py [--quick] [--ranks 1,2,3,4] [--serial-only | --mpi-only]
                                [-- PYTEST_ARGS]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from launcher import find_mpiexec  # noqa: E402

#: optional stages the suite cannot run everywhere: (name, words of their skip reason, why
#: and where to read more); each is named in the summary when its tests were skipped
OPTIONAL = [
    (
        "parallel HDF5",
        "h5py is built without MPI",
        "h5py built without MPI (docs/parallel-hdf5.md; scripts/parallel_hdf5.sh builds one)",
    ),
]


def junit_results(files: list[Path]) -> dict[str, str]:
    """Merge JUnit files of the ranks: test id -> passed/failed/skipped."""
    worst = {"passed": 0, "skipped": 1, "failed": 2}
    out: dict[str, str] = {}
    for f in files:
        for case in ET.parse(f).getroot().iter("testcase"):
            tid = f"{case.get('classname')}::{case.get('name')}"
            tags = {child.tag for child in case}
            status = (
                "failed"
                if tags & {"failure", "error"}
                else "skipped"
                if "skipped" in tags
                else "passed"
            )
            if worst[status] >= worst[out.get(tid, "passed")]:
                out[tid] = status
    return out


def skip_reasons(files: list[Path]) -> dict[str, str]:
    """Test id -> the reason it was skipped, on any rank (the first reason seen)."""
    out: dict[str, str] = {}
    for f in files:
        for case in ET.parse(f).getroot().iter("testcase"):
            for child in case.iter("skipped"):
                tid = f"{case.get('classname')}::{case.get('name')}"
                out.setdefault(tid, child.get("message") or "no reason given")
    return out


def h5py_has_mpi(python: str) -> bool | None:
    """Whether the interpreter's h5py is built with MPI (None: h5py does not import)."""
    probe = "import h5py; print(h5py.get_config().mpi)"
    r = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    return None if r.returncode else r.stdout.strip() == "True"


def not_tested(skips: dict[str, str], python: str) -> list[str]:
    """The summary's lines on what was not tested: the optional stages whose tests were
    skipped (or, for parallel HDF5, cannot run with this h5py), then every other reason."""
    lines, rest = [], dict(skips)
    for stage, words, why in OPTIONAL:
        hit = [t for t, r in skips.items() if words in r]
        for t in hit:
            del rest[t]
        if hit or (stage == "parallel HDF5" and h5py_has_mpi(python) is False):
            lines.append(f"{stage}: not tested: {why}; {len(hit)} test(s) skipped")
    counts: dict[str, int] = {}
    for reason in rest.values():
        counts[reason] = counts.get(reason, 0) + 1
    for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        lines.append(f"skipped {n} test(s): {reason[:200]}")
    return lines


def run_stage(name: str, cmd: list[str], xml_glob: str, tmp: Path, env: dict) -> dict[str, int]:
    print(f"\n=== {name}: {' '.join(cmd)}", flush=True)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, timeout=1800)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        print(f"!!! {name}: timed out after 1800 s", flush=True)
        rc = -1
    files = sorted(tmp.glob(xml_glob))
    res = junit_results(files) if files else {}
    SKIPS.update({f"{name}::{t}": r for t, r in skip_reasons(files).items()})
    counts = {s: sum(1 for v in res.values() if v == s) for s in ("passed", "failed", "skipped")}
    problems = []
    if rc not in (0,) and counts["failed"] == 0:
        problems.append(f"exit code {rc} with no failing test recorded (crash, hang or no tests)")
    if not res:
        problems.append("no test results recorded")
    elif counts["passed"] == 0:
        problems.append("no test passed: tests were skipped or not collected")
    for p in problems:
        print(f"!!! {name}: {p}", flush=True)
    counts["failed"] += len(problems)
    for log in sorted(tmp.glob(f"{name}-logs/*.log")):
        text = log.read_text()
        if " failed" in text or "Error" in text:
            print(f"--- {name}: report of {log.stem} ---\n{text}", flush=True)
    print(
        f"=== {name}: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['skipped']} skipped in {minutes(time.monotonic() - t0)}",
        flush=True,
    )
    return counts


#: test id (stage-qualified) -> skip reason, over every stage run
SKIPS: dict[str, str] = {}


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"


def workers(n: int) -> list[str]:
    """pytest-xdist's options for ``n`` workers, each taking whole files (their module
    fixtures, such as the catalogue's traces, are built once) in the order tests/conftest.py
    gives them (its ``FIRST``: the longest files first, not xdist's count of tests); none
    without xdist."""
    try:
        import xdist  # noqa: F401
    except ImportError:
        return []
    return ["-n", str(n), "--dist", "loadfile", "--no-loadscope-reorder"] if n > 1 else []


def mpi_files(py: list[str], marker: str, env: dict) -> list[str]:
    """The test files that hold the MPI stages' tests, from one collection here: each rank
    of each stage then collects these files, not the whole suite (~2 s of CPU a rank, 10
    ranks); none (the whole suite) if this collection fails."""
    cmd = [*py, "--collect-only", "-q", "-m", marker]
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return []
    return sorted({line.split("::", 1)[0] for line in r.stdout.splitlines() if "::" in line})


def lint(python: str) -> bool:
    """ruff check and ruff format --check over the repository."""
    ok = True
    for cmd in (["check", "."], ["format", "--check", "."]):
        full = [python, "-m", "ruff", *cmd]
        print(f"\n=== lint: {' '.join(full)}", flush=True)
        if subprocess.run(full, cwd=ROOT).returncode != 0:
            print(f"!!! lint: ruff {cmd[0]} failed", flush=True)
            ok = False
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--ranks", default="1,2,3,4", help="rank counts of the MPI stages (default 1,2,3,4)"
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="lint, serial tests not marked slow, quick MPI tests on 2 ranks",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="pytest-xdist workers of the serial stage, whole test files to each "
        "(default: the cores, at most 2; 1: one process)",
    )
    ap.add_argument("--serial-only", action="store_true")
    ap.add_argument("--mpi-only", action="store_true")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args()
    started = time.monotonic()
    if args.quick and args.ranks == "1,2,3,4":
        args.ranks = "2"
    only = " and not slow" if args.quick else ""
    env = dict(os.environ)
    env.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")
    # the stages start ~1,000 Pythons (pytest on each worker and rank, `python -m mpinet` in
    # the CLI tests): without bytecode each one compiles mpinet's ~220 modules again (0.2 s
    # of CPU) and each pytest its rewritten test modules (7 s); __pycache__ is git-ignored
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    total = {"passed": 0, "failed": 0, "skipped": 0}
    py = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args.pytest_args]
    with tempfile.TemporaryDirectory(prefix="mpinet-tests-") as td:
        tmp = Path(td)
        stages = []
        if not args.mpi_only:
            xml = tmp / "serial.xml"
            stages.append(
                (
                    "serial",
                    # the slowest tests listed: CI's 20 minutes are watched from its log
                    [
                        *py,
                        *workers(args.workers),
                        "-m",
                        f"not mpi{only}",
                        "--durations=25",
                        f"--junitxml={xml}",
                    ],
                    "serial.xml",
                )  # fmt: skip
            )
        if not args.serial_only:
            try:
                launcher = find_mpiexec()
            except FileNotFoundError as exc:
                print(f"!!! cannot run the MPI stages: {exc}")
                print("\ntotal: 0 passed, 1 failed, 0 skipped")
                return 1
            files = [] if args.pytest_args else mpi_files(py, f"mpi{only}", env)
            for n in [int(x) for x in args.ranks.split(",") if x]:
                name = f"mpi-n{n}"
                xml = tmp / f"{name}-rank{{rank}}.xml"
                cmd = [*launcher, "-n", str(n), *py, "--with-mpi", "-m", f"mpi{only}", *files]
                cmd.append(f"--junitxml={xml}")
                stages.append((name, cmd, f"{name}-rank*.xml"))
        if not args.mpi_only and not lint(py[0]):
            total["failed"] += 1
        for name, cmd, pattern in stages:
            logdir = tmp / f"{name}-logs"
            logdir.mkdir()
            counts = run_stage(name, cmd, pattern, tmp, dict(env, MPINET_TEST_LOGDIR=str(logdir)))
            for key in total:
                total[key] += counts[key]
    gaps = not_tested(SKIPS, py[0])
    if gaps:
        print("\nnot tested:")
        for line in gaps:
            print(f"  {line}")
    print(f"\ntime: {minutes(time.monotonic() - started)}")
    print(f"total: {total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
    return 1 if total["failed"] or not total["passed"] else 0


if __name__ == "__main__":
    sys.exit(main())
