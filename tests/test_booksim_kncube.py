"""scripts/booksim_kncube.py (``booksim_check.py --kncube`` and ``--meshconfig``): the rows'
keys, the search, the verdicts, the table merge, and the whole pipeline with a stand-in for
BookSim2 that is ``mpinet booksim router=ideal`` itself (CI has no BookSim): both sides then
run the same simulator on the same file, so every figure must agree exactly, and mpinet's
side runs the code path ``--router iq`` will take, with the ideal router.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import booksim_check as bc  # noqa: E402
import booksim_kncube as kn  # noqa: E402
import booksim_runs as br  # noqa: E402


def args(*extra: str):
    return bc.parse_args(["--booksim", "/bin/true", *extra])


def test_rows_are_meshconfig_with_the_rows_topology_routing_and_traffic():
    keys = ["topology=torus", "k=8", "n=2", "routing_function=dim_order", "traffic=tornado"]
    assert kn.row_keys("torus:8,2:tornado") == keys
    assert kn.row_keys("mesh:8,2:uniform")[3] == "routing_function=dor"
    assert len(kn.ROWS) == 6 and kn.ROWS[0] == "mesh:8,2:uniform"
    with pytest.raises(SystemExit, match="--rows takes mesh:K,N:TRAFFIC"):
        args("--kncube", "--rows", "hypercube:4:uniform")
    mc = kn.MESHCONFIG.read_text()
    assert "runfiles/meshconfig" in mc.splitlines()[0] and "Stanford" in mc
    assert "topology = mesh;" in mc and "injection_rate = 0.2;" in mc


def drive(a, verdicts):
    """The loads the search asks for when each answer is ``verdicts[load]``."""
    g = kn.search(0.0, a)
    asked, load = [], next(g)
    try:
        while True:
            asked.append(load)
            load = g.send(verdicts(load))
    except StopIteration as stop:
        return asked, stop.value


def test_search_climbs_then_bisects():
    a = args("--kn-grid", "0.1,0.2,0.4,0.8", "--bisect", "2")
    asked, bracket = drive(a, lambda x: x < 0.33)
    assert asked == [0.1, 0.2, 0.4, 0.3, 0.35] and bracket == (0.3, 0.35)
    asked, bracket = drive(a, lambda x: True)  # never unstable: no bisection, no bracket
    assert asked == [0.1, 0.2, 0.4, 0.8] and bracket == (0.8, None)


def test_unstable_criteria():
    a = args()
    row = {"status": "converged", "latency": 20.0, "accepted": 0.3, "injected": 0.3}
    assert kn.unstable(row, 10.0, 0.3, a) == []
    assert kn.unstable(row | {"latency": 31.0}, 10.0, 0.3, a) == ["latency"]
    # accepted against the injected (drawn) rate, not the offered one: no draw noise
    assert kn.unstable(row | {"accepted": 0.28, "injected": 0.29}, 10.0, 0.3, a) == []
    assert kn.unstable(row | {"accepted": 0.2}, 10.0, 0.3, a) == ["throughput"]
    gone = {"status": "latency_thres", "latency": math.nan, "accepted": math.nan,
            "injected": math.nan}  # fmt: skip
    assert kn.unstable(gone, 10.0, 0.3, a) == ["latency_thres", "latency", "throughput"]


def test_merge_replaces_its_rows_and_keeps_the_others():
    old = "\n".join([
        "head", *kn.HEADER,
        "| `torus:8,2` | uniform | ideal | old |",
        "| `mesh:8,2` | tornado | ideal | old |",
        "| `mesh:8,2` | uniform | iq | old |",
    ])  # fmt: skip
    new = {("mesh:8,2", "tornado", "ideal"): "| `mesh:8,2` | tornado | ideal | new |",
           ("mesh:8,2", "uniform", "ideal"): "| `mesh:8,2` | uniform | ideal | new |"}  # fmt: skip
    assert kn.merge(old, new) == [
        "| `mesh:8,2` | uniform | ideal | new |",
        "| `mesh:8,2` | uniform | iq | old |",
        "| `mesh:8,2` | tornado | ideal | new |",
        "| `torus:8,2` | uniform | ideal | old |",
    ]


def test_keys_block_added_once_rewritten_and_checked(tmp_path, capsys):
    """A page without the key table's markers gets the block at its end, once; a second run
    leaves it as it is; ``--check`` passes on it and fails on a stale cell, writing nothing;
    ``--check`` with a measured table is refused before any work."""
    import reports

    from mpinet.jobs.booksim_keys import markdown

    p = tmp_path / "b.md"
    p.write_text("# t (scripts/booksim_check.py)\n\ntext\n")
    assert bc.main(["--keys", "--out", str(p), "--quiet"]) == 0
    once = p.read_text()
    assert once == (f"# t (scripts/booksim_check.py)\n\ntext\n\n{kn.KEYS_BEGIN}\n{markdown()}\n"
                    f"{kn.KEYS_END}\n")  # fmt: skip
    assert reports.between(once, kn.KEYS_BEGIN, kn.KEYS_END) == markdown()
    assert bc.main(["--keys", "--out", str(p), "--quiet"]) == 0 and p.read_text() == once
    assert bc.main(["--keys", "--check", "--out", str(p), "--quiet"]) == 0
    last = markdown().splitlines()[-1]
    p.write_text(once.replace(last, "| stale |"))
    capsys.readouterr()
    assert bc.main(["--keys", "--check", "--out", str(p), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "stale output" in err and f"+{last}" in err and "-| stale |" in err
    assert "| stale |" in p.read_text()
    assert bc.main(["--booksim", "/bin/true", "--kncube", "--check", "--out", str(p)]) == 2
    assert "--check goes with --keys only" in capsys.readouterr().err


@pytest.fixture
def stand_in(booksim_stand_in):
    """A 'BookSim2' that is mpinet booksim with its ideal router."""
    return booksim_stand_in("ideal")


@pytest.mark.slow
def test_kncube_row_end_to_end_agrees_with_itself(tmp_path, stand_in):
    out = tmp_path / "booksim.md"
    out.write_text(f"# x\n\n{kn.BEGIN}\n{kn.END}\n\ntail\n")
    argv = ["--booksim", str(stand_in), "--kncube", "--rows", "mesh:4,2:uniform",
            "--kn-set", "sample_period=100", "--kn-set", "max_samples=4",
            "--kn-grid", "0.3,0.95", "--bisect", "0", "--latency-factor", "2",
            "--workdir", str(tmp_path / "w"), "--out", str(out)]  # fmt: skip
    assert bc.main(argv) == 0
    text = out.read_text()
    assert text.endswith("\n\ntail\n")
    row = [x for x in text.splitlines() if x.startswith("| `mesh:4,2`")]
    assert len(row) == 1
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    assert cells[1:3] == ["uniform", "ideal"]
    # the same simulator on both sides: zero-load, half-saturation latency and the
    # saturation load agree to the digit
    for cell in cells[3:6]:  # 0.95 is unstable (latency > 2 x zero-load): a saturation
        m, b = cell.split(" (")[0].split(" / ")
        assert m == b and cell.endswith("(+0.0 %)"), cell
    assert cells[5].startswith("0.625 / 0.625")  # the bracket (0.3, 0.95)'s midpoint


def test_keys_table_rewritten_from_the_code(tmp_path):
    from mpinet.jobs.booksim_keys import markdown

    doc = tmp_path / "booksim.md"
    head = "# x (scripts/booksim_check.py)\n\n"  # a report of the script: it may rewrite it
    doc.write_text(f"{head}{kn.KEYS_BEGIN}\n| stale |\n{kn.KEYS_END}\n\nafter\n")
    assert bc.main(["--keys", "--out", str(doc)]) == 0
    assert doc.read_text() == f"{head}{kn.KEYS_BEGIN}\n{markdown()}\n{kn.KEYS_END}\n\nafter\n"


def test_router_iq_gives_mpinet_the_pipeline_booksim_runs():
    ideal = br.model_args(args(), 4, True)
    assert "model.router=iq" not in ideal and ideal[-2:] == ["--set", "model.vc_policy=any"]
    iq = br.model_args(args("--router", "iq", "--booksim-set", "input_speedup=2"), 4, True)
    assert iq[: len(ideal)] == ideal
    sets = dict(x.split("=", 1) for x in iq[len(ideal) + 1 :: 2])
    assert sets.pop("model.router") == "iq"
    assert sets == {f"model.iq.{k}": str(v) for k, v in br.PIPELINE.items()} | {
        "model.iq.input_speedup": "2"
    }
