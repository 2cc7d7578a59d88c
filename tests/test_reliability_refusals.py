"""Plan before work: refusals are one line, exit 2, in seconds, before any big allocation.

The huge cases run in a subprocess whose address space is capped (``RLIMIT_AS``),
so a refusal that came too late would fail with a MemoryError instead of filling
the machine; every one must answer within :data:`FAST` seconds.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpinet.cli import main
from mpinet.errors import ResourceError
from mpinet.jobs import load_job, parse_set
from mpinet.jobs import resources as rs
from mpinet.topology import from_spec

ROOT = Path(__file__).resolve().parent.parent
#: seconds a refusal may take (interpreter and numba start-up included, on a busy machine)
FAST = 20
#: address space of a refused command: far below what any of the huge jobs would need
CAP = 3 << 30


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def refuse(args: list[str], env: dict | None = None, prefix: list[str] = ()) -> str:
    """Run ``mpinet ARGS``; assert exit 2, one stderr line, within FAST s; return the line."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "mpinet", *args],
        capture_output=True,
        text=True,
        timeout=FAST * 3,  # a hang fails the test rather than the suite
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        preexec_fn=None if prefix else _cap,
    )
    took = time.monotonic() - t0
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("mpinet: error: "), proc.stderr[-2000:]
    assert took < FAST, f"refused after {took:.1f} s"
    assert proc.stdout == ""
    return lines[0]


# -- the user's cases ----------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["run", "--topology", "hypercube:26", "--router", "hypercube-ecube"],
        ["run", "--topology", "fccn:9", "--router", "fccn-sroute"],
        ["run", "--topology", "scc:6", "--packets", "200000"],
        ["run", "--topology", "scc:7", "--workload", "te", "--set", 'workload.algorithm="routed"'],
        ["run", "--topology", "star:12", "--router", "star-greedy"],
    ],
    ids=["hypercube26", "fccn9", "scc6-200k-packets", "te-routed-scc7", "star12"],
)
def test_huge_runs_are_refused_before_allocating(args):
    line = refuse(args)
    assert "needs about" in line and "per rank" in line and "is available" in line
    assert "way out:" in line and "ranks" in line


@pytest.mark.slow
def test_too_many_packets_names_how_many_fit():
    line = refuse(["run", "--topology", "scc:6", "--packets", "200000"])
    assert "fewer packets (workload.packets <= " in line


@pytest.mark.slow
def test_node_ids_beyond_int64_are_refused_not_overflowed():
    for cmd in (["run", "--topology", "scc:20", "--router", "scc-greedy"], ["info", "scc:20"]):
        assert "int64" in refuse(cmd)


@pytest.mark.slow
def test_info_fccn8_refuses_in_seconds():
    line = refuse(["info", "fccn:8"])
    assert "all-sources BFS on fccn:8" in line and "--source" in line


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["routes", "scc:6", "--router", "scc-greedy", "--pairs", "sample:1000000000"],
        ["routes", "hypercube:30", "--router", "hypercube-ecube"],
    ],
    ids=["sample-1e9", "hypercube30-to-identity"],
)
def test_route_pair_sets_are_capped(args):
    assert "limit 50,000,000" in refuse(args)


@pytest.mark.slow
def test_memory_limit_override_refuses_an_ordinary_run():
    args = ["run", "--topology", "scc:6", "--packets", "64", "--quiet"]
    line = refuse(args, env={rs.MEMORY_ENV: "150M"})
    assert "MPINET_MEMORY_LIMIT" in line and "150.0 MiB is available" in line
    line = refuse(["info", "star:9"], env={rs.MEMORY_ENV: "60M"})
    assert line.startswith("mpinet: error: BFS on star:9")
    line = refuse(["verify", "--only", "scc:4"], env={rs.MEMORY_ENV: "100M"})
    assert "verify check scc:4" in line


@pytest.mark.slow
def test_refusal_under_mpiexec_is_one_line_from_rank_0(mpiexec):
    args = ["run", "--topology", "star:12", "--router", "star-greedy"]
    line = refuse(args, prefix=[*mpiexec, "-n", "2"])
    assert "for the 2 rank(s) on this machine" in line


# -- one line instead of a traceback -------------------------------------------------------
def one_line(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mpinet: error: "), err
    return err[0]


def test_job_files_that_cannot_be_read(tmp_path, capsys):
    (tmp_path / "dir.toml").mkdir()
    (tmp_path / "latin1.toml").write_bytes('topology = "scc:4" # caf\xe9\n'.encode("latin-1"))
    (tmp_path / "binary.toml").write_bytes(b"\x7fELF\x00\x01\x02")
    (tmp_path / "empty.toml").write_text("")
    (tmp_path / "bad.toml").write_text("topology = \n")
    assert "is a directory" in one_line(["run", str(tmp_path / "dir.toml")], capsys)
    assert "not UTF-8" in one_line(["run", str(tmp_path / "latin1.toml")], capsys)
    assert "is binary" in one_line(["run", str(tmp_path / "binary.toml")], capsys)
    assert "'topology' is required" in one_line(["run", str(tmp_path / "empty.toml")], capsys)
    assert "not valid TOML" in one_line(["run", str(tmp_path / "bad.toml")], capsys)
    assert "does not exist" in one_line(["run", str(tmp_path / "none.toml")], capsys)


@pytest.mark.parametrize(
    "key, value",
    [
        ("seed", -1),
        ("max_steps", 0),
        ("max_steps", 2**40),
        ("workload.packets", 0),
        ("workload.packets", -3),
        ("workload.messages", 0),
        ("workload.interval", 0),
        ("workload.interval", -2),
        ("workload.steps", 0),
        ("workload.rate", 0),
        ("workload.rate", -0.5),
        ("workload.rate", 1.5),
        ("model.buffer", -1),
        ("model.max_hops", 0),
    ],
)
def test_zero_and_negative_numbers_name_the_key(key, value, capsys):
    line = one_line(["run", "--topology", "scc:4", "--set", f"{key}={value}"], capsys)
    assert key in line and "must be" in line


def test_interval_zero_on_a_broadcast_is_one_line(capsys):
    args = ["run", "--topology", "scc:4", "--workload", "broadcast", "--model", "one-port"]
    args += ["--set", 'workload.algorithm="scc-one-port"', "--set", "workload.messages=2"]
    assert "workload.interval" in one_line([*args, "--set", "workload.interval=0"], capsys)


# -- settings that would be ignored ---------------------------------------------------------
@pytest.mark.parametrize(
    "extra, words",
    [
        (["--workload", "all-to-identity", "--packets", "8"], "all-to-identity sends exactly one"),
        (["--router", "scc-greedy", "--set", 'router.tie="random"'], "no option(s) 'tie'"),
        (["--rate", "0.1"], "workload.rate = 0.1 has no effect"),
        (["--steps", "5"], "workload.steps = 5 has no effect"),
        (
            ["--injection", "bernoulli", "--rate", "0.1", "--steps", "3", "--packets", "2"],
            "workload.packets = 2 has no effect",
        ),
        (["--trace-level", "none", "--out", "x.h5"], "trace.level = 'none' writes no trace"),
        (["--trace-level", "hops"], "no effect without a trace file"),
        (["--workload", "te", "--packets", "2"], "workload.kind = 'te' does not read it"),
        (["--workload", "broadcast", "--set", "workload.interval=3"], "scc-one-port"),
        (["--set", 'workload.target="#3"'], "hotspot"),
    ],
)
def test_ignored_settings_are_errors(extra, words, capsys):
    line = one_line(["run", "--topology", "scc:4", *extra], capsys)
    assert words in line


def test_defaults_and_used_settings_still_run(capsys):
    args = ["run", "--topology", "scc:4", "--json", "--trace-level", "none", "--quiet"]
    assert main([*args, "--workload", "all-to-identity", "--packets", "1"]) == 0
    # 72 nodes, every one but the identity sends one packet
    assert json.loads(capsys.readouterr().out)["stats"]["injected"] == 71
    assert main([*args, "--set", 'router.tie="random"']) == 0  # shortest has a tie option
    capsys.readouterr()
    bern = ["--injection", "bernoulli", "--rate", "0.2", "--steps", "3"]
    assert main([*args, *bern]) == 0
    capsys.readouterr()


def test_verify_only_matching_nothing(capsys):
    line = one_line(["verify", "--only", "zzz"], capsys)
    assert "matches no check" in line and "mpinet verify --list" in line
    assert main(["verify", "--list", "--full"]) == 0
    assert "total exchange" in capsys.readouterr().out


# -- the estimate itself ---------------------------------------------------------------------
def job_of(*items: str):
    return load_job(None, [parse_set(s) for s in items])


def test_estimate_formula_and_ranks():
    job = job_of('topology="hypercube:10"', "workload.packets=4", 'router.name="hypercube-ecube"')
    topo = from_spec(job.topology)
    one, two = rs.estimate_run(job, topo, 1), rs.estimate_run(job, topo, 2)
    links = 1024 * 10
    assert one.parts["neighbour table"] == links * 4  # int32 ids, (N / R) * degree * 4
    assert one.parts["link queues"] == links * (24 + 8) + 1024 * 4
    assert one.parts["packet records"] == 4096 * rs.RECORD_BYTES
    assert two.parts["neighbour table"] == one.parts["neighbour table"] // 2
    assert two.parts["packet records"] == one.parts["packet records"] // 2
    assert one.work == pytest.approx(4096 * 5)  # packets x mean distance n / 2
    hot = job_of('topology="hypercube:10"', 'workload.kind="hotspot"', "workload.packets=4")
    # every packet is delivered at one node: its rank keeps all the records
    assert rs.estimate_run(hot, topo, 2).parts["packet records"] == 4096 * rs.RECORD_BYTES


def test_estimate_counts_router_tables_and_buffer_classes():
    from mpinet.routing import make_router

    job = job_of('topology="scc:5"', "model.buffer=2", 'model.buffer_classes="hops"')
    topo = from_spec("scc:5")
    router = make_router("shortest", topo)
    est = rs.estimate_run(job, topo, 1, router=router)
    assert est.parts["router tables"] == router.table_bytes > 0
    plain = rs.estimate_run(job_of('topology="scc:5"'), topo, 1)
    assert est.parts["link queues"] > 10 * plain.parts["link queues"]  # 33 classes


def test_check_message_and_way_out():
    def est(r: int) -> rs.Estimate:
        e = rs.Estimate("run on x")
        e.add("fixed", 100)
        e.add("split", 1000 // r)
        return e

    assert rs.check(est, 1, 1, have=2000).bytes == 1100
    with pytest.raises(ResourceError) as exc:
        rs.check(est, 1, 1, have=500, smaller="fewer packets")
    msg = str(exc.value)
    assert msg.startswith("run on x needs about 1,100 bytes per rank (split 1,000 bytes")
    assert "but 500 bytes is available (given); way out: 4 or more ranks" in msg
    assert msg.endswith(", or fewer packets")
    with pytest.raises(ResourceError, match="at most 1 rank"):
        rs.check(est, 2, 4, have=1000)  # 4 ranks here x 600 bytes; 1 fits


def test_memory_limit_and_sizes(monkeypatch):
    assert rs.parse_bytes("512M") == 512 << 20 and rs.parse_bytes("1.5GiB") == 3 << 29
    assert rs.parse_bytes("1000") == 1000
    with pytest.raises(ResourceError, match="MPINET_MEMORY_LIMIT"):
        rs.parse_bytes("lots")
    monkeypatch.setenv(rs.MEMORY_ENV, "1G")
    assert rs.available_memory() <= 1 << 30


@pytest.mark.slow
def test_estimate_is_close_to_the_measured_peak(run_mpinet):
    """The plan's estimate of a mid-size run is within a factor 2 of the peak RSS."""
    args = ["--topology", "scc:6", "--packets", "64"]
    proc = run_mpinet(["run", *args, "--json", "--quiet", "--trace-level", "none"], timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    measured, est = res["peak_rss_mib"] * 2**20, res["plan"]["bytes_per_rank"]
    assert measured / 2 < est < 2 * measured
    assert res["plan"]["work"] == pytest.approx(230400 * rs.mean_hops(from_spec("scc:6")))


# -- under mpiexec: every rank agrees on a refusal --------------------------------------------
@pytest.mark.mpi(min_size=2)
def test_a_refusal_on_one_rank_is_agreed_by_all(monkeypatch):
    from mpi4py import MPI

    from mpinet.cli import agree
    from mpinet.errors import MpinetError
    from mpinet.jobs.execute import plan

    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 1:  # this rank's machine is short of memory
        monkeypatch.setenv(rs.MEMORY_ENV, "50M")
    job = job_of('topology="scc:5"', "workload.packets=4")
    here = rs.ranks_on_this_machine(comm)
    with pytest.raises(MpinetError, match="is available"):
        agree(comm, lambda: plan(job, ranks=comm.Get_size(), ranks_here=here))


@pytest.mark.mpi(min_size=2)
def test_plan_divides_by_the_ranks():
    from mpi4py import MPI

    from mpinet.jobs.execute import plan

    comm = MPI.COMM_WORLD
    job = job_of('topology="scc:5"', "workload.packets=4")
    p = plan(job, ranks=comm.Get_size(), ranks_here=rs.ranks_on_this_machine(comm))
    serial = rs.estimate_run(job, p.topo, 1, router=p.router)
    assert p.estimate.parts["packet records"] < serial.parts["packet records"]


def test_packets_left_at_max_steps_are_undelivered_not_dropped(capsys):
    args = ["run", "--topology", "scc:5", "--packets", "2", "--max-steps", "3", "--json"]
    assert main([*args, "--trace-level", "none"]) == 1
    s = json.loads(capsys.readouterr().out)["stats"]
    assert s["dropped"] == 0 and s["undelivered"] > 0
    assert s["delivered"] + s["undelivered"] == s["injected"]
    names = [c["name"] for c in s["checks"] if not c["ok"]]
    assert names and names[0].startswith("every packet delivered")
