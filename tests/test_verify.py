"""``mpinet verify``: verdicts from measured steps, serially and under mpiexec."""

from __future__ import annotations

import json

import pytest

from mpinet.cli import main
from mpinet.workloads.catalogue import all_checks
from mpinet.workloads.checks import verdict

KEYS = [
    "topology",
    "collective",
    "model",
    "measured_steps",
    "paper_steps",
    "lower_bound",
    "verdict",
]


def test_verdicts():
    assert verdict(10, True, 10, 8) == "equal"
    assert verdict(9, True, 10, 8) == "better-than-paper"
    assert verdict(11, True, 10, 8) == "FAIL"
    assert verdict(9, True, None, 8) == "within-bound"
    assert verdict(7, True, None, 8) == "FAIL"  # below a lower bound: something is wrong
    assert verdict(9, True, 7, 8) == "paper-wrong"
    assert verdict(9, False, 9, 8) == "FAIL"


def test_catalogue_has_quick_and_full_checks():
    checks = all_checks()
    assert any(c.quick for c in checks) and any(not c.quick for c in checks)
    assert {c.model for c in checks} >= {"all-port", "one-port"}


def test_verify_json(capsys):
    assert main(["verify", "--only", "scc", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert rows and all(set(KEYS) <= set(r) for r in rows)
    assert all(r["verdict"] != "FAIL" and r["complete"] for r in rows)


@pytest.mark.slow
def test_verify_quick_under_mpiexec(run_mpinet):
    proc = run_mpinet(["verify", "--quick", "--json"], ranks=2, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.strip().splitlines()]
    serial = run_mpinet(["verify", "--quick", "--json"], ranks=1, timeout=600)
    rows1 = [json.loads(line) for line in serial.stdout.strip().splitlines()]
    strip = ("seconds", "max_rss_mib")
    assert [{k: v for k, v in r.items() if k not in strip} for r in rows] == [
        {k: v for k, v in r.items() if k not in strip} for r in rows1
    ]


def test_sigma_c_checks_report_thm6_lateral_time(capsys):
    assert main(["verify", "--only", "B=1", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    sigma = [r for r in rows if r["collective"].startswith("sigma_c")]
    assert {r["topology"] for r in sigma} >= {"scc:4", "scc:5", "scc:6"}
    for r in sigma:
        n = int(r["topology"].split(":")[1])
        lat, loc = r["class_steps"]["lateral"], r["class_steps"]["local"]
        # a sigma_c step uses one link class, so the classes add up to the total
        assert lat + loc == r["measured_steps"]
        ratio = (n - 1) // 2 if "multiple" in r["collective"] else n // 2  # eq. 15
        assert r["lateral_time"] == round(lat + loc / ratio, 4)
        assert lat == (3 * (n - 1)) // 2  # d_star lateral steps (Thm 4, 5)
