"""Distributed BFS under mpiexec: the same answer as the serial run, on any size.

Run by scripts/run_tests.py under ``mpiexec -n 1, 2, 4 ... --with-mpi``.
"""

from __future__ import annotations

import numpy as np
import pytest

from mpinet.engine.bfs import bfs_all_sources, bfs_from
from mpinet.engine.info import network_info
from mpinet.topology import from_spec

SPECS = ["scc:5", "ms:2,2", "ms:3,2", "star:6", "hypercube:6", "ccc:4", "borel:7,2,0,1"]


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.mpi
@pytest.mark.parametrize("spec", SPECS)
def test_bfs_from_identical_to_serial(comm, spec):
    topo = from_spec(spec)
    for src in (0, topo.num_nodes - 1):
        par = bfs_from(topo, src, comm).histogram
        assert par.tolist() == bfs_from(topo, src).histogram.tolist()


@pytest.mark.mpi
@pytest.mark.parametrize("spec", ["fccn:2", "fccn:3", "scc:4"])
def test_all_sources_identical_to_serial(comm, spec):
    topo = from_spec(spec)
    par = bfs_all_sources(topo, comm)
    ser = bfs_all_sources(topo)
    assert par.histogram.tolist() == ser.histogram.tolist() and par.sources == ser.sources


@pytest.mark.mpi
@pytest.mark.parametrize("spec", ["scc:6", "fccn:2"])
def test_network_info_identical_to_serial(comm, spec):
    topo = from_spec(spec)
    par, ser = network_info(topo, comm=comm), network_info(topo)
    for key in ("diameter", "avg_distance", "avg_distance_excl_source", "histogram", "theory"):
        assert par[key] == ser[key], key
    assert par["ranks"] == comm.Get_size()


@pytest.mark.mpi(min_size=2)
def test_every_rank_sees_the_same_result(comm):
    info = network_info(from_spec("ms:2,2"), comm=comm)
    mine = np.array(info["histogram"], dtype=np.int64)
    everyone = comm.allgather(mine.tolist())
    assert all(h == everyone[0] for h in everyone)
