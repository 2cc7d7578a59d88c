"""File networks under mpiexec: the same metrics on 1-4 ranks.

Runs on a file network under mpiexec are in tests/test_engine_mpi.py (store-and-forward)
and tests/test_flit_engine.py (flits), beside the families'.
"""

from __future__ import annotations

import pytest
from test_engine_mpi import CUBIC40

from mpinet.engine.info import network_info
from mpinet.netfile import load_topology


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.mpi
def test_info_identical_to_serial(comm):
    topo = load_topology(CUBIC40)
    a, b = network_info(topo, comm=comm), network_info(topo)
    for key in ("diameter", "avg_distance", "histogram"):
        assert a[key] == b[key], key
    s, t = network_info(topo, comm=comm, sources=7, seed=3), network_info(topo, sources=7, seed=3)
    assert s["histogram"] == t["histogram"]
