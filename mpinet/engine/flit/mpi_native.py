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
its wheel, Intel MPI, Cray MPICH) and pointers in Open MPI's: their width is taken from the
library mpi4py loaded (``MPI._sizeof``), and the calls' prototypes, the handles passed and
the requests' array take that width (``int32`` or ``int64``; a pointer is passed as a
64-bit integer, as the C calling convention passes both). The kernels are compiled once
per width (numba's cache keeps both). Where the calls cannot be had (no mpi4py
communicator, another handle width, the library not found) :func:`native` returns None and
the engine keeps the exchange in mpi4py, one step at a time (the same results).
"""

from __future__ import annotations

import ctypes
from collections import namedtuple
from typing import Any

import numpy as np

from mpinet.engine.comm import loaded_mpi

#: the ``Native`` bundle: the function pointers, then the handles the calls take
Native = namedtuple("Native", ["fns", "comm", "int64", "sum", "status_words", "handle", "hnd"])
Native.__doc__ = """``fns = (isend, irecv, testall, iallreduce, wtime, sched_yield, iallgather,
iallgatherv)``;
``comm``, ``int64``, ``sum``: the handles of the communicator, ``MPI_INT64_T`` and
``MPI_SUM``; ``status_words``: an ``MPI_Status`` in 4-byte words (the size of a status
in the scratch array the tests write); ``handle``: the numpy type of a handle (``int32``
in the MPICH ABI, ``int64`` where handles are pointers), the requests' array's too;
``hnd``: ``(comm, int64, sum)`` as that type, as the compiled calls take them."""

_C = ctypes.c_int
_P = ctypes.c_void_p
#: a handle's C type and numpy type by its width in bytes
_HANDLES = {4: (ctypes.c_int32, np.int32), 8: (ctypes.c_int64, np.int64)}


def _prototypes(h: Any) -> tuple:
    """The calls' C types with handles of C type ``h``: (Isend/Irecv, Testall, Iallreduce,
    Wtime, sched_yield, Iallgather, Iallgatherv)."""
    # (buf, count, type, rank, tag, comm, request*)
    p2p = ctypes.CFUNCTYPE(_C, _P, _C, h, _C, _C, h, _P)
    # (count, requests*, flag*, statuses*)
    testall = ctypes.CFUNCTYPE(_C, _C, _P, _P, _P)
    # (send, recv, count, type, op, comm, request*)
    iallreduce = ctypes.CFUNCTYPE(_C, _P, _P, _C, h, h, h, _P)
    # (send, count, type, recv, count, type, comm, request*)
    iallgather = ctypes.CFUNCTYPE(_C, _P, _C, h, _P, _C, h, h, _P)
    # (send, count, type, recv, counts*, displs*, type, comm, request*)
    iallgatherv = ctypes.CFUNCTYPE(_C, _P, _C, h, _P, _P, _P, h, h, _P)
    return (p2p, testall, iallreduce, ctypes.CFUNCTYPE(ctypes.c_double), ctypes.CFUNCTYPE(_C),
            iallgather, iallgatherv)  # fmt: skip


#: the calls of the loaded library, by handle width (one library per process)
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
    mpi4py communicator under ``comm``, handles neither 4 nor 8 bytes, the library not
    found)."""
    MPI = loaded_mpi()  # noqa: N806 (mpi4py's name)
    raw = unwrap(comm)
    if raw is None:
        return None
    width = MPI._sizeof(MPI.Comm)
    kinds = (MPI.Request, MPI.Datatype, MPI.Op)
    if width not in _HANDLES or any(MPI._sizeof(k) != width for k in kinds):
        return None
    ctype, ntype = _HANDLES[width]
    fns = _cache.get(width)
    if fns is None:
        path = library_path()
        if path is None:
            return None
        try:
            lib = ctypes.CDLL(path)
            addr = lambda name: ctypes.cast(getattr(lib, name), _P).value  # noqa: E731
            p2p, testall, iallreduce, wtime, yld, iallgather, iallgatherv = _prototypes(ctype)
            fns = (
                p2p(addr("MPI_Isend")),
                p2p(addr("MPI_Irecv")),
                testall(addr("MPI_Testall")),
                iallreduce(addr("MPI_Iallreduce")),
                wtime(addr("MPI_Wtime")),
                yld(ctypes.cast(ctypes.CDLL(None).sched_yield, _P).value),
                iallgather(addr("MPI_Iallgather")),
                iallgatherv(addr("MPI_Iallgatherv")),
            )
        except (OSError, AttributeError):
            return None
        _cache[width] = fns
    words = -(-MPI._sizeof(MPI.Status) // 4)
    # the handle as C has it (an int is signed; a pointer fits a signed 64-bit integer)
    handle = lambda obj: ctype(MPI._handleof(obj)).value  # noqa: E731
    c, i64, op = handle(raw), handle(MPI.INT64_T), handle(MPI.SUM)
    return Native(fns, c, i64, op, words, ntype, (ntype(c), ntype(i64), ntype(op)))
