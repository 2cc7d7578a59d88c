"""scripts/bench_ports.py's children import the tree they are given, not the script's own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_ports.py"


def _child(tree: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(tree))
    argv = [sys.executable, str(SCRIPT), "--child", "all-port", "--rate", "0.003", "--best",
            "1", "--spec", "ms:3,2"]  # fmt: skip
    return subprocess.run(argv, env=env, cwd="/", capture_output=True, text=True, timeout=120)


def test_a_child_imports_its_trees_mpinet(tmp_path):
    """A tree whose mpinet stops the process at import: the child must import it first
    (it did not while the script imported ``reports``, which puts this repository first)."""
    (tmp_path / "mpinet").mkdir()
    (tmp_path / "mpinet" / "__init__.py").write_text("raise SystemExit('the tree imported')\n")
    out = _child(tmp_path)
    assert out.returncode != 0 and "the tree imported" in out.stderr
