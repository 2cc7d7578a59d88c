"""What the distributed BFS of :mod:`mpinet.engine.bfs` needs, planned before it runs.

Its batch and exchange sizes (:func:`plan`), each algorithm's peak memory per
rank (:func:`estimate_bfs_bytes`, :func:`estimate_all_sources_bytes`: the
plans of ``mpinet info`` size a run with them) and the refusal of a run whose
ranks would not fit in this machine's memory (:func:`check_memory`, one
message naming the estimate and a way out). :mod:`mpinet.engine.bfs`
re-exports these names.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mpinet.engine import limits  # limits.memory(), looked up at each call (tests fake it)
from mpinet.errors import ResourceError
from mpinet.topology.base import Topology
from mpinet.values import check_int

#: frontier ids per ``neighbors`` call (batches of one to two chunks)
EXPAND_CHUNK = 1 << 17
#: bytes sent to each rank per exchange round (a window of 8x as many ids as bitmaps)
EXCHANGE_BYTES = 1 << 18
SOURCE_WORDS = 16  # 1024 sources per bit-parallel batch
BASE_BYTES = 48 << 20  # interpreter, numpy and MPI of one rank (47 MiB measured)
RECV_CHUNK = 1 << 18  # ids (or seen bytes) handled per step of an exchange round


def id_dtype(n: int) -> np.dtype:
    """Node ids in 32 bits where they fit."""
    return np.dtype(np.int32 if n < 2**31 else np.int64)


def available_memory() -> int:
    """Bytes of memory available to this machine: MemAvailable, the cgroup's limit or
    ``MPINET_MEMORY_LIMIT``, whichever is smallest (:mod:`mpinet.engine.limits`)."""
    return limits.memory().machine


def plan(n: int, size: int, chunk: int | None, exchange: int | None) -> tuple[int, int, int, int]:
    """Expansion chunk, bitmap window (ids), largest block, sparse-level capacity."""
    chunk = check_int("chunk", EXPAND_CHUNK if chunk is None else chunk, 1, 1 << 40)
    exchange = check_int("exchange", EXCHANGE_BYTES if exchange is None else exchange, 1, 1 << 30)
    block = -(-n // size)
    # a dense level goes as bitmaps, ``exchange`` bytes (8 ids a byte) of every owner's
    # block per round; a level of at most ``exchange / 4`` marks in all as uint32 offsets
    return chunk, min(8 * exchange, block), block, max(1, exchange // 4)


def estimate_bfs_bytes(
    topo: Topology, size: int, chunk: int | None = None, exchange: int | None = None
) -> int:
    """Peak memory of one rank of :func:`~mpinet.engine.bfs.bfs_from` on ``size`` ranks, bytes.

    The byte map of all N nodes, one state byte per owned node, the
    temporaries of one expansion batch and the exchange buffers; nothing
    depends on the frontier's size.
    """
    chunk, window, block, sparse = plan(topo.num_nodes, size, chunk, exchange)
    rows = 2 * min(chunk, block)  # a batch of frontier ids
    # ids (pieces and joined); neighbours (int64) twice (topology's output and its
    # chunk); mask; kept targets; the topology's own temporaries (permutation rows:
    # the measured peaks of scc:10 and ms:2,5 are 10-16 % under this estimate)
    expand = rows * (16 + topo.degree * (8 + 8 + 1 + 8 + 16))
    # bitmaps out and in, their OR, the unpacked window, its unseen mask and the new marks
    bitmaps = 2 * size * (-(-window // 8)) + window // 8 + 3 * window
    # offsets out and in (uint32); per chunk, the sender's flatnonzero and the
    # receiver's gather, mask, selection and index conversion
    offsets = 8 * sparse + RECV_CHUNK * (8 + 1 + 1 + 4 + 8)
    return BASE_BYTES + topo.num_nodes + block + expand + bitmaps + offsets


def estimate_all_sources_bytes(topo: Topology, size: int) -> int:
    """Peak bytes of one rank of :func:`~mpinet.engine.bfs.bfs_all_sources` (any ``size``)."""
    n, deg = topo.num_nodes + 1, topo.degree  # + the sentinel row of missing ports
    table = n * deg * id_dtype(n).itemsize
    build = min(n, EXPAND_CHUNK) * deg * 16  # one chunk's int64 neighbours and a copy
    # front, visited, new, gathered rows (uint64); popcount bytes; one port's int64 index
    bits = n * SOURCE_WORDS * (4 * 8 + 1) + n * 8
    return BASE_BYTES + table + max(build, bits)


def check_memory(estimate: Callable[[int], int], size: int, ranks_here: int, what: str) -> None:
    """Raise :class:`ResourceError` when the job's ranks on this machine would not
    fit in its available memory; the message names the estimate and a way out.

    Parameters
    ----------
    estimate : callable
        Peak bytes of one rank for a given number of ranks.
    size, ranks_here : int
        Ranks of the job, and those of them on this machine.
    what : str
        The computation, for the message.
    """
    have = available_memory()
    per_rank = estimate(size)
    need = per_rank * ranks_here
    rank = limits.memory()
    # ulimit -v, per process, where it binds before this rank's share of the machine
    if rank.rank is not None and rank.rank < have // max(ranks_here, 1) and per_rank > rank.rank:
        more = next((r for r in (size << i for i in range(1, 21)) if estimate(r) <= rank.rank), 0)
        raise ResourceError(
            f"{what} needs about {per_rank / 2**30:.1f} GiB per rank, but {rank.rank_origin}; "
            + (f"use {more} or more ranks, " if more else "")
            + "a larger ulimit -v, or a smaller network"
        )
    if need <= have:
        return
    if per_rank <= have:
        way_out = f"run at most {have // per_rank} rank(s) per machine (more machines)"
    else:  # more ranks shrink the owned part; the first count that fits, if any
        more = next((r for r in (size << i for i in range(1, 21)) if estimate(r) <= have), 0)
        way_out = (
            f"use {more} or more ranks, at most {have // estimate(more)} per machine"
            if more
            else "use a smaller network (no number of ranks fits one machine)"
        )
    raise ResourceError(
        f"{what} needs about {per_rank / 2**30:.1f} GiB per rank, {need / 2**30:.1f} GiB for "
        f"the {ranks_here} rank(s) on this machine, but {have / 2**30:.1f} GiB is available; "
        + way_out
    )
