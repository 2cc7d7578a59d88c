"""The documentation is executed: every console and Python block of README.md, docs/ and
jobs/README.md runs here and must show what the program prints (``scripts/docs.py``).

A block that fails names itself (file:line), shows the diff between the document and the
program's output, and says how to refresh it: ``python scripts/docs.py --update``. The
README's statements about the test suite (its size, the quick tier) are checked against the
suite as well (the first run's compilation message: tests/test_first_run.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("mpinet_docs_tool", ROOT / "scripts" / "docs.py")
docs = importlib.util.module_from_spec(_spec)
sys.modules["mpinet_docs_tool"] = docs  # dataclasses look their module up
_spec.loader.exec_module(docs)

BLOCKS = docs.all_blocks()


def _param(block, followers):
    marks = [pytest.mark.slow] if block.opts.get("slow") else []
    return pytest.param(block, followers, id=block.id, marks=marks)


@pytest.mark.parametrize("block,followers", [_param(*x) for x in docs.executable(BLOCKS)])
def test_block_shows_what_the_program_prints(block, followers):
    res = docs.check_block(block, followers)
    problems = res.errors + res.diffs
    assert not problems, "\n\n".join(problems) + f"\n\n{docs.HINT}"


def test_every_block_says_how_it_is_checked():
    """Console, text, Python, bash and bare blocks carry a marker; output blocks follow a
    block that runs; the few that do not run say why."""
    assert docs.unmarked(BLOCKS) == []
    attached = {f.id for _, fs in docs.executable(BLOCKS) for f in fs}
    assert [b.id for b in BLOCKS if b.kind() == "output" and b.id not in attached] == []
    skipped = [b for b in BLOCKS if b.kind() in ("skip", "static")]
    assert all(len(str(b.opts.get("skip") or b.opts.get("static"))) >= 12 for b in skipped)


# -- the tool itself, on a document of its own ---------------------------------------------

STALE = """# t

<!-- docs: -->
```console
$ mpinet info borel:8,2,1,7
mpinet: error: P must be prime, got 8
$ echo $?
0
```
"""


@pytest.mark.slow
def test_a_stale_block_fails_and_update_fixes_it(tmp_path):
    doc = tmp_path / "t.md"
    doc.write_text(STALE)
    (block,) = docs.parse(str(doc))
    res = docs.check_block(block, [])
    assert not res.errors and len(res.diffs) == 2  # the message and the exit code
    assert "+mpinet: error: P in borel:P,A,T1,T2 must be a prime" in res.diffs[0]
    assert "-0" in res.diffs[1] and "+2" in res.diffs[1]
    docs.write_updates(res.updates)
    text = doc.read_text()
    assert "$ echo $?\n2\n```" in text and text.startswith("# t\n\n<!-- docs: -->\n")
    (again,) = docs.parse(str(doc))
    assert docs.check_block(again, []).diffs == []


@pytest.mark.slow
def test_an_exec_line_that_fails_is_an_error(tmp_path):
    doc = tmp_path / "t.md"
    doc.write_text("<!-- docs: exec -->\n```bash\nmpinet info star:4 --json > /dev/null\n"
                   "mpinet info borel:8,2,1,7\n```\n")  # fmt: skip
    (block,) = docs.parse(str(doc))
    res = docs.check_block(block, [])
    assert len(res.errors) == 1 and "'mpinet info borel:8,2,1,7' exited 2" in res.errors[0]
    assert "must be a prime" in res.errors[0]


def _block(body, **opts):
    return docs.Block("x.md", 1, "text", body, {"mask-re": [], **opts})


def test_align_gaps_excerpts_and_masks():
    out = ["network  a", "steps    5", "time     0.1 s", "checks   ok", "trace    t.h5"]
    # "..." frees a stretch of output; the first segment is anchored at the start
    new, stale, missing = docs.align(["network  a", "...", "trace    t.h5"], out, _block([]))
    assert (new, stale, missing) == (["network  a", "...", "trace    t.h5"], False, [])
    # a changed value is stale and refreshed in place, the gap kept
    new, stale, _ = docs.align(["network  a", "...", "checks   FAILED", "trace    t.h5"], out,
                               _block([]))  # fmt: skip
    assert stale and new == ["network  a", "...", "checks   ok", "trace    t.h5"]
    # without a gap, a line the program added is stale
    full = ["network  a", "steps    5", "checks   ok", "trace    t.h5"]
    assert docs.align(full, out, _block([]))[1]
    # a masked label compares equal whatever its value; update writes what was printed
    doc = ["network  a", "steps    5", "time     9.9 s", "checks   ok", "trace    t.h5"]
    new, stale, _ = docs.align(doc, out, _block([], mask="time"))
    assert not stale and new[2] == "time     0.1 s"
    # excerpt: lines in order, any left out; a line the output lacks is reported
    assert not docs.align(["steps    5", "trace    t.h5"], out, _block([], excerpt=True))[1]
    _, stale, missing = docs.align(["nothing like it"], out, _block([], excerpt=True))
    assert stale and missing == ["nothing like it"]
    assert docs.normal("a 12.5 GiB free", _block([], **{"mask-re": [r"[\d.]+ GiB"]})) == (
        "a <masked> free"
    )


def test_exec_blocks_leave_out_the_install_steps():
    b = docs.Block("x.md", 1, "bash", [
        'python3 -m venv .venv && .venv/bin/pip install -e ".[mpi]" && mpinet info star:4',
        "export PATH=$PWD/.venv/bin:$PATH",
        "mpinet run jobs/ms-uniform.toml \\",
        "    --out ms.h5",
    ], {"exec": True, "installed": True})  # fmt: skip
    assert docs.exec_lines(b) == [
        "mpinet info star:4",
        "export PATH=$PWD/.venv/bin:$PATH",
        "mpinet run jobs/ms-uniform.toml  --out ms.h5",
    ]


# -- what the README says about the suite and the program ---------------------------------

COUNTER = """
import json
def pytest_collection_finish(session):
    n = {"serial": 0, "serial_quick": 0, "mpi": 0, "mpi_quick": 0}
    for item in session.items:
        kind = "mpi" if item.get_closest_marker("mpi") else "serial"
        n[kind] += 1
        n[kind + "_quick"] += item.get_closest_marker("slow") is None
    print("COUNTS " + json.dumps(n))
"""


def _number(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.mark.slow
def test_readme_states_the_size_of_the_suite(tmp_path):
    """The README's counts of the whole suite and of --quick, within 10 % of what pytest
    collects now (tests are added all the time; a stale count drifts further)."""
    (tmp_path / "docs_counter.py").write_text(COUNTER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                        "docs_counter", "-p", "no:cacheprovider"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("COUNTS "))
    n = json.loads(line[7:])
    readme = " ".join((ROOT / "README.md").read_text().split())
    m = re.search(r"The suite has ([\d,]+) tests: ([\d,]+) serial and ([\d,]+) MPI tests", readme)
    q = re.search(r"`--quick` runs ([\d,]+) of them", readme)
    assert m and q, "README.md no longer states the size of the suite where this test looks"
    real = [n["serial"] + 4 * n["mpi"], n["serial"], n["mpi"], n["serial_quick"] + n["mpi_quick"]]
    stated = [_number(x) for x in [*m.groups(), q.group(1)]]
    now = "The suite has {:,} tests: {:,} serial and {:,} MPI tests ... `--quick` runs {:,}"
    assert stated[0] == stated[1] + 4 * stated[2]  # the MPI tests run at 1, 2, 3 and 4 ranks
    assert all(abs(s - r) <= 0.1 * r for s, r in zip(stated, real, strict=True)), (
        "README.md: write " + now.format(*real)
    )


def test_readme_channel_loads_per_unit_load():
    """'MS(3,2)'s nucleus links carry up to 2.52 and its intercluster links up to 1.76' is
    what the sweep's bound computes (the README once said 1.98)."""
    from mpinet.routing import make_router
    from mpinet.routing.channel_load import saturation_bounds, uniform_load
    from mpinet.topology import from_spec

    t = from_spec("ms:3,2")
    cl = uniform_load(t, make_router("shortest", t))
    b = saturation_bounds(cl.load, np.ones(t.degree), t.port_classes, kind="all-port")
    nucleus, inter = (b["per_class"][c]["max_load"] for c in ("nucleus", "intercluster"))
    text = " ".join((ROOT / "README.md").read_text().split())
    assert (
        f"nucleus links carry up to {nucleus:.2f} and its intercluster links up to {inter:.2f}"
        in text
    )
    assert f"no schedule can sustain more than {b['channel']:.3f}" in text


# -- tables the scripts generate: the cheap subsets, regenerated and compared ---------------


def _rows(text: str, drop_last: bool = False) -> list[str]:
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("|---")]
    return [ln.rsplit("|", 2)[0] if drop_last else ln for ln in rows]


@pytest.mark.slow
@pytest.mark.parametrize(
    "script,doc,drop_last",
    [
        ("routing_report.py", "routing.md", False),  # 4-10 s; the full report about a minute
        ("deadlock_report.py", "deadlock-analysis.md", True),  # 4-15 s; the full set 3 minutes
    ],
)
def test_generated_tables_hold_what_the_script_computes_now(tmp_path, script, doc, drop_last):
    """The script's --quick set (the smallest instances) is a subset of the committed
    document's rows: a change that alters a routing table or a deadlock verdict fails
    here until the document is regenerated (seconds columns dropped)."""
    out = tmp_path / doc
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--quick", "--out",
                        str(out)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=900)  # fmt: skip
    assert p.returncode == 0, p.stderr
    fresh = _rows(out.read_text(), drop_last)
    committed = set(_rows((ROOT / "docs" / doc).read_text(), drop_last))
    assert len(fresh) >= 5
    stale = [r for r in fresh if r not in committed]
    assert stale == [], f"docs/{doc} is stale; run python scripts/{script}:\n" + "\n".join(stale)
