"""One compilation a node (mpinet/engine/flit/turns.py): on a cold numba cache the first rank
of a node compiles a several-rank kernel, the node's other ranks load it from the cache.

Run under mpiexec with 1-4 ranks (``-m mpi --with-mpi``); every rank of this machine shares
its node. A kernel of its own, in a module written for the test, keeps the cache cold.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from mpinet.engine.comm import WatchedComm
from mpinet.engine.compile_clock import CompileClock
from mpinet.engine.flit import turns
from mpinet.engine.flit.direct import Direct

KERNEL = """
from numba import njit


@njit(cache=True)
def scaled(a, k):
    out = 0
    for i in range(a.size):
        out += a[i] * k + {salt}
    return out
"""


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def _fresh_kernel(comm, tmp_path: Path, salt: int):
    """``scaled`` from a module no process has compiled (rank 0 writes it in its
    ``tmp_path``; every rank imports that file, so numba's cache of it is shared)."""
    where = None
    if comm.Get_rank() == 0:
        where = str(tmp_path)
        Path(where, f"turns_kernel_{salt}.py").write_text(KERNEL.format(salt=salt))
    where = comm.bcast(where)
    name = f"turns_kernel_{salt}_{Path(where).name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(name, Path(where, f"turns_kernel_{salt}.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.scaled


@pytest.mark.mpi
@pytest.mark.parametrize("watched", [False, True])
def test_the_first_rank_compiles_the_others_load(comm, tmp_path, watched):
    """The first rank compiles, every other rank of the node compiles nothing, and every
    rank's entry point computes the same sum."""
    scaled = _fresh_kernel(comm, tmp_path, salt=int(watched))
    kernel = Direct(scaled)
    a = np.arange(10, dtype=np.int64)
    with CompileClock() as clock:
        turns.prime_in_turn(WatchedComm(comm) if watched else comm, kernel, (a, 3))
    assert kernel.entry is not None
    assert kernel(a, 3) == 3 * 45 + 10 * int(watched)
    compiled = comm.allgather(len(clock.kernels))
    want = [1] + [0] * (comm.Get_size() - 1)
    assert compiled == want


@pytest.mark.mpi
def test_an_entry_point_already_found_still_meets_the_barrier(comm, tmp_path):
    """A rank whose kernel has its entry point (loaded earlier) takes part all the same: the
    call is collective whatever each rank holds, so no rank is left at the barrier."""
    scaled = _fresh_kernel(comm, tmp_path, salt=7)
    kernel = Direct(scaled)
    a = np.ones(4, dtype=np.int64)
    if comm.Get_rank() == comm.Get_size() - 1:
        kernel.prime(a, 2)  # this rank compiles first, on its own
    comm.Barrier()
    turns.prime_in_turn(comm, kernel, (a, 2))
    assert kernel(a, 2) == 8 + 4 * 7
