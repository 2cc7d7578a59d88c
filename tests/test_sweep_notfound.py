"""A sweep reports only the bracket it measured (issue 32 item 5).

A saturation load is the midpoint of a stable load and the lowest unstable load above it,
both measured. One unstable load alone, or only stable loads, is "not found" in the text,
in ``--json`` (``found`` false, no load, no bracket, no invented bound fraction) and in
the figures' legend, with what was measured; a throughput is sustained only at a stable
load. The expected values are read off the measured points, not off the code that reports.
"""

from __future__ import annotations

import json

import pytest

from mpinet.analysis import sweep_plot
from mpinet.analysis.sweep import format_sweep
from mpinet.analysis.sweep_plot import plot_sweep
from mpinet.cli import main
from mpinet.jobs import load_job
from mpinet.jobs.execute import plan
from mpinet.jobs.sweep import saturation, sweep
from mpinet.jobs.sweep_settings import Settings, parse_rates

WINDOWS = Settings(warmup=100, measure=200, drain=200)
ARGS = ["--topology", "star:4", "--warmup", "100", "--measure", "200", "--drain", "200",
        "--quiet"]  # fmt: skip


def _sweep(rates: str, *sets: tuple[list[str], object], spec: str = "star:4") -> dict:
    job = load_job(None, [(["topology"], spec), (["trace", "level"], "none"), *sets])
    return sweep(plan(job), parse_rates(rates), WINDOWS, None)


def _line(text: str, key: str) -> str:
    return next(ln for ln in text.splitlines() if ln.startswith(key))


def _strict(text: str) -> dict:
    def bad(c: str) -> None:
        raise AssertionError(f"non-strict JSON constant {c}")

    return json.loads(text, parse_constant=bad)


@pytest.fixture(scope="module")
def one_unstable() -> dict:
    return _sweep("0.9")


@pytest.fixture(scope="module")
def all_stable() -> dict:
    return _sweep("0.05,0.1")


def test_one_unstable_load_is_not_a_bracket(one_unstable):
    (pt,) = one_unstable["points"]
    assert not pt["stable"] and pt["offered"] == 0.9  # the measurement the report is about
    sat = one_unstable["saturation"]
    assert not sat["found"] and sat["load"] is None and sat["bracket"] is None
    assert sat["load_fraction_of_bound"] is None
    assert sat["lowest_unstable"] == 0.9 and sat["highest_stable"] is None
    assert sat["throughput"] is None and sat["throughput_fraction_of_bound"] is None
    assert sat["criteria"] == pt["saturated_by"] and sat["peak_accepted"] == pt["accepted"]
    crit = ", ".join(pt["saturated_by"])
    want = (f"no stable load was measured below 0.9000 (saturated by {crit}), so there is "
            "no bracket: saturation is somewhere below it; measure lower loads")  # fmt: skip
    assert sat["why"] == want
    text = format_sweep(one_unstable)
    assert _line(text, "saturation").split(None, 1)[1] == "not found: " + want
    assert "of the bound" not in _line(text, "saturation")
    assert _line(text, "throughput").split(None, 1)[1] == (
        f"none sustained: no load measured was stable; peak accepted {pt['accepted']:.4f}"
    )


def test_only_stable_loads_say_saturation_is_above_them(all_stable):
    pts = all_stable["points"]
    assert [p["offered"] for p in pts] == [0.05, 0.1] and all(p["stable"] for p in pts)
    sat = all_stable["saturation"]
    assert not sat["found"] and sat["load"] is None and sat["bracket"] is None
    assert sat["highest_stable"] == 0.1 and sat["lowest_unstable"] is None
    best = max(p["accepted"] for p in pts)
    assert sat["throughput"] == best
    ideal = all_stable["bound"]["ideal"]
    assert sat["throughput_fraction_of_bound"] == pytest.approx(best / ideal)
    want = (
        "not found: none up to load 0.1000 (every load measured was stable): saturation is above it"
    )
    assert _line(format_sweep(all_stable), "saturation").split(None, 1)[1] == want
    assert sat["why"] == want.removeprefix("not found: ")


def test_a_measured_bracket_is_reported():
    res = _sweep("0.1,0.9")
    low, high = res["points"]
    assert low["stable"] and not high["stable"]
    sat = res["saturation"]
    assert sat["found"] and sat["bracket"] == [0.1, 0.9] and sat["load"] == pytest.approx(0.5)
    assert sat["why"] is None and sat["throughput"] == low["accepted"]
    assert "load 0.5000 (0.1000 stable, 0.9000 saturated by" in format_sweep(res)


def test_only_a_deadlocked_load_is_not_found():
    """star:5 with one-slot packet buffers deadlocks at load 0.6: nothing stable, nothing
    delivered by a run that was not stopped."""
    res = _sweep("0.6", (["model", "buffer"], 1), spec="star:5")
    (pt,) = res["points"]
    assert pt["deadlocked"]
    sat = res["saturation"]
    assert not sat["found"] and sat["criteria"] == ["deadlocked"] and sat["deadlocked"] == [0.6]
    assert sat["peak_accepted"] is None and sat["throughput"] is None
    text = format_sweep(res)
    assert "below 0.6000 (deadlocked), so there is no bracket" in _line(text, "saturation")
    assert _line(text, "throughput").endswith("no load delivered without deadlocking")


def test_points_out_of_order_never_make_a_bracket():
    """A stable load above the lowest unstable one is no lower end of a bracket."""

    def pt(load: float, stable: bool) -> dict:
        crit = [] if stable else ["latency"]
        return {"offered": load, "stable": stable, "saturated_by": crit, "accepted": load / 2}

    sat = saturation([pt(0.1, False), pt(0.2, True)], 1.0)
    assert not sat["found"] and sat["lowest_unstable"] == 0.1 and sat["highest_stable"] == 0.2
    sat = saturation([pt(0.05, True), pt(0.1, False), pt(0.2, True)], 1.0)
    assert sat["found"] and sat["bracket"] == [0.05, 0.1]
    assert not saturation([], 1.0)["found"]


def test_a_file_from_before_still_shows_no_invented_bracket(one_unstable):
    """Sweep files written before this rule say found with a lower end of 0.0 that was
    never measured: the text reads the points and says not found."""
    old = dict(one_unstable)
    old["saturation"] = {"found": True, "load": 0.45, "bracket": [0.0, 0.9],
                         "criteria": ["latency"], "load_fraction_of_bound": 0.47,
                         "throughput": 0.0, "throughput_fraction_of_bound": 0.0,
                         "peak_accepted": 0.889, "deadlocked": []}  # fmt: skip
    text = format_sweep(old)
    assert _line(text, "saturation").split(None, 1)[1].startswith("not found: no stable load")
    assert _line(text, "throughput").split(None, 1)[1].startswith("none sustained")


@pytest.mark.parametrize(("rates", "found"), [("0.9", False), ("0.05,0.1", False),
                                              ("0.1,0.9", True)])  # fmt: skip
def test_json_is_strict_and_says_found_only_for_a_measured_bracket(rates, found, capsys):
    assert main(["sweep", *ARGS, "--rates", rates, "--json"]) == 0
    got = _strict(capsys.readouterr().out)
    sat = got["saturation"]
    stable = [p["offered"] for p in got["points"] if p["stable"]]
    unstable = [p["offered"] for p in got["points"] if not p["stable"]]
    assert sat["found"] is found
    assert found == bool(unstable and any(s < min(unstable) for s in stable))
    if not found:
        assert sat["load"] is None and sat["bracket"] is None
        assert sat["load_fraction_of_bound"] is None and sat["why"]


def test_the_figures_draw_no_saturation_line_without_a_bracket(one_unstable, monkeypatch):
    figs = {}

    def capture(plt, outdir, jobs):
        for name, draw in jobs:
            figs[name] = draw()
        return []

    monkeypatch.setattr(sweep_plot, "write_figures", capture)
    plot_sweep(one_unstable, "unused", stem="s")
    for fig in figs.values():
        (ax,) = fig.axes
        labels = ax.get_legend_handles_labels()[1]
        assert "saturation not found (no stable load below 0.900)" in labels
        assert not any(lb.startswith("saturation 0") for lb in labels)
    assert set(figs) == {"s_latency", "s_accepted"}
