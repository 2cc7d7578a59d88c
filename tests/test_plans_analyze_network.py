"""``analyze``'s plan finds a file network where ``analyze`` does (the absolute path the run
read, recorded in the trace), so run from another directory it still counts the
exact-distance tables that stretch builds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mpinet.jobs.plans_io import estimate_analyze
from mpinet.trace import open_trace

ROOT = Path(__file__).resolve().parent.parent
STRETCH = "exact distances (stretch)"


def test_plan_counts_stretch_of_a_file_network_from_another_directory(tmp_path, monkeypatch):
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    mpinet = [sys.executable, "-m", "mpinet"]
    for args in (
        ["export", "star:4", "--format", "edgelist", "--out", "star4.edges"],
        ["run", "--topology", "file:star4.edges", "--quiet", "--out", "t.h5"],
    ):
        r = subprocess.run([*mpinet, *args], cwd=run_dir, env=env, capture_output=True,
                           timeout=120)  # fmt: skip
        assert r.returncode == 0, r.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the spec's relative path no longer finds the file
    trace = str(run_dir / "t.h5")
    with open_trace(trace) as tr:
        attrs = dict(tr.attrs)
    assert attrs["topology"] == "file:star4.edges"
    planned = estimate_analyze([attrs], 1 << 16, True, [trace]).parts
    assert planned.get(STRETCH, 0) > 0
    assert STRETCH not in estimate_analyze([attrs], 1 << 16, False, [trace]).parts
