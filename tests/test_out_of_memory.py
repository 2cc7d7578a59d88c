"""A MemoryError the plan did not foresee ends in one line naming the limits, never a
traceback: in the collective phase of a command on 1 and 2 ranks (the failing rank says
it and the job is aborted), and outside it."""

from __future__ import annotations

import argparse
import os

import pytest

LINE = r"ran out of memory; .* available \(.*\); way out: fewer ranks on this machine"


@pytest.mark.parametrize("ranks", [1, 2])
def test_memory_error_in_the_collective_phase_is_one_line(run_mpinet, monkeypatch, ranks):
    monkeypatch.setenv("MPINET_TEST_OOM_RANK", str(ranks - 1))
    proc = run_mpinet(["run", "--topology", "star:4", "--quiet"], ranks=ranks, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("mpinet")]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"mpinet: error{' on rank 1' if ranks == 2 else ''}: ")
    assert f"rank {ranks - 1} ran out of memory" in lines[0]


def test_memory_error_outside_the_collective_phase(monkeypatch, capsys):
    from mpinet import cli

    def boom(_args):
        raise MemoryError

    class Parser:
        def __init__(self, *_only):  # build_parser(only): the command named
            pass

        def parse_args(self, _argv):
            return argparse.Namespace(func=boom)

    monkeypatch.setattr(cli, "build_parser", Parser)
    code = cli.main(["info", "star:4"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.startswith("mpinet: error: mpinet ran out of memory") and err.count("\n") == 1
    assert os.environ.get("MPINET_TEST_OOM_RANK") is None
