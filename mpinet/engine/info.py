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

import numpy as np

from mpinet import rng, theory
from mpinet.engine.bfs import (
    bfs_all_sources,
    bfs_from,
    check_memory,
    estimate_all_sources_bytes,
    estimate_bfs_bytes,
)
from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.errors import JobError, ResourceError, check_int
from mpinet.topology.base import Topology

#: the counter-based stream of ``--sources K``'s sample (:mod:`mpinet.rng`)
STREAM_SOURCES = 13
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


def affordable_sources(topo: Topology, levels: float) -> int:
    """How many sources the bit-parallel BFS can search within :data:`MAX_ALL_SOURCES_WORK`."""
    per_source = topo.num_nodes * max(topo.degree, 1) * max(levels, 1.0) / 64
    return max(0, int(MAX_ALL_SOURCES_WORK / per_source) // 64 * 64)


def sample_sources(topo: Topology, count: int, seed: int = 0) -> np.ndarray:
    """``count`` distinct node ids drawn uniformly with ``seed`` (the same on every rank)."""
    count = check_int("--sources K", count, 1, topo.num_nodes)
    # the K nodes of smallest counter-based key: a uniform sample, as every rank draws it
    key = rng.bits(seed, np.arange(topo.num_nodes, dtype=np.int64), 0, STREAM_SOURCES)
    return np.sort(np.argpartition(key, count - 1)[:count]).astype(np.int64)


def plan_info(
    topo: Topology,
    size: int,
    source: int | None,
    ranks_here: int | None = None,
    sources: int | None = None,
) -> str:
    """Choose the algorithm and check it fits; return ``"single"``, ``"all"`` or ``"sample"``.

    Parameters
    ----------
    topo : Topology
    size : int
        Ranks of the job.
    source : int or None
        ``--source`` node id, if any.
    sources : int, optional
        ``--sources K``: that many sampled sources (not vertex-transitive networks).
    ranks_here : int, optional
        Ranks on this machine (:func:`ranks_on_this_machine`); default ``size``.

    Raises
    ------
    ResourceError
        The computation would exceed the machine's memory or a sane time.
    """
    here = size if ranks_here is None else ranks_here
    if source is not None or topo.vertex_transitive:
        if sources is not None:
            raise JobError(
                "--sources K samples the sources of a network that is not vertex-transitive; "
                + ("give --source or --sources, not both" if source is not None else
                   f"{topo.spec} is vertex-transitive: one source gives the exact distribution")
            )  # fmt: skip
        check_memory(lambda r: estimate_bfs_bytes(topo, r), size, here, f"BFS on {topo.spec}")
        return "single"
    check_memory(
        lambda r: estimate_all_sources_bytes(topo, r), size, here, f"all-sources BFS on {topo.spec}"
    )
    forms = theory.closed_forms(topo.family, spec_params(topo))
    depths = [cf.value for cf in forms if cf.quantity == "diameter"]
    levels = max([d for d in depths if d > 0] or [64])
    if sources is not None:
        nsrc = check_int("--sources K", sources, 1, topo.num_nodes)
    elif hasattr(topo, "source_orbits"):
        nsrc = topo.source_orbits()[0].size
    else:
        nsrc = topo.num_nodes
    work = nsrc / 64 * topo.num_nodes * topo.degree * levels
    if work > MAX_ALL_SOURCES_WORK:
        afford = affordable_sources(topo, levels)
        what = f"{nsrc:,} sampled sources" if sources is not None else "all-sources BFS"
        raise ResourceError(
            f"{what} on {topo.spec} ({topo.num_nodes:,} nodes, not vertex-transitive) is too "
            f"large for one machine (about {work:.1e} word operations, limit "
            f"{MAX_ALL_SOURCES_WORK:.0e}); it can afford about {afford:,} sources: pass "
            f"--sources K (K <= {afford:,}, an estimate) or --source LABEL for one source"
        )
    return "sample" if sources is not None else "all"


def network_info(
    topo: Topology,
    source: int | None = None,
    comm: Any = None,
    progress: Callable[[int, int], None] | None = None,
    sources: int | None = None,
    seed: int = 0,
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
    sources : int, optional
        Search from this many sources drawn with ``seed`` (:func:`sample_sources`): the
        result is an estimate, and says so.

    Returns
    -------
    dict with the keys documented for ``mpinet info --json``.
    """
    comm = resolve(comm)
    size = comm.Get_size()
    mode = plan_info(topo, size, source, ranks_on_this_machine(comm), sources)
    t0 = time.perf_counter()
    if mode == "single":
        src = topo.identity if source is None else source
        dist = bfs_from(topo, src, comm, progress=progress)
    else:
        src = None
        sample = sample_sources(topo, sources, seed) if mode == "sample" else None
        dist = bfs_all_sources(topo, comm, progress=progress, sources=sample)
    seconds = comm.allreduce(time.perf_counter() - t0, op=max_op())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    rss_max = comm.allreduce(rss, op=max_op())
    rss_sum = comm.allreduce(rss, op=sum_op())
    incl, excl = dist.averages(topo.num_nodes)
    covers_all = mode == "all" or topo.vertex_transitive
    if mode == "all":
        scope = "all ordered pairs (all sources, not vertex-transitive)"
    elif mode == "sample":
        scope = (
            f"ESTIMATE from {sources:,} sampled sources of {topo.num_nodes:,} (seed {seed}): "
            "the largest distance found is a lower bound of the diameter"
        )
    elif topo.vertex_transitive:
        scope = "one source; vertex-transitive, so this is every source's distribution"
    else:
        scope = "one source only (not vertex-transitive): eccentricity, not diameter"
    parts = int(getattr(topo, "num_components", 1))
    if parts > 1:
        scope += (
            f"; {parts} components: distances and averages are within components, "
            "the diameter is the largest component's"
        )
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
            "estimate": mode == "sample",
            "sampled_sources": sources if mode == "sample" else None,
            "diameter_lower_bound": dist.diameter if mode == "sample" else None,
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
