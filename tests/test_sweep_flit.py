"""``mpinet sweep`` on the flit engine (issue 23 item 5; docs/switching.md).

The sweep runs each load on the flit engine when the job's model has switching keys: the
zero-load latency is the closed form of docs/switching.md, the channel bound the packet
bound / L, the VC deadlock a "deadlocked" verdict; bad switching keys are refused before
any load runs.
"""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import pytest
from test_flit_engine import check_on_every_rank

from mpinet.analysis.sweep import format_sweep, read_sweep
from mpinet.cli import main
from mpinet.jobs import load_job
from mpinet.jobs.execute import plan
from mpinet.jobs.sweep import sweep
from mpinet.jobs.sweep_settings import Settings, parse_rates

#: short windows: hypercube:4 at load 0.2 is 16 x 1,500 x 0.2 = 4,800 window packets
WINDOWS = dict(warmup=200, measure=1500, drain=300)
WORM = {"model.switching": "wormhole", "model.flits": 4, "model.vcs": 2, "model.vc_buffer": 4}


def _plan(spec: str, router: str = "hypercube-ecube", **keys):
    sets = [(["topology"], spec), (["router", "name"], router)]
    sets += [(k.split("."), v) for k, v in keys.items()]
    return plan(load_job(None, [*sets, (["trace", "level"], "none")]))


def _job(path: str):
    return plan(load_job(path, [(["trace", "level"], "none")]))


def _checks_pass(res: dict) -> None:
    for pt in res["points"]:
        assert pt["checks_ok"], [c for c in pt["checks"] if not c["ok"]]


def _numbers(res: dict) -> dict:
    """A sweep result without timings and rank counts."""
    drop = {"seconds", "cpu_seconds", "engine_seconds", "ranks", "command_line", "out", "plots",
            "_hists"}  # fmt: skip

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in drop}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return strip(res)


# -- zero load, flits, bound ----------------------------------------------------------------
@pytest.mark.parametrize(
    "mode,buffer,zero",
    [("wormhole", 4, lambda h, n: h + n - 1), ("cut-through", 4, lambda h, n: h + n - 1),
     ("store-and-forward", 4, lambda h, n: h * n)],
)  # fmt: skip
def test_zero_load_flits_and_bound(mode, buffer, zero, tmp_path):
    """hypercube:4, e-cube, uniform: H = nN / (2 (N - 1)) = 32/15, every link loaded
    (N/2)/(N-1) per unit load (packet channel bound 2(N-1)/N = 1.875). With L = 4 a link
    carries a quarter of the packets: bound 0.46875. At load 0.003 a packet nearly always
    travels alone, so its latency is the closed form of its own route length h: the
    window's mean latency is that of its mean hops, plus a little contention."""
    L, n, big_n = 4, 4, 16
    keys = dict(WORM, **{"model.switching": mode, "model.vc_buffer": buffer})
    res = sweep(_plan("hypercube:4", **keys), parse_rates("0.003,0.2"), Settings(**WINDOWS),
                None)  # fmt: skip
    h = n * big_n / (2 * (big_n - 1))
    sw = res["switching"]
    assert {k: sw[k] for k in ("mode", "flits", "vcs", "vc_buffer", "vc_policy")} == {
        "mode": mode, "flits": L, "vcs": 2, "vc_buffer": buffer, "vc_policy": "any"}  # fmt: skip
    assert sw["mean_hops"] == pytest.approx(h, rel=1e-12)
    assert res["zero_load_latency"] == pytest.approx(zero(h, L), rel=1e-12)
    b = res["bound"]
    assert b["packet_channel"] == pytest.approx(2 * (big_n - 1) / big_n, rel=1e-12)
    assert b["channel"] == pytest.approx(b["packet_channel"] / L, rel=1e-12)
    assert b["ideal"] == b["channel"] and b["limited_by"] == "channel"
    low, high = res["points"]
    own = zero(low["hops"]["mean"], L)  # the closed form of the window's own routes
    assert own - 1e-9 <= low["latency"]["mean"] <= own * 1.03
    assert low["latency"]["mean"] == pytest.approx(res["zero_load_latency"], rel=0.06)
    assert low["stable"] and high["stable"]
    for pt in res["points"]:
        assert pt["accepted_flits"] == L * pt["accepted"]
        assert pt["injected_flits"] == L * pt["injected"]
        # the same flits counted on the links: flit-hops in the window / (N M) is the
        # accepted flit rate x the mean route length (up to the window's two ends)
        hops_per_node = pt["utilisation"]["cube"]["mean"] * n  # n links per node, c = 1
        assert hops_per_node == pytest.approx(pt["accepted_flits"] * pt["hops"]["mean"],
                                              rel=0.04)  # fmt: skip
    # below the flit bound, far below the packet one: accepted = offered
    assert high["accepted"] == pytest.approx(0.2, rel=0.05)
    _checks_pass(res)
    text = format_sweep(res)
    assert f"{mode}: 4 flit(s) per packet, 2 VC(s) of {buffer} flits per link" in text
    assert "channel bound 0.4688 = packet channel bound 1.8750 / L = 4" in text
    assert "acc flits" in text and f"{high['accepted_flits']:.4f}" in text
    # the file keeps the switching keys
    from mpinet.jobs.sweep_file import write_sweep

    path = write_sweep(str(tmp_path / "s.h5"), res, None)
    back = read_sweep(path)
    assert back["switching"] == res["switching"] and back["bound"] == res["bound"]
    assert format_sweep(back).count(f"{mode}: 4 flit(s)") == 1


def test_auto_search_saturates_below_the_flit_bound():
    """The auto search runs up to 1.2 x the flit bound and finds saturation below it: the
    packet bound (1.875) is far above every load the flit network can carry."""
    res = sweep(_plan("hypercube:4", **WORM), parse_rates("auto"),
                Settings(**WINDOWS, coarse=5, bisect=3), None)  # fmt: skip
    b, sat = res["bound"], res["saturation"]
    assert max(pt["offered"] for pt in res["points"]) == pytest.approx(1.2 * b["ideal"],
                                                                       abs=1e-4)  # fmt: skip
    assert sat["found"] and 0.5 <= sat["load_fraction_of_bound"] <= 1.0
    assert sat["throughput"] <= 1.01 * b["channel"]
    _checks_pass(res)


def test_packet_sweep_has_no_flit_keys():
    """Without switching keys the sweep is the packet engine's (no flit keys), and
    ``switching = "store-and-forward"`` with one-flit packets is the same sweep."""
    s = Settings(warmup=50, measure=300, drain=50)
    a = sweep(_plan("hypercube:3"), parse_rates("0.3"), s, None)
    b = sweep(_plan("hypercube:3", **{"model.switching": "store-and-forward"}),
              parse_rates("0.3"), s, None)  # fmt: skip
    assert "switching" not in a and "packet_channel" not in a["bound"]
    assert "accepted_flits" not in a["points"][0]
    assert _numbers(a) == _numbers(b)
    assert "flit bound" not in format_sweep(a)


# -- deadlock ---------------------------------------------------------------------------
def test_vc_deadlock_is_a_deadlocked_verdict(capsys):
    """jobs/switching/deadlock.toml: star:4, 8-flit worms, one VC of 2 flits, vc_policy any.
    The static analysis finds a cycle of (link, VC) dependencies; under load the flit
    engine deadlocks and the sweep says so. negative-hop with 3 VCs has no cycle, and
    the same loads do not deadlock (the high one saturates)."""
    assert main(["deadlock", "star:4", "--router", "shortest", "--switching", "wormhole",
                 "--vc-policy", "any", "--vcs", "1", "--json"]) == 1  # fmt: skip
    assert not json.loads(capsys.readouterr().out)["acyclic"]
    s = Settings(warmup=200, measure=500, drain=500)
    res = sweep(_job("jobs/switching/deadlock.toml"), parse_rates("0.01,0.3"), s, None)
    low, high = res["points"]
    assert low["verdict"] == "stable" and not low["deadlocked"]
    assert high["verdict"] == "deadlocked" and high["saturated_by"] == ["deadlocked"]
    assert high["deadlock_step"] == high["steps"] < s.warmup + s.measure + s.drain
    assert "wait-for cycle" in high["deadlock"] and "(VC 0)" in high["deadlock"]
    assert [c["name"] for c in high["checks"] if not c["ok"]] == ["no deadlock"]
    sat = res["saturation"]
    assert sat["criteria"] == ["deadlocked"] and sat["deadlocked"] == [0.3]
    assert "deadlocked if the run deadlocks (a wait-for cycle of (node, port, VC))" in (
        format_sweep(res))  # fmt: skip

    assert main(["deadlock", "star:4", "--router", "shortest", "--switching", "wormhole",
                 "--vc-policy", "negative-hop", "--vcs", "3", "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["acyclic"]
    free = sweep(_job("jobs/switching/deadlock-free.toml"), parse_rates("0.01,0.3"), s,
                 None)  # fmt: skip
    assert not any(pt["deadlocked"] for pt in free["points"])
    assert [pt["verdict"] for pt in free["points"]] == ["stable", "saturated"]
    assert free["switching"]["vc_policy"] == "negative-hop" and not free["saturation"]["deadlocked"]
    _checks_pass(free)
    # the command line: the verdict in JSON, exit code 1 (the "no deadlock" check failed)
    args = ["sweep", "jobs/switching/deadlock.toml", "--rates", "0.3", "--warmup", "200",
            "--measure", "500", "--drain", "500", "--json", "--quiet"]  # fmt: skip
    assert main(args) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["switching"]["mode"] == "wormhole" and got["switching"]["vcs"] == 1
    assert got["points"][0]["verdict"] == "deadlocked"
    assert got["points"][0]["deadlock_step"] == high["deadlock_step"]


# -- refusals -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args,match",
    [(["--workload", "broadcast", "--set", "model.switching=wormhole"],
      "model.switching applies to unicast traffic; workload.kind = 'broadcast' runs on the "
      "collective engine"),
     (["--workload", "mnb", "--set", "model.flits=4"], "model.flits applies to unicast traffic"),
     (["--set", "model.switching=cut-through", "--set", "model.flits=8",
       "--set", "model.vc_buffer=4"],
      "model.vc_buffer = 4 is smaller than model.flits = 8: cut-through keeps a whole packet"),
     (["--set", "model.switching=wormhole", "--set", "model.vc_policy=hops"],
      "vc_policy 'hops' needs vcs >= 3"),
     (["--set", "model.flits=0"], "model.flits must be in [1,"),
     (["--buffer", "2", "--set", "model.flits=4"], "model.buffer and model.buffer_classes are "
      "packet buffers")],
)  # fmt: skip
def test_refused_before_any_load(args, match, capsys, tmp_path):
    out = tmp_path / "s.h5"
    code = main(["sweep", "--topology", "star:4", "--rates", "0.1", "--out", str(out), *args])
    cap = capsys.readouterr()
    assert code == 2 and cap.out == "" and not out.exists()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpinet: error: ") and match in lines[0]
    assert "[sweep]" not in cap.err  # no load ran


# -- ranks ------------------------------------------------------------------------------
@pytest.mark.mpi
def test_same_flit_sweep_on_1_and_2_ranks():
    """Under mpiexec -n 2: the same sweep on COMM_WORLD and on each rank alone (the serial
    communicator), a stable, a saturated and a deadlocked load."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    s = Settings(warmup=100, measure=400, drain=300)
    for p, rates in ((_plan("hypercube:4", **WORM), "0.05,0.3,0.6"),
                     (_job("jobs/switching/deadlock.toml"), "0.01,0.3")):  # fmt: skip
        many = sweep(p, parse_rates(rates), s, comm)
        one = sweep(p, parse_rates(rates), s, None)
        # on every rank, failing on all together (none left waiting in the next sweep)
        check_on_every_rank(comm, partial(_same_sweep, many, one, comm.Get_size()))


def _same_sweep(many: dict, one: dict, size: int) -> None:
    assert many["ranks"] == size and one["ranks"] == 1
    assert _numbers(many) == _numbers(one)
    for a, b in zip(many["_hists"], one["_hists"], strict=True):
        assert all(np.array_equal(a[k], b[k]) for k in a)
    verdicts = {pt["verdict"] for pt in one["points"]}
    assert "stable" in verdicts and verdicts - {"stable"}
