"""The watchdog: a stopped rank makes the others abort the job, naming it, instead of hanging."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc: the rank processes under mpiexec)."""
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(d.name)] = int(fields[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def _rank_of(pid: int) -> int | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for e in env:
        if e.startswith(b"PMI_RANK="):
            return int(e.split(b"=")[1])
    return None


#: (ranks, the rank stopped): the lowest other rank names it; on 4 ranks another rank's
#: abort used to end it before its line was out (only MPICH's "Abort(1) on node 1" was left)
STOPPED = [
    (2, 1),
    pytest.param(3, 0, marks=pytest.mark.slow, id="3-0"),
    pytest.param(4, 2, marks=pytest.mark.slow, id="4-2"),
]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the rank processes")
@pytest.mark.parametrize("ranks,victim", STOPPED)
def test_a_stopped_rank_aborts_the_job_naming_it(tmp_path, mpiexec, ranks, victim):
    from test_signals import Run

    run = Run(tmp_path, ranks, mpiexec, extra=("--timeout", "3"))
    pids = run.running()
    os.kill(pids[victim], signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        code, ours, out = run.finish(pids)  # SIGKILL (the abort) ends a stopped process too
    finally:
        with contextlib.suppress(OSError):
            os.kill(pids[victim], signal.SIGKILL)
    reporter = min(r for r in range(ranks) if r != victim)
    assert code == 1, ours
    assert len(ours) == 1, ours  # mpinet's line alone: no "Abort(1) on node ..." of MPICH
    assert re.fullmatch(
        rf"mpinet: watchdog: rank {reporter} waited \d+ s in step \d+ for the other ranks; "
        rf"rank\(s\) that did not arrive: {victim}\. Aborting the job \(raise --timeout if "
        r"this is legitimately slow\)",
        ours[0],
    ), ours[0]
    assert out == []
    assert time.monotonic() - t0 < 40
    if victim != 0:  # rank 0 removed its temporaries before the abort
        assert os.listdir(tmp_path) == []


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the rank processes")
def test_a_killed_rank_ends_the_job(tmp_path, mpiexec):
    """SIGKILL of one rank: hydra kills the others at once (no rank is left to name it).

    What holds is that nothing hangs and nothing is left running; the line is the
    launcher's (docs/reliability.md, "Not guaranteed").
    """
    from test_signals import Run

    run = Run(tmp_path, 3, mpiexec, extra=("--timeout", "3"))
    pids = run.running()
    os.kill(pids[1], signal.SIGKILL)
    t0 = time.monotonic()
    code, _, _ = run.finish(pids)
    assert code != 0
    assert time.monotonic() - t0 < 30


_STOP_LATE = """
import os, signal, sys
from mpinet.cli import get_comm, meet_at_exit
comm = get_comm(2.0)
comm.Barrier()  # the command's last collective
if comm.Get_rank() == 1:
    os.kill(os.getpid(), signal.SIGSTOP)  # stopped after it, before MPI_Finalize
meet_at_exit()
sys.exit(0)
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the rank processes")
def test_a_rank_stopped_after_the_last_collective_still_aborts_the_job(tmp_path):
    # MPI_Finalize has no time limit: without the watched barrier of the console script
    # (meet_at_exit) rank 0 would wait there for ever
    from launcher import find_mpiexec

    script = tmp_path / "stop_late.py"
    script.write_text(_STOP_LATE)
    cmd = [*find_mpiexec(), "-n", "2", sys.executable, str(script)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode != 0
        assert "watchdog" in err and "the end of the job" in err, err
        assert "did not arrive: 1" in err, err
        assert len([ln for ln in err.splitlines() if ln.strip()]) == 1, err
    finally:
        for p in _descendants(proc.pid):
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
