"""Plans of ``mpinet info``, ``routes`` and ``verify``: their estimates, checked before work.

The estimator itself (:class:`~mpinet.jobs.resources.Estimate`, the per-layer
parts, :func:`~mpinet.jobs.resources.check` and the available memory) is
:mod:`mpinet.jobs.resources`, shared with ``mpinet run``; each function here
raises a one-line :class:`~mpinet.errors.ResourceError` or returns the estimate.
"""

from __future__ import annotations

from typing import Any

from mpinet.errors import ResourceError
from mpinet.jobs.resources import (
    Estimate,
    base,
    check,
    check_ids,
    collective_state,
    describe,
    engine_state,
    mean_hops,
    packets_state,
    router_tables,
)
from mpinet.topology.base import Topology


def plan_info(topo: Topology, size: int, source: int | None, ranks_here: int | None) -> Estimate:
    """Check ``mpinet info``'s BFS against this machine before it starts.

    The memory is the BFS's own estimate (:mod:`mpinet.engine.bfs`). The work of
    the all-sources BFS (not vertex-transitive, no ``--source``) is bounded below
    with at least ``N / orbit_group_order`` sources, so a hopeless case is refused
    before the orbits themselves are computed (which takes minutes on fccn:8).
    """
    from mpinet.engine import bfs
    from mpinet.engine.info import MAX_ALL_SOURCES_WORK

    check_ids(topo, size)
    single = source is not None or topo.vertex_transitive
    n = topo.num_nodes
    if not single:
        nsrc = -(-n // int(getattr(topo, "orbit_group_order", 1)))
        levels = max(1.0, 2 * mean_hops(topo))  # the diameter where the papers give one
        work = nsrc / 64 * n * topo.degree * levels
        if work > MAX_ALL_SOURCES_WORK:
            raise ResourceError(
                f"all-sources BFS on {describe(topo)}, not vertex-transitive, is at least "
                f"{work:.1e} word operations (limit {MAX_ALL_SOURCES_WORK:.0e}); way out: "
                "--source LABEL for one source's distances, or a smaller network"
            )
    fn = bfs.estimate_bfs_bytes if single else bfs.estimate_all_sources_bytes
    what = "BFS" if single else "all-sources BFS"

    def estimate(r: int) -> Estimate:
        est = Estimate(f"{what} on {describe(topo)}")
        est.add("BFS state", fn(topo, r))
        est.work = float(n) * topo.degree / r
        est.work_unit = "neighbour look-ups per rank"
        return est

    return check(estimate, size, ranks_here)


#: pairs ``mpinet routes`` enumerates at most, whatever the kind (``all`` had this cap)
MAX_PAIRS = 50_000_000
#: pairs walked per batch (``engine.routes``), and bytes per pair of one batch's arrays
_WALK_BATCH, _WALK_PAIR_BYTES = 1 << 18, 400


def plan_routes(
    topo: Topology,
    router: Any,
    kind: str,
    pairs: int,
    size: int,
    ranks_here: int | None = None,
    *,
    engine: bool = False,
) -> Estimate:
    """Check ``mpinet routes``: the pair count, then memory on this machine.

    Parameters
    ----------
    topo, router
        The network and the built router (``table_bytes``, ``header_width``).
    kind, pairs : str, int
        From :func:`mpinet.engine.routes.parse_pairs`.
    size, ranks_here : int
        Ranks of the job and on this machine.
    engine : bool
        ``--engine``: every pair is also one packet on the engine, all at step 0.
    """
    check_ids(topo, size, pairs, "pair ids")
    if pairs > MAX_PAIRS:
        raise ResourceError(
            f"--pairs {'sample:K' if kind == 'sample' else kind} on {describe(topo)} is "
            f"{pairs:,} pairs (limit {MAX_PAIRS:,}); "
            "way out: --pairs sample:K with K <= 50,000,000, or a smaller network"
        )
    exact = 0
    if kind not in ("to-identity", "from-identity") and topo.family not in (
        "fccn",
        "ccc",
        "hypercube",
    ):
        from mpinet.routing.shortest import ShortestRouter

        try:  # states its tables' size (and refuses those over its limit) without building
            exact = router_tables(ShortestRouter(topo))
        except ResourceError as exc:
            raise ResourceError(f"exact distances for --pairs {kind}: {exc}") from None
    hw = int(getattr(router, "header_width", 0) or 0)

    label = f"sample:{pairs}" if kind == "sample" else kind

    def estimate(r: int) -> Estimate:
        est = Estimate(f"routes --pairs {label} on {describe(topo)}")
        if kind in ("to-identity", "from-identity"):  # one BFS from the identity, every rank
            est.add("distances from the identity", 11 * topo.num_nodes)
        est.add("exact distance tables", exact)
        est.add("router tables", router_tables(router))
        est.add("walk batch", min(_WALK_BATCH, -(-pairs // r)) * (_WALK_PAIR_BYTES + 16 * hw))
        if engine:
            from mpinet.workloads.base import Footprint

            est.add("engine pairs", 4 * 24 * pairs)  # every rank makes all pairs, keeps its own
            engine_state(est, topo, r, {"kind": "all-port"})
            packets_state(est, topo, r, Footprint(pairs, pairs, pairs), hw)
        # route hops, plus the BFS behind the distance tables (every rank builds them)
        est.work = pairs * mean_hops(topo) / r + (topo.num_nodes * topo.degree if exact else 0)
        est.work_unit = "route hops and table look-ups per rank"
        return base(est)

    return check(estimate, size, ranks_here)


def estimate_check(check: Any, topo: Topology, size: int) -> Estimate:
    """Memory per rank of one ``mpinet verify`` check (a catalogue entry).

    Collectives hold a (node, message) table: N messages for a multinode broadcast, a
    few for the broadcasts. Checks with their own runner run on the unicast engine:
    N (N - 1) packets for a total exchange (all at once when routed), one per star
    transmission (N per dimension) for an emulation.
    """
    from mpinet.workloads.base import Footprint

    n, name = topo.num_nodes, check.collective
    est = Estimate(f"verify check {check.topology} {name} ({check.model})")
    if check.run is None:
        collective_state(est, topo, size, n if name.startswith("multinode") else 4)
        return base(est)
    if name.startswith("total exchange"):
        every = n * (n - 1)
        flight = every if "routed" in name else min(every, 4 * n * topo.degree)
        fp = Footprint(every, flight, flight)
    else:
        fp = Footprint(n * topo.degree, n * topo.degree, n * topo.degree)
    engine_state(est, topo, size, {"kind": check.model})
    packets_state(est, topo, size, fp, 2)
    return base(est)


def plan_verify(checks: list, size: int, ranks_here: int | None = None) -> list[Estimate]:
    """Check every selected ``verify`` check against this machine before the first runs."""
    from mpinet.topology import from_spec

    out = []
    for c in checks:
        topo = from_spec(c.topology)
        check_ids(topo, size)
        out.append(
            check(
                lambda r, c=c, topo=topo: estimate_check(c, topo, r),
                size,
                ranks_here,
                smaller="--only TEXT to run the checks that fit",
            )
        )
    return out
