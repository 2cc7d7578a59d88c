"""Exact metrics of a network (``mpinet info``): BFS, never a formula.

The papers' closed forms (:mod:`mpinet.theory`) are evaluated beside every
exact figure and each is marked as agreeing or not.
"""

from __future__ import annotations

import contextlib
import re
import resource
import socket
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from mpinet import rng, theory
from mpinet.engine.bfs import (
    bfs_all_sources,
    bfs_from,
    check_memory,
    estimate_all_sources_bytes,
    estimate_bfs_bytes,
    port_table,
)
from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.errors import JobError, ResourceError
from mpinet.topology.base import Topology
from mpinet.values import check_int

#: the counter-based stream of ``--sources K``'s sample (:mod:`mpinet.rng`)
STREAM_SOURCES = 13
#: bit-parallel BFS work (word operations) above which all-sources is refused
MAX_ALL_SOURCES_WORK = 4e10
#: word operations a second of the bit-parallel BFS on one rank (1.8-2.2e8 measured on
#: paths, star:8 and scc:7 with 16-word batches): the time a refusal states
BFS_RATE = 2e8
#: BFS from this many sampled sources (a queue each, ``O(N * degree)``) estimate the depth
#: of a network with no closed-form diameter (file networks) before an all-sources search
DEPTH_SAMPLES = 4
#: the sampled depths of the networks planned in this process (a plan and its run share it)
_DEPTHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@njit(cache=True)
def _eccentricity(table: np.ndarray, src: int, dist: np.ndarray, queue: np.ndarray) -> int:
    """Eccentricity of ``src`` by one queue BFS over the ``(degree, N + 1)`` port table
    (:func:`mpinet.engine.bfs.port_table`; the sentinel ``N`` is a missing port)."""
    n = table.shape[1] - 1
    dist[:] = -1
    dist[src] = 0
    queue[0] = src
    head, tail = 0, 1
    while head < tail:
        v = queue[head]
        head += 1
        d = dist[v] + 1
        for p in range(table.shape[0]):
            w = table[p, v]
            if w < n and dist[w] < 0:
                dist[w] = d
                queue[tail] = w
                tail += 1
    return int(dist[queue[tail - 1]])


def sample_depth(topo: Topology, samples: int = DEPTH_SAMPLES, seed: int = 0) -> int:
    """The largest eccentricity of ``samples`` sources drawn as ``--sources`` draws them.

    Every batch of an all-sources BFS searches at least that deep (the diameter is at
    least it and at most twice any eccentricity). Work ``samples * N * degree``, memory
    the port table the all-sources BFS builds anyway (check it first) and ``8 N``.
    """
    table = port_table(topo)
    n = topo.num_nodes
    dist = np.empty(n + 1, table.dtype)
    queue = np.empty(n + 1, table.dtype)
    srcs = sample_sources(topo, min(samples, n), seed)
    return max(_eccentricity(table, int(s), dist, queue) for s in srcs)


def bfs_levels(topo: Topology) -> tuple[int, bool]:
    """Levels an all-sources BFS of ``topo`` searches, and whether they were sampled:
    the papers' diameter + 1 where there is one, else :func:`sample_depth` + 1."""
    forms = theory.closed_forms(topo.family, spec_params(topo))
    depths = [int(cf.value) for cf in forms if cf.quantity == "diameter" and cf.value > 0]
    if depths:
        return max(depths) + 1, False
    try:
        return _DEPTHS[topo], True
    except (KeyError, TypeError):
        pass
    levels = sample_depth(topo) + 1
    with contextlib.suppress(TypeError):  # not weakly referable: sampled again next time
        _DEPTHS[topo] = levels
    return levels, True


def duration(seconds: float) -> str:
    """``2.5 hours``, ``14 minutes`` or ``40 s``."""
    if seconds >= 5400:
        return f"{seconds / 3600:,.1f} hours"
    if seconds >= 90:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds:.0f} s"


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
    levels, sampled = bfs_levels(topo)  # after the memory check: it builds the port table
    if sources is not None:
        nsrc = check_int("--sources K", sources, 1, topo.num_nodes)
    elif hasattr(topo, "source_orbits"):
        nsrc = topo.source_orbits()[0].size
    else:
        nsrc = topo.num_nodes
    # a word of 64 sources costs the same however few of its bits are sources
    work = -(-nsrc // 64) * topo.num_nodes * topo.degree * levels
    if work > MAX_ALL_SOURCES_WORK:
        raise too_much_work(topo, nsrc if sources is not None else None, work, levels, sampled,
                            size)  # fmt: skip
    return "sample" if sources is not None else "all"


def too_much_work(
    topo: Topology, sampled_sources: int | None, work: float, levels: float, sampled: bool,
    size: int,
) -> ResourceError:  # fmt: skip
    """The refusal of a BFS over :data:`MAX_ALL_SOURCES_WORK`: its work and time, the depth
    where it was sampled, and the sources it could afford (``--sources K``)."""
    afford = affordable_sources(topo, levels)
    what = f"BFS from {sampled_sources:,} sampled sources" if sampled_sources else "all-sources BFS"
    depth = f", depth about {int(levels) - 1:,} by {DEPTH_SAMPLES} sampled BFS" if sampled else ""
    way = (
        f"it can afford about {afford:,} sources; way out: --sources K (K <= {afford:,}; an "
        "estimate), --source LABEL for one source's distances, or a smaller network"
        if afford
        else "not even 64 sources (one word of the bit-parallel search) fit; way out: "
        "--source LABEL for one source's distances, or a smaller network"
    )
    return ResourceError(
        f"{what} on {topo.spec} ({topo.num_nodes:,} nodes, degree {topo.degree}), not "
        f"vertex-transitive{depth}, is {'about' if sampled else 'at least'} {work:.1e} word "
        f"operations (limit "
        f"{MAX_ALL_SOURCES_WORK:.0e}; about {duration(work / BFS_RATE / size)} on {size} "
        f"rank(s)); {way}"
    )


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
        levels = bfs_levels(topo)[0]  # progress level by level: a deep batch takes minutes
        dist = bfs_all_sources(topo, comm, progress=progress, sources=sample, levels=levels)
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
