"""Broadcast and MNB traces: one /hops row per transmission, and the algorithm as router."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mpinet.trace
from mpinet.cli import main
from mpinet.topology import from_spec

ROOT = Path(__file__).resolve().parent.parent
SCC_ONE_PORT = str(ROOT / "jobs/paper001-scc-broadcast/one-port.toml")
MNB_SDC = str(ROOT / "jobs/paper004-macrostar/mnb-sdc.toml")


def _run(args: list[str], capsys) -> dict:
    assert main(["run", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _hops(path) -> tuple[dict, dict, dict]:
    with mpinet.trace.open(path) as tr:
        return tr.attrs, tr.table("hops"), tr.table("steps")


def _check_rows(spec: str, hops: dict, steps: dict, stats: dict, start: dict) -> None:
    """Every row a real link, in order, from a node that held the message; counts agree."""
    topo = from_spec(spec)
    n = len(hops["step"])
    assert n == stats["transmissions"] == int(steps["transmissions"].sum())
    step, msg, src, dst, port = (
        hops[c] for c in ("step", "packet", "from_node", "to_node", "port")
    )
    assert (topo.neighbors(src)[np.arange(n), port] == dst).all()  # a real link, that port
    assert step.min() >= 1 and step.max() == len(steps["step"])
    assert (np.bincount(step, minlength=step.max() + 1)[1:] == steps["transmissions"]).all()
    key = np.lexsort((port, src, step, msg))
    assert (key == np.arange(n)).all()  # sorted by (message, step, from_node, port)
    # a node sends a message only after it got it: its start, or a row of an earlier step
    got = dict(start)
    for s, b, u, v in zip(step, msg, src, dst, strict=True):
        assert got.get((int(u), int(b)), 1 << 30) < s
        got.setdefault((int(v), int(b)), int(s))


def test_broadcast_hops_one_row_per_transmission(tmp_path, capsys):
    out = tmp_path / "b.h5"
    res = _run([SCC_ONE_PORT, "--trace-level", "hops", "--out", str(out)], capsys)
    attrs, hops, steps = _hops(out)
    topo = from_spec(attrs["topology"])
    _check_rows(attrs["topology"], hops, steps, res["stats"], {(topo.identity, 0): 0})
    assert set(hops["packet"].tolist()) == {0}  # one message: its index
    assert attrs["router"] == res["router"] == "broadcast-scc-one-port"
    assert attrs["trace_level"] == "hops"


def test_pipelined_broadcast_packet_is_the_message_index(tmp_path, capsys):
    out = tmp_path / "p.h5"
    job = str(ROOT / "jobs/paper001-scc-broadcast/pipelined-one-port.toml")
    res = _run([job, "--set", "topology=scc:4", "--trace-level", "hops", "--out", str(out)], capsys)
    attrs, hops, steps = _hops(out)
    topo = from_spec(attrs["topology"])
    m = res["stats"]["messages"]
    assert m > 1 and sorted(set(hops["packet"].tolist())) == list(range(m))
    _check_rows(
        attrs["topology"], hops, steps, res["stats"], {(topo.identity, b): 0 for b in range(m)}
    )


def test_mnb_hops_and_name(tmp_path, capsys):
    out = tmp_path / "m.h5"
    res = _run([MNB_SDC, "--trace-level", "hops", "--out", str(out)], capsys)
    attrs, hops, steps = _hops(out)
    n = attrs["nodes"]
    _check_rows(attrs["topology"], hops, steps, res["stats"], {(v, v): 0 for v in range(n)})
    assert attrs["router"] == res["router"] == "mnb-tree"
    with mpinet.trace.open(out) as tr:
        assert tr.column_info("hops")["packet"]["units"] == "message index"


def test_routed_mnb_names_its_router(tmp_path, capsys):
    out = tmp_path / "r.h5"
    args = ["--topology", "hypercube:3", "--workload", "mnb", "--router", "hypercube-ecube"]
    res = _run([*args, "--set", "workload.algorithm=routed", "--out", str(out)], capsys)
    with mpinet.trace.open(out) as tr:
        assert tr.attrs["router"] == res["router"] == "mnb-routed via hypercube-ecube"
        assert "hops" not in tr.tables  # summary level: no rows


def test_summary_names_the_algorithm(capsys):
    assert main(["run", SCC_ONE_PORT, "--trace-level", "none"]) == 0
    text = capsys.readouterr().out
    assert "algorithm        broadcast-scc-one-port" in text and "shortest" not in text


@pytest.mark.slow
@pytest.mark.parametrize("job", [SCC_ONE_PORT, MNB_SDC], ids=["broadcast", "mnb"])
def test_hops_identical_on_1_and_2_ranks(run_mpinet, job, tmp_path):
    tables = []
    for r in (1, 2):
        out = tmp_path / f"r{r}.h5"
        proc = run_mpinet(["run", job, "--trace-level", "hops", "--out", str(out)], ranks=r)
        assert proc.returncode == 0, proc.stderr
        tables.append(_hops(out)[1])
    for c in tables[0]:
        assert np.array_equal(tables[0][c], tables[1][c]), c
