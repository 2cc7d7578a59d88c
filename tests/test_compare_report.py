"""``scripts/compare_report.py``: the comparison report is its JSON rendered, and the
claims' verdicts follow their rules (they flip when the numbers do)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import compare_claims as cc  # noqa: E402


def _row(stem, spec, router, tput, *, degree, zero=6.0, model="all-port", limited="channel"):
    return {
        "stem": stem, "spec": spec, "router": router, "model": model, "degree": degree,
        "zero_load_latency": zero, "saturation": {"throughput": tput},
        "bound": {"limited_by": limited, "channel": 2.0, "per_class": {}},
    }  # fmt: skip


NETS = {
    "star-7": {"spec": "star:7", "nodes": 5040, "degree": 6, "diameter": 9, "avg_distance": 5.9},
    "hypercube-12": {
        "spec": "hypercube:12",
        "nodes": 4096,
        "degree": 12,
        "diameter": 12,
        "avg_distance": 6.0,
    },  # fmt: skip
}


def test_star_vs_hypercube_verdict_follows_the_numbers() -> None:
    rows = [_row("star-7", "star:7", "shortest", 0.75, degree=6),
            _row("hypercube-12", "hypercube:12", "hypercube-ecube", 1.0, degree=12,
                 limited="injection")]  # fmt: skip
    text = " ".join(cc.star_vs_hypercube(rows, NETS))
    assert "**supported**" in text and "capped by injection" in text
    rows[0]["saturation"]["throughput"] = 0.4  # 0.067 per port < the cube's 0.083
    assert "**partly**" in " ".join(cc.star_vs_hypercube(rows, NETS))
    nets = copy.deepcopy(NETS)
    nets["star-7"]["diameter"] = 13
    assert "**not supported**" in " ".join(cc.star_vs_hypercube(rows, nets))


def test_fccn_rule() -> None:
    def loads(mx):
        return {"intercubic": {"bound": 1 / mx, "max_load": mx, "mean_load": 6.0},
                "cube": {"bound": 0.5, "max_load": 2.0, "mean_load": 1.0}}  # fmt: skip

    rows = [_row("fccn-4", "fccn:4", "fccn-shortest", 0.10, degree=4, zero=16.5),
            _row("fccn-4", "fccn:4", "fccn-sroute", 0.09, degree=4, zero=17.0)]  # fmt: skip
    for r, mx in zip(rows, (96.0, 64.0), strict=True):
        r["bound"]["per_class"] = loads(mx)
        r["saturation"]["throughput_fraction_of_bound"] = 0.98
    text = " ".join(cc.fccn_simple_routing(rows, {}))
    assert "**supported**" in text and "16.0x its class's mean load" in text
    rows[1]["zero_load_latency"] = 16.5 * 1.31
    assert "**not supported**" in " ".join(cc.fccn_simple_routing(rows, {}))


def test_missing_networks_are_skipped() -> None:
    assert cc.claims_markdown([], {}) == []


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / "docs" / "comparison.json").exists(), reason="no JSON")
def test_committed_report_is_its_json_rendered(tmp_path: Path) -> None:
    """docs/comparison.md says "do not edit": rendering the JSON gives it back."""
    out = tmp_path / "comparison.md"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "compare_report.py"), "--render",
                    "--out", str(out)], check=True, cwd=tmp_path, capture_output=True)  # fmt: skip
    assert out.read_text() == (ROOT / "docs" / "comparison.md").read_text()
    data = json.loads((ROOT / "docs" / "comparison.json").read_text())
    assert all(r["checks_ok"] for r in data["runs"].values())
    assert (tmp_path / "figures" / "comparison" / "latency-all-port.png").stat().st_size > 0
