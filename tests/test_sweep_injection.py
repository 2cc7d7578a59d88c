"""A sweep injects Bernoulli traffic at its own loads: injection settings it cannot follow
(on_off bursts, rates counted in flits) are refused before any work, while the keys a
job shared with ``mpinet run`` carries (once/bernoulli, rate, steps, packets) are not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mpinet.errors import JobError
from mpinet.jobs.spec import validate
from mpinet.jobs.sweep import check_injection_keys

ROOT = Path(__file__).resolve().parent.parent


def _job(**workload):
    return validate({"topology": "torus:4,2", "workload": {"kind": "uniform", **workload}})


@pytest.mark.parametrize(
    "workload, match",
    [
        ({"injection": "on_off", "rate": 0.05, "steps": 100}, r"injection = 'on_off' has no"),
        ({"injection": "on_off", "burst_alpha": 0.2}, r"injection = 'on_off'"),
        ({"injection": "bernoulli", "rate": 0.05, "rate_uses_flits": 1}, r"rate_uses_flits = 1"),
    ],
)
def test_settings_a_sweep_cannot_follow_are_refused(workload, match):
    with pytest.raises(JobError, match=match + r".*mpinet sweep.*--rates"):
        check_injection_keys(_job(**workload))


@pytest.mark.parametrize(
    "workload",
    [{}, {"packets": 4}, {"injection": "bernoulli", "rate": 0.05, "steps": 100}],
)
def test_keys_shared_with_run_are_kept(workload):
    check_injection_keys(_job(**workload))  # the sweep's loads replace them, as documented


def test_the_command_refuses_on_off_before_any_work(tmp_path):
    job = tmp_path / "bursty.toml"
    job.write_text(
        'topology = "torus:4,2"\n[workload]\nkind = "uniform"\ninjection = "on_off"\n'
        "rate = 0.05\nsteps = 100\n"
    )
    cmd = [sys.executable, "-m", "mpinet", "sweep", str(job), "--rates", "0.05", "--quiet"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.startswith("mpinet: error: ") and res.stderr.count("\n") == 1
    assert "injection = 'on_off' has no effect in mpinet sweep" in res.stderr
