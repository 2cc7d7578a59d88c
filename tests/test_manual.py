"""The manual (docs/, mkdocs.yml): its reference is what the code says, it builds with
``mkdocs build --strict``, and every TOML block is a job the schema accepts.

A stale reference page fails with the command that refreshes it
(``python scripts/gen_reference.py``); a broken link, a bad anchor or a page left out of
the navigation fails the build.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


sys.path.insert(0, str(ROOT / "scripts"))
gen = _load("gen_reference", ROOT / "scripts" / "gen_reference.py")
docs = _load("mpinet_docs_tool", ROOT / "scripts" / "docs.py")
MKDOCS = [sys.executable, "-m", "mkdocs"]
ENV = dict(os.environ, NO_MKDOCS_2_WARNING="1")


# -- the reference ---------------------------------------------------------------------------


def test_reference_pages_are_what_the_code_says(tmp_path):
    assert gen.main(["--out", str(tmp_path)]) == 0
    for name in gen.PAGES:
        fresh = (tmp_path / name).read_text()
        committed = ROOT / "docs" / "reference" / name
        assert committed.is_file() and committed.read_text() == fresh, (
            f"docs/reference/{name} is stale; refresh with: {gen.REFRESH}"
        )
    assert gen.stale(tmp_path) == []


def test_the_reference_names_every_key_option_column_and_code():
    from mpinet.cli import build_parser
    from mpinet.errors import EXIT_CODES
    from mpinet.jobs.spec import SCHEMA
    from mpinet.trace.columns import COLUMNS

    pages = gen.render()
    for sec, keys in SCHEMA.items():
        for k in keys if isinstance(keys, dict) else [None]:
            assert f"| `{sec if k is None else f'{sec}.{k}'}` |" in pages["job-keys.md"]
    top = build_parser()
    for p in next(a for a in top._actions if hasattr(a, "_name_parser_map")).choices.values():
        for a in p._actions:
            if a.option_strings:
                assert f"| `{', '.join(a.option_strings)}` |" in pages["commands.md"], a
    for t, cols in COLUMNS.items():
        assert all(f"| `{c}` |" in pages["trace-layout.md"] for c in cols), t
    assert all(f"| {c} | {n} |" in pages["exit-codes.md"] for c, n, _ in EXIT_CODES)


def test_a_job_key_without_a_meaning_is_refused(monkeypatch):
    from mpinet.jobs import spec

    model = dict(spec.SCHEMA["model"], flits=((int,), None, " "))
    monkeypatch.setitem(spec.SCHEMA, "model", model)
    with pytest.raises(SystemExit, match="model.flits has no meaning"):
        gen.job_keys()


def test_the_exit_code_table_is_what_the_commands_return():
    """The commands keep their own constants today: each must be the table's."""
    import importlib

    from mpinet.cli.signals import exit_code
    from mpinet.errors import EXIT_CODES

    codes = {name: code for code, name, _ in EXIT_CODES}
    assert [c for c, _, _ in EXIT_CODES][:4] == [0, 1, 2, 3]
    for mod in ("mpinet.cli", "mpinet.cli.analyze", "mpinet.cli.export", "mpinet.cli.sweep"):
        assert codes["output not written"] == importlib.import_module(mod).OUTPUT_NOT_WRITTEN
    shown = dict(re.findall(r"(\d+) (SIG\w+)", EXIT_CODES[-1][2]))
    assert shown and all(exit_code(getattr(__import__("signal"), s)) == int(c)
                         for c, s in shown.items())  # fmt: skip


FLITS = ["--set", "model.switching=wormhole", "--set", "model.flits=4"]


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], FLITS], ids=["packets", "flits"])
def test_every_attribute_of_a_real_trace_is_described(tmp_path, extra):
    """A run's trace (hops level): every root, group and column attribute is in the tables
    the reference page is generated from, and every column's description is COLUMNS'."""
    from mpinet.trace.columns import ATTRS, GROUP_ATTRS, TABLES, column_meta

    out = tmp_path / "t.h5"
    cmd = [sys.executable, "-m", "mpinet", "run", "--topology", "star:4", "--trace-level",
           "hops", "--out", str(out), "--quiet", *extra]  # fmt: skip
    p = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))  # fmt: skip
    assert p.returncode == 0, p.stderr
    with h5py.File(out) as f:
        assert sorted(set(f.attrs) - set(ATTRS)) == []
        for t, g in f.items():
            assert t in TABLES and set(g.attrs) <= set(GROUP_ATTRS)
            for c, ds in g.items():
                assert set(ds.attrs) <= set(GROUP_ATTRS), (t, c)
                assert ds.attrs["units"] != "" and ds.attrs["description"] != "", (t, c)
                if not extra:
                    assert ds.attrs["description"] == column_meta(t, c)[1], (t, c)


# -- the site --------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_manual_builds_strict(tmp_path):
    """Every page in the nav, every link and anchor found (``--strict``)."""
    p = subprocess.run([*MKDOCS, "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                        "-d", str(tmp_path / "site")], cwd=ROOT, env=ENV, capture_output=True,
                       text=True, timeout=600)  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "site" / "reference" / "job-keys" / "index.html").is_file()


def _site(tmp_path: Path, page: str, nav_extra: bool = True) -> subprocess.CompletedProcess:
    """A two-page site with the manual's own configuration (validation, hook, slugs)."""
    d = tmp_path / "docs"
    d.mkdir()
    (d / "index.md").write_text("# Home\n\n## A section\n\n[other](other.md)\n")
    (d / "other.md").write_text(page)
    (tmp_path / "README.md").write_text("# a file of the repository, outside docs/\n")
    text = (ROOT / "mkdocs.yml").read_text()
    text = text[: text.index("\nnav:")] + "\nnav:\n  - Home: index.md\n"
    text += "  - Other: other.md\n" if nav_extra else ""
    text = (
        text.replace("docs_dir: docs", f"docs_dir: {d}")
        .replace("site_dir: site", f"site_dir: {tmp_path / 'site'}")
        .replace("  - scripts/mkdocs_hooks.py", f"  - {ROOT / 'scripts' / 'mkdocs_hooks.py'}")
    )
    (tmp_path / "mkdocs.yml").write_text(text)
    cmd = [*MKDOCS, "build", "--strict", "-f", str(tmp_path / "mkdocs.yml")]  # -q: no warnings
    return subprocess.run(cmd, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("page,nav,ok", [
    ("# Other\n\n[home](index.md#a-section), [the README](../README.md)\n", True, None),
    ("# Other\n\n[gone](missing.md)\n", True, "missing.md"),
    ("# Other\n\n[bad anchor](index.md#no-such-section)\n", True, "no-such-section"),
    ("# Other\n\n[a file outside docs that does not exist](../NOPE.md)\n", True, "NOPE.md"),
    ("# Other\n", False, "other.md"),
], ids=["sound", "broken-link", "bad-anchor", "missing-repo-file", "not-in-nav"])  # fmt: skip
def test_strict_build_fails_on_what_a_reader_would_trip_on(tmp_path, page, nav, ok):
    p = _site(tmp_path, page, nav)
    if ok is None:
        assert p.returncode == 0, p.stdout + p.stderr
    else:
        assert p.returncode != 0 and ok in p.stdout + p.stderr


# -- TOML blocks -----------------------------------------------------------------------------

TOML = [b for b in docs.all_blocks() if b.lang == "toml"]


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in TOML])
def test_every_toml_block_is_a_job_the_schema_accepts(block):
    assert block.kind() in ("toml", "skip", "static")
    if block.kind() == "toml":
        assert docs.check_toml(block) == []


def _toml(body: str, **opts) -> list[str]:
    return docs.check_toml(docs.Block("x.md", 1, "toml", body.splitlines(), opts))


def test_the_toml_checker_finds_what_a_job_file_would_be_refused_for():
    assert _toml('[model]\nswitching = "wormhole"\nflits = 16\nvcs = 2') == []
    assert "unknown key model.'flit'" in _toml("[model]\nflit = 16")[0]
    assert "model.flits must be in [1, 65,536], got 0" in _toml("[model]\nflits = 0")[0]
    assert "must be str" in _toml("[trace]\nlevel = 3")[0]
    assert "not valid TOML" in _toml("[model\n")[0]
    assert "vc_policy = 'diagonal' is not one of any, hops" in _toml(
        '[model]\nvc_policy = "diagonal"')[0]  # fmt: skip
    assert _toml('[model]\nkind = "k-port:3"') == []
    assert "'topology' is required" not in " ".join(_toml("seed = 1"))  # a part of a job
    assert "seed must be in" in _toml('topology = "star:4"\nseed = -1')[0]


def test_keys_all_and_defaults_catch_a_stale_list_of_every_key():
    from mpinet.jobs.spec import SCHEMA

    full = ['topology = "star:4"', "seed = 0", "max_steps = 100000"]
    for sec, keys in SCHEMA.items():
        if isinstance(keys, dict):
            full.append(f"[{sec}]")
            full += [f"{k} = {gen._default(d).strip('`')}" for k, (_, d, _) in keys.items()
                     if d is not None and d != "" and not isinstance(d, dict)]  # fmt: skip
    text = "\n".join(full)
    lacking = _toml(text, keys="all")
    assert lacking and all("lacks the key" in e for e in lacking)
    assert any("model.switching" in e for e in lacking)
    assert _toml(text, defaults=True) == []
    assert "its default is 'fifo'" in _toml(text.replace('"fifo"', '"oldest-first"'),
                                             defaults=True)[0]  # fmt: skip
