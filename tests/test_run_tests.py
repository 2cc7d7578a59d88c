"""scripts/run_tests.py: the MPI stages' ranks collect only the files that hold MPI tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import run_tests  # noqa: E402


def test_mpi_files_are_the_files_with_mpi_tests():
    """Of a file with MPI tests and one without, the collection keeps the first only; the
    quick tier's marker too; a collection that fails leaves the whole suite (no files)."""
    py = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    pair = ["tests/test_bfs_info.py", "tests/test_layers.py"]
    assert "mark.mpi" in (ROOT / pair[0]).read_text()
    assert "mark.mpi" not in (ROOT / pair[1]).read_text()
    assert run_tests.mpi_files([*py, *pair], "mpi", env) == [pair[0]]
    assert run_tests.mpi_files([*py, *pair], "mpi and not slow", env) == [pair[0]]
    assert run_tests.mpi_files([*py, "tests/no_such_file.py"], "mpi", env) == []
