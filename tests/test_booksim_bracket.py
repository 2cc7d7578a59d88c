"""scripts/booksim_bracket.py (``booksim_check.py --router iq --iq-loads``): the loads a
row's search can run, snapping to them, and the pipeline with a stand-in for BookSim2 that
is ``mpinet booksim router=iq`` itself (CI has no BookSim), so both sides must agree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import booksim_bracket as bb  # noqa: E402
import booksim_check as bc  # noqa: E402
import booksim_runs as br  # noqa: E402


class _Probe(br.BookSim):
    """A search whose probes are recorded, saturated above ``knee``."""

    def __init__(self, a, knee: float):
        self.a, self.knee, self.offered = a, knee, []

    def probe(self, spec, flits, rate, timed=False, fresh=False):
        self.offered.append(rate)
        ok = rate <= self.knee
        return {"status": "converged" if ok else "deadlock", "latency": 10.0 if ok else 99.0,
                "accepted": rate, "offered": rate, "measured_samples": 6,
                "wall_seconds": 1.0}  # fmt: skip


@pytest.mark.parametrize("knee", [0.1, 0.3, 0.55, 0.9, 1.5])
def test_search_loads_hold_every_load_a_search_runs(knee):
    a = bc.parse_args(["--booksim", "/bin/true"])
    bound = 0.0454
    fake = _Probe(a, knee * bound)
    fake.search("scc:6", 4, 3600, bound)
    loads = bb.search_loads(bound, a)
    assert set(fake.offered[1:]) <= set(loads)  # [0] is the zero-load probe
    assert len(loads) == len(set(loads)) == len(a.grid) * 2**a.bisect
    for x in fake.offered[1:]:  # a load printed to 4 digits snaps back to itself
        assert bb.snap(float(f"{x:.4g}"), loads) == x


def test_parse_and_rows_of():
    assert bb.parse("scc:6:4=0.01816,0.02043;ms:3,2:16=0.00684") == [
        ("scc:6", 4, [0.01816, 0.02043]), ("ms:3,2", 16, [0.00684])]  # fmt: skip
    line = "| `ms:3,2` | 16 | 1 | 0.006841 (0.450) | x | y | t | 1 (1) / 2 |"
    assert bb.rows_of("\n".join([*bb.HEADER, line])) == {("ms:3,2", 16, 1, 0.006841): line}


@pytest.mark.slow
def test_iq_loads_end_to_end_agree_with_themselves(tmp_path, booksim_stand_in):
    exe = booksim_stand_in("iq")
    out = tmp_path / "booksim.md"
    begin, end = (f"<!-- {x} scripts/booksim_check.py --router iq t -->" for x in ("BEGIN", "END"))
    out.write_text(f"# x\n\n{begin}\n{end}\n\ntail\n")
    n, bound, _ = br.anynet_bound("hypercube:3")
    bound = bound * n / (n - 1) / 2
    argv = ["--booksim", str(exe), "--router", "iq", "--iq-tag", "t", "--sample-period", "100",
            "--max-samples", "4", "--grid", "0.4:1.2:2", "--bisect", "1", "--seed", "1",
            "--iq-loads", f"hypercube:3:2={0.41 * bound},{1.19 * bound}",
            "--workdir", str(tmp_path / "w"), "--data", str(tmp_path / "runs.json"),
            "--out", str(out)]  # fmt: skip
    assert bc.main(argv) == 0
    text = out.read_text()
    assert text.endswith(f"{end}\n\ntail\n")
    rows = bb.rows_of(text.split(begin)[1])
    assert [k[:3] for k in rows] == [("hypercube:3", 2, 1)] * 2
    assert [k[3] for k in rows] == [float(f"{f * bound:.4g}") for f in (0.4, 1.2)]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in rows.values()]
    assert all(c[4] == c[5] for c in cells), rows  # the same simulator on both sides
    assert cells[0][4].startswith("converged;") and not cells[1][4].startswith("converged;")
    runs = json.loads((tmp_path / "runs.json").read_text())["runs"]
    assert len(runs) == 3 and {json.loads(k)["seed"] for k in runs} == {"1"}  # with the zero
    # run again with no BookSim: the rows come from the data file and the cache, unchanged
    assert bc.main([*argv, "--booksim-runs", "none"]) == 0
    assert bb.rows_of(out.read_text().split(begin)[1]) == rows
