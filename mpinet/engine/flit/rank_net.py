"""A block's exchange on several ranks (:mod:`~mpinet.engine.flit.rank_loop`): its
:class:`Net` bundle (partners, requests, the counters, the looks' votes and gather) and
:func:`post`, a step's messages out and in (MPI called from the compiled code through
:mod:`~mpinet.engine.flit.mpi_native`'s function pointers). Why apart from ``rank_loop``:
the exchange's state and its posting are shared with the iq router's blocks
(:mod:`~mpinet.engine.flit.iq_ranks`), and the block's loop is a module's worth on its own.
"""

from __future__ import annotations

from collections import namedtuple

from numba import njit

from mpinet.engine.flit import ranks as rk

#: the exchange's tag
TAG = 3302

Net = namedtuple("Net", ["peers", "cap", "reqs", "flag", "stat", "mine", "tot", "lag", "fold",
                         "waited", "sent", "spin", "vote", "votes", "gcnt", "gdsp", "gsend",
                         "gbuf", "dem"])  # fmt: skip
Net.__doc__ = """The exchange's side of :func:`.rank_loop.run_block`: the partner ranks
(``peers``) and the words each may send (``cap``); the MPI requests (the library's
handles: receives, sends,
the reduction), a flag and a statuses' scratch; the step's counters (``mine``, summed:
``tot``); the step's lagged values (``lag``: present, error, active buffers); ``fold`` (1:
every rank a partner);
``waited[0]``: seconds spent waiting for messages and ``sent[0]`` the bytes sent (the
benchmarks' split, ``FlitEngine.native_exchange``); ``spin``: seconds
a call waits before it returns :data:`.rank_looks.WAIT`; ``vote``, ``votes``: a deadlock look's vote
and every rank's (:mod:`.rank_looks`); ``gcnt``, ``gdsp`` (int32), ``gsend``, ``gbuf``: the
gather of the looks' listings (counts and places per rank, this rank's words, all); ``dem``:
sdc's movable requests per port on this rank, then summed over the ranks."""


@njit(cache=True, error_model="numpy", _nrt=False)
def post(fns, hnd, net, ex):
    """The step's messages out and in, and the counters' reduction unless folded."""
    isend, irecv, iallreduce = fns[0], fns[1], fns[3]
    comm, i64, opsum = hnd
    nn = net.peers.shape[0]
    reqs = net.reqs
    for j in range(nn):
        for c in range(rk.NK):
            ex.send[j, rk.H_CNT + c] = net.mine[c]
        irecv(ex.recv[j].ctypes.data, net.cap[j], i64, net.peers[j], TAG, comm,
              reqs[j:].ctypes.data)  # fmt: skip
    for j in range(nn):
        isend(ex.send[j].ctypes.data, ex.nsend[j], i64, net.peers[j], TAG, comm,
              reqs[nn + j :].ctypes.data)  # fmt: skip
        net.sent[0] += 8 * ex.nsend[j]
    if net.fold:
        return 2 * nn
    net.sent[0] += 8 * rk.NK
    iallreduce(net.mine.ctypes.data, net.tot.ctypes.data, rk.NK, i64, opsum, comm,
               reqs[2 * nn :].ctypes.data)  # fmt: skip
    return 2 * nn + 1
