"""Exact metrics of a network (``mpinet info``): BFS, never a formula.

The papers' closed forms (:mod:`mpinet.theory`) are evaluated beside every
exact figure and each is marked as agreeing or not.
"""

from __future__ import annotations

import re
import resource
import socket
import time
from collections.abc import Callable
from typing import Any

from mpinet import theory
from mpinet.engine.bfs import (
    bfs_all_sources,
    bfs_from,
    check_memory,
    estimate_all_sources_bytes,
    estimate_bfs_bytes,
)
from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.errors import ResourceError
from mpinet.topology.base import Topology

#: bit-parallel BFS work (word operations) above which all-sources is refused
MAX_ALL_SOURCES_WORK = 4e10


def spec_params(topo: Topology) -> tuple[int, ...]:
    """The integer parameters of a topology's spec (``ms:3,2`` -> ``(3, 2)``)."""
    return tuple(int(x) for x in re.findall(r"-?\d+", topo.spec.partition(":")[2]))


def ranks_on_this_machine(comm: Any = None) -> int:
    """Number of ranks of ``comm`` sharing this rank's host (collective)."""
    comm = resolve(comm)
    host = socket.gethostname()
    return sum(h == host for h in comm.allgather(host))


def plan_info(topo: Topology, size: int, source: int | None, ranks_here: int | None = None) -> str:
    """Choose the algorithm and check it fits; return ``"single"`` or ``"all"``.

    Parameters
    ----------
    topo : Topology
    size : int
        Ranks of the job.
    source : int or None
        ``--source`` node id, if any.
    ranks_here : int, optional
        Ranks on this machine (:func:`ranks_on_this_machine`); default ``size``.

    Raises
    ------
    ResourceError
        The computation would exceed the machine's memory or a sane time.
    """
    here = size if ranks_here is None else ranks_here
    if source is not None or topo.vertex_transitive:
        check_memory(lambda r: estimate_bfs_bytes(topo, r), size, here, f"BFS on {topo.spec}")
        return "single"
    check_memory(
        lambda r: estimate_all_sources_bytes(topo, r), size, here, f"all-sources BFS on {topo.spec}"
    )
    nsrc = topo.source_orbits()[0].size if hasattr(topo, "source_orbits") else topo.num_nodes
    forms = theory.closed_forms(topo.family, spec_params(topo))
    depths = [cf.value for cf in forms if cf.quantity == "diameter"]
    levels = max([d for d in depths if d > 0] or [64])
    work = nsrc / 64 * topo.num_nodes * topo.degree * levels
    if work > MAX_ALL_SOURCES_WORK:
        raise ResourceError(
            f"all-sources BFS on {topo.spec} ({topo.num_nodes} nodes, not vertex-transitive) "
            "is too large for one machine; pass --source LABEL for one source's distances"
        )
    return "all"


def network_info(
    topo: Topology,
    source: int | None = None,
    comm: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Exact N, degree, diameter, average distances and distance histogram.

    Parameters
    ----------
    topo : Topology
    source : int, optional
        Node id to run BFS from. Default: the identity for vertex-transitive
        graphs; all sources otherwise.
    comm : mpi4py communicator or None
    progress : callable, optional
        ``progress(done, total)`` during the BFS: nodes reached of N (one source), or this
        rank's source batches searched (all sources).

    Returns
    -------
    dict with the keys documented for ``mpinet info --json``.
    """
    comm = resolve(comm)
    size = comm.Get_size()
    mode = plan_info(topo, size, source, ranks_on_this_machine(comm))
    t0 = time.perf_counter()
    if mode == "single":
        src = topo.identity if source is None else source
        dist = bfs_from(topo, src, comm, progress=progress)
    else:
        src = None
        dist = bfs_all_sources(topo, comm, progress=progress)
    seconds = comm.allreduce(time.perf_counter() - t0, op=max_op())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    rss_max = comm.allreduce(rss, op=max_op())
    rss_sum = comm.allreduce(rss, op=sum_op())
    incl, excl = dist.averages(topo.num_nodes)
    covers_all = mode == "all" or topo.vertex_transitive
    if mode == "all":
        scope = "all ordered pairs (all sources, not vertex-transitive)"
    elif topo.vertex_transitive:
        scope = "one source; vertex-transitive, so this is every source's distribution"
    else:
        scope = "one source only (not vertex-transitive): eccentricity, not diameter"
    checks = []
    if covers_all:
        measured = {"diameter": dist.diameter, "avg_distance": incl}
        for cf in theory.closed_forms(topo.family, spec_params(topo)):
            value = measured[cf.quantity] if cf.convention != "excl" else excl
            checks.append({**cf.as_dict(), "measured": value, "agrees": cf.check(value)})
    info = topo.describe()
    info.update(
        {
            "diameter": dist.diameter if covers_all else None,
            "eccentricity": dist.diameter if mode == "single" else None,
            "avg_distance": incl,
            "avg_distance_excl_source": excl,
            "histogram": dist.histogram.tolist(),
            "histogram_counts": "ordered pairs" if mode == "all" else "nodes at distance d",
            "source": None if src is None else topo.label(src),
            "scope": scope,
            "theory": checks,
            "ranks": size,
            "seconds": round(seconds, 3),
            "peak_rss_mib": round(rss_max, 1),
            "peak_rss_mib_all_ranks": round(rss_sum, 1),
        }
    )
    return info
