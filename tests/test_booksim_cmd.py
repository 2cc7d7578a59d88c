"""``mpinet booksim``: BookSim's output read as BookSim scripts read it, the figures equal to a
sweep's of the same window and traffic, and the same on 1-4 ranks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpinet.engine.comm import SerialComm
from mpinet.engine.flit.iq_lean_run import LEAN_PATH
from mpinet.jobs.booksim_run import prepare, run

ROOT = Path(__file__).resolve().parent.parent
MESH = str(ROOT / "tests" / "data" / "booksim" / "mesh44.cfg")
#: a shorter measurement of the same mesh, for runs on several ranks
SHORT = ["router=ideal", "sample_period=60", "warmup_periods=1", "max_samples=5"]

NUM = r"(-?(?:nan|inf|[\d.]+(?:e[-+]\d+)?))"
#: what BookSim-parsing scripts look for in the overall block (the key: a name of ours)
OVERALL = {
    "plat": rf"Packet latency average = {NUM} \(1 samples\)",
    "plat_min": rf"Packet latency average = .*\n\tminimum = {NUM}",
    "nlat": rf"Network latency average = {NUM}",
    "flat": rf"Flit latency average = {NUM}",
    "frag": rf"Fragmentation average = {NUM}",
    "inj_packets": rf"Injected packet rate average = {NUM}",
    "acc_packets": rf"Accepted packet rate average = {NUM}",
    "inj_flits": rf"Injected flit rate average = {NUM}",
    "acc_flits": rf"Accepted flit rate average = {NUM}",
    "size": rf"Accepted packet size average = {NUM}",
    "hops": rf"Hops average = {NUM}",
}
PERIOD = re.compile(
    rf"Class 0:\nPacket latency average = {NUM}\n(?:.*\n){{16}}"
    rf"Accepted packet rate average = {NUM}\n(?:.*\n){{5}}Accepted flit rate average= {NUM}\n"
)


def mpinet(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "mpinet", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=cwd)  # fmt: skip


def parse_booksim(text: str) -> dict:
    """The overall block's figures, the way BookSim parsing scripts read them."""
    assert text.count("====== Overall Traffic Statistics ======") == 1
    tail = text.split("====== Overall Traffic Statistics ======")[1]
    out = {}
    for k, rx in OVERALL.items():
        m = re.search(rx, tail)
        assert m, f"no {k} in the overall block"
        out[k] = float(m.group(1))
    out["periods"] = [tuple(map(float, m.groups())) for m in PERIOD.finditer(text)]
    out["time_taken"] = int(re.search(r"Time taken is (\d+) cycles", text).group(1))
    return out


def g(x: float) -> float:
    """A number as printed (6 significant digits) and read back."""
    return float(f"{x:g}")


@pytest.mark.slow
def test_output_reads_as_booksims_and_says_what_json_says():
    text, js = mpinet(["booksim", MESH, "router=ideal"]), mpinet(["booksim", MESH, "router=ideal",
                                                                  "--json"])  # fmt: skip
    assert text.returncode == 0 and js.returncode == 0, text.stderr + js.stderr
    b, j = parse_booksim(text.stdout), json.loads(js.stdout)
    ov = j["overall"]
    assert b["plat"] == g(ov["plat"]["average"]) and b["plat_min"] == ov["plat"]["minimum"]
    assert b["nlat"] == g(ov["nlat"]["average"]) and b["flat"] == g(ov["flat"]["average"])
    assert b["frag"] == 0.0 and b["size"] == 1.0
    acc = ov["rates"]["accepted"]["average"]
    assert b["acc_packets"] == g(acc) == b["acc_flits"]
    assert b["inj_packets"] == g(ov["rates"]["sent"]["average"])
    assert b["hops"] == g(ov["hops"]["average"] + 1) == g(ov["hops_booksim"])
    assert b["time_taken"] == j["time_taken"]
    assert len(b["periods"]) == len(j["periods"]) == text.stdout.count("latency change    =")
    for (plat, acc_p, acc_f), p in zip(b["periods"], j["periods"], strict=True):
        assert plat == g(p["plat"]["average"]) and acc_p == acc_f
    assert j["stable"] and j["mapping"]["not_modeled_by_ideal_router"] == {
        "credit_delay": 2, "routing_delay": 0}  # fmt: skip
    assert "mpinet booksim: not modeled by the ideal router: credit_delay = 2" in text.stdout


@pytest.mark.parametrize(
    ("overrides", "runs"),
    [
        (["injection_rate=0.2"], 1),
        # 16-flit worms outlast the extra period (two runs took three): one run all the same
        (["sample_period=10", "max_samples=4", "warmup_periods=1", "packet_size=16",
          "injection_rate=0.02"], 1),
    ],
)  # fmt: skip
def test_figures_equal_a_sweep_of_the_same_window_and_traffic(overrides, runs):
    """The overall block is the sweep's point with warm-up = the last reset, window = the
    measurement and injection until the traffic stopped (the same job, seed and draws)."""
    from mpinet.jobs.sweep_point import run_point
    from mpinet.jobs.sweep_settings import Settings

    prep = prepare(MESH, ["router=ideal", *overrides])
    res = run(prep, SerialComm())
    assert res["runs"] == runs
    out, ov = res["outcome"], res["overall"]
    assert out.stable and out.reset > 0 and out.drain_time > out.reset
    w, m = out.reset, out.drain_time - out.reset
    s = Settings(warmup=w, measure=m, drain=10_000, tail=out.stop - out.drain_time)
    point, _ = run_point(prep.plan, prep.plan.job.workload["rate"], s, s.tail, SerialComm())
    assert point["window_packets"] == ov["plat"].count
    assert point["latency"]["mean"] == ov["plat"].mean
    assert point["latency"]["max"] == ov["plat"].hi
    assert point["network"]["mean"] == ov["nlat"].mean
    assert point["hops"]["mean"] == ov["hops"].mean
    n = prep.plan.topo.num_nodes
    assert point["accepted"] == pytest.approx(ov["rates"]["accepted"]["sum"] / m / n, rel=1e-12)


def test_the_engine_is_causal_so_a_run_with_longer_traffic_has_the_same_past():
    """What the replay rests on: the packets of a run with traffic for 300 steps, delivered
    before step 300, are those of a run with traffic for 600 steps, with the same times."""
    from mpinet.jobs.booksim_run import _engine_run

    prep = prepare(MESH, ["router=ideal", "injection_rate=0.3", "packet_size=4"])
    a, b = (_engine_run(prep, steps, SerialComm())[0].packets for steps in (300, 600))

    def past(pk):
        rows = pk[(pk[:, 4] >= 0) & (pk[:, 4] < 300)]
        return rows[np.lexsort(rows.T[::-1])]

    assert past(a).shape[0] > 1000 and np.array_equal(past(a), past(b))
    assert (b[:, 3] >= 300).any()  # the longer run did have later traffic


@pytest.mark.slow
def test_torus_throughput_and_long_packets(tmp_path):
    cfg = tmp_path / "torus.cfg"
    cfg.write_text("topology = torus; k = 4; n = 2; routing_function = dim_order;\n"
                   "num_vcs = 4; vc_buf_size = 4; packet_size = 4; sim_type = throughput;\n"
                   "injection_rate = 0.1; injection_rate_uses_flits = 1;\n"
                   "sample_period = 100;\n")  # fmt: skip
    r = mpinet(["booksim", str(cfg), "router=ideal", "--json"])
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["mapping"]["vc_policy"] == "dateline-turn" and j["mapping"]["rate"] == 0.025
    assert j["stable"] and j["traffic_stop"] == j["drain_time"]
    ov = j["overall"]
    assert ov["flat"]["average"] is None  # per-flit times are not recorded for L > 1
    assert ov["rates"]["accepted"]["average"] == pytest.approx(0.025, rel=0.2)
    # 4 flits: at least 3 steps behind the head, but for the 1/16 of the packets drawn to
    # their own source, delivered where they are generated (latency 0)
    assert ov["plat"]["minimum"] == 0 and ov["plat"]["average"] > 3 * 15 / 16


def test_a_deadlock_ends_the_measurement_where_the_engine_found_it(tmp_path, monkeypatch):
    """anynet's min on an 8-ring with one VC: wormhole packets close the ring's cycle."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ring.anynet").write_text(
        "".join(f"router {i} node {i} router {(i + 1) % 8} router {(i - 1) % 8}\n"
                for i in range(8)))  # fmt: skip
    (tmp_path / "ring.cfg").write_text(
        "topology = anynet; routing_function = min; network_file = ring.anynet;\n"
        "num_vcs = 1; vc_buf_size = 2; packet_size = 8; injection_rate = 0.9;\n"
        "injection_rate_uses_flits = 1; sample_period = 100;\n")  # fmt: skip
    res = run(prepare("ring.cfg", ["router=ideal"]), SerialComm())
    out, step = res["outcome"], int(re.search(r"step (\d+)", res["deadlock"]).group(1))
    assert not out.stable and out.reason.startswith(f"deadlocked at step {step}: ")
    assert "wait-for cycle of 8 virtual channels" in out.reason
    times = [x["time"] for k, x in out.items if k == "stats"]
    assert times and max(times) <= step
    assert [x for _, x in out.items[-2:]] == ["WARNING: Possible network deadlock.",
                                              "Simulation unstable, ending ..."]  # fmt: skip
    assert res["overall"] is None


def test_help_is_short_and_narrow():
    r = mpinet(["booksim", "--help"])
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) < 50 and max(map(len, lines)) <= 88
    assert "router=ideal" in r.stdout and "example" in r.stdout


def test_a_run_imports_no_other_commands_modules_and_no_h5py():
    """``mpinet booksim`` imports its own command's modules, not every command's, no h5py
    (it writes no trace), and, started by no launcher, does not start MPI: a process's
    start-up (docs/performance.md, "mpinet booksim meshconfig, end to end")."""
    code = ("import sys; from mpinet.cli import main; code = main(sys.argv[1:]); "
            "print('MODULES', *sorted(sys.modules)); sys.exit(code)")  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code, "booksim", MESH, *SHORT, "max_samples=2"],
                       capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Overall Traffic Statistics" in r.stdout
    names = set(r.stdout.split("MODULES")[-1].split())
    assert "mpinet.cli.booksim" in names and "mpinet.jobs.booksim_run" in names
    others = {f"mpinet.cli.{c}" for c in ("analyze", "bench", "export", "run", "sweep")}
    assert not names & others and "h5py" not in names and "mpi4py.MPI" not in names
    # the registries import a run's own entries only (mpinet.lazy): the mesh's family
    # module, dor's, the unicast kinds'; none of the other families, routers or kinds
    from mpinet.routing import ROUTERS
    from mpinet.topology import FAMILIES
    from mpinet.workloads.registry import WORKLOADS

    own = {FAMILIES.where("mesh").module, ROUTERS.where("dor").module}
    own.add(WORKLOADS.where("booksim-uniform").module)
    assert own <= names
    compiled_hops = {"mpinet.routing." + m for m in ("shortest", "fccn", "anynet_min", "dor")}
    every = {r.where(n).module for r in (FAMILIES, ROUTERS, WORKLOADS) for n in r}
    unused = every - own - compiled_hops - {"mpinet.topology.fccn"}  # routing.fccn's topology
    assert len(unused) >= 15 and not names & unused, sorted(names & unused)
    # the engines' registry (mpinet.jobs.engines) imports the flit engine's side only: not
    # the packet engine, its calendar, nor total exchange (which runs on it)
    packet = {"mpinet.jobs.engine_packet", "mpinet.engine.core", "mpinet.engine.calendar"}
    assert "mpinet.jobs.engine_flit" in names
    assert not names & (packet | {"mpinet.workloads.te"}), sorted(names & packet)


def _numbers(j: dict) -> dict:
    # engine_runs: one on any rank count where the ranks' blocks call MPI from the compiled
    # steps, two where they cannot (docs/booksim.md); the figures are the same either way
    return {k: v for k, v in j.items() if k not in ("seconds", "engine_runs", "engine_path")}


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_same_figures_on_1_to_4_ranks(run_mpinet, ranks):
    args = ["booksim", MESH, *SHORT, "--json"]
    one, many = run_mpinet(args, ranks=1), run_mpinet(args, ranks=ranks)
    assert one.returncode == 0 and many.returncode == 0, one.stderr + many.stderr
    assert len(many.stdout.strip().splitlines()) == 1  # rank 0 only
    assert _numbers(json.loads(one.stdout)) == _numbers(json.loads(many.stdout))


@pytest.mark.slow
def test_same_figures_on_2_ranks(run_mpinet):
    args = ["booksim", MESH, *SHORT, "sample_period=30", "max_samples=4", "--json"]
    one, two = run_mpinet(args, ranks=1), run_mpinet(args, ranks=2)
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    assert a["periods"] and _numbers(a) == _numbers(b)


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_the_iq_router_prints_the_same_on_1_to_4_ranks(run_mpinet, ranks):
    """The iq router's lean path takes the watch on several ranks (docs/iq-router.md,
    "Session 20"), speculation and output speedup too: the text the one-rank run prints."""
    args = ["booksim", MESH, "router=iq", "sample_period=60", "warmup_periods=1",
            "max_samples=5", "injection_rate=0.1", "packet_size=3", "speculative=1",
            "output_speedup=2", "--quiet"]  # fmt: skip
    one, many = run_mpinet(args, ranks=1), run_mpinet(args, ranks=ranks)
    assert one.returncode == 0 and many.returncode == 0, one.stderr + many.stderr

    def text(out: str) -> list[str]:
        return [x for x in out.splitlines() if not x.startswith("Total run time")]

    assert "Overall Traffic Statistics" in one.stdout and text(one.stdout) == text(many.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [1, 2])
def test_json_names_the_engine_path(run_mpinet, ranks):
    """``--json``'s ``engine_path``: the iq router's lean path on one rank and on several
    (the watch taken there, docs/iq-router.md "Session 20"), the general path where a key
    asks for it, each with its compiled calls."""
    base = ["booksim", MESH, "router=iq", "sample_period=60", "warmup_periods=1",
            "max_samples=3", "injection_rate=0.1", "packet_size=3"]  # fmt: skip
    got = {}
    for name, extra in (("lean", []), ("general", ["packet_size=65", "injection_rate=0.005"])):
        r = run_mpinet([*base, *extra, "--json"], ranks=ranks)
        assert r.returncode == 0, r.stderr
        got[name] = json.loads(r.stdout)["engine_path"]
    assert got["lean"]["steps"] == LEAN_PATH and got["lean"]["block_calls"] > 0
    assert "general path (65 flits a packet" in got["general"]["steps"]
    assert got["general"]["block_calls"] > 0
