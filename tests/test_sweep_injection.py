"""A sweep injects at its own loads: Bernoulli, or the job's on_off bursts (checked at the
sweep's loads before any work: a derived burst key must be a probability at each), with
loads in flits under ``rate_uses_flits``; the keys a job shared with ``mpinet run``
carries (once/bernoulli, rate, steps, packets) are kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mpinet.analysis.sweep import _injection_words
from mpinet.errors import JobError
from mpinet.jobs.spec import validate
from mpinet.jobs.sweep import check_injection_keys

ROOT = Path(__file__).resolve().parent.parent


def _job(**workload):
    return validate({"topology": "torus:4,2", "workload": {"kind": "uniform", **workload}})


@pytest.mark.parametrize(
    "workload, loads, match",
    [
        ({"injection": "on_off", "rate": 0.05, "steps": 100}, [0.1, 0.6], r"at load 0.6: .*r1"),
        ({"injection": "on_off", "rate": 0.05, "burst_beta": -1, "burst_r1": 0.3},
         [0.01, 0.2], r"at load 0.01: .*burst_beta derived"),
    ],
)  # fmt: skip
def test_on_off_not_a_chain_at_a_load_is_refused(workload, loads, match):
    with pytest.raises(JobError, match=r"mpinet sweep " + match):
        check_injection_keys(_job(**workload), loads)


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
    cmd = [sys.executable, "-m", "mpinet", "sweep", str(job), "--rates", "0.05,0.7", "--quiet"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.startswith("mpinet: error: ") and res.stderr.count("\n") == 1
    assert "mpinet sweep at load 0.7: workload.burst_r1 derived as" in res.stderr


@pytest.mark.parametrize(
    "injection, words",
    [
        (None, "Bernoulli injection, seed"),  # a sweep file written before on_off sweeps
        ({"process": "bernoulli", "rate_unit": "packets"}, "Bernoulli injection, seed"),
        ({"process": "on_off", "rate_unit": "packets"}, "on_off injection, seed"),
        ({"process": "on_off", "rate_unit": "flits"}, "on_off injection, loads in flits, seed"),
    ],
)
def test_the_summary_names_the_process_that_ran(injection, words):
    settings = {} if injection is None else {"injection": injection}
    assert (_injection_words(settings) + ", seed").endswith(words)
