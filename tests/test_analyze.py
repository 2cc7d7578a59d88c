"""``mpinet analyze`` and :mod:`mpinet.analysis`: numbers against the trace's own tables.

Also the reader's compatibility rule (same layout major version opens, tables and columns
added later are ignored, optional tables may be absent) and that every read is chunked.
Figures are tested in ``test_plot.py``.
"""

from __future__ import annotations

import json
import shutil
import sys

import h5py
import numpy as np
import pytest

import mpinet.trace
from mpinet.analysis import compare, format_summary, gini, summarize
from mpinet.cli import Parser, main
from mpinet.cli import analyze as analyze_cli
from mpinet.errors import MpinetError, TraceError
from mpinet.routing import exact_distance
from mpinet.topology import from_spec
from mpinet.trace import LAYOUT_VERSION, write_trace


def _analyze(argv: list[str]) -> int:
    """``mpinet analyze ARGV`` with :func:`mpinet.cli.main`'s error handling."""
    p = Parser(prog="mpinet")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    analyze_cli.add_parser(sub)
    try:
        args = p.parse_args(["analyze", *argv])
    except SystemExit as exc:  # argparse refused an option (e.g. --chunk-rows 0): one line
        return int(exc.code)
    try:
        return int(args.func(args) or 0)
    except MpinetError as exc:
        print(f"mpinet: error: {exc}", file=sys.stderr)
        return 2


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("analyze")
    uni, uni2, bc = str(d / "u.h5"), str(d / "u2.h5"), str(d / "b.h5")
    base = ["run", "--topology", "ms:2,2", "--out"]
    assert main([*base, uni, "--packets", "2", "--trace-level", "hops", "--quiet"]) == 0
    assert main([*base, uni2, "--packets", "3", "--seed", "1", "--quiet"]) == 0
    assert main([*base, bc, "--workload", "broadcast", "--quiet"]) == 0
    return {"uni": uni, "uni2": uni2, "bc": bc, "dir": d}


def test_numbers_match_full_tables(traces):
    s = summarize(traces["uni"])
    with mpinet.trace.open(traces["uni"]) as tr:
        pk = tr.table("packets")
        st = tr.table("steps")
        load = tr.column("links", "load")
        nh = tr.nrows("hops")
        attrs = tr.attrs
    done = pk["deliver_step"] >= 0
    lat = (pk["deliver_step"] - pk["inject_step"])[done]
    hops = pk["hops"][done]
    assert s["kind"] == "unicast"
    assert s["attrs"] == attrs
    assert s["packets"]["total"] == len(pk["id"])
    assert s["latency"]["mean"] == pytest.approx(lat.mean())
    assert s["latency"]["max"] == lat.max()
    for q, key in ((50, "p50"), (99, "p99")):
        assert s["latency"][key] == np.percentile(lat, q, method="inverted_cdf")
        assert s["hops"][key] == np.percentile(hops, q, method="inverted_cdf")
    assert s["hops"]["max"] == hops.max()
    assert s["hops"]["mean"] == pytest.approx(hops.mean())
    assert s["completion_step"] == pk["deliver_step"].max()
    assert s["steps"]["transmissions"]["total"] == st["transmissions"].sum()
    assert s["steps"]["in_flight"]["max"] == st["in_flight"].max()
    assert s["links"]["all"]["total"] == load.sum() == hops.sum() == nh
    assert s["links"]["all"]["max"] == load.max()
    assert s["links"]["existing_links"] == load.size  # ms:2,2 has no missing ports
    nuc = load[:, [0, 1]]
    assert s["links"]["classes"]["nucleus"]["mean"] == pytest.approx(nuc.mean())
    assert s["links"]["classes"]["intercluster"]["max"] == load[:, 2].max()
    # shortest router: stretch 1
    assert s["stretch"]["skipped"] is None
    assert s["stretch"]["mean"] == pytest.approx(1.0)
    assert s["stretch"]["fraction_shortest"] == pytest.approx(1.0)
    assert s["cross_rank"]["fraction"] == 0.0
    assert s["checks_ok"] and len(s["checks"]) >= 2
    assert s["consistency"] and all(c["ok"] for c in s["consistency"])
    assert s["hops_table"]["rows"] == nh


def test_gini_matches_pairwise_definition():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 9, size=200)
    pairwise = np.abs(x[:, None] - x[None, :]).sum() / (2 * x.size**2 * x.mean())
    v, c = np.unique(x, return_counts=True)
    assert gini(v, c) == pytest.approx(pairwise)
    assert gini(np.array([5]), np.array([10])) == 0.0


def test_tiny_chunks_give_identical_results(traces):
    for key in ("uni", "bc"):
        big = summarize(traces[key])
        for rows in (1, 7):
            small = summarize(traces[key], chunk_rows=rows)
            for k in ("chunk_rows", "memory_bound_bytes"):
                big.pop(k, None), small.pop(k)
            assert small == big


def test_collective_summary(traces):
    s = summarize(traces["bc"])
    with mpinet.trace.open(traces["bc"]) as tr:
        st = tr.table("steps")
    c = s["collective"]
    assert s["kind"] == "collective"
    assert c["algorithm"] == s["attrs"]["collective"]
    assert c["step_rows"] == len(st["informed"])
    assert c["informed_per_step"] == st["informed"].tolist()
    assert c["duplicates"]["total"] == st["duplicates"].sum()
    assert c["transmissions"]["total"] == st["transmissions"].sum()
    assert "informed per step" in format_summary(s)


def test_json_keys(traces, capsys):
    assert _analyze([traces["uni"], "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    for k in (
        "attrs",
        "completion_step",
        "latency",
        "hops",
        "stretch",
        "steps",
        "links",
        "cross_rank",
        "checks",
        "consistency",
        "memory_bound_bytes",
    ):
        assert k in obj
    for k in ("mean", "p50", "p99", "max", "histogram"):
        assert k in obj["latency"]
    assert set(obj["links"]["classes"]) == {"nucleus", "intercluster"}
    assert {"max", "mean", "gini"} <= set(obj["links"]["classes"]["nucleus"])
    assert _analyze([traces["bc"], "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert {"steps", "informed", "duplicates", "informed_per_step"} <= set(obj["collective"])


def test_human_output(traces, capsys):
    assert _analyze([traces["uni"], "--chunk-rows", "5"]) == 0
    out = capsys.readouterr().out
    for word in ("latency", "stretch", "load nucleus", "gini", "cross-rank", "checks"):
        assert word in out
    assert "ms:2,2" in out


def test_no_stretch(traces):
    s = summarize(traces["uni"], stretch=False)
    assert s["stretch"]["mean"] is None and "not requested" in s["stretch"]["skipped"]


def test_compare(traces, capsys):
    a, b = summarize(traces["uni"]), summarize(traces["uni2"])
    c = compare(a, b)
    rows = {r["key"]: r for r in c["rows"]}
    assert rows["packets.total"]["delta"] == b["packets"]["total"] - a["packets"]["total"]
    assert rows["latency.mean"]["delta"] == pytest.approx(
        b["latency"]["mean"] - a["latency"]["mean"]
    )
    assert rows["spec"]["delta"] == "same"
    assert _analyze([traces["uni"], "--compare", traces["uni2"]]) == 0
    out = capsys.readouterr().out
    assert "delta (B - A)" in out and "latency.p99" in out
    assert _analyze([traces["uni"], "--compare", traces["uni2"], "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert {"a", "b", "rows", "summaries"} <= set(obj)
    assert {"key", "a", "b", "delta"} == set(obj["rows"][0])


def test_errors_one_line_exit_2(traces, tmp_path, capsys):
    missing = tmp_path / "nope.h5"
    assert _analyze([str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mpinet: error:") and err.count("\n") == 1 and "does not exist" in err
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    assert _analyze([str(junk)]) == 2
    err = capsys.readouterr().err
    assert "not an mpinet trace" in err and err.count("\n") == 1
    assert _analyze([traces["uni"], "--chunk-rows", "0"]) == 2
    assert "--chunk-rows" in capsys.readouterr().err
    with pytest.raises(TraceError, match=r"trace file .*nope\.h5 does not exist"):
        summarize(str(missing))


def test_distance_and_balance(traces):
    s = summarize(traces["uni"])
    with mpinet.trace.open(traces["uni"]) as tr:
        pk = tr.table("packets")
    dist = exact_distance(from_spec("ms:2,2"))
    d = np.zeros(len(pk["id"]), dtype=np.int64)
    moving = pk["source"] != pk["dest"]
    d[moving] = dist(pk["source"][moving], pk["dest"][moving])
    assert s["distance"]["histogram"] == np.bincount(d).tolist()
    assert s["distance"]["mean"] == pytest.approx(d.mean())
    assert s["stretch"]["excess_hops"] == int(pk["hops"].sum() - d.sum()) == 0
    ln = s["links"]
    means = [c["mean"] for c in ln["classes"].values()]
    assert ln["class_mean_ratio"] == pytest.approx(max(means) / min(means))
    for c in ln["classes"].values():
        assert c["max_over_mean"] == pytest.approx(c["max"] / c["mean"])
    out = format_summary(s)
    assert "load balance" in out and "Cor. 3.3" in out and "distance" in out


def test_every_read_is_chunked(traces, monkeypatch):
    """summarize never reads a whole table: only iter_chunks, never more than chunk_rows."""
    seen = []
    real = mpinet.trace.Trace.iter_chunks

    def spy(self, table, columns=None, chunk_rows=1 << 20):
        for ch in real(self, table, columns, chunk_rows):
            seen.append((table, max(len(v) for v in ch.values()), chunk_rows))
            yield ch

    def forbidden(*a, **k):
        raise AssertionError("whole-table read")

    monkeypatch.setattr(mpinet.trace.Trace, "iter_chunks", spy)
    monkeypatch.setattr(mpinet.trace.Trace, "table", forbidden)
    monkeypatch.setattr(mpinet.trace.Trace, "column", forbidden)
    summarize(traces["uni"], chunk_rows=16)
    summarize(traces["bc"], chunk_rows=16)
    assert {t for t, _, _ in seen} == {"packets", "steps", "links", "hops"}
    assert all(n <= 16 == rows for _, n, rows in seen)


def _set_version(path, version):
    with h5py.File(path, "r+") as f:
        f.attrs["layout_version"] = version


def test_same_major_layout_versions_open(tmp_path):
    """Any trace whose layout_version has the current major opens; another major does not."""
    major = LAYOUT_VERSION.split(".")[0]
    path = str(tmp_path / "t.h5")
    tables = {"steps": {"transmissions": np.arange(4, dtype=np.int64)}}
    write_trace(path, None, attrs={"topology": "ms:2,2"}, tables=tables)
    for version in (f"{major}.0", f"{major}.99", major):
        _set_version(path, version)
        with mpinet.trace.open(path) as tr:
            assert tr.attrs["layout_version"] == version
            assert tr.column("steps", "transmissions").tolist() == [0, 1, 2, 3]
    other = f"{int(major) + 1}.0"
    _set_version(path, other)
    with pytest.raises(TraceError) as err:
        mpinet.trace.open(path)
    assert other in str(err.value) and LAYOUT_VERSION in str(err.value)
    _set_version(path, "x.y")
    with pytest.raises(TraceError, match="bad layout_version"):
        mpinet.trace.open(path)


def test_later_minor_version_with_extra_data_summarises(traces, tmp_path):
    """A trace of a later minor version, with tables and columns we do not know, still works."""
    path = tmp_path / "later.h5"
    shutil.copy(traces["uni"], path)
    with h5py.File(path, "r+") as f:
        f.attrs["layout_version"] = LAYOUT_VERSION.split(".")[0] + ".99"
        f.attrs["new_attribute"] = "from the future"
        n = f["packets/id"].shape[0]
        f.create_dataset("packets/priority", data=np.zeros(n, dtype=np.int8))
        f.create_group("future").create_dataset("x", data=np.arange(3))
    s, base = summarize(str(path)), summarize(traces["uni"])
    assert s["attrs"]["new_attribute"] == "from the future"
    for k in ("latency", "hops", "distance", "stretch", "links", "steps", "cross_rank"):
        assert s[k] == base[k]


def test_optional_tables_and_columns_may_be_absent(traces, tmp_path):
    """/links, /hops and /steps columns other than transmissions are optional."""
    path = tmp_path / "old.h5"
    shutil.copy(traces["uni"], path)
    with h5py.File(path, "r+") as f:
        del f["links"], f["hops"], f["steps/cross_rank"], f["steps/in_flight"]
    s = summarize(str(path))
    assert s["links"] is None and s["hops_table"] is None
    assert s["steps"]["in_flight"] is None and s["cross_rank"]["fraction"] is None
    assert s["consistency"] == []
    assert s["latency"] == summarize(traces["uni"])["latency"]
    out = format_summary(s)
    assert "load nucleus" not in out and "\nin flight" not in out and "cross-rank" not in out


def test_to_pandas(traces):
    pd = pytest.importorskip("pandas")
    with mpinet.trace.open(traces["uni"]) as tr:
        df = tr.to_pandas("packets")
        load = tr.to_pandas("links")
        pk = tr.table("packets")
        raw = tr.column("links", "load")
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == list(pk)
    assert (df["hops"].to_numpy() == pk["hops"]).all()
    assert list(load.columns) == [f"load_{j}" for j in range(raw.shape[1])]
    assert (load.to_numpy() == raw).all()
