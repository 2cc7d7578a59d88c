"""The watchdog: a stopped rank makes the others abort the job, naming it, instead of hanging."""

from __future__ import annotations

import contextlib
import os
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


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the rank processes")
def test_a_stopped_rank_aborts_the_job_naming_it():
    from launcher import find_mpiexec

    cmd = [*find_mpiexec(), "-n", "2", sys.executable, "-m", "mpinet", "run"]
    # about 10 s on 2 ranks (256 packets per node took 2.6 s once unbounded all-port runs
    # took the departure calendar: rank 1 was sometimes stopped after the run's last collective)
    cmd += ["--topology", "ms:3,2", "--packets", "1024", "--trace-level", "none", "--quiet"]
    cmd += ["--timeout", "3"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    stopped: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not stopped and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            ranks = {_rank_of(p): p for p in _descendants(proc.pid)}
            if 1 in ranks and 0 in ranks:
                time.sleep(1.5)  # let the run reach its steps (it lasts well over 5 s)
                os.kill(ranks[1], signal.SIGSTOP)
                stopped.append(ranks[1])
        assert stopped, "the run ended before rank 1 could be stopped"
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode != 0
        assert "watchdog" in err and "did not arrive: 1" in err, err
        assert time.monotonic() - t0 < 30
    finally:
        for p in stopped:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


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
    finally:
        for p in _descendants(proc.pid):
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
