"""``mpinet analyze`` and :mod:`mpinet.analysis`: numbers against the trace's own tables."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import mpinet.trace
from mpinet.analysis import compare, format_summary, gini, summarize
from mpinet.cli import Parser, main
from mpinet.cli import analyze as analyze_cli
from mpinet.errors import MpinetError, TraceError


def _analyze(argv: list[str]) -> int:
    """``mpinet analyze ARGV`` with :func:`mpinet.cli.main`'s error handling."""
    p = Parser(prog="mpinet")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    analyze_cli.add_parser(sub)
    args = p.parse_args(["analyze", *argv])
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


def test_plots(traces, capsys):
    pytest.importorskip("matplotlib")
    outdir = traces["dir"] / "plots"
    assert _analyze([traces["uni"], "--plot", str(outdir)]) == 0
    assert _analyze([traces["bc"], "--plot", str(outdir)]) == 0
    names = sorted(p.name for p in outdir.iterdir())
    for stem in ("u_latency_cdf", "u_steps", "u_link_load", "b_steps"):
        for ext in ("png", "svg"):
            assert f"{stem}.{ext}" in names
            assert (outdir / f"{stem}.{ext}").stat().st_size > 0
    assert "plots:" in capsys.readouterr().out


def test_plot_without_matplotlib(traces, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert _analyze([traces["uni"], "--plot", str(traces["dir"] / "none")]) == 2
    err = capsys.readouterr().err
    assert 'pip install "mpinet[plot]"' in err and err.count("\n") == 1


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
    with pytest.raises(TraceError):
        summarize(str(missing))


def test_step_series_thinned_to_block_maxima(traces, monkeypatch):
    from mpinet.analysis import plot

    monkeypatch.setattr(plot, "MAX_POINTS", 3)
    with mpinet.trace.open(traces["uni"]) as tr:
        full = tr.column("steps", "transmissions")
    block = -(-len(full) // 3)
    for rows in (1, 5, 1000):
        x, y = plot._steps_series(traces["uni"], ["transmissions"], rows)
        want = [full[i : i + block].max() for i in range(0, len(full), block)]
        assert y["transmissions"].tolist() == want
        assert x.tolist() == list(range(1, len(full) + 1, block))
