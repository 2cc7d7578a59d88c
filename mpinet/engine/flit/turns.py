"""A several-rank kernel's first compilation, one rank of a node before the others.

Every rank of a job calls the same compiled block. On a cold numba cache (a fresh install,
or an edit of a kernel's source) each rank compiled it at its first call, all at once: R
compilations of the same machine code on a node's shared cores, 40-90 s of CPU each for
the iq router's blocks (docs/performance.md, "One compilation a node"). Here the first rank
of each node (MPI's shared-memory split) finds the block's entry point first, compiling it
and writing numba's cache; the node's other ranks wait at a polled barrier, then load it
from that cache. A warm cache costs that barrier once per run. No file I/O here: numba's
cache is numba's.
"""

from __future__ import annotations

import time
from typing import Any

from mpinet.engine.comm import loaded_mpi
from mpinet.engine.flit.direct import Direct

#: each communicator's node-local one (keyed by the communicator's identity: a job's
#: communicators live as long as the process)
_NODES: dict[int, Any] = {}


def _node(comm: Any) -> Any:
    """The ranks of ``comm`` that share this rank's node (collective at a first call)."""
    raw = getattr(comm, "_comm", comm)  # a WatchedComm's own communicator
    node = _NODES.get(id(raw))
    if node is None:  # a communicator of more than one rank: mpi4py is loaded
        node = _NODES[id(raw)] = raw.Split_type(loaded_mpi().COMM_TYPE_SHARED)
    return node


def _wait(comm: Any, req: Any) -> None:
    """Wait for ``req`` without burning a core: through the watched communicator's poll (its
    timeout ends a hung job) when ``comm`` is one."""
    if hasattr(comm, "_wait"):
        comm._wait(req)
        return
    while not req.Test():
        time.sleep(0.001)


def prime_in_turn(comm: Any, kernel: Direct, args: tuple) -> None:
    """Find ``kernel``'s entry point for ``args`` (:meth:`Direct.prime`) on the first rank of
    each node, then on the node's others. Collective over ``comm``: every rank calls it
    once, before its first call of ``kernel``, with the arguments of that call (whether a
    rank's ``kernel`` has its entry point already decides nothing: each rank meets the
    barrier). On one rank: :meth:`Direct.prime` alone."""
    if comm is None or comm.Get_size() == 1:
        kernel.prime(*args)
        return
    node = _node(comm)
    first = node.Get_rank() == 0
    if first:
        kernel.prime(*args)
    _wait(comm, node.Ibarrier())
    if not first:
        kernel.prime(*args)
