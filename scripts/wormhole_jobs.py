"""Running the papers' wormhole jobs for scripts/wormhole_report.py and its paper 004 part
(scripts/wormhole_star_step.py): one job through the jobs layer, serial, and the table
cells' formats.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOBS = ROOT / "jobs"
sys.path.insert(0, str(ROOT))

from mpinet.jobs import load_job, parse_set  # noqa: E402
from mpinet.jobs.execute import execute, plan  # noqa: E402
from mpinet.model_names import SWITCHING as SWITCHINGS  # noqa: E402

__all__ = ["JOBS", "ROOT", "SWITCHINGS", "fmt", "progress", "run", "span", "switching_sets"]

#: where the rows go as they are made (main adds its run's progress on stderr)
progress_to: list[Callable[[str], None]] = []


def progress(line: str) -> None:
    """One row as it is made, to the run's progress."""
    for f in progress_to:
        f(line)


def run(job: str, **sets: object) -> dict:
    """``mpinet run jobs/JOB --set K=V ...`` through the jobs layer, serial; the result
    with this process's packet rows (all of them) under ``_local``."""
    items = [f"{k.replace('__', '.')}={v}" for k, v in sets.items()] + ["trace.level=none"]
    j = load_job(str(JOBS / job), [parse_set(s) for s in items])
    return execute(plan(j), comm=None, keep_local=True)


def switching_sets(mode: str, flits: int, wormhole_buffer: int = 4) -> dict:
    """Model overrides of one switching: the whole packet fits one VC unless wormhole."""
    buf = wormhole_buffer if mode == "wormhole" else flits
    return {"model__switching": mode, "model__flits": flits, "model__vc_buffer": buf}


def fmt(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def span(values: list[int]) -> str:
    """``lo-hi``, or one number where they agree."""
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}-{hi}"
