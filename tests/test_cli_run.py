"""``mpinet run`` and ``mpinet bench`` from the command line, under mpiexec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpinet.cli import main

ROOT = Path(__file__).resolve().parent.parent
JOBS = sorted((ROOT / "jobs").rglob("*.toml"))


def test_there_is_a_job_per_family():
    text = " ".join(p.read_text() for p in JOBS)
    for fam in ("star:", "scc:", "ms:", "fccn:", "borel:", "hypercube:", "ccc:"):
        assert f'"{fam}' in text, fam


@pytest.mark.slow
@pytest.mark.parametrize("job", JOBS, ids=lambda p: str(p.relative_to(ROOT / "jobs")))
def test_every_job_file_runs_under_mpiexec(run_mpinet, job, tmp_path):
    out = tmp_path / "t.h5"
    proc = run_mpinet(["run", str(job), "--json", "--out", str(out)], ranks=2)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1  # rank 0 only
    res = json.loads(lines[0])
    if "# expect: deadlock" in job.read_text():  # the buffers demo: exit 1, a closed cycle
        assert proc.returncode == 1, proc.stderr
        cycle = res["stats"]["deadlock"]["cycle"]
        assert [c["next"] for c in cycle] == [c["node"] for c in cycle[1:] + cycle[:1]]
        assert res["trace"] == str(out) and out.exists()
        return
    assert proc.returncode == 0, proc.stderr
    assert res["ranks"] == 2 and res["stats"]["ok"]
    if "faults" in res["stats"]:  # jobs/faults/: what is lost is counted, nothing vanishes
        s = res["stats"]
        if "collective" in s:
            assert s["missing"] >= s["faults"]["unreached"] > 0
        else:
            assert s["delivered"] + s["dropped"] == s["injected"] and s["dropped"] > 0
    elif "collective" in res["stats"]:  # broadcast / mnb: every node holds every message
        assert res["stats"]["complete"] and res["stats"]["steps"] > 0
    else:
        assert res["stats"]["delivered"] == res["stats"]["injected"] > 0
    assert res["trace"] == str(out) and out.exists()


@pytest.mark.slow
def test_same_result_on_1_and_3_ranks(run_mpinet):
    args = ["run", str(ROOT / "jobs" / "ms-uniform.toml"), "--json", "--trace-level", "none"]
    a = json.loads(run_mpinet(args, ranks=1).stdout)
    b = json.loads(run_mpinet(args, ranks=3).stdout)
    for key in ("steps", "latency", "hops", "stretch", "link_load", "delivered"):
        assert a["stats"][key] == b["stats"][key], key


def test_flags_without_a_file(capsys):
    code = main(
        [
            "run",
            "--topology",
            "scc:4",
            "--workload",
            "uniform",
            "--packets",
            "2",
            "--model",
            "one-port",
            "--router",
            "shortest",
            "--json",
            "--trace-level",
            "none",
        ]
    )
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    assert res["job"]["model"]["kind"] == "one-port" and res["stats"]["injected"] == 144


def test_human_summary(capsys):
    assert main(["run", "--topology", "star:4", "--packets", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    for word in ("network", "latency", "stretch", "checks", "all passed", "packet-hops/s"):
        assert word in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--topology", "scc:4", "--set", "workload.pakets=2"], "unknown key workload.'pakets'"),
        (["--set", "workload.packets=2"], "the key 'topology' is required"),
        (["--topology", "scc:4", "--router", "nope"], "nope"),
        (["--topology", "scc:4", "--model", "two-port"], "k-port:K"),
        (["--topology", "scc:4", "--router", "hypercube-ecube"], "hypercube"),
        (["--topology", "scc:2"], "N in scc:N"),
        (["--topology", "scc:4", "--set", "model.capacity={lateral=0}"], "capacity"),
        (["--topology", "scc:4", "--workload", "locality"], "fccn"),
        (["nonexistent.toml"], "does not exist"),
    ],
)
def test_bad_jobs_are_one_line_exit_2(args, message, capsys):
    assert main(["run", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mpinet: error:") and message in err[0], err


def test_unknown_top_level_key(tmp_path, capsys):
    job = tmp_path / "j.toml"
    job.write_text('topology = "scc:4"\nsede = 3\n')
    assert main(["run", str(job)]) == 2
    assert "unknown key 'sede'" in capsys.readouterr().err


def test_existing_trace_needs_force(tmp_path, capsys):
    out = tmp_path / "t.h5"
    base = ["run", "--topology", "star:4", "--quiet", "--out", str(out)]
    assert main(base) == 0
    assert main(base) == 2
    assert "--force" in capsys.readouterr().err
    assert main([*base, "--force"]) == 0


def test_max_steps_exit_code_1(capsys):
    code = main(["run", "--topology", "scc:5", "--packets", "2", "--max-steps", "3", "--quiet"])
    assert code == 1
    out = capsys.readouterr().out
    # in flight at max_steps: undelivered, not "dropped" (dropped means a fault dropped them)
    assert "FAILED: every packet delivered" in out and "stuck: packet" in out
    assert "still in flight" in out and "dropped" not in out.split("checks")[0]


@pytest.mark.slow
def test_deadlock_report_and_hop_classes(run_mpinet):
    job = str(ROOT / "jobs" / "buffers" / "deadlock.toml")
    text = run_mpinet(["run", job, "--trace-level", "none"], ranks=1)
    assert text.returncode == 1
    assert "DEADLOCK in step" in text.stdout and "is full" in text.stdout
    assert 'buffer_classes = "hops"' in text.stdout  # the way out is named
    one = json.loads(run_mpinet(["run", job, "--json", "--trace-level", "none"], ranks=1).stdout)
    three = json.loads(run_mpinet(["run", job, "--json", "--trace-level", "none"], ranks=3).stdout)
    assert one["stats"]["deadlock"] == three["stats"]["deadlock"]
    s = one["stats"]
    assert s["delivered"] + s["deadlock"]["blocked_packets"] == s["injected"]
    free = str(ROOT / "jobs" / "buffers" / "deadlock-free.toml")
    res = json.loads(run_mpinet(["run", free, "--json", "--trace-level", "none"], ranks=2).stdout)
    assert res["stats"]["ok"] and res["stats"]["delivered"] == res["stats"]["injected"]


@pytest.mark.slow
def test_bench_backlog_sweep(run_mpinet):
    args = ["bench", "--specs", "star:5;fccn:2@fccn-shortest", "--packets", "1,4", "--json"]
    proc = run_mpinet([*args, "--repeat", "1", "--trace", "none"], ranks=1)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.strip().splitlines()]
    assert [(r["spec"], r["packets_per_node"]) for r in rows] == [
        ("star:5", 1), ("star:5", 4), ("fccn:2", 1), ("fccn:2", 4)
    ]  # fmt: skip
    assert rows[2]["router"] == "fccn-shortest"
    assert all(r["packets"] == r["nodes"] * r["packets_per_node"] for r in rows)


@pytest.mark.slow
def test_bench_says_when_a_run_deadlocked(run_mpinet):
    """A deadlocked run's hop rate is not a throughput: bench says so (JSON and text)."""
    args = ["bench", "--specs", "scc:5", "--packets", "8", "--buffer", "1", "--repeat", "1"]
    proc = run_mpinet([*args, "--trace", "none", "--json"], ranks=1)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout.strip().splitlines()[0])
    assert row["deadlock"] and row["delivered"] < row["packets"]
    text = run_mpinet([*args, "--trace", "none"], ranks=1).stdout
    assert "not comparable: the run deadlocked" in text
    ok = json.loads(run_mpinet(["bench", "--specs", "scc:5", "--repeat", "1", "--json"]).stdout)
    assert not ok["deadlock"] and ok["delivered"] == ok["packets"]


@pytest.mark.slow
def test_bench_json(run_mpinet):
    proc = run_mpinet(["bench", "--specs", "star:5", "--repeat", "1", "--json"], ranks=2)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout.strip().splitlines()[0])
    assert row["ranks"] == 2 and row["packet_hops"] > 0 and row["hops_per_second_per_rank"] > 0


@pytest.mark.slow
def test_collective_jobs_same_on_1_and_3_ranks(run_mpinet):
    for job in ("paper001-scc-broadcast/pipelined-one-port.toml", "baselines/star-mnb-sdc.toml"):
        args = ["run", str(ROOT / "jobs" / job), "--json", "--trace-level", "none"]
        a = json.loads(run_mpinet(args, ranks=1).stdout)["stats"]
        b = json.loads(run_mpinet(args, ranks=3).stdout)["stats"]
        for key in ("steps", "transmissions", "duplicates", "complete", "class_steps"):
            assert a[key] == b[key], (job, key)


@pytest.mark.parametrize(
    "sets, message",
    [
        (["workload.algorithm=scc-one-port"], "needs a scc topology"),
        (["workload.algorithm=nope"], "workload.algorithm must be one of"),
        (["workload.algorithm=flooding", "workload.messages=2"], "one message"),
    ],
)
def test_bad_collective_jobs(sets, message, capsys):
    args = ["run", "--topology", "star:4", "--workload", "broadcast"]
    for item in sets:
        args += ["--set", item]
    assert main(args) == 2
    assert message in capsys.readouterr().err
