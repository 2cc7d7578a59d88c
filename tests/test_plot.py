"""Figures of ``mpinet analyze --plot``: files, titles, axes, curves against the summary."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mpinet.trace
from mpinet.analysis import figures, summarize
from mpinet.analysis import plot as plot_mod
from mpinet.analysis.plot import PlotError, plot_compare, plot_summary
from mpinet.cli import Parser, main
from mpinet.cli import analyze as analyze_cli
from mpinet.errors import MpinetError

UNICAST = ("route_lengths", "latency_cdf", "steps", "link_load", "link_heatmap")
COLLECTIVE = ("steps", "informed")


def _analyze(argv: list[str]) -> int:
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
    d = tmp_path_factory.mktemp("plot")
    out = {k: str(d / f"{k}.h5") for k in ("short", "b2b", "bc", "fccn")}
    base = ["run", "--topology", "ms:2,2", "--packets", "2", "--quiet", "--out"]
    assert main([*base, out["short"]]) == 0
    assert main([*base, out["b2b"], "--router", "ms-balls-to-boxes"]) == 0
    assert (
        main(["run", "--topology", "ms:2,2", "--workload", "mnb", "--quiet", "--out", out["bc"]])
        == 0
    )
    assert main(["run", "--topology", "fccn:2", "--quiet", "--out", out["fccn"]]) == 0
    out["dir"] = d
    return out


def _check_files(paths: list[str], stem: str, names: tuple[str, ...]) -> None:
    want = [f"{stem}_{n}.{ext}" for n in names for ext in ("png", "svg")]
    assert [p.rsplit("/", 1)[1] for p in paths] == want
    for p in paths:
        with open(p, "rb") as f:
            head = f.read(512)
        if p.endswith(".png"):
            assert head.startswith(b"\x89PNG")
        else:
            assert b"<svg" in head or b"<?xml" in head


def test_unicast_figures(traces, tmp_path):
    pytest.importorskip("matplotlib")
    s = summarize(traces["short"])
    paths = plot_summary(s, str(tmp_path / "out"))
    _check_files(paths, "short", UNICAST)
    svg = (tmp_path / "out" / "short_route_lengths.svg").read_text()
    # the title names the run; the axes name their units
    for text in ("ms:2,2", "uniform", "shortest", "all-port", "(hops)", "delivered packets"):
        assert text in svg
    steps = (tmp_path / "out" / "short_steps.svg").read_text()
    assert "step" in steps and "packets" in steps


def test_collective_figures(traces, tmp_path):
    pytest.importorskip("matplotlib")
    s = summarize(traces["bc"])
    paths = plot_summary(s, str(tmp_path))
    _check_files(paths, "bc", COLLECTIVE)
    svg = (tmp_path / "bc_informed.svg").read_text()
    assert "informed" in svg and "MNB" in svg and "ms:2,2" in svg


def test_route_length_curves_are_the_histograms(traces):
    plt = pytest.importorskip("matplotlib.pyplot")
    a, b = summarize(traces["short"]), summarize(traces["b2b"])
    fig = figures.draw_route_lengths(plt, [a, b])
    lines = fig.axes[0].get_lines()
    labels = [ln.get_label() for ln in lines]
    # one route-length curve per router, and one exact-distance curve (the same traffic)
    assert labels == [
        "route length: router shortest",
        "route length: router ms-balls-to-boxes",
        "exact distance",
    ]
    assert list(lines[0].get_ydata()) == a["hops"]["histogram"]
    assert list(lines[1].get_ydata()) == b["hops"]["histogram"]
    assert list(lines[2].get_ydata()) == a["distance"]["histogram"]
    assert a["distance"]["histogram"] == b["distance"]["histogram"]
    assert "ms:2,2" in fig.axes[0].get_title() and "router" not in fig.axes[0].get_title()
    plt.close(fig)


@pytest.mark.slow
def test_compare_figures(traces, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    a, b = summarize(traces["short"]), summarize(traces["b2b"])
    paths = plot_compare([a, b], str(tmp_path))
    _check_files(paths, "short_vs_b2b", UNICAST[:4])
    with pytest.raises(PlotError, match="unicast and a collective"):
        plot_compare([a, summarize(traces["bc"])], str(tmp_path))
    out = tmp_path / "cli"
    assert _analyze([traces["short"], "--compare", traces["b2b"], "--plot", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"short_vs_b2b_route_lengths.png", "b2b_link_heatmap.svg"} <= names
    # unicast against collective: each run's own figures, no joint ones, no error
    out2 = tmp_path / "mixed"
    assert _analyze([traces["short"], "--compare", traces["bc"], "--plot", str(out2)]) == 0
    names = {p.name for p in out2.iterdir()}
    assert "bc_informed.png" in names and not any("_vs_" in n for n in names)
    assert "plots:" in capsys.readouterr().out


def test_heatmap_only_for_small_networks(traces, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    s = summarize(traces["short"])
    monkeypatch.setattr(figures, "HEATMAP_MAX_CELLS", 10)
    names = [p.rsplit("/", 1)[1] for p in plot_summary(s, str(tmp_path))]
    assert "short_link_load.png" in names and not any("heatmap" in n for n in names)


def test_load_matrix_blanks_missing_links(traces):
    s = summarize(traces["fccn"])
    with mpinet.trace.open(traces["fccn"]) as tr:
        raw = tr.column("links", "load")
    for rows in (5, 1 << 18):
        m = figures.load_matrix(s, rows)
        assert m.shape == raw.shape
        assert np.isnan(m).sum() == 8  # the FCCN's eight gateway nodes lack the inter port
        ok = ~np.isnan(m)
        assert (m[ok] == raw[ok]).all()


def test_step_series_thinned_to_block_maxima(traces, monkeypatch):
    monkeypatch.setattr(figures, "MAX_POINTS", 3)
    with mpinet.trace.open(traces["short"]) as tr:
        full = tr.column("steps", "transmissions")
    block = -(-len(full) // 3)
    for rows in (1, 5, 1000):
        x, y = figures.steps_series(traces["short"], ["transmissions"], rows)
        want = [full[i : i + block].max() for i in range(0, len(full), block)]
        assert y["transmissions"].tolist() == want
        assert x.tolist() == list(range(1, len(full) + 1, block))


def test_cumulative_series(traces, monkeypatch):
    with mpinet.trace.open(traces["bc"]) as tr:
        full = np.cumsum(tr.column("steps", "informed"))
    x, y = figures.steps_series(traces["bc"], ["informed"], 7, cumulative=True)
    assert y["informed"].tolist() == full.tolist() and x.tolist() == list(range(1, len(full) + 1))
    monkeypatch.setattr(figures, "MAX_POINTS", 4)
    x, y = figures.steps_series(traces["bc"], ["informed"], 7, cumulative=True)
    assert y["informed"].tolist() == full[x - 1].tolist()  # running total at each point's step
    assert x[-1] == len(full) and y["informed"][-1] == full[-1]


def test_plot_without_matplotlib(traces, tmp_path, monkeypatch, capsys):
    """As the plot module sees a missing extra (its import at the top found none)."""
    s = summarize(traces["short"])
    monkeypatch.setattr(plot_mod, "plt", None)
    with pytest.raises(PlotError, match=r"mpinet\[plot\]"):
        plot_summary(s, str(tmp_path))
    with pytest.raises(PlotError, match=r"mpinet\[plot\]"):
        plot_compare([s, s], str(tmp_path))
    assert _analyze([traces["short"], "--plot", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert 'pip install "mpinet[plot]"' in err and err.count("\n") == 1
    assert not (tmp_path / "none").exists()


def test_plot_without_matplotlib_installed(traces, tmp_path):
    """matplotlib absent from the start (a fresh process that cannot import it): the
    module-level import finds none, and analyze --plot refuses in one line naming the
    extra, before any figure or directory exists."""
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from mpinet.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    out = tmp_path / "none"
    done = subprocess.run(
        [sys.executable, "-c", code, "analyze", traces["short"], "--plot", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("mpinet: error: ") and done.stderr.count("\n") == 1
    assert 'pip install "mpinet[plot]"' in done.stderr
    assert not out.exists()


def test_unusable_plot_dir(traces, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    f = tmp_path / "file"
    f.write_text("x")
    assert _analyze([traces["short"], "--plot", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mpinet: error:") and str(f) in err and err.count("\n") == 1
