"""docs/reliability.md's "The catalogue by module" is counted from the catalogue modules'
cases (``scripts/catalogue_doc.py``), never typed: a case added or moved fails this test
until the script is run again."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "catalogue_doc", ROOT / "scripts" / "catalogue_doc.py"
)
catalogue_doc = importlib.util.module_from_spec(_spec)
sys.modules["catalogue_doc"] = catalogue_doc
_spec.loader.exec_module(catalogue_doc)


def test_module_table_is_counted_from_the_cases():
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    fresh = catalogue_doc.write_module_table(text)
    assert fresh == text, "stale: run python scripts/catalogue_doc.py -k nothing-matches"


def test_module_table_counts_every_case_once():
    table = catalogue_doc.module_table().splitlines()

    def cases(row: str) -> int:  # the last two cells: cases, under mpiexec
        return int(row.rstrip(" |").rsplit("|", 2)[1])

    assert cases(table[-1]) == sum(cases(r) for r in table[2:-1]) >= 584  # it only grows
