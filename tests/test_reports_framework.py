"""``scripts/reports.py``: every report script registered, one run, ``--check``, guarded outputs."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # the dataclasses of the registry look their module up
    spec.loader.exec_module(mod)
    return mod


registry = _load("reports_registry")


def reports(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / "reports.py"), *args], cwd=cwd,
                          env=ENV, capture_output=True, text=True, timeout=600)  # fmt: skip


def test_every_script_is_registered_or_a_named_tool():
    """A new report script that is not in the registry (nor a part of a registered one)
    fails here, and so does a registered script that no longer exists."""
    registered = {r.script for r in registry.REPORTS}
    parts = {p for r in registry.REPORTS for p in r.parts}
    tools = set(registry.TOOLS)
    on_disk = {p.name for p in SCRIPTS.glob("*.py")}
    assert on_disk - registered - parts - tools == set()
    assert (registered | parts | tools) - on_disk == set()
    assert not registered & tools and not parts & tools
    names = [r.name for r in registry.REPORTS]
    assert len(names) == len(set(names))


def test_every_report_is_on_the_framework():
    """Every registered report is built by its ``entry(argv)`` (``reports.py run`` calls
    it), and its script uses the framework's arguments and Run: no wrapper is left."""
    for r in registry.REPORTS:
        text = (SCRIPTS / r.script).read_text(encoding="utf-8")
        funcs = {f.name: f for f in ast.walk(ast.parse(text)) if isinstance(f, ast.FunctionDef)}
        assert r.entry in funcs and [a.arg for a in funcs[r.entry].args.args] == ["argv"], r
        assert "reports.arguments(" in text and "reports.Run(" in text, r.script


def test_list_names_every_report_with_what_it_regenerates():
    p = reports("list")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == len(registry.REPORTS)
    for r, line in zip(registry.REPORTS, lines, strict=True):
        assert line.split()[0] == r.name and r.script in line and r.regenerates in line


def test_unknown_report_is_refused_with_the_names():
    p = reports("run", "no-such-report")
    assert p.returncode == 2 and p.stdout == ""
    assert "no report 'no-such-report'" in p.stderr and "ms-variants" in p.stderr


def test_replace_between_keeps_the_markers_and_everything_else():
    rep = _load("reports")
    text = "head\n<!-- B -->\nold\n<!-- E -->\ntail\n"
    assert rep.replace_between(text, "<!-- B -->", "<!-- E -->", "new") == (
        "head\n<!-- B -->\nnew\n<!-- E -->\ntail\n"
    )
    with pytest.raises(KeyError):
        rep.replace_between("no markers\n", "<!-- B -->", "<!-- E -->", "new")
    assert rep.replace_between("text\n\n", "<!-- B -->", "<!-- E -->", "x", append=True) == (
        "text\n\n<!-- B -->\nx\n<!-- E -->\n"
    )


def _emptied(doc: str, begin: str, end: str) -> str:
    head, rest = doc.split(begin, 1)
    return head + begin + "\n" + end + rest.split(end, 1)[1]


def test_run_regenerates_the_blocks_and_check_finds_a_stale_one(tmp_path):
    """``run ms-variants --out COPY`` fills the emptied blocks of a copy of
    docs/ms-variants.md with what the script computes: the page as committed (itself
    checked against the tables in tests/test_ms_variants.py). ``--check`` passes on it,
    and fails with a diff, writing nothing, once one cell of the copy is changed."""
    msv = _load("ms_variants_table")
    doc = (ROOT / "docs" / "ms-variants.md").read_text(encoding="utf-8")
    emptied = _emptied(_emptied(doc, *msv.WORDS), *msv.TABLE2)
    assert msv.table2_markdown() not in emptied
    copy = tmp_path / "ms-variants.md"
    copy.write_text(emptied, encoding="utf-8")
    p = reports("run", "ms-variants", "--out", str(copy), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert copy.read_text(encoding="utf-8") == doc
    assert p.stdout == "" and "IMS emulation words" in p.stderr  # progress on stderr

    p = reports("run", "ms-variants", "--out", str(copy), "--check", "--quiet", cwd=tmp_path)
    assert (p.returncode, p.stderr) == (0, "")

    row = "| MS(3,3) (`ms:3,3`) | 4-star | 10! / 10! | 5 / 5 | 2 / 2 | agrees |"
    assert row in doc
    stale = doc.replace(row, row.replace("5 / 5", "5 / 6"))
    copy.write_text(stale, encoding="utf-8")
    p = reports("run", "ms-variants", "--out", str(copy), "--check", "--quiet", cwd=tmp_path)
    assert p.returncode == 1 and "stale output" in p.stderr
    assert f"-{row.replace('5 / 5', '5 / 6')}" in p.stderr and f"+{row}" in p.stderr
    assert copy.read_text(encoding="utf-8") == stale and sorted(os.listdir(tmp_path)) == [
        "ms-variants.md"
    ]


def test_guarded_output_refuses_a_foreign_file_before_the_work(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("my own notes\n")
    p = reports("run", "ms-variants", "--out", str(notes), cwd=tmp_path)
    assert p.returncode == 1 and p.stdout == ""
    assert "is not an mpinet report of ms_variants_table.py" in p.stderr
    assert "Table 2" not in p.stderr  # refused before any table was computed
    assert notes.read_text() == "my own notes\n" and os.listdir(tmp_path) == ["notes.md"]
