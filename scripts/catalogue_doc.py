#!/usr/bin/env python3
"""Rewrite the catalogue tables of docs/reliability.md from a run of the cases.

Runs every catalogue module (``tests/test_bad_inputs*.py``, ``tests/test_catalogue_*.py``)
with ``MPINET_CATALOGUE_RECORD`` set, so that each case records the command, the exit code
and the line mpinet printed instead of comparing them with the document, and then
replaces the text between ``<!-- catalogue: begin -->`` and ``<!-- catalogue: end -->``
with one table per section, in the modules' order. The tests compare every row with
what the case prints (machine-dependent figures masked: ``tests/catalogue.py``), so a
message that changes fails them until this script is run again. Usage::

    python scripts/catalogue_doc.py [PYTEST_ARGS]    # e.g. -k export, to refresh a few rows
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from reports import replace_between  # noqa: E402  (the scripts' one marker splice)

DOC = ROOT / "docs" / "reliability.md"
BEGIN, END = "<!-- catalogue: begin -->", "<!-- catalogue: end -->"


def modules() -> list[Path]:
    return [
        ROOT / "tests" / "test_bad_inputs.py",  # the first catalogue's three parts, in order
        ROOT / "tests" / "test_bad_inputs_values.py",
        ROOT / "tests" / "test_bad_inputs_specs.py",
        *sorted((ROOT / "tests").glob("test_catalogue_*.py")),
    ]


def case_order() -> list[tuple[str, str, str]]:
    """(module, section, id) of every case, in the modules' order."""
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT / "scripts"))
    import importlib.util

    out = []
    for path in modules():
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        out += [(path.stem, c.section, c.id) for c in mod.CASES]
    return out


MBEGIN, MEND = "<!-- catalogue-modules: begin -->", "<!-- catalogue-modules: end -->"


def module_table() -> str:
    """The table "The catalogue by module": each module's sections, cases and cases run
    under ``mpiexec`` (``ranks > 1``), counted from the modules' ``CASES``."""
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT / "scripts"))
    import importlib.util

    lines = [
        "| module (`pytest -q MODULE`) | its sections below | cases | under `mpiexec` |",
        "|---|---|--:|--:|",
    ]
    total = mpi = nsec = 0
    for path in modules():
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        secs = list(dict.fromkeys(c.section for c in mod.CASES))
        n, m = len(mod.CASES), sum(1 for c in mod.CASES if c.ranks > 1)
        total, mpi, nsec = total + n, mpi + m, nsec + len(secs)
        names = "; ".join(secs).replace("|", "\\|")
        lines.append(f"| `tests/{path.name}` | {names} | {n} | {m} |")
    lines.append(f"| all | {nsec} sections | {total} | {mpi} |")
    return "\n".join(lines)


def write_module_table(text: str) -> str:
    """``text`` with the module table between its markers made anew."""
    return replace_between(text, MBEGIN, MEND, module_table())


def row(r: dict) -> str:
    cmd = r["command"].replace("|", "\\|")
    return f"| `{r['id']}` | `{cmd}` | {r['given']} | {r['code']} | {r['says']} |"


def main() -> int:
    with tempfile.TemporaryDirectory() as td:
        record = Path(td) / "record.jsonl"
        env = dict(os.environ, MPINET_CATALOGUE_RECORD=str(record))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, modules())]
        proc = subprocess.run([*cmd, *sys.argv[1:]], cwd=ROOT, env=env)
        rows = {}
        if record.exists():
            for line in record.read_text(encoding="utf-8").splitlines():
                r = json.loads(line)
                rows[r["id"]] = r
    text = DOC.read_text(encoding="utf-8")
    old_body = text.split(BEGIN, 1)[1].split(END, 1)[0]
    old_rows = {}
    for line in old_body.splitlines():  # rows of cases not run this time are kept
        if line.startswith("| `"):
            old_rows[line.split("`")[1]] = line
    body: list[str] = []
    current = None
    missing = []
    for _module, sec, cid in case_order():
        if sec != current:
            current = sec
            body += ["", f"### {sec}", "", "| case | command | given | exit | says |",
                     "|---|---|---|---|---|"]  # fmt: skip
        if cid in rows:
            body.append(row(rows[cid]))
        elif cid in old_rows:
            body.append(old_rows[cid])
        else:
            missing.append(cid)
    text = replace_between(text, BEGIN, END, "\n".join(body) + "\n")
    DOC.write_text(write_module_table(text), encoding="utf-8")
    print(f"docs/reliability.md: {len(rows)} rows rewritten, {len(missing)} cases without a row")
    if missing:
        print("  without a row (failed or skipped): " + ", ".join(missing))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
