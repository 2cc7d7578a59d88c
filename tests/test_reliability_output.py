"""Nothing lost: output paths refused before the run, results kept when the trace fails,
exclusive publication, and SIGINT/SIGTERM cleaned up (serially and under mpiexec).

docs/reliability.md lists each guarantee with the test here that proves it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import mpinet.trace as trace
from mpinet.cli import main
from mpinet.engine.core import Engine
from mpinet.errors import TraceError
from mpinet.jobs import load_job
from mpinet.jobs.execute import plan
from mpinet.trace import reserve, writer

ROOT = Path(__file__).resolve().parent.parent
RUN = ["run", "--topology", "star:4", "--quiet"]
MPINET = [sys.executable, "-m", "mpinet"]


def listing(d: Path) -> list[str]:
    return sorted(os.listdir(d))


def err_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


@pytest.fixture
def no_engine(monkeypatch):
    """Fail the test if the engine runs: a refusal must come before any work."""

    def ran(*a, **k):
        raise AssertionError("the engine ran before the path was refused")

    monkeypatch.setattr(Engine, "run", ran)


def _dangling(d: Path) -> str:
    (d / "link.h5").symlink_to(d / "gone" / "t.h5")
    return str(d / "link.h5")


def _in_parts(d: Path) -> str:
    (d / "t.h5.parts-0123abcd").mkdir()
    return str(d / "t.h5.parts-0123abcd" / "x.h5")


def _subdir(d: Path) -> str:
    (d / "sub").mkdir()
    return str(d / "sub")


def _existing(d: Path) -> str:
    (d / "t.h5").write_bytes(b"precious")
    return str(d / "t.h5")


REFUSALS = {
    "empty": (lambda d: "", [], "the trace path is empty"),
    "trailing slash": (lambda d: f"{d}/newdir/", [], "ends in '/'"),
    "directory": (_subdir, ["--force"], "is a directory"),
    "missing directory": (lambda d: str(d / "no" / "t.h5"), [], "no does not exist"),
    "dangling symlink": (_dangling, [], "dangling symbolic link"),
    "parts directory": (_in_parts, [], "the parts directory of another trace"),
    "existing file": (_existing, [], "exists; use --force"),
    "not a trace, forced": (_existing, ["--force"], "is not an mpinet trace"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_bad_paths_refused_before_the_run(tmp_path, capsys, no_engine, case):
    make, extra, message = REFUSALS[case]
    out = make(tmp_path)
    before = listing(tmp_path)
    assert main([*RUN, "--out", out, *extra]) == 2
    lines = err_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("mpinet: error:") and message in lines[0]
    assert listing(tmp_path) == before  # nothing created, nothing removed
    if case.startswith(("existing", "not a trace")):
        assert (tmp_path / "t.h5").read_bytes() == b"precious"


def test_job_file_itself_refused(tmp_path, capsys, no_engine):
    job = tmp_path / "job.toml"
    job.write_text('topology = "star:4"\n')
    for extra in ([], ["--force"]):
        assert main(["run", str(job), "--out", str(job), "--quiet", *extra]) == 2
        assert "is the job file itself" in err_lines(capsys)[0]
    assert job.read_text() == 'topology = "star:4"\n' and listing(tmp_path) == ["job.toml"]


def test_unwritable_directory_refused(tmp_path, capsys, no_engine):
    if os.geteuid() == 0:  # root writes through permissions: take a read-only filesystem
        out = "/sys/mpinet-test.h5"
        if os.access("/sys", os.W_OK) and not Path("/sys").is_mount():
            pytest.skip("no read-only directory for root here")
    else:
        (tmp_path / "ro").mkdir(mode=0o555)
        out = str(tmp_path / "ro" / "t.h5")
    assert main([*RUN, "--out", out]) == 2
    line = err_lines(capsys)[0]
    assert out in line and ("not writable" in line or "cannot create a file" in line)


def test_trace_attributes_checked_in_plan(tmp_path):
    """A value the trace cannot store is refused by plan, not after the run."""
    job = load_job(None, [(["topology"], "star:4")])
    job.seed = 2**64  # past the job schema's own bound, to reach the trace's check
    with pytest.raises(TraceError, match="'seed'.*does not fit 64 bits"):
        plan(job, out=str(tmp_path / "t.h5"))
    assert listing(tmp_path) == []


def test_largest_seed_round_trips(tmp_path, capsys):
    out = tmp_path / "t.h5"
    assert main([*RUN, "--seed", str(2**63 - 1), "--out", str(out)]) == 0
    with trace.open(out) as tr:
        assert tr.attrs["seed"] == 2**63 - 1 == tr.job["seed"]
    with pytest.raises(SystemExit) as refused:  # argparse's type (mpinet.values): one line
        main([*RUN, "--seed", str(2**63), "--out", str(tmp_path / "u.h5")])
    assert refused.value.code == 2 and "seed" in err_lines(capsys)[-1]


def test_reserved_before_the_run(tmp_path, monkeypatch):
    """The temporary file exists while the engine runs; nothing is left afterwards."""
    seen = []
    real = Engine.run

    def spy(self, workload):
        seen.append(listing(tmp_path))
        return real(self, workload)

    monkeypatch.setattr(Engine, "run", spy)
    assert main([*RUN, "--out", str(tmp_path / "t.h5")]) == 0
    assert len(seen[0]) == 2 and seen[0][0] == ".t.h5.lock"  # the writer lock, and
    assert seen[0][1].startswith(".t.h5.tmp-")  # the temporary file
    assert listing(tmp_path) == ["t.h5"]


# -- the trace fails, the results stay: exit code 3 ----------------------------------------
def _json_run(capsys, out: Path, *extra: str) -> tuple[int, dict, list[str]]:
    code = main([*RUN, "--out", str(out), "--json", *extra])
    cap = capsys.readouterr()
    return code, json.loads(cap.out), cap.err.strip().splitlines()


def test_failed_write_keeps_the_results(tmp_path, monkeypatch, capsys):
    def boom(ds, pieces, failed=bool):
        raise OSError("disk full")

    monkeypatch.setattr(writer, "fill_column", boom)
    code, res, err = _json_run(capsys, tmp_path / "t.h5")
    assert code == 3 and res["trace"] is None and "disk full" in res["trace_error"]
    assert res["stats"]["delivered"] == res["stats"]["injected"] > 0  # the results
    assert len(err) == 1 and err[0].startswith("mpinet: error: trace not written:")
    assert listing(tmp_path) == []
    assert main([*RUN, "--out", str(tmp_path / "t.h5")]) == 3
    assert "trace           NOT WRITTEN" in capsys.readouterr().out


def test_directory_removed_during_the_run(tmp_path, monkeypatch, capsys):
    d = tmp_path / "out"
    d.mkdir()
    real = Engine.run

    def remove_then_run(self, workload):
        shutil.rmtree(d)
        return real(self, workload)

    monkeypatch.setattr(Engine, "run", remove_then_run)
    code, res, err = _json_run(capsys, d / "t.h5")
    assert code == 3 and res["trace"] is None and res["stats"]["ok"]
    assert "was removed during the run" in res["trace_error"] and len(err) == 1
    assert listing(tmp_path) == []


# -- exclusive publication --------------------------------------------------------------------
TABLES = {"steps": {"transmissions": np.arange(5, dtype=np.int64)}}


def test_two_writers_of_one_path(tmp_path):
    """The second writer is refused at its reservation, before any work."""
    path = tmp_path / "t.h5"
    first = reserve.reserve(path, None)
    with pytest.raises(TraceError, match="is being written by another mpinet command"):
        reserve.reserve(path, None)
    trace.write_trace(path, None, attrs={"v": 1}, tables=TABLES, reservation=first)
    with trace.open(path) as t:
        assert t.attrs["v"] == 1
    assert listing(tmp_path) == ["t.h5"]


def test_a_file_appearing_during_the_work_is_kept(tmp_path):
    """Another program (no writer lock) creates the name meanwhile: it is never replaced."""
    path = tmp_path / "t.h5"
    mine = reserve.reserve(path, None)
    path.write_text("another program's file\n")
    with pytest.raises(TraceError, match="appeared while this command worked"):
        trace.write_trace(path, None, attrs={"v": 2}, tables=TABLES, reservation=mine)
    mine.discard(final_parts=True)
    assert path.read_text() == "another program's file\n"
    assert listing(tmp_path) == ["t.h5"]


def test_force_replaces_only_the_trace_it_saw(tmp_path):
    path = tmp_path / "t.h5"
    trace.write_trace(path, None, attrs={"v": 1}, tables=TABLES)
    mine = reserve.reserve(path, None, force=True)
    other = tmp_path / "other.h5"  # another program replaces the trace meanwhile
    trace.write_trace(other, None, attrs={"v": 2}, tables=TABLES)
    os.replace(other, path)
    with pytest.raises(TraceError, match="changed while this command worked"):
        trace.write_trace(path, None, attrs={"v": 3}, tables=TABLES, reservation=mine)
    mine.discard(final_parts=True)
    with trace.open(path) as t:
        assert t.attrs["v"] == 2
    trace.write_trace(path, None, attrs={"v": 4}, tables=TABLES, force=True)  # unchanged: ok
    assert listing(tmp_path) == ["t.h5"]


@pytest.mark.slow
def test_rival_runs_with_the_same_out(tmp_path):
    """Two real runs at once: one writes the trace, the other is refused at its start."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPINET_TEST_WRITE_DELAY="3")
    cmd = [*MPINET, *RUN, "--out", str(tmp_path / "t.h5"), "--json"]
    procs = [_popen(cmd, env) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    loser = outs[[p.returncode for p in procs].index(2)]
    assert loser[0] == "" and "is being written by another mpinet command" in loser[1]
    assert listing(tmp_path) == ["t.h5"]
    trace.open(tmp_path / "t.h5", verify=True).close()


# -- SIGINT and SIGTERM -------------------------------------------------------------------------
def _popen(cmd: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _interrupt(cmd: list[str], d: Path, sig: int, in_write: bool, env: dict) -> tuple:
    """Start ``cmd``, wait for the run (its temporary file) or the write, send ``sig``."""
    if in_write:
        env = dict(env, MPINET_TEST_WRITE_DELAY="60")
    proc = _popen(cmd, env)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        tmp = [p for p in d.iterdir() if p.name.startswith(".t.h5.tmp-")]
        if tmp and (not in_write or tmp[0].stat().st_size > 0):
            break
        time.sleep(0.05)
    time.sleep(0.3)  # inside the engine (or the write's delay)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


SIGS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]


@pytest.mark.slow
@pytest.mark.parametrize("in_write", [False, True], ids=["in-run", "in-write"])
@pytest.mark.parametrize("sig,code", SIGS, ids=["SIGINT", "SIGTERM"])
def test_signal_serial(tmp_path, sig, code, in_write):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # in the run: 1.1 M packets on SCC_7, seconds of engine (4 packets a node ran in 0.5 s,
    # so a signal 0.3 s after the start could come after the run, at exit); in the write: a
    # small job
    job = ["star:5"] if in_write else ["scc:7", "--packets", "32"]
    cmd = [*MPINET, "run", "--topology", *job, "--quiet", "--out", str(tmp_path / "t.h5")]
    rc, out, err = _interrupt(cmd, tmp_path, sig, in_write, env)
    name = signal.Signals(sig).name
    assert rc == code, err
    assert err.strip().splitlines() == [
        f"mpinet: interrupted by {name}; stopped with exit code {code}; "
        "no trace written, its temporary files removed"
    ]
    assert listing(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("split", [False, True], ids=["single", "split"])
@pytest.mark.parametrize("sig,code", SIGS, ids=["SIGINT", "SIGTERM"])
def test_signal_under_mpiexec(tmp_path, mpiexec, sig, code, split):
    """mpiexec forwards the signal to both ranks; rank 1 waits in an MPI call meanwhile."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if split:
        env["MPINET_TRACE_CONSOLIDATE_MIB"] = "0.0001"  # master + per-rank part files
    args = ["run", "--topology", "star:6", "--quiet", "--out", str(tmp_path / "t.h5")]
    cmd = [*mpiexec, "-n", "2", *MPINET, *args]
    rc, out, err = _interrupt(cmd, tmp_path, sig, True, env)
    ours = [ln for ln in err.splitlines() if ln.startswith("mpinet")]
    assert rc == code, err
    assert ours == [
        f"mpinet: interrupted by {signal.Signals(sig).name}; stopped with exit code {code}; "
        "no trace written, its temporary files removed"
    ]
    assert listing(tmp_path) == []


@pytest.mark.slow
def test_trace_failure_under_mpiexec(tmp_path, mpiexec):
    """Both ranks learn that the write failed; the results are printed, exit code 3."""
    d = tmp_path / "out"
    d.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPINET_TEST_WRITE_DELAY="3")
    args = ["run", "--topology", "star:5", "--quiet", "--json", "--out", str(d / "t.h5")]
    proc = _popen([*mpiexec, "-n", "2", *MPINET, *args], env)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.name.startswith(".t.h5.tmp-") and p.stat().st_size for p in d.iterdir()):
            break
        time.sleep(0.05)
    shutil.rmtree(d)  # during the write: the directory is gone when rank 0 commits
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    res = json.loads(out)
    assert res["trace"] is None and "was removed during the run" in res["trace_error"]
    assert res["ranks"] == 2 and res["stats"]["delivered"] == 120
    assert [ln for ln in err.splitlines() if ln.startswith("mpinet")] == [
        f"mpinet: error: trace not written: {res['trace_error']}"
    ]
    assert listing(tmp_path) == []


@pytest.mark.slow
def test_signal_without_a_trace():
    """Without a trace to clean up, the same line (shorter) and the same code."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = ("import time, mpinet.cli.signals as s\nwith s.interrupts():\n"
            "    print('in', flush=True)\n    time.sleep(60)")  # fmt: skip
    proc = _popen([sys.executable, "-c", code], env)
    assert proc.stdout.readline() == "in\n"  # the trigger, not a guess of the start-up time
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.strip() == "mpinet: interrupted by SIGINT; stopped with exit code 130"


def test_interrupts_restores_the_process(monkeypatch):
    """main() called in a process (tests) leaves its signal mask and handlers as they were."""
    from mpinet.cli.signals import interrupts

    before = (signal.pthread_sigmask(signal.SIG_BLOCK, []), signal.getsignal(signal.SIGINT))
    with interrupts():
        assert signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    after = (signal.pthread_sigmask(signal.SIG_BLOCK, []), signal.getsignal(signal.SIGINT))
    assert after == before


def test_abort_removes_the_temporaries(tmp_path):
    """collective()'s MPI_Abort path discards the reservations first."""
    from mpinet.cli.ranks import abandon_traces

    res = reserve.reserve(tmp_path / "t.h5", None)
    assert listing(tmp_path) == [".t.h5.lock", os.path.basename(res.tmp)]
    abandon_traces(0)
    assert listing(tmp_path) == [] and reserve.live() == []
