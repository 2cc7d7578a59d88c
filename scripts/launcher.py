"""The MPI launcher for mpinet's scripts and tests: one place that knows its flags.

``MPIEXEC`` (split on spaces, e.g. ``MPIEXEC="srun --cpu-bind=cores"``) wins;
else the ``mpiexec`` beside the running Python (the MPICH wheel of the ``mpi``
extra lives there), else the one on ``PATH``. Open MPI needs
``--oversubscribe`` (and, as root, ``--allow-run-as-root``) to start more
ranks than cores; MPICH needs nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def find_mpiexec() -> list[str]:
    """The launcher command prefix, to be followed by ``-n R`` and the program.

    Raises
    ------
    FileNotFoundError
        No ``MPIEXEC`` and no ``mpiexec`` beside this Python or on ``PATH``.
    """
    if os.environ.get("MPIEXEC"):
        return os.environ["MPIEXEC"].split()
    here = Path(sys.executable).parent / "mpiexec"
    exe = str(here) if here.exists() else shutil.which("mpiexec")
    if exe is None:
        raise FileNotFoundError(
            "mpiexec not found: install mpinet with the mpi extra (README), or set MPIEXEC"
        )
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    cmd = [exe]
    if "Open MPI" in out or "OpenRTE" in out or "prte" in out.lower():
        cmd.append("--oversubscribe")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    return cmd


def launch_prefix(ranks: int) -> list[str]:
    """``[mpiexec ..., -n, R]``, or nothing for one rank (mpinet then runs directly)."""
    return [] if ranks == 1 else [*find_mpiexec(), "-n", str(ranks)]
