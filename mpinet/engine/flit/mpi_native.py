"""The MPI calls of the flit engine's compiled exchange: the C functions of the MPI library
mpi4py loaded, as function pointers that numba-compiled code calls.

Why: a step of the multi-rank compiled steps costs a few hundred microseconds on a rank's
half of ms:3,2; a return to Python for each step's exchange cost about as much again
(issue 33). With the library's ``MPI_Isend``, ``MPI_Irecv``, ``MPI_Testall``,
``MPI_Iallreduce``, ``MPI_Iallgather(v)`` and ``MPI_Wtime`` passed in as a tuple of
``ctypes`` function pointers, the whole loop over a block of steps, exchange included, runs
in one compiled call (:mod:`mpinet.engine.flit.rank_loop`). The pointers are arguments, not
globals, so the kernels stay in numba's on-disk cache (a global pointer would be compiled in
as a constant and the kernels recompiled in every process). The package ``numba-mpi`` does
the same with globals and ``MPI_COMM_WORLD`` only; neither suits a run on any communicator.

Handles (communicator, datatype, operation, request) are C ``int`` in the MPICH ABI (MPICH,
its wheel, Intel MPI, Cray MPICH); :func:`native` returns None for a library whose handles
are pointers (Open MPI), and the engine then keeps the exchange in mpi4py, one step at a
time (the same results).
"""

from __future__ import annotations

import ctypes
from collections import namedtuple
from typing import Any

from mpinet.engine.comm import loaded_mpi

#: the ``Native`` bundle: the function pointers, then the handles the calls take
Native = namedtuple("Native", ["fns", "comm", "int64", "sum", "status_words"])
Native.__doc__ = """``fns = (isend, irecv, testall, iallreduce, wtime, sched_yield, iallgather,
iallgatherv)``;
``comm``, ``int64``, ``sum``: the handles of the communicator, ``MPI_INT64_T`` and
``MPI_SUM``; ``status_words``: an ``MPI_Status`` in 4-byte words (the size of a status
in the scratch array the tests write)."""

_C = ctypes.c_int
_P = ctypes.c_void_p
#: (buf, count, type, rank, tag, comm, request*)
_P2P = ctypes.CFUNCTYPE(_C, _P, _C, _C, _C, _C, _C, _P)
#: (count, requests*, statuses*)
_TESTALL = ctypes.CFUNCTYPE(_C, _C, _P, _P, _P)
#: (send, recv, count, type, op, comm, request*)
_IALLREDUCE = ctypes.CFUNCTYPE(_C, _P, _P, _C, _C, _C, _C, _P)
#: (send, count, type, recv, count, type, comm, request*)
_IALLGATHER = ctypes.CFUNCTYPE(_C, _P, _C, _C, _P, _C, _C, _C, _P)
#: (send, count, type, recv, counts*, displs*, type, comm, request*)
_IALLGATHERV = ctypes.CFUNCTYPE(_C, _P, _C, _C, _P, _P, _P, _C, _C, _P)
_WTIME = ctypes.CFUNCTYPE(ctypes.c_double)
_YIELD = ctypes.CFUNCTYPE(_C)

_cache: dict = {}


def library_path() -> str | None:
    """The file of the MPI library this process loaded (mpi4py loads it at import)."""
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                name = path.rsplit("/", 1)[-1]
                if name.startswith(("libmpi.", "libmpich.", "libmpi_")) and ".so" in name:
                    return path
    except OSError:
        return None
    return None


def unwrap(comm: Any) -> Any:
    """The mpi4py communicator under mpinet's wrappers (watched, timed), or None."""
    MPI = loaded_mpi()  # noqa: N806 (mpi4py's name)
    if MPI is None:
        return None
    seen = 0
    while not isinstance(comm, MPI.Comm) and seen < 8:
        comm = getattr(comm, "_comm", None)
        seen += 1
    return comm if isinstance(comm, MPI.Comm) else None


def native(comm: Any) -> Native | None:
    """The compiled exchange's calls on ``comm``, or None where they cannot be had (no
    mpi4py communicator under ``comm``, pointer handles, the library not found)."""
    MPI = loaded_mpi()  # noqa: N806 (mpi4py's name)
    raw = unwrap(comm)
    if raw is None or MPI._sizeof(MPI.Comm) != 4 or MPI._sizeof(MPI.Request) != 4:
        return None
    fns = _cache.get("fns")
    if fns is None:
        path = library_path()
        if path is None:
            return None
        try:
            lib = ctypes.CDLL(path)
            addr = lambda name: ctypes.cast(getattr(lib, name), _P).value  # noqa: E731
            fns = (
                _P2P(addr("MPI_Isend")),
                _P2P(addr("MPI_Irecv")),
                _TESTALL(addr("MPI_Testall")),
                _IALLREDUCE(addr("MPI_Iallreduce")),
                _WTIME(addr("MPI_Wtime")),
                _YIELD(ctypes.cast(ctypes.CDLL(None).sched_yield, _P).value),
                _IALLGATHER(addr("MPI_Iallgather")),
                _IALLGATHERV(addr("MPI_Iallgatherv")),
            )
        except (OSError, AttributeError):
            return None
        _cache["fns"] = fns
    words = -(-MPI._sizeof(MPI.Status) // 4)
    c_int = lambda obj: ctypes.c_int(MPI._handleof(obj)).value  # noqa: E731 (signed, as C has it)
    return Native(fns, c_int(raw), c_int(MPI.INT64_T), c_int(MPI.SUM), words)
