"""``mpinet analyze`` on traces of the flit engine (wormhole, cut-through, store-and-forward).

Link loads and per-step transmissions of a flit run count flits; packet hops and ``/hops``
rows count the head's hops (docs/switching.md, "Traces and results"). The checks are
held against the trace's tables read here directly (not through the summary), and a
trace damaged in one value fails the check that names it.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest

import mpinet.trace
from mpinet.analysis import format_summary, summarize
from mpinet.cli import main

ROOT = Path(__file__).resolve().parent.parent
WORMHOLE_JOB = str(ROOT / "jobs" / "switching" / "wormhole.toml")
DEADLOCK_JOB = str(ROOT / "jobs" / "switching" / "deadlock.toml")
FLITS = 4
#: switching -> (vc_buffer, vcs): cut-through and store-and-forward buffer whole packets
MODES = {"wormhole": (2, 2), "cut-through": (FLITS, 1), "store-and-forward": (FLITS, 2)}
NEW_ATTRS = ("load_unit", "switching", "flits", "vcs", "vc_buffer", "vc_policy", "capacities")


def settings(mode: str) -> dict:
    """The keys set on jobs/switching/wormhole.toml: a small network, light load."""
    buf, vcs = MODES[mode]
    return {"topology": "ms:2,2", "workload.steps": 40, "workload.rate": 0.05,
            "model.switching": mode, "model.flits": FLITS, "model.vc_buffer": buf,
            "model.vcs": vcs}  # fmt: skip


def run_args(mode: str, level: str, out: str) -> list[str]:
    args = ["run", WORMHOLE_JOB, "--trace-level", level, "--out", out, "--quiet"]
    for k, v in settings(mode).items():
        args += ["--set", f"{k}={v}"]
    return args


def analyze(capsys, *args: str) -> tuple[int, str, list[str]]:
    code = main(["analyze", *map(str, args)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err.strip().splitlines()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("flit")
    out = {}
    for mode in MODES:
        for level in ("summary", "hops"):
            path = str(d / f"{mode}-{level}.h5")
            assert main(run_args(mode, level, path)) == 0
            out[mode, level] = path
    dl = str(d / "deadlock.h5")
    assert main(["run", DEADLOCK_JOB, "--trace-level", "hops", "--out", dl, "--quiet"]) == 1
    out["deadlock"] = dl
    pk = str(d / "packet.h5")
    assert main(["run", "--topology", "ms:2,2", "--packets", "2", "--trace-level", "hops",
                 "--out", pk, "--quiet"]) == 0  # fmt: skip
    out["packet"] = pk
    return out


def truth(path: str) -> dict:
    """What the checks must find, from the tables themselves."""
    with mpinet.trace.open(path) as tr:
        pk, load = tr.table("packets"), tr.column("links", "load")
        steps = tr.column("steps", "transmissions")
        ports = tr.column("hops", "port") if "hops" in tr.tables else None
        flits = tr.attrs.get("flits") or json.loads(tr.attrs["job"])["model"]["flits"]
    done = pk["deliver_step"] >= 0
    return {
        "flits": flits,
        "load": int(load.sum()),
        "load_per_port": load.sum(axis=0).tolist(),
        "steps": int(steps.sum()),
        "hops": int(pk["hops"].sum()),
        "hops_delivered": int(pk["hops"][done].sum()),
        "hop_rows_per_port": None if ports is None else np.bincount(ports, minlength=load.shape[1]),
        "in_flight": int((~done).sum()),
    }


@pytest.mark.parametrize("level", ["summary", "hops"])
@pytest.mark.parametrize("mode", list(MODES))
def test_flit_trace_passes_every_check(runs, capsys, mode, level):
    path = runs[mode, level]
    code, out, err = analyze(capsys, path)
    assert code == 0, err
    s = summarize(path)
    t = truth(path)
    assert t["in_flight"] == 0 and t["load"] == t["steps"] == FLITS * t["hops"]  # the engine's rule
    got = {c["name"]: c for c in s["consistency"]}
    assert all(c["ok"] for c in got.values()), got
    c = got["link-load total = flits x hops of all packets"]
    assert c["expected"] == FLITS * t["hops"] and c["measured"] == t["load"]
    assert got["flits sent per step = link-load total"]["expected"] == t["steps"]
    least = [n for n in got if n.startswith(f"no delivered packet faster than {mode}")]
    assert len(least) == 1 and got[least[0]]["measured"] == 0
    if level == "hops":
        assert got["/hops rows = hops of all packets (one per head hop)"]["measured"] == t["hops"]
        per = got["link load per port = flits x /hops per port"]
        assert per["expected"] == (FLITS * t["hop_rows_per_port"]).tolist()
        assert per["measured"] == t["load_per_port"]
    else:
        assert not any(n.startswith("/hops") or "per port" in n for n in got)
    assert s["switching"]["mode"] == mode and s["switching"]["flits"] == FLITS
    assert s["switching"]["vc_buffer"] == MODES[mode][0] and s["switching"]["vcs"] == MODES[mode][1]
    assert s["switching"]["source"] == "attributes" and s["load_unit"] == "flits"
    assert s["links"]["unit"] == "flits per directed link"


def test_packets_in_flight_give_ranges_that_hold(runs, capsys):
    """A deadlocked wormhole run: delivered packets put L flits on each hop, the blocked
    ones 1 to L; the ranges are computed here from /packets and /hops."""
    path = runs["deadlock"]
    code, out, err = analyze(capsys, path)
    assert code == 0, err
    t = truth(path)
    assert t["in_flight"] > 0 and t["hops"] > t["hops_delivered"]
    L, late = t["flits"], t["hops"] - t["hops_delivered"]  # noqa: N806
    lo, hi = L * t["hops_delivered"] + late, L * t["hops"]
    assert lo <= t["load"] <= hi and t["load"] != L * t["hops"]  # the equality cannot hold
    got = {c["name"]: c for c in summarize(path)["consistency"]}
    total = got["link-load total = flits x hops (in flight: 1 to flits per hop)"]
    assert total["ok"] and total["expected"] == [lo, hi] and total["measured"] == t["load"]
    with mpinet.trace.open(path) as tr:
        pk, hops = tr.table("packets"), tr.table("hops")
    stuck = np.isin(hops["packet"], pk["id"][pk["deliver_step"] < 0])
    heads = np.bincount(hops["port"], minlength=len(t["load_per_port"]))
    late_p = np.bincount(hops["port"][stuck], minlength=len(heads))
    per = got["link load per port = flits x /hops per port (in flight: 1 to flits per hop)"]
    assert per["ok"] and per["expected"] == [[L * (h - x) + x, L * h] for h, x in
                                             zip(heads, late_p, strict=True)]  # fmt: skip


def test_too_many_packets_in_flight_give_the_ranges_without_ids(runs, monkeypatch):
    """Beyond IN_FLIGHT_IDS_LIMIT ids the per-port ranges are the loosest: 1 to L flits for
    every head hop; they still hold, and the total stays exact."""
    from mpinet.analysis import validate

    path = runs["deadlock"]
    tight = {c["name"]: c for c in summarize(path)["consistency"]}
    monkeypatch.setattr(validate, "IN_FLIGHT_IDS_LIMIT", 1)
    loose = {c["name"]: c for c in summarize(path)["consistency"]}
    name = "link load per port = flits x /hops per port (in flight: 1 to flits per hop)"
    with mpinet.trace.open(path) as tr:
        heads = np.bincount(tr.column("hops", "port"), minlength=tr.attrs["degree"])
        flits = tr.attrs["flits"]
    assert loose[name]["ok"] and loose[name]["expected"] == [[h, flits * h] for h in heads]
    assert loose[name]["expected"] != tight[name]["expected"]
    assert {k: v for k, v in loose.items() if k != name} == {
        k: v for k, v in tight.items() if k != name
    }


@pytest.mark.slow
def test_text_json_and_figures_name_the_switching(runs, capsys, tmp_path):
    path = runs["wormhole", "hops"]
    code, out, err = analyze(capsys, path)
    assert code == 0, err
    assert "switching          wormhole: 4 flit(s) per packet, 2 VC(s) of 2 flits per link" in out
    assert "(oldest-first)" in out and "flits in all" in out and "(flits, " in out
    code, out, err = analyze(capsys, path, "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["switching"]["mode"] == "wormhole" and obj["load_unit"] == "flits"
    assert obj["cross_rank"]["unit"] == "flits"
    pytest.importorskip("matplotlib")
    code, out, err = analyze(capsys, path, "--plot", tmp_path / "figs")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "figs").glob("*.png")) == sorted(
        f"wormhole-hops_{f}.png"
        for f in ("route_lengths", "latency_cdf", "steps", "link_load", "link_heatmap")
    )
    import matplotlib.pyplot as plt

    from mpinet.analysis import figures as fg

    s = summarize(path)
    fig = fg.draw_steps(plt, [s], 1 << 18)
    assert "wormhole L=4 V=2 B=2 any" in fig.axes[0].get_title()
    assert "flits per step" in fig.axes[0].get_ylabel()
    plt.close(fig)
    fig = fg.draw_link_load(plt, [s])
    assert "flits sent over the link" in fig.axes[0].get_xlabel()
    plt.close(fig)
    packet = summarize(runs["packet"])
    fig = fg.draw_link_load(plt, [packet])
    assert "packets sent over the link" in fig.axes[0].get_xlabel()
    assert "L=" not in fig.axes[0].get_title()
    plt.close(fig)


def _copy(path: str, tmp_path: Path, name: str = "bad.h5") -> Path:
    dst = tmp_path / name
    shutil.copy(path, dst)
    return dst


def _rewrite(f: h5py.File, table: str, keep: np.ndarray) -> None:
    """Keep rows ``keep`` of every column of ``table`` (and its rank_rows), as a writer would."""
    g = f[table]
    for c in list(g):
        data, attrs = g[c][()][keep], dict(g[c].attrs)
        del g[c]
        g.create_dataset(c, data=data, fletcher32=True, chunks=True)
        g[c].attrs.update(attrs)
    g.attrs["rank_rows"] = np.array([int(keep.sum())], dtype=np.int64)


def test_one_link_load_changed_fails_its_check(runs, capsys, tmp_path):
    bad = _copy(runs["wormhole", "hops"], tmp_path)
    with h5py.File(bad, "r+") as f:
        load = f["links/load"]
        node = int(np.argmax(load[:, 0]))
        load[node, 0] = load[node, 0] + 1  # HDF5 computes a fresh checksum: only the checks see it
    code, out, err = analyze(capsys, bad)
    assert code == 1 and len(err) == 1
    assert "link-load total = flits x hops of all packets" in err[0]
    assert "FAIL link-load total = flits x hops of all packets" in out


def test_one_hops_row_dropped_fails_its_check(runs, capsys, tmp_path):
    bad = _copy(runs["cut-through", "hops"], tmp_path)
    with h5py.File(bad, "r+") as f:
        n = f["hops/port"].shape[0]
        _rewrite(f, "hops", np.arange(n) != n // 2)
    code, out, err = analyze(capsys, bad)
    assert code == 1 and len(err) == 1
    assert "/hops rows = hops of all packets (one per head hop)" in err[0]
    t = truth(str(bad))
    assert f"expected {t['hops']}, measured {t['hops'] - 1}" in err[0]
    assert "FAIL link load per port = flits x /hops per port" in out


def test_a_packet_faster_than_its_switching_fails_its_check(runs, capsys, tmp_path):
    bad = _copy(runs["store-and-forward", "summary"], tmp_path)
    with h5py.File(bad, "r+") as f:
        hops, inj = f["packets/hops"][()], f["packets/inject_step"][()]
        i = int(np.argmax(hops))
        assert hops[i] >= 2
        deliver = f["packets/deliver_step"]
        # one step less than store-and-forward's least, L x hops (still more than wormhole's)
        deliver[i] = inj[i] + hops[i] * FLITS - 1
    code, out, err = analyze(capsys, bad)
    assert code == 1 and len(err) == 1
    assert "no delivered packet faster than store-and-forward allows" in err[0]
    assert "expected 0, measured 1" in err[0]


def test_switching_attribute_against_the_job(runs, capsys, tmp_path):
    bad = _copy(runs["wormhole", "summary"], tmp_path)
    with h5py.File(bad, "r+") as f:
        f.attrs["flits"] = 8
    code, out, err = analyze(capsys, bad)
    assert code == 1 and err == [f"mpinet: error: trace {bad}: attribute flits = 8, but its job "
                                 "says 4; the trace is damaged"]  # fmt: skip
    with h5py.File(bad, "r+") as f:
        f.attrs["flits"] = 4
        f.attrs["load_unit"] = "bytes"
    code, out, err = analyze(capsys, bad)
    assert code == 1 and "load_unit = 'bytes' is neither 'packets' nor 'flits'" in err[0]


def _as_layout_1_1(path: Path) -> None:
    with h5py.File(path, "r+") as f:
        for k in NEW_ATTRS:
            del f.attrs[k]
        f.attrs["layout_version"] = "1.1"
        f.attrs["order"] = "fifo"


@pytest.mark.parametrize("mode", list(MODES))
def test_layout_1_1_flit_trace_reads_its_switching_from_the_job(runs, capsys, tmp_path, mode):
    """Traces written before layout 1.2 had no switching attributes: the stored job says it."""
    old = _copy(runs[mode, "hops"], tmp_path, "old.h5")
    _as_layout_1_1(old)
    code, out, err = analyze(capsys, old)
    assert code == 0, err
    s, new = summarize(str(old)), summarize(runs[mode, "hops"])
    assert s["switching"]["source"] == "job"
    assert {k: v for k, v in s["switching"].items() if k != "source"} == {
        k: v for k, v in new["switching"].items() if k != "source"
    }
    assert s["consistency"] == new["consistency"]
    assert f"switching          {mode}: 4 flit(s)" in format_summary(s)


def test_packet_traces_keep_their_checks(runs):
    s = summarize(runs["packet"])
    assert s["switching"] is None and s["load_unit"] == "packets" and "flit_packets" not in s
    names = [c["name"] for c in s["consistency"]]
    assert names == [
        "hops of all packets = link-load total",
        "transmissions = link-load total",
        "/hops rows = transmissions",
        "/hops per port = link load per port",
    ]
    assert all(c["ok"] for c in s["consistency"])
    assert "switching" not in format_summary(s).split("attributes:")[0]


def test_file_network_trace_analysed_from_another_directory(tmp_path, monkeypatch, capsys):
    """The trace stores the file's absolute path: stretch from any directory; a changed or
    moved file is named and stretch skipped, never another file's distances used."""
    run_dir, other = tmp_path / "run", tmp_path / "other"
    run_dir.mkdir(), other.mkdir()
    net = run_dir / "ring.edges"
    net.write_text("".join(f"{i} {(i + 1) % 12}\n" for i in range(12)))
    monkeypatch.chdir(run_dir)
    trace = str(other / "t.h5")
    assert main(["run", "--topology", "file:ring.edges", "--packets", "2", "--out", trace,
                 "--quiet"]) == 0  # fmt: skip
    with mpinet.trace.open(trace) as tr:
        assert tr.attrs["topology"] == "file:ring.edges"
        assert tr.attrs["network_path"] == str(net) and tr.attrs["network_format"] == "edgelist"
    monkeypatch.chdir(other)
    s = summarize(trace)
    assert s["stretch"]["skipped"] is None and s["stretch"]["mean"] == 1.0  # shortest on a ring
    # another file of that name beside the trace is not the run's network
    (other / "ring.edges").write_text("".join(f"{i} {(i + 1) % 12}\n" for i in range(12))
                                      + "0 6\n")  # fmt: skip
    assert summarize(trace)["stretch"]["skipped"] is None  # the absolute path still wins
    net.rename(run_dir / "moved.edges")
    why = summarize(trace)["stretch"]["skipped"]
    assert f"no file {net}" in why and f"{other / 'ring.edges'} has changed" in why
    capsys.readouterr()
    code, out, err = analyze(capsys, trace)
    assert code == 0 and re.search(r"\nstretch +skipped: the network file is missing", out)


def test_file_network_of_layout_1_1_found_beside_the_trace(tmp_path, monkeypatch):
    """Old traces store the spec's relative path only: the trace's directory is tried too."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ring.edges").write_text("".join(f"{i} {(i + 1) % 9}\n" for i in range(9)))
    assert main(["run", "--topology", "file:ring.edges", "--packets", "1", "--out", "t.h5",
                 "--quiet"]) == 0  # fmt: skip
    with h5py.File("t.h5", "r+") as f:
        del f.attrs["network_path"], f.attrs["network_format"]
        f.attrs["layout_version"] = "1.1"
    elsewhere = Path(tempfile.mkdtemp(dir=tmp_path))
    monkeypatch.chdir(elsewhere)
    assert summarize(str(tmp_path / "t.h5"))["stretch"]["skipped"] is None


# -- ranks -------------------------------------------------------------------------------------
def _tables(path: str) -> dict:
    with mpinet.trace.open(path) as tr:
        return {t: tr.table(t) for t in tr.tables}


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_flit_traces_of_2_ranks_analyse_like_1_rank(run_mpinet, runs, tmp_path, capsys, mode):
    for level in ("summary", "hops"):
        out = str(tmp_path / f"{mode}-{level}-2.h5")
        proc = run_mpinet(run_args(mode, level, out), ranks=2)
        assert proc.returncode == 0, proc.stderr
        code, text, err = analyze(capsys, out)
        assert code == 0, err
        one, two = summarize(runs[mode, level]), summarize(out)
        assert two["attrs"]["mpi_size"] == 2 and two["switching"] == one["switching"]
        assert two["consistency"] == one["consistency"] and two["consistency"]
        for t, cols in _tables(runs[mode, level]).items():
            for c, a in cols.items():
                if c != "cross_rank":  # the one column that depends on the partition
                    assert np.array_equal(_tables(out)[t][c], a), (t, c)


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.mpi
@pytest.mark.parametrize("mode", list(MODES))
def test_flit_trace_written_by_every_rank_passes_on_every_rank(comm, mode):
    """Under mpiexec -n R: the run on all ranks writes one trace; every rank analyses it and
    finds the checks of the trace rank 0 wrote alone (the serial communicator)."""
    from mpinet.jobs import load_job
    from mpinet.jobs.execute import execute, plan

    d = Path(comm.bcast(tempfile.mkdtemp(prefix="mpinet-flit-") if comm.Get_rank() == 0 else None))
    try:
        sets = [(k.split("."), v) for k, v in settings(mode).items()]
        sets.append((["trace", "level"], "hops"))
        res = execute(plan(load_job(WORMHOLE_JOB, sets), out=str(d / "all.h5"),
                           ranks=comm.Get_size()), comm)  # fmt: skip
        assert res["trace"] == str(d / "all.h5")
        if comm.Get_rank() == 0:
            one = execute(plan(load_job(WORMHOLE_JOB, sets), out=str(d / "one.h5")), None)
            assert one["trace"] == str(d / "one.h5")
        comm.Barrier()
        s = summarize(str(d / "all.h5"))
        ok = bool(s["consistency"]) and all(c["ok"] for c in s["consistency"])
        same = s["consistency"] == summarize(str(d / "one.h5"))["consistency"]
        assert comm.allgather((ok, same)) == [(True, True)] * comm.Get_size()
        assert s["attrs"]["mpi_size"] == comm.Get_size() and s["switching"]["mode"] == mode
    finally:
        comm.Barrier()
        if comm.Get_rank() == 0:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
