"""MPI access, block partition and a serial stand-in communicator.

``comm`` is always a parameter in mpinet. ``comm=None`` means a single
process without MPI (:class:`SerialComm`), so the pure layers and serial tests
never need an MPI library; :func:`world` imports mpi4py only when asked.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mpinet.errors import MPIError

# MPICH ranks busy-poll while waiting; oversubscribed (ranks > cores) that
# costs ~1000x in latency. Throttling restores it (see docs/architecture.md).
_MPI_ENV_DEFAULTS = {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1"}


def world() -> Any:
    """Return ``MPI.COMM_WORLD``, importing mpi4py with mpinet's defaults.

    Raises
    ------
    MPIError
        mpi4py is missing or cannot load an MPI library.
    """
    for key, val in _MPI_ENV_DEFAULTS.items():
        os.environ.setdefault(key, val)
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError) as exc:
        raise MPIError(
            f"cannot use MPI ({exc}); install an MPI with `pip install 'mpinet[mpi]'` "
            "or build mpi4py against your cluster's MPI (see README)"
        ) from None
    return MPI.COMM_WORLD


class SerialComm:
    """The subset of the mpi4py communicator API mpinet uses, for one process."""

    def Get_rank(self) -> int:  # noqa: N802 (mpi4py's names)
        return 0

    def Get_size(self) -> int:  # noqa: N802
        return 1

    def allreduce(self, value: Any, op: Any = None) -> Any:
        return value

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Any = None) -> None:  # noqa: N802
        np.copyto(_buf(recvbuf), _buf(sendbuf))

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        np.copyto(_buf(recvbuf), _buf(sendbuf))

    def Alltoallv(self, sendspec: Any, recvspec: Any) -> None:  # noqa: N802
        src, dst = _buf(sendspec), _buf(recvspec)
        dst[: src.size] = src

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj

    def gather(self, obj: Any, root: int = 0) -> list:
        return [obj]

    def allgather(self, obj: Any) -> list:
        return [obj]

    def Barrier(self) -> None:  # noqa: N802
        pass

    def Abort(self, code: int = 1) -> None:  # noqa: N802
        raise SystemExit(code)


def _buf(spec: Any) -> np.ndarray:
    return spec[0] if isinstance(spec, (list, tuple)) else spec


def resolve(comm: Any) -> Any:
    """``comm`` itself, or a :class:`SerialComm` when it is ``None``."""
    return SerialComm() if comm is None else comm


def block_bounds(n: int, size: int) -> np.ndarray:
    """Bounds of the block partition of ``0..n-1`` over ``size`` ranks.

    Rank ``r`` owns ``[bounds[r], bounds[r+1])``; blocks differ by at most one.
    """
    return (np.arange(size + 1, dtype=np.int64) * n) // size


def sum_op() -> Any:
    """``MPI.SUM`` when mpi4py is loaded, else ``None`` (serial)."""
    import sys

    mod = sys.modules.get("mpi4py.MPI")
    return None if mod is None else mod.SUM


def max_op() -> Any:
    """``MPI.MAX`` when mpi4py is loaded, else ``None`` (serial)."""
    import sys

    mod = sys.modules.get("mpi4py.MPI")
    return None if mod is None else mod.MAX
