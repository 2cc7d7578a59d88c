"""Progress output (mpinet/cli/progress.py): the throttled line, where it goes, every command."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpinet.cli import main, progress
from mpinet.cli.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
#: a small network and many steps: the engine calls its progress callback ~120 times
LONG = [
    "run",
    "--topology",
    "hypercube:3",
    "--workload",
    "uniform",
    "--injection",
    "bernoulli",
    "--rate",
    "0.05",
    "--steps",
    "120",
    "--trace-level",
    "none",
]


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_nothing_before_the_delay_then_throttled_on_a_tty():
    clock, out = Clock(), io.StringIO()
    bar = Progress(out, tty=True, delay=2.0, clock=clock)
    built = []

    def text() -> str:
        built.append(1)
        return "step 5"

    for dt in (0.0, 1.0, 1.99):
        clock.t = 100 + dt
        bar(text)
    assert out.getvalue() == "" and not built  # not even built before the delay
    clock.t = 102.0
    bar(text)
    assert out.getvalue() == "\r[mpinet] step 5  (0:02)"
    clock.t = 102.1
    bar("too soon")  # within 0.25 s: skipped
    clock.t = 102.3
    bar("step 6")
    assert out.getvalue().count("\r") == 2 and "too soon" not in out.getvalue()
    assert "\n" not in out.getvalue()  # one line, rewritten
    bar.close()
    assert out.getvalue().endswith("\r" + " " * len("[mpinet] step 6  (0:02)") + "\r")
    clock.t = 200.0
    bar("after close")
    assert "after close" not in out.getvalue()


def test_plain_lines_on_a_pipe_every_second_then_less_often():
    clock, out = Clock(), io.StringIO()
    bar = Progress(out, tty=False, delay=2.0, clock=clock)
    for i in range(0, 6000):  # 600 s in steps of 0.1 s
        clock.t = 100 + i / 10
        bar(f"t{i}")
    lines = out.getvalue().splitlines()
    assert all(ln.startswith("[mpinet] t") for ln in lines) and "\r" not in out.getvalue()
    times = [int(ln.split()[1][1:]) / 10 for ln in lines]
    assert times[0] == 2.0 and times[1] == 3.0  # 1 s apart at first
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert max(gaps) <= 30.05 and gaps[-1] > 20  # at most 30 s apart, and a log stays short
    assert len(lines) < 60
    bar.close()
    assert out.getvalue().endswith("\n")  # nothing to clear on a pipe


def test_a_failing_stream_switches_progress_off():
    class Broken(io.StringIO):
        def write(self, s):
            raise OSError("terminal gone")

    bar = Progress(Broken(), tty=True, delay=0)
    bar("x")  # no exception
    assert not bar.enabled


def test_off_is_silent_and_cheap():
    bar = Progress()
    bar(lambda: pytest.fail("built"))
    bar.engine(1, 2, 3, 4)
    bar.close()


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**({"quiet": False, "progress": False, "json": False} | kw))


def test_where_progress_goes(monkeypatch):
    assert not progress.for_command(_args(progress=True), rank=1).enabled  # rank 0 only
    assert not progress.for_command(_args(quiet=True), rank=0).enabled
    forced = progress.for_command(_args(progress=True, json=True), rank=0)
    assert forced.stream is sys.stderr  # --progress wins over --json: stderr is not stdout
    monkeypatch.setattr(progress, "terminal", lambda: (io.StringIO(), True))
    assert progress.for_command(_args(), rank=0).tty
    assert not progress.for_command(_args(json=True), rank=0).enabled


def test_quiet_and_progress_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["info", "star:4", "--quiet", "--progress"])
    assert exc.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_no_terminal_outside_a_launcher(monkeypatch):
    for var in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress.terminal() == (None, False)


@pytest.mark.parametrize(
    "args",
    [
        ["info", "scc:5"],
        ["routes", "scc:5", "--router", "scc-greedy"],
        ["verify", "--only", "star:4"],
        LONG[:-2] + ["--steps", "20"],
    ],
    ids=["info", "routes", "verify", "run"],
)
def test_every_command_reports_with_progress(args, capsys, monkeypatch):
    monkeypatch.setenv("MPINET_PROGRESS_DELAY", "0")
    assert main([*args, "--progress"]) == 0
    err = capsys.readouterr().err
    assert "[mpinet] " in err and "\r" not in err, err
    assert main([*args, "--quiet"]) == 0
    assert "[mpinet] " not in capsys.readouterr().err


def test_analyze_reports_rows_read(tmp_path, capsys, monkeypatch):
    out = tmp_path / "t.h5"
    assert main(["run", str(ROOT / "jobs/ms-uniform.toml"), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("MPINET_PROGRESS_DELAY", "0")
    assert main(["analyze", str(out), "--progress", "--chunk-rows", "5000"]) == 0
    err = capsys.readouterr().err
    assert "[mpinet] analyze t.h5: rows read" in err
    assert main(["analyze", str(out), "--json"]) == 0
    assert "[mpinet]" not in capsys.readouterr().err


def _mpi(mpiexec, args: list[str], delay: str | None, ranks: int = 2):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("MPINET_PROGRESS_DELAY", None)
    if delay is not None:
        env["MPINET_PROGRESS_DELAY"] = delay
    cmd = [*mpiexec, "-n", str(ranks), sys.executable, "-m", "mpinet", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_progress_lines_under_mpiexec(mpiexec):
    proc = _mpi(mpiexec, [*LONG, "--progress"], delay="0")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("[mpinet] step")]
    assert lines and "delivered" in lines[0]  # from rank 0 only, plain lines (a pipe)
    assert "\r" not in proc.stderr
    assert "checks          all passed" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--quiet", "--json"])
def test_nothing_with_quiet_or_json_under_mpiexec(mpiexec, flag):
    proc = _mpi(mpiexec, [*LONG, flag], delay="0")
    assert proc.returncode == 0, proc.stderr
    assert "[mpinet] step" not in proc.stderr + proc.stdout


@pytest.mark.slow
def test_a_short_run_prints_no_progress(mpiexec):
    proc = _mpi(mpiexec, [*LONG[:-4], "--steps", "5", "--progress"], delay=None)
    assert proc.returncode == 0, proc.stderr
    assert "[mpinet] step" not in proc.stderr  # under the 2 s delay


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) for a pty")
def test_the_launchers_terminal_under_mpiexec(mpiexec):
    """Ranks have no controlling terminal under hydra; progress finds mpiexec's."""
    cmd = " ".join([*mpiexec, "-n", "2", sys.executable, "-m", "mpinet", *LONG])
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPINET_PROGRESS_DELAY="0")
    runs = {}
    for name, suffix in (("tty", ""), ("quiet", " --quiet"), ("redirected", " 2>/dev/null")):
        proc = subprocess.run(
            ["script", "-qec", cmd + suffix, "/dev/null"],
            capture_output=True,  # bytes: text mode would turn every \r into \n
            timeout=300,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        text = proc.stdout.decode(errors="replace")
        if proc.returncode != 0 and "[mpinet]" not in text and name == "tty":
            pytest.skip(f"no pty here: {text[-200:]} {proc.stderr[-200:]!r}")
        assert proc.returncode == 0, text + proc.stderr.decode(errors="replace")
        runs[name] = text
    assert "\r[mpinet] step" in runs["tty"] and "checks          all passed" in runs["tty"]
    assert "[mpinet]" not in runs["quiet"] and "[mpinet]" not in runs["redirected"]
