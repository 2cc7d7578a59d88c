"""Plans before work for deadlock, sweep, export, routes and analyze; input files read
with a limit; rank 0's lone work never leaves the other ranks waiting.

The estimates are checked against computed truth (the dependencies an analysis builds,
the bytes an export writes) and against measured peaks (a factor of 2), the refusals
through the real CLI (``tests/test_catalogue_plans.py`` has the one-line catalogue).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mpinet.cli import main
from mpinet.deadlock import analysis as da
from mpinet.deadlock import channel_graph as cg
from mpinet.errors import JobError, ResourceError
from mpinet.jobs import inputs, plans, plans_io, sweep_plan
from mpinet.jobs import resources as rs
from mpinet.jobs.spec import read_job_text
from mpinet.jobs.sweep_settings import Rates, Settings, parse_rates
from mpinet.routing import make_router
from mpinet.topology import export, from_spec

ROOT = Path(__file__).resolve().parent.parent


def _env(**kw: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPINET_")}
    return {**env, "PYTHONPATH": str(ROOT), **kw}


# -- input files --------------------------------------------------------------------------
def test_a_regular_file_over_the_limit_is_refused_before_it_is_read(tmp_path):
    p = tmp_path / "big.toml"
    p.write_bytes(b"#" * 5000)
    with pytest.raises(JobError, match=r"holds 5,000 bytes, over the limit of 4 KiB"):
        inputs.read_input(p, "job file", 4096)
    assert inputs.read_input(p, "job file", 5000) == b"#" * 5000  # the limit is inclusive


def test_devices_are_read_only_up_to_the_limit():
    t0 = time.monotonic()
    with pytest.raises(JobError, match=r"/dev/zero \(a character device\) gave more than 1 MiB"):
        read_job_text("/dev/zero")
    assert time.monotonic() - t0 < 5
    assert inputs.read_input("/dev/null") == b""


def test_a_proc_file_of_stated_size_zero_is_read():
    text = inputs.read_input("/proc/self/status", "status").decode()
    assert os.stat("/proc/self/status").st_size == 0 and "Pid:" in text


def test_a_file_that_grows_while_read_is_refused(tmp_path, monkeypatch):
    p = tmp_path / "grows.toml"
    p.write_bytes(b"#" * 3000)
    real = os.stat

    class Small:  # the size stated before the file grew
        def __init__(self, st):
            self.st_mode, self.st_size = st.st_mode, 10

    monkeypatch.setattr(inputs.os, "stat", lambda path: Small(real(path)))
    with pytest.raises(JobError, match=r"grows\.toml grew past 1 KiB, the limit"):
        inputs.read_input(p, "job file", 1024)


def test_a_fifo_without_a_writer_is_refused_after_the_wait(tmp_path):
    f = tmp_path / "job.fifo"
    os.mkfifo(f)
    t0 = time.monotonic()
    with pytest.raises(JobError, match=r"\(a FIFO or pipe\) gave 0 bytes and had not ended"):
        inputs.read_input(f, "job file", wait=0.5)
    assert 0.4 < time.monotonic() - t0 < 5


def test_a_fifo_is_read_when_its_writer_ends_and_refused_when_it_never_does(tmp_path):
    f = tmp_path / "job.fifo"
    os.mkfifo(f)

    def write(data: bytes, forever: bool) -> None:
        try:
            with open(f, "wb") as fh:
                while True:
                    fh.write(data)
                    fh.flush()
                    if not forever:
                        return
        except BrokenPipeError:  # the reader gave up: what the test expects
            pass

    t = threading.Thread(target=write, args=(b'topology = "star:4"\n', False), daemon=True)
    t.start()
    assert inputs.read_input(f, "job file", wait=10) == b'topology = "star:4"\n'
    t.join(5)
    t = threading.Thread(target=write, args=(b"#" * 4096, True), daemon=True)
    t.start()
    with pytest.raises(JobError, match=r"\(a FIFO or pipe\) gave more than 64 KiB"):
        inputs.read_input(f, "job file", 65536, wait=10)
    t.join(5)


def test_missing_directory_and_socket_are_one_line(tmp_path):
    import socket

    with pytest.raises(JobError, match="does not exist"):
        inputs.read_input(tmp_path / "nope.toml")
    with pytest.raises(JobError, match="is a directory"):
        inputs.read_input(tmp_path)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "sock"))
    try:
        with pytest.raises(JobError, match="is a socket"):
            inputs.read_input(tmp_path / "sock")
    finally:
        s.close()


def test_a_job_from_a_pipe_runs(tmp_path):
    """Process substitution and stdin are pipes that end: read like a file."""
    cmd = [sys.executable, "-m", "mpinet", "run", "/dev/stdin", "--quiet", "--json"]
    proc = subprocess.run(
        cmd, input='topology = "star:4"\n', capture_output=True, text=True, env=_env(), timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert '"delivered": 24' in proc.stdout


# -- deadlock -----------------------------------------------------------------------------
SYM = [("star:6", "shortest", "none"), ("star:6", "shortest", "hops"), ("scc:5", "scc-greedy",
       "none"), ("ms:2,3", "ms-balls-to-boxes", "none"), ("ccc:6", "ccc", "hops"),
       ("hypercube:8", "hypercube-ecube", "none")]  # fmt: skip


@pytest.mark.parametrize(("spec", "name", "classes"), SYM)
def test_the_dependency_estimate_bounds_the_analysis(spec, name, classes):
    """The plan's dependencies are at least those the analysis finds, and not 3x more
    on minimal routers (the estimate of memory rests on them)."""
    t = from_spec(spec)
    r = make_router(name, t)
    su = da.setup(t, classes, None, "auto")
    est = plans.deadlock_dependencies(t, su)
    found = da.analyze(t, r, buffer_classes=classes).report["dependencies"]
    assert found <= est
    if name != "hypercube-ecube":  # dimension order turns one way only
        assert est < 3 * found


def test_routes_followed_in_chunks_give_the_same_graph(monkeypatch):
    t = from_spec("star:5")
    r = make_router("shortest", t, tie="random")
    whole = da.analyze(t, r, buffer_classes="hops", destinations="symmetry")
    import mpinet.deadlock.routes as droutes

    monkeypatch.setattr(droutes, "MAX_STATES", 7)  # sources followed 7 at a time
    chunked = da.analyze(t, r, buffer_classes="hops", destinations="symmetry")
    assert np.array_equal(whole.src, chunked.src) and np.array_equal(whole.dst, chunked.dst)
    assert whole.report["pairs"] == chunked.report["pairs"]
    assert whole.report["max_route_length"] == chunked.report["max_route_length"]
    alld = da.analyze(t, r, buffer_classes="hops", destinations="all")
    assert set(zip(alld.src.tolist(), alld.dst.tolist(), strict=True)) == set(
        zip(chunked.src.tolist(), chunked.dst.tolist(), strict=True)
    )


def test_the_analysis_reports_its_progress():
    t = from_spec("star:5")
    seen: list[tuple[str, int, int]] = []
    da.analyze(t, make_router("shortest", t), progress=lambda *a: seen.append(a))
    phases = [p for p, _, _ in seen]
    assert phases[0] == "building the neighbour table"
    assert any(p.startswith("following routes") for p in phases)
    assert "building the dependency graph" in phases and phases[-1].startswith("searching")
    follow = [(d, n) for p, d, n in seen if p.startswith("following")]
    assert follow[-1][0] == follow[-1][1] and all(d <= n for d, n in follow)


def test_the_cycle_search_reports_peeling():
    src, dst = np.arange(9), np.arange(1, 10)  # a path: peeled to nothing
    seen: list[tuple[int, int]] = []
    acyclic, _, _ = cg.find_cycle(10, src, dst, progress=lambda d, n: seen.append((d, n)))
    assert acyclic and seen[-1] == (10, 10)


def test_big_analyses_are_refused_from_the_plan():
    t = from_spec("star:11")
    su = da.setup(t)
    with pytest.raises(ResourceError, match="would have about 3,592,512,000 dependencies"):
        plans.plan_deadlock(t, make_router("star-greedy", t), su, 1, 1)
    t = from_spec("ms:3,3")
    est = plans.estimate_deadlock(t, make_router("shortest", t), da.setup(t))
    with pytest.raises(ResourceError, match=r"on rank 0 .* way out: a smaller network"):
        rs.check(lambda r: est, 2, 2, have=est.bytes // 2, serial=True)
    # serial: the other ranks on the machine hold the interpreter only
    assert rs.check(lambda r: est, 4, 4, have=est.bytes + 3 * rs.BASE_BYTES, serial=True)


# A fresh parent runs the command, so its children's peak is this command's alone: the
# test process's own RUSAGE_CHILDREN keeps the largest child any earlier test ran.
_PEAK = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stderr.write(p.stderr[-2000:])\n"
    "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _peak_kib(args: list[str]) -> int:
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "mpinet", *args],
        capture_output=True, text=True, env=_env(), timeout=600,
    )  # fmt: skip
    code, peak = (int(w) for w in proc.stdout.split())
    assert code in (0, 1), proc.stderr
    return peak


@pytest.mark.slow
def test_the_deadlock_estimate_is_close_to_the_measured_peak():
    t = from_spec("star:8")
    est = plans.estimate_deadlock(t, make_router("shortest", t), da.setup(t, "hops"))
    measured = _peak_kib(["deadlock", "star:8", "--router", "shortest", "--buffer-classes",
                          "hops", "--quiet"]) * 1024  # fmt: skip
    assert measured / 2 < est.bytes < 2 * measured


# -- sweep --------------------------------------------------------------------------------
def test_rates_and_settings_are_bounded_before_anything_is_allocated():
    with pytest.raises(JobError, match=r"n in \[2, 1,000\] loads"):
        parse_rates("0.1:0.5:1000000000")
    with pytest.raises(JobError, match="lists 1,001 loads"):
        parse_rates(",".join(f"{(i + 1) / 2000:.5f}" for i in range(1001)))
    assert len(parse_rates("0.1:0.5:1000").values) == 1000
    for kw, what in [({"coarse": 10**6}, "coarse"), ({"bisect": 41}, "bisect"),
                     ({"warmup": 2**31}, "warmup"), ({"tail": 2**31}, "tail")]:  # fmt: skip
        with pytest.raises(JobError, match=f"sweep {what} "):
            Settings(**kw).check()
    with pytest.raises(JobError, match="warmup \\+ measure \\+ drain"):
        Settings(warmup=2**30, measure=2**30, drain=10).check()


def _sweep_plan(spec: str = "star:4"):
    from mpinet.jobs import load_job
    from mpinet.jobs.execute import plan

    sets = [(["topology"], spec), (["trace", "level"], "none")]
    return plan(load_job(None, sets))


def test_the_sweep_plan_counts_loads_steps_and_packets():
    p = _sweep_plan()
    s = Settings(warmup=100, measure=200, drain=50, tail=10)
    hops = rs.mean_hops(p.topo)
    est = sweep_plan.plan_sweep(p, parse_rates("0.1,0.2"), s, 1, 1)
    want = sum(r * 24 * 310 * hops + sweep_plan.STEP_WORK * 350 for r in (0.1, 0.2))
    assert est.work == pytest.approx(want)
    auto = sweep_plan.loads(Rates("auto", [], 0.0, 0.0), Settings(coarse=4, bisect=3), 0.8)
    assert len(auto) == 4 + 3 + 1 and max(auto) == 0.8
    with pytest.raises(ResourceError, match=r"over the limit of 1e\+12; way out: fewer loads"):
        sweep_plan.plan_sweep(p, parse_rates("auto"), Settings(warmup=2**29), 1, 1)


def test_the_sweep_memory_is_the_highest_load(monkeypatch):
    p = _sweep_plan("star:6")
    s = Settings(measure=200000)
    lo = sweep_plan.estimate_load(p, 0.1, sweep_plan.injection_steps(p, s), 1)
    hi = sweep_plan.estimate_load(p, 0.5, sweep_plan.injection_steps(p, s), 1)
    assert hi.bytes > lo.bytes
    monkeypatch.setenv(rs.MEMORY_ENV, str((lo.bytes + hi.bytes) // 2))
    sweep_plan.plan_sweep(p, parse_rates("0.1"), s, 1, 1)
    with pytest.raises(ResourceError, match="at load 0.5 needs about"):
        sweep_plan.plan_sweep(p, parse_rates("0.1,0.5"), s, 1, 1)


# -- export -------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["star:5", "scc:5", "fccn:3", "ms:2,2", "ccc:5"])
@pytest.mark.parametrize("fmt", export.FORMATS)
def test_the_export_estimate_bounds_the_bytes_written(spec, fmt):
    t = from_spec(spec)
    buf = io.StringIO()
    seen: list[tuple[int, int]] = []
    export.write(t, fmt, buf, chunk_nodes=50, progress=lambda d, n: seen.append((d, n)))
    size = len(buf.getvalue().encode())
    assert size <= export.estimate_bytes(t, fmt) <= 1.3 * size
    assert seen[-1][0] == seen[-1][1] and [d for d, _ in seen] == list(range(1, len(seen) + 1))


def test_the_export_plan_refuses_size_and_memory(monkeypatch):
    with pytest.raises(ResourceError, match=r"32,212,254,720 lines, about [\d,]+ min"):
        plans_io.plan_export(from_spec("hypercube:30"), "edgelist")
    t = from_spec("hypercube:18")
    est = plans_io.estimate_export(t, "graphml")
    assert est.work == export.estimate_bytes(t, "graphml") and plans_io.seconds(est) > 0
    monkeypatch.setenv(rs.MEMORY_ENV, "200M")
    with pytest.raises(ResourceError, match=r"on rank 0 \(chunk of text"):
        plans_io.plan_export(t, "graphml")


# -- routes -------------------------------------------------------------------------------
def test_routes_engine_beyond_int32_queues_is_refused():
    t = from_spec("hypercube:27")
    r = make_router("hypercube-ecube", t)
    with pytest.raises(ResourceError, match=r"3,623,878,656 link queues per rank"):
        plans.plan_routes(t, r, "sample", 10, 1, 1, engine=True)
    with pytest.raises(ResourceError, match=r"over 2\*\*31"):
        plans.plan_routes(t, r, "sample", 10, 1, 1, engine=True)


# -- analyze ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def trace_path(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("plans-trace")
    assert main(["run", "--topology", "star:6", "--packets", "2", "--quiet",
                 "--out", str(d / "t.h5")]) == 0  # fmt: skip
    return d / "t.h5"


def test_analyze_skips_stretch_when_its_tables_do_not_fit(trace_path, monkeypatch, capsys):
    from mpinet.trace import open_trace

    with open_trace(trace_path) as tr:
        attrs = tr.attrs
    full = plans_io.estimate_analyze([attrs], 1 << 18, True).bytes
    bare = plans_io.estimate_analyze([attrs], 1 << 18, False).bytes
    assert full > bare
    monkeypatch.setenv(rs.MEMORY_ENV, str((full + bare) // 2))
    assert plans_io.plan_analyze([str(trace_path), None], 1 << 18, True)[0] is False
    assert main(["analyze", str(trace_path), "--json"]) == 0
    out = capsys.readouterr().out
    assert "would not fit in the" in out and "--no-stretch" not in out
    monkeypatch.setenv(rs.MEMORY_ENV, str(bare - 1))
    with pytest.raises(ResourceError, match="a smaller --chunk-rows"):
        plans_io.plan_analyze([str(trace_path), None], 1 << 18, True)
    monkeypatch.delenv(rs.MEMORY_ENV)
    assert plans_io.plan_analyze([str(trace_path), None], 1 << 18, True) == (True, None)


def test_analyze_histograms_grow_with_the_steps():
    a = {"topology": "star:4", "steps": 10}
    b = {"topology": "star:4", "steps": 2**31 - 2}
    grow = plans_io.estimate_analyze([b], 1024, False).bytes
    assert grow - plans_io.estimate_analyze([a], 1024, False).bytes > 2**31 * 3 * 50
    two = plans_io.estimate_analyze([a, a], 1024, False).parts["histograms"]
    assert two == 2 * plans_io.estimate_analyze([a], 1024, False).parts["histograms"]


# -- rank 0's lone work under mpiexec -----------------------------------------------------
def _launch(mpiexec, args: list[str], **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*mpiexec, "-n", "2", sys.executable, "-m", "mpinet", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(**env),
        start_new_session=True,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [["deadlock", "star:4", "--router", "shortest"], ["export", "star:5", "--format", "anynet"]],
)
def test_a_failure_on_rank_0_aborts_the_job(mpiexec, args):
    t0 = time.monotonic()
    proc = _launch(mpiexec, args, MPINET_TEST_FAIL_RANK="0", MPINET_TIMEOUT="600")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode not in (0, None)
    assert "rank 0 failed; aborting the MPI job" in err
    assert time.monotonic() - t0 < 60  # not the watchdog's 600 s


@pytest.mark.slow
def test_an_address_space_cap_is_refused_by_the_plan_on_every_rank(mpiexec):
    """The estimate fits MemAvailable, not the address space ``ulimit -v`` leaves: the plan
    refuses it (it ran into a MemoryError before), one line naming the limit, exit 2."""
    cmd = " ".join([*mpiexec, "-n", "2", sys.executable, "-m", "mpinet", "deadlock", "star:9",
                    "--router", "shortest", "--quiet"])  # fmt: skip
    proc = subprocess.run(["bash", "-c", f"ulimit -v 1500000; exec {cmd}"], capture_output=True,
                          text=True, env=_env(MPINET_TIMEOUT="600"), timeout=300)  # fmt: skip
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert len(lines) == 1 and "needs about" in lines[0], proc.stderr[-3000:]
    assert "is available per process (ulimit -v 1.4 GiB)" in lines[0]
    assert "way out: a larger ulimit -v" in lines[0]


def _rank0_pid(mark: str) -> int | None:
    """The pid of rank 0 of the job launched with ``PLANS_TEST_MARK=mark``."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"PLANS_TEST_MARK={mark}".encode() in env and b"PMI_RANK=0" in env:
            return int(pid)
    return None


@pytest.mark.slow
def test_rank_0_killed_during_the_analysis_ends_the_job(mpiexec):
    """The OOM killer's SIGKILL on rank 0: MPICH's hydra ends the job, the other rank
    does not wait for the watchdog."""
    mark = f"kill-{os.getpid()}"
    proc = _launch(mpiexec, ["deadlock", "ms:2,4", "--router", "shortest", "--progress"],
                   MPINET_TIMEOUT="600", MPINET_PROGRESS_DELAY="0",
                   PLANS_TEST_MARK=mark)  # fmt: skip
    try:
        t0 = time.monotonic()
        first = proc.stderr.readline()  # rank 0 is following routes
        assert "following routes" in first or "neighbour table" in first, first
        pid = _rank0_pid(mark)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=60)
        assert proc.returncode != 0 and time.monotonic() - t0 < 60
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
