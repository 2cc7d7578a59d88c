"""What the start-up tests share: code run in a fresh interpreter, whose imports are the
subject (what ``mpinet --help``, a lookup or a command alone loads)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the variables a launcher gives its ranks (mpinet.cli.ranks' RANK_VARS and SIZE_VARS, and
#: hydra's other PMI_ ones): stripped, a process is one no launcher started
LAUNCHER = ("PMI", "OMPI_", "MV2_", "SLURM_", "PALS_", "ALPS_", "JSM_", "FLUX_")


def run_fresh(
    code: str, *, alone: bool = False, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run ``code`` with ``python -c`` in a fresh process, this checkout first on its path;
    ``alone``: without a launcher's variables. Fails the test if the process fails."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if alone:
        env = {k: v for k, v in env.items() if not k.startswith(LAUNCHER)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env
    )
    assert done.returncode == 0, done.stderr
    return done
