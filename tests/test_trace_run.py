"""Traces written by ``mpinet run``: self-describing, exact, identical for any rank count."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mpinet.trace
from mpinet.cli import main

ROOT_JOBS = Path(__file__).resolve().parent.parent / "jobs"

ATTRS = [
    "mpinet_version",
    "layout_version",
    "topology",
    "nodes",
    "degree",
    "model",
    "router",
    "workload",
    "seed",
    "mpi_size",
    "steps",
    "command_line",
    "start_time",
    "end_time",
    "trace_level",
]


def test_trace_round_trip(tmp_path, capsys):
    out = tmp_path / "run.h5"
    args = ["run", "--topology", "ms:2,2", "--packets", "3", "--trace-level", "hops"]
    assert main([*args, "--out", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    with mpinet.trace.open(out) as tr:
        for key in ATTRS:
            assert key in tr.attrs, key
        assert tr.attrs["topology"] == "ms:2,2" and tr.attrs["steps"] == res["stats"]["steps"]
        pk = tr.table("packets")
        assert pk["id"].tolist() == sorted(pk["id"].tolist())
        assert pk["id"].size == res["stats"]["injected"] == 360
        assert (pk["deliver_step"] - pk["inject_step"] >= pk["hops"]).all()
        hops = tr.table("hops")
        assert hops["step"].size == pk["hops"].sum() == res["stats"]["transmissions"]
        steps = tr.table("steps")
        assert steps["transmissions"].size == res["stats"]["steps"]
        assert steps["delivered"].sum() == 360
        load = tr.column("links", "load")
        assert load.shape == (120, 3) and load.sum() == res["stats"]["transmissions"]
        assert all(c["ok"] for c in tr.checks) and len(tr.checks) == len(res["stats"]["checks"])


def _tables(path):
    with mpinet.trace.open(path) as tr:
        return {t: tr.table(t) for t in ("packets", "hops", "steps", "links")}, dict(tr.attrs)


@pytest.mark.slow
def test_trace_identical_on_1_2_3_ranks(run_mpinet, tmp_path):
    got = []
    for ranks in (1, 2, 3):
        out = tmp_path / f"r{ranks}.h5"
        args = [
            "run",
            "--topology",
            "scc:5",
            "--packets",
            "2",
            "--router",
            "shortest",
            "--set",
            "router.tie=random",
            "--trace-level",
            "hops",
            "--out",
            str(out),
        ]
        proc = run_mpinet(args, ranks=ranks)
        assert proc.returncode == 0, proc.stderr
        got.append(_tables(out))
    base, attrs = got[0]
    for tables, a in got[1:]:
        assert a["mpi_size"] != attrs["mpi_size"]
        for name, cols in base.items():
            for col, arr in cols.items():
                if col == "cross_rank":  # the one figure that depends on the partition
                    continue
                assert np.array_equal(tables[name][col], arr), (name, col)


@pytest.mark.parametrize("mode", ["wormhole", "cut-through", "store-and-forward"])
def test_flit_trace_rows_are_the_heads_and_the_tails(tmp_path, capsys, mode):
    """A flit run's trace (docs/switching.md, "Traces and results"): inject is the head's
    injection and deliver the tail's delivery, hop rows are the head's hops, link loads count
    flits (L per hop), and at zero load a packet alone takes the switching's closed form."""
    out, flits = tmp_path / "w.h5", 6
    args = ["run", "--topology", "hypercube:4", "--router", "hypercube-ecube", "--packets",
            "1", "--set", f"model.switching={mode}", "--set", f"model.flits={flits}",
            "--set", f"model.vc_buffer={flits}", "--trace-level", "hops", "--out", str(out),
            "--json"]  # fmt: skip
    assert main(args) == 0
    res = json.loads(capsys.readouterr().out)
    with mpinet.trace.open(out) as tr:
        pk, hops = tr.table("packets"), tr.table("hops")
        load = tr.column("links", "load")
        assert pk["id"].size == 16 and (pk["deliver_step"] >= 0).all()
        assert hops["step"].size == pk["hops"].sum()  # one row per hop of each head
        for pid, h in zip(pk["id"], pk["hops"], strict=True):
            assert (hops["packet"] == pid).sum() == h
        assert load.sum() == flits * pk["hops"].sum() == res["stats"]["transmissions"]  # flits
        lat = pk["deliver_step"] - pk["inject_step"]
        h = pk["hops"]
        least = h * flits if mode == "store-and-forward" else h + flits - 1
        assert (lat >= np.where(h > 0, least, 0)).all()


@pytest.mark.slow
def test_flit_trace_identical_on_1_2_3_ranks(run_mpinet, tmp_path):
    got = []
    for ranks in (1, 2, 3):
        out = tmp_path / f"f{ranks}.h5"
        args = ["run", str(ROOT_JOBS / "switching" / "wormhole.toml"), "--set",
                "topology=ms:2,2", "--set", "workload.steps=60", "--set", "workload.rate=0.05",
                "--trace-level", "hops", "--out", str(out)]  # fmt: skip
        proc = run_mpinet(args, ranks=ranks)
        assert proc.returncode == 0, proc.stderr
        got.append(_tables(out))
    base, _ = got[0]
    for tables, _ in got[1:]:
        for name, cols in base.items():
            for col, arr in cols.items():
                if col != "cross_rank":
                    assert np.array_equal(tables[name][col], arr), (name, col)
