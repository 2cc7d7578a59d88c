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
    assert all(r["checks_ok"] for r in data.get("wormhole", {}).values())
    assert (tmp_path / "figures" / "comparison" / "latency-all-port.png").stat().st_size > 0


# --- the wormhole table (compare_wormhole.py), rendered from a small JSON fixture ---


def _packet_run(stem: str, router: str, tput: float) -> dict:
    sat = {"found": True, "load": tput * 1.01, "criteria": ["latency"], "throughput": tput,
           "load_fraction_of_bound": 0.9, "throughput_fraction_of_bound": 0.89}  # fmt: skip
    return {
        "stem": stem, "spec": "scc:6", "family": "scc", "nodes": 3600, "degree": 3,
        "router": router, "model": "all-port", "zero_load_latency": 12.12,
        "bound": {"ideal": 0.209, "limited_by": "channel", "channel": 0.209,
                  "model_bound": None, "per_class": {}, "method": "translation", "exact": True},
        "saturation": sat, "loads": 2, "checks_ok": True, "ranks": 2, "seconds": 60.0,
        "cpu_seconds": 55.0, "settings": {},
        "points": [{"offered": 0.01, "accepted": 0.01, "stable": True, "latency": 12.2,
                    "p99": 20, "hops": 12.1}],
    }  # fmt: skip


def _wormhole_run(policy: str, vcs: int, *, dead: list[float], sat_load, criteria) -> dict:
    return {
        "stem": "scc-6", "spec": "scc:6", "nodes": 3600, "router": "scc-optimal",
        "model": "all-port", "switching": "wormhole", "flits": 8, "vcs": vcs, "vc_buffer": 4,
        "vc_policy": policy, "mean_hops": 12.12, "zero_load_latency": 19.12,
        "bound": {"ideal": 0.025, "limited_by": "channel", "packet_channel": 0.2,
                  "channel": 0.025, "exact": True},
        "saturation": {"found": sat_load is not None, "load": sat_load, "criteria": criteria,
                       "deadlocked": dead, "throughput": 0.02,
                       "throughput_fraction_of_bound": 0.8,
                       "load_fraction_of_bound": None if sat_load is None else sat_load / 0.025},
        "throughput_flits": 0.1604,
        "points": [{"offered": 0.00125, "accepted": 0.00125, "accepted_flits": 0.01,
                    "stable": True, "deadlocked": False, "latency": 19.87}],
        "checks_ok": True, "settings": {"warmup": 30, "measure": 60, "drain": 40, "coarse": 5,
                                        "bisect": 4},
        "ranks": 1, "seconds": 90.0, "cpu_seconds": 80.0,
    }  # fmt: skip


def _fixture() -> dict:
    plans = {"scc-6": {"router": "scc-optimal", "any_acyclic": False, "negative-hop": 11,
                       "hops": 18}}  # fmt: skip
    return {
        "runs": {"scc-6|scc-greedy|all-port": _packet_run("scc-6", "scc-greedy", 0.18),
                 "scc-6|scc-optimal|all-port": _packet_run("scc-6", "scc-optimal", 0.19)},
        "networks": {},
        "wormhole_plans": plans,
        "wormhole": {
            "scc-6|scc-optimal|any|2": _wormhole_run("any", 2, dead=[0.01, 0.03],
                                                     sat_load=0.01, criteria=["deadlocked"]),
            "scc-6|scc-optimal|negative-hop|11": _wormhole_run(
                "negative-hop", 11, dead=[], sat_load=0.0225, criteria=["latency"]),
        },
    }  # fmt: skip


def test_wormhole_plan_and_router_choice() -> None:
    import compare_wormhole as cw

    plan = {"router": "r", "any_acyclic": False, "negative-hop": 11, "hops": 18}
    assert cw.runs_for(plan) == [("any", 2), ("negative-hop", 11)]
    assert cw.runs_for({**plan, "hops": 9}) == [("any", 2), ("hops", 9)]
    assert cw.runs_for({**plan, "any_acyclic": True}) == [("any", 2)]
    rows = list(_fixture()["runs"].values())
    assert cw.router_for(rows, "scc-6", ["scc-optimal", "scc-greedy"]) == "scc-optimal"
    rows[1]["saturation"]["throughput"] = 0.18  # a tie: the table's first router
    assert cw.router_for(rows, "scc-6", ["scc-greedy", "scc-optimal"]) == "scc-greedy"
    assert cw.router_for(rows, "ccc-9", ["ccc"]) is None


@pytest.mark.slow
def test_wormhole_table_renders_from_json(tmp_path: Path) -> None:
    """The real script, --render from a fixture: the packet part is unchanged by the
    wormhole entries, and the wormhole rows say what the entries hold."""
    data = _fixture()
    bare = {k: v for k, v in data.items() if not k.startswith("wormhole")}
    texts = []
    for i, d in enumerate((bare, data)):
        (tmp_path / f"c{i}.json").write_text(json.dumps(d))
        out = tmp_path / f"c{i}.md"
        subprocess.run([sys.executable, str(ROOT / "scripts" / "compare_report.py"), "--render",
                        "--json", str(tmp_path / f"c{i}.json"), "--out", str(out)],
                       check=True, cwd=tmp_path, capture_output=True)  # fmt: skip
        texts.append(out.read_text())
    without, with_ = texts
    assert "Wormhole" not in without
    head, rest = with_.split("## Wormhole, L = 8, V = 2, B = 4\n", 1)
    section, tail = rest.split("## The networks", 1)
    assert head + "## The networks" + tail == without  # the packet rows byte-identical
    rows = [x for x in section.splitlines() if x.startswith("| `scc:6`")]
    assert len(rows) == 2
    cells = [[c.strip() for c in x.strip("|").split("|")] for x in rows]
    # any on 2 VCs: deadlocked at its lowest deadlocked load, in packets and in flits (x 8)
    assert cells[0][2:4] == ["`any` (2)", "11 / 18 (any: cycle)"]
    assert cells[0][4:6] == ["19.87", "19.12"]
    assert cells[0][7:10] == ["deadlocked at 0.0100", "deadlocked at 0.0800", "-"]
    # negative-hop on the 11 VCs it needs: saturated by latency at 0.0225 = 0.18 flits, 90 %
    assert cells[1][2] == "`negative-hop` (11)"
    assert cells[1][6] == "0.0250 (channel)"
    assert cells[1][7:] == ["0.0225 (latency)", "0.1800", "90.0 %", "0.0200", "0.1604", "80.0 %"]
    assert "warm-up 30 steps, measurement window 60, drain cap 40" in section
    assert "The 2 sweeps took 3.0 minutes" in section
    assert "(more than 2 for every one of them)" in section
    assert ("sustain 80 % of their flit bound; 1 of the 1 sweeps had a load that deadlocked, "
            "in 1 before any load saturated (`scc:6`); the deadlock-free") in section  # fmt: skip
    # the fixture's other networks have no entries: listed as not measured, scc-6 not
    assert "- `ccc-9`: not measured" in section and "- `scc-6`" not in section
    # a network whose entry is missing is listed as not measured, not dropped silently
    del data["wormhole"]["scc-6|scc-optimal|negative-hop|11"]
    import compare_wormhole as cw

    text = "\n".join(cw.markdown(data, ["scc-6", "ccc-9"]))
    assert "- `scc-6` `scc-optimal` `negative-hop` (11 VCs): not measured" in text
    assert "- `ccc-9`: not measured" in text
