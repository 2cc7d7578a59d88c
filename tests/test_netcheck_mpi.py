"""One network file on every rank, under mpiexec: the SHA-256 compared by every rank alike.

``mpinet/jobs/netcheck.py``; the command-level cases (two working directories under one
``mpiexec``) are the catalogue's ``nf3-ranks-differ-*`` (tests/test_catalogue_netfiles3.py).
"""

from __future__ import annotations

import os
import tempfile

import pytest

from mpinet.jobs.netcheck import same_network
from mpinet.netfile import load_topology
from mpinet.topology.filegraph import FileError


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def _read(comm, extra: bool):
    """Every rank reads its own ``x.edges``: a 5-ring, with a chord where ``extra``."""
    d = tempfile.mkdtemp(prefix=f"mpinet-netcheck-{comm.Get_rank()}-")
    path = os.path.join(d, "x.edges")
    with open(path, "w") as fh:
        fh.write("0 1\n1 2\n2 3\n3 4\n4 0\n" + ("0 2\n" if extra else ""))
    topo = load_topology(f"file:{path}")
    topo.file_info["path"] = "x.edges"  # one name on every rank, as under -wdir
    return topo


@pytest.mark.mpi
def test_the_same_file_on_every_rank_passes(comm):
    same_network(comm, _read(comm, extra=False))


@pytest.mark.mpi
def test_a_rank_with_another_file_is_refused_on_every_rank(comm):
    if comm.Get_size() < 2:
        pytest.skip("needs 2 ranks")
    last = comm.Get_size() - 1
    topo = _read(comm, extra=comm.Get_rank() == last)
    digests = comm.allgather(topo.file_info["sha256"])
    assert digests[0] != digests[last]
    with pytest.raises(FileError) as e:
        same_network(comm, topo)
    msg = str(e.value)
    first = "rank 0" if last == 1 else f"ranks 0-{last - 1}" if last > 2 else "ranks 0, 1"
    assert msg.startswith("network file x.edges differs between ranks: ")
    assert (
        f"{first} read sha256 {digests[0][:12]}; rank {last} read sha256 {digests[last][:12]}"
        in msg
    )
    assert comm.allgather(msg) == [msg] * comm.Get_size()  # the same line on every rank
