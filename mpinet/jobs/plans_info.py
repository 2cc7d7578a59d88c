"""Plan of ``info``: its BFS checked against this machine before it starts.

Apart from :mod:`mpinet.jobs.plans` so that ``mpinet info`` loads the BFS and the
machine's limits only, not the engine, the workloads and the deadlock analysis the other
plans size.
"""

from __future__ import annotations

from mpinet import theory
from mpinet.engine import bfs
from mpinet.engine.info import MAX_ALL_SOURCES_WORK, bfs_levels, spec_params, too_much_work
from mpinet.jobs.estimate import Estimate, describe, mean_hops
from mpinet.jobs.machine import check, check_ids
from mpinet.topology.base import Topology


def plan_info(
    topo: Topology,
    size: int,
    source: int | None,
    ranks_here: int | None,
    sources: int | None = None,
) -> Estimate:
    """Check ``mpinet info``'s BFS against this machine before it starts.

    The memory is the BFS's own estimate (:mod:`mpinet.engine.bfs`), checked first. The
    work of the all-sources BFS (not vertex-transitive, no ``--source``) is bounded below
    with at least ``N / orbit_group_order`` sources, so a hopeless case is refused
    before the orbits themselves are computed (which takes minutes on fccn:8). Its depth
    is the papers' diameter, or where they give none (file networks) the deepest of a
    few sampled BFS (:func:`mpinet.engine.info.bfs_levels`): a path is as deep as it is
    long, not ``log N``.
    """
    check_ids(topo, size)
    single = source is not None or topo.vertex_transitive
    n = topo.num_nodes
    fn = bfs.estimate_bfs_bytes if single else bfs.estimate_all_sources_bytes
    what = "BFS" if single else "all-sources BFS"

    def estimate(r: int) -> Estimate:
        est = Estimate(f"{what} on {describe(topo)}")
        est.add("BFS state", fn(topo, r))
        est.work = float(n) * topo.degree / r
        est.work_unit = "neighbour look-ups per rank"
        return est

    forms = theory.closed_forms(topo.family, spec_params(topo))
    sampled = not single and not any(cf.quantity == "diameter" for cf in forms)
    # the papers' diameter, about, costs nothing: checked first; a sampled depth builds the
    # port table, so memory first
    est = check(estimate, size, ranks_here) if sampled else None
    if not single:
        nsrc = sources or -(-n // int(getattr(topo, "orbit_group_order", 1)))
        levels = float(bfs_levels(topo)[0]) if sampled else max(1.0, 2 * mean_hops(topo))
        work = -(-nsrc // 64) * n * topo.degree * levels  # a word costs 64 sources
        if work > MAX_ALL_SOURCES_WORK:
            raise too_much_work(topo, sources, work, levels, sampled, size)
    return est if est is not None else check(estimate, size, ranks_here)
