"""scripts/booksim_check.py: the BookSim2 configuration it writes, the output it reads.

The parser is checked on BookSim2's own output, captured once (tests/data/booksim/:
``booksim CFG injection_rate=R`` with the configuration this script writes, on
``mpinet export hypercube:4 --format anynet``). CI has no BookSim; the live run is skipped
unless ``MPINET_BOOKSIM`` names a BookSim2 binary.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import booksim_check as bc  # noqa: E402
import booksim_runs as br  # noqa: E402

DATA = ROOT / "tests" / "data" / "booksim"
CONVERGED = (DATA / "hypercube-4-L4-converged.txt").read_text()
UNSTABLE = (DATA / "hypercube-4-L4-unstable.txt").read_text()


def args(*extra: str):
    return bc.parse_args(["--booksim", "/bin/true", *extra])


def keys(text: str) -> dict[str, str]:
    return dict(re.findall(r"^(\w+) = (.*);$", text, re.M))


def test_config_is_what_booksim_read():
    """The captured runs echo their configuration: exactly what the writer gives."""
    text = br.booksim_config("hypercube-4.anynet", 4, 2, 4, args())
    echo = CONVERGED.split("BEGIN Configuration File: hc4.cfg\n")[1].split("END Config")[0]
    assert keys(text) == keys(echo)
    k = keys(text)
    assert (k["topology"], k["routing_function"], k["traffic"]) == ("anynet", "min", "uniform")
    assert (k["packet_size"], k["num_vcs"], k["vc_buf_size"]) == ("4", "2", "4")
    assert k["injection_process"] == "bernoulli" and k["injection_rate_uses_flits"] == "0"
    assert "injection_rate" not in k  # given per run on the command line
    # the shallowest pipeline: lookahead routing, speculative VA+SA, one cycle of ST
    pipe = {x: int(k[x]) for x in br.PIPELINE}
    assert pipe["routing_delay"] == 0 and pipe["speculative"] == 1
    assert pipe["vc_alloc_delay"] == pipe["sw_alloc_delay"] == pipe["st_final_delay"] == 1
    assert pipe["st_prepare_delay"] == pipe["credit_delay"] == 0
    ablated = keys(br.booksim_config("x", 1, 2, 4, args("--booksim-set", "num_vcs=8")))
    assert ablated["num_vcs"] == "8" and ablated["packet_size"] == "1"


def test_parse_a_converged_run():
    row = br.parse_booksim(CONVERGED)
    assert row["status"] == "converged" and row["deadlock_warnings"] == 0
    overall = CONVERGED.split("Overall Traffic Statistics")[1]
    assert f"Packet latency average = {row['latency']:g} (1 samples)" in overall
    assert f"Accepted packet rate average = {row['accepted']:g} (1" in overall
    assert re.search(rf"Time taken is {row['cycles']} cycles", CONVERGED)
    assert row["run_seconds"] > 0 and row["measured_samples"] >= 3
    # 4-flit packets; offered 0.05 per node (uniform over 16 nodes, self included)
    assert row["accepted_flits"] == pytest.approx(4 * row["accepted"], rel=0.01)
    assert row["accepted"] == pytest.approx(0.05, rel=0.1)
    # hops count routers: 1 + the mean distance of hypercube:4 over all 16 destinations, 2
    assert row["hops"] - 1 == pytest.approx(2.0, abs=0.1)
    # above the zero-load latency 3 H' + 5 + L - 1 = 14 (docs/booksim.md), but not far
    assert 14 <= row["latency"] < 3 * 14
    assert br.booksim_verdict(row | {"offered": 0.05}, 14.0, 16, args()) == []


def _fastest_by_distance(name: str) -> tuple[dict[str, str], list[float]]:
    """BookSim2's ``stats_out`` on hypercube:3 (``pair_stats = 1``, 0.0005 packets per node
    per cycle; the keys and ``pair_plat`` lines): per distance H = 0..3 the lowest mean
    latency over the pairs at that distance (a pair that never met another packet)."""
    text = (DATA / f"hypercube-3-{name}-pairs.txt").read_text()
    conf = dict(re.findall(r"^%(\w+) = '?([^';]*)'?;$", text, re.M))
    lat = re.search(r"pair_plat\(1,:\) = \[(.*)\];", text).group(1).split()
    best = [math.inf] * 4
    for i, x in enumerate(lat):
        if x != "-nan":
            h = bin((i // 8) ^ (i % 8)).count("1")
            best[h] = min(best[h], float(x))
    return conf, best


@pytest.mark.parametrize("name", ["L1-shallow", "L16-B2", "L16-B3", "L16-B4", "L16-B5", "L16-B8"])
def test_zero_load_closed_form_against_booksim(name):
    """3 H + 5 for the head; B >= 5 lets the body follow one flit per cycle, a smaller B
    advances the worm B flits per 5-cycle credit round trip."""
    conf, best = _fastest_by_distance(name)
    assert {k: int(conf[k]) for k in br.PIPELINE} == br.PIPELINE
    flits, b = int(conf["packet_size"]), int(conf["vc_buf_size"])
    assert best == [bc.booksim_zero_load(h, flits, b) for h in range(4)]


def test_default_pipeline_costs_five_cycles_per_hop():
    conf, best = _fastest_by_distance("L1-default")
    assert conf["routing_delay"] == "1" and conf["speculative"] == "0"
    assert best == [7 + 5 * h for h in range(4)]


def test_parse_an_unstable_run():
    row = br.parse_booksim(UNSTABLE)
    assert "Aborting simulation" in UNSTABLE and row["status"] == "latency_thres"
    assert row["cycles"] is None and math.isfinite(row["latency"])
    why = br.booksim_verdict(row | {"offered": 0.3}, 14.0, 16, args())
    assert why[0] == "latency_thres" and "latency" in why


def test_parse_a_run_that_measured_nothing():
    """A deadlocked sample prints "-nan" (scc:6 at 0.8 of its bound): nan, not a crash."""
    text = UNSTABLE + "\nPacket latency average = -nan\nHops average = -nan\n"
    row = br.parse_booksim(text)
    assert math.isnan(row["hops"])
    assert math.isnan(row["latency"]) and row["status"] == "latency_thres"


def test_verdict_applies_mpinet_sweeps_rule():
    ok = {"status": "converged", "latency": 20.0, "accepted": 0.1, "measured_samples": 6}
    a = args()
    assert br.booksim_verdict(ok | {"offered": 0.1}, 10.0, 256, a) == []
    assert br.booksim_verdict(ok | {"offered": 0.1, "latency": 31.0}, 10.0, 256, a) == ["latency"]
    assert br.booksim_verdict(ok | {"offered": 0.12}, 10.0, 256, a) == ["throughput"]
    stuck = ok | {"offered": 0.1, "status": "deadlock", "accepted": math.nan}
    assert br.booksim_verdict(stuck, 10.0, 256, a) == ["deadlock", "throughput"]


def test_tables_compare_each_to_its_own_bound():
    zero = {"latency": 17.0}
    bs = {"bound": 0.1, "zero": zero, "load": 0.08, "points": [{"offered": 0.09}]}
    bs |= {"throughput": 0.079, "criteria": ["latency"], "seconds": 30.0}
    sat = {"load": 0.1, "criteria": ["latency"], "throughput": 0.098}
    mp = {"saturation": sat, "points": [], "wall_seconds": 3.0}
    mp["zero"] = {"latency": {"mean": 4.25}}
    row = {"spec": "hypercube:8", "nodes": 256, "flits": 1, "bound": 0.125, "mean_hops": 4.0}
    line = bc.results_table([row | {"booksim": bs, "mpinet": mp}], 4)[2]
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[3] == "4.00 / 4.25" and cells[4] == f"{3 * 4 * 255 / 256 + 5:.2f} / 17.00"
    assert cells[6:9] == ["0.1 (0.80)", "0.08 (0.80)", "1.25"]


def test_refuses_a_missing_binary(tmp_path):
    cmd = [sys.executable, str(ROOT / "scripts" / "booksim_check.py"), "--booksim"]
    p = subprocess.run([*cmd, str(tmp_path / "nope")], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0
    assert "is not an executable file" in p.stderr


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("MPINET_BOOKSIM"), reason="MPINET_BOOKSIM not set")
def test_live_run_on_hypercube3(tmp_path):
    """Both simulators on hypercube:3: BookSim's zero-load latency is 3 H' + 5 + L - 1,
    mpinet's H + L - 1; L = 1 on the packet engine (--packet-engine), L = 2 on the flit
    engine."""
    out = tmp_path / "booksim.md"
    out.write_text(f"# x\n\n{bc.BEGIN}\n{bc.END}\ntail\n")
    cmd = [sys.executable, str(ROOT / "scripts" / "booksim_check.py"), "--booksim"]
    cmd += [os.environ["MPINET_BOOKSIM"], "--specs", "hypercube:3", "--flits", "1,2"]
    cmd += ["--workdir", str(tmp_path / "w"), "--out", str(out), "--sample-period", "200"]
    cmd += ["--data", str(tmp_path / "runs.json")]  # not the repository's data file
    cmd += ["--speed", "hypercube:3:1:0.1", "--packet-engine"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert text.startswith("# x\n") and text.endswith(f"{bc.END}\ntail\n")
    rows = [ln for ln in text.splitlines() if ln.startswith("| `hypercube:3`")]
    assert len(rows) == 3  # L = 1, L = 2, the speed run
    for row in json.loads((tmp_path / "w" / "results.json").read_text())["rows"]:
        m = row["mpinet"]
        assert (m.get("switching") or {}).get("flits") == (None if row["flits"] == 1 else 2)
        assert m["zero"]["latency"]["mean"] == pytest.approx(
            m["zero"]["hops"]["mean"] + row["flits"] - 1, rel=0.02
        )
        zero, hops = row["booksim"]["zero"], row["mean_hops"] * 7 / 8  # H' counts self
        assert zero["hops"] - 1 == pytest.approx(hops, rel=0.15)  # ~100 packets
        # every packet alone: 3 H + 5 + L - 1 cycles, so the mean follows the mean of H
        closed = bc.booksim_zero_load(zero["hops"] - 1, row["flits"], 4)
        assert zero["latency"] == pytest.approx(closed, rel=0.02)
    assert "the packet engine with `--buffer 8` at L = 1." in text and "skipped" not in text


def test_speed_row_loads_parsed_and_refused():
    """``--speed-loads``: a row's load, x bound; anything but SPEC:L=X with 0 < X <= 1 is
    refused naming the item."""
    import booksim_speed as bsp

    got = bsp.row_loads("scc:6:16=0.3; ms:3,2:1=0.25;")
    assert got == {("scc:6", 16): 0.3, ("ms:3,2", 1): 0.25}
    for bad in ("scc:6=0.3", "scc:6:16=0", "scc:6:16=1.5", "scc:6:0=0.3", "scc:6:16=0.3.1"):
        with pytest.raises(ValueError, match=re.escape(repr(bad))):
            bsp.row_loads(bad)
    assert bsp.steps(0.4, 0.75, 0.2) == pytest.approx([0.4, 0.3, 0.225])
    assert bsp.steps(0.4, 0, 0.2) == [0.4]  # --speed-step 0: the load given only


class FakeBookSim:
    """BookSim passing its latency_thres above ``limit`` packets/node/cycle."""

    def __init__(self, limit: float, status: str = "latency_thres"):
        self.limit, self.status, self.rates = limit, status, []

    def probe(self, spec, flits, rate, timed=False, fresh=False):
        assert timed and fresh  # every speed row is a fresh timed run
        self.rates.append(rate)
        ok = rate <= self.limit
        return {"status": "converged" if ok else self.status, "cycles": 2000 if ok else None,
                "accepted_flits": rate * flits, "hops": 3.0, "run_seconds": 1.0,
                "wall_seconds": 2.0}  # fmt: skip


def test_speed_row_steps_down_past_booksims_saturation(monkeypatch):
    """A row BookSim does not sustain runs again at x --speed-step, and the table says which
    load it timed and which it passed; a timeout is not retried at a lower load."""
    import booksim_speed as bsp

    a = args("--speed-table", "--speed-loads", "hypercube:3:16=0.5", "--vcs", "2")
    a.row_loads = bsp.row_loads(a.speed_loads)
    n, bound, _ = br.anynet_bound("hypercube:3")
    per_frac = bound * n / (n - 1) / 16  # BookSim's rate per unit of x bound at L = 16
    monkeypatch.setattr(br, "speed", lambda *x, **k: {"mpinet_engine_seconds": 0.5,
                                                      "mpinet_flit_hops": 1e6})  # fmt: skip
    monkeypatch.setattr(bsp, "warm", lambda *x: {"engine_seconds": 0.1, "flit_hops": 1e6})
    bs = FakeBookSim(0.3 * per_frac)  # sustains 0.281 (0.5 x 0.75^2), not 0.375
    r = bsp.row(bs, "hypercube:3", 16, a)
    assert [x / per_frac for x in bs.rates] == pytest.approx([0.5, 0.375, 0.28125])
    assert r["fraction"] == pytest.approx(0.28125) and r["past"] == pytest.approx([0.5, 0.375])
    line = bsp.table([r])[-1]
    assert "| 0.281 (" in line and "; 0.5, 0.375 past saturation |" in line
    bs = FakeBookSim(0.0)  # never: the steps end at --speed-min-load, no mpinet run
    r = bsp.row(bs, "hypercube:3", 16, a)
    assert len(bs.rates) == 4 and r["mpinet"] == [] and "warm" not in r  # 0.158 < 0.2
    assert "| — (" in bsp.table([r])[-1]
    bs = FakeBookSim(0.0, status="timeout")
    r = bsp.row(bs, "hypercube:3", 16, a)
    assert len(bs.rates) == 1 and r["past"] == [] and "— (timeout)" in bsp.table([r])[-1]


def test_speed_row_primes_numba_cache_with_the_fresh_runs_command(monkeypatch):
    """Before the timed fresh run, the same ``mpinet run`` for at most PRIME_STEPS steps (so
    the fresh run loads its kernels instead of compiling them); a fresh run that compiled
    anyway is marked in the table; no mpinet run where BookSim gave no cycle count."""
    import booksim_speed as bsp

    a = bsp.speed_args(args("--speed-table", "--vcs", "2"))
    a.row_loads = {}
    calls = []

    def mpinet(cmd, timeout, check=True):
        calls.append(cmd)
        doc = {"stats": {"flit_hops": 1000, "transmissions": 1000}, "engine_seconds": 0.5}
        return subprocess.CompletedProcess(cmd, 0, json.dumps(doc), "")

    monkeypatch.setattr(br, "mpinet", mpinet)
    monkeypatch.setattr(bsp, "warm", lambda *x: {"engine_seconds": 0.1, "flit_hops": 1000})
    mtimes = iter([5.0, 5.0, 5.0, 6.0])  # before / after the fresh run, twice
    monkeypatch.setattr(bsp, "newest_cache", lambda: next(mtimes))
    bs = FakeBookSim(1.0)
    bs.a, bs.nodes = a, lambda spec: 8
    r = bsp.row(bs, "hypercube:3", 16, a)
    assert len(calls) == 2 and calls[0][0] == "run"
    primed, fresh = calls
    i = fresh.index("workload.steps=2000")  # BookSim's cycles
    assert primed[i] == f"workload.steps={bsp.PRIME_STEPS}" < fresh[i]
    assert primed[:i] + primed[i + 1 :] == fresh[:i] + fresh[i + 1 :]
    assert "model.flits=16" in fresh and "model.switching=wormhole" in fresh
    assert r["mpinet"][0]["compiled"] is False and "(compiled)" not in bsp.table([r])[-1]
    r = bsp.row(bs, "hypercube:3", 16, a)
    assert "| 0.500 (compiled) / 0.100 |" in bsp.table([r])[-1]
    calls.clear()
    r = bsp.row(FakeBookSim(0.0, status="timeout"), "hypercube:3", 16, a)
    assert calls == [] and r["mpinet"] == []


def test_newest_cache_reads_numba_files_only(tmp_path):
    """The newest modification time of ``*.nbi`` / ``*.nbc`` files in any subdirectory."""
    import booksim_speed as bsp

    assert bsp.newest_cache(tmp_path) == 0.0
    (tmp_path / "a" / "__pycache__").mkdir(parents=True)
    for name, t in (("a/__pycache__/k.nbi", 100.0), ("a/__pycache__/k.1.nbc", 200.0),
                    ("a/__pycache__/k.pyc", 900.0), ("b.nbi", 150.0)):  # fmt: skip
        (tmp_path / name).write_text("")
        os.utime(tmp_path / name, (t, t))
    assert bsp.newest_cache(tmp_path) == 200.0


def test_speed_from_puts_stored_rows_in_one_block(tmp_path):
    """``--speed-from``: the rows of two runs in the order of --specs x --speed-flits, the file
    named last winning a row both hold; no BookSim needed; a file that is not rows: exit 2."""
    import booksim_speed as bsp

    def stored(spec, flits, cycles):
        return {"spec": spec, "nodes": 8, "flits": flits, "rate": 0.01, "fraction": 0.4,
                "past": [], "loadavg": 1.0, "loadavg_end": 2.0, "mpinet": [],
                "booksim": {"cycles": cycles, "status": "converged", "run_seconds": 1.0,
                            "wall_seconds": 3.0, "accepted_flits": 0.01, "hops": 3.0}}  # fmt: skip

    one, two = tmp_path / "a" / "speed_table.json", tmp_path / "b" / "speed_table.json"
    first = [stored("hypercube:3", 16, 111), stored("hypercube:3", 1, 222)]
    second = [stored("hypercube:3", 16, 333), stored("star:4", 1, 444)]
    for path, rows in ((one, first), (two, second)):
        path.parent.mkdir()
        path.write_text(json.dumps(rows))
    out = tmp_path / "booksim.md"
    out.write_text(f"# x\n\n{bsp.BEGIN}\nold\n{bsp.END}\ntail\n")
    cmd = [sys.executable, str(ROOT / "scripts" / "booksim_check.py"), "--speed-table"]
    cmd += ["--booksim", str(tmp_path / "none"), "--specs", "hypercube:3,star:4", "--out"]
    data = tmp_path / "kept.json"  # one row kept from an earlier run, replaced by none
    data.write_text(
        json.dumps([dict(stored("star:5", 1, 555), printed="| `star:5` | 8 | 1 | x | old |")])
    )
    cmd += [str(out), "--speed-from", f"{one},{two}", "--speed-data", str(data)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    got = [(ln.split("|")[1].strip(), ln.split("|")[5].strip()) for ln in text.splitlines()
           if ln.startswith("| `")]  # fmt: skip
    want = [("`star:5`", "old"), ("`hypercube:3`", "222"), ("`hypercube:3`", "333"),
            ("`star:4`", "444")]  # fmt: skip
    assert got == want  # the kept row first, then the new ones in --specs x L order
    assert "3 of the 4 rows from `a`, `b`, the others kept in" in text and "\nold" not in text
    assert text.endswith(f"{bsp.END}\ntail\n")
    kept = json.loads(data.read_text())  # the data file now holds all four rows
    assert [(r["spec"], r["flits"]) for r in kept] == [
        ("star:5", 1),
        ("hypercube:3", 1),
        ("hypercube:3", 16),
        ("star:4", 1),
    ]
    one.write_text("{}")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "--speed-from: " in p.stderr and "is not a list of speed rows" in p.stderr


def test_speed_rows_kept_replace_the_same_network_and_length(tmp_path):
    """``keep``: a row of the same (network, L) replaces the kept one in place, a new one is
    appended, and the file is written back (a run of one network keeps the others' rows)."""
    import booksim_speed as bsp

    path = tmp_path / "d" / "speed.json"
    assert bsp.keep(path, [{"spec": "a:1", "flits": 1, "x": 1}]) == [
        {"spec": "a:1", "flits": 1, "x": 1}]  # fmt: skip
    bsp.keep(path, [{"spec": "b:1", "flits": 16, "x": 2}])
    got = bsp.keep(path, [{"spec": "a:1", "flits": 1, "x": 3}])
    assert [(r["spec"], r["x"]) for r in got] == [("a:1", 3), ("b:1", 2)]
    assert json.loads(path.read_text()) == got
