"""MPI itself: importing this module starts mpi4py (``MPI_Init``) with mpinet's defaults.

Only the commands import it, when one runs (:func:`mpinet.cli.get_comm`, ``--version``);
everything else takes ``comm`` as a parameter (:mod:`mpinet.engine.comm`), so serial use
and the serial tests never start MPI. A missing mpi4py, or one that cannot load an MPI
library, is not an error here: :func:`world` says so in one line, and a command run
without a launcher falls back on :class:`~mpinet.engine.comm.SerialComm`.
"""

from __future__ import annotations

import os
from typing import Any

from mpinet.errors import MPIError

# MPICH ranks busy-poll while waiting; oversubscribed (ranks > cores) that
# costs ~1000x in latency. Throttling restores it (see docs/architecture.md).
# UCX (the MPICH wheel's transport) takes SIGHUP as its debug signal: the run went on and
# ~240 debug lines went to stdout; 0 turns that off, so SIGHUP stops the run
# (mpinet.cli.signals; docs/reliability.md, "Interrupts").
MPI_ENV_DEFAULTS = {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "UCX_DEBUG_SIGNO": "0"}
for _key, _val in MPI_ENV_DEFAULTS.items():  # read by the library when mpi4py starts it
    os.environ.setdefault(_key, _val)

try:
    from mpi4py import MPI
except (ImportError, RuntimeError) as exc:  # no mpi4py, or no MPI library it can load
    MPI = None
    _MISSING = str(exc)


def world() -> Any:
    """Return ``MPI.COMM_WORLD``.

    Raises
    ------
    MPIError
        mpi4py is missing or cannot load an MPI library.
    """
    if MPI is None:
        raise MPIError(
            f"cannot use MPI ({_MISSING}); install an MPI with `pip install 'mpinet[mpi]'` "
            "or build mpi4py against your cluster's MPI (see docs/install.md)"
        )
    return MPI.COMM_WORLD
