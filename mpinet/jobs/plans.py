"""Plans of ``routes``, ``verify`` and ``deadlock``: estimates checked before work.

The estimator itself (:class:`~mpinet.jobs.resources.Estimate`, the per-layer
parts, :func:`~mpinet.jobs.resources.check` and the available memory) is
:mod:`mpinet.jobs.resources`, shared with ``mpinet run``; each function here
raises a one-line :class:`~mpinet.errors.ResourceError` or returns the estimate. The
plans of the commands that read or write files (``analyze``, ``export``) are in
:mod:`mpinet.jobs.plans_io`, the sweep's in :mod:`mpinet.jobs.sweep_plan`, ``info``'s in
:mod:`mpinet.jobs.plans_info` (which loads neither the routers' tables nor the engine).
"""

from __future__ import annotations

import math
from typing import Any

from mpinet.deadlock.analysis import MAX_EDGES, SAMPLES
from mpinet.deadlock.route_enum import MAX_STATES
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
from mpinet.routing.shortest import ShortestRouter
from mpinet.topology import from_spec
from mpinet.topology.base import Topology
from mpinet.workloads.base import Footprint

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
        try:  # states its tables' size (and refuses those over its limit) without building
            exact = router_tables(ShortestRouter(topo))
        except ResourceError as exc:
            raise ResourceError(f"exact distances for --pairs {kind}: {exc}") from None
    hw = int(getattr(router, "header_width", 0) or 0)
    queues = -(-topo.num_nodes // size) * topo.degree
    if engine and queues >= 2**31:  # the engine's int32 queue indices (engine/state.py)
        raise ResourceError(
            f"--engine on {describe(topo)} is {queues:,} link queues per rank on {size} "
            f"rank(s), over 2**31; way out: {size * (-(-queues // 2**31)) + size} or more ranks, "
            "or no --engine"
        )

    label = f"sample:{pairs}" if kind == "sample" else kind

    def estimate(r: int) -> Estimate:
        est = Estimate(f"routes --pairs {label} on {describe(topo)}")
        if kind in ("to-identity", "from-identity"):  # one BFS from the identity, every rank
            est.add("distances from the identity", 11 * topo.num_nodes)
        est.add("exact distance tables", exact)
        est.add("router tables", router_tables(router))
        est.add("walk batch", min(_WALK_BATCH, -(-pairs // r)) * (_WALK_PAIR_BYTES + 16 * hw))
        if engine:
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


# -- deadlock ---------------------------------------------------------------------------
#: bytes per dependency at the peak of building and searching the dependency graph: the
#: hop keys and their decoding, the dependency and channel arrays, the cycle search's
#: sorted copy (58-75 measured with tracemalloc on star, ms, scc, hypercube, ccc)
DEP_BYTES = 80
#: bytes per route state followed at once, and per hop of its route (its hop keys; 240-270
#: measured per state on star:8 and scc:7 with tracemalloc, 4.2 KiB with tie=random)
STATE_BYTES, STATE_HOP_BYTES = 200, 8
#: bytes per node of the translations (symmetry: node classes, relative ids, samples)
TRANSLATE_BYTES = 100
#: the route follower's own tables (random choices' packet ids, router temporaries)
FOLLOW_BASE = 32 << 20
#: a random router is followed through this many times its degree more states
#: (measured 2.3-2.4 x degree: shortest tie=random on star:8, scc-random on scc:7)
RANDOM_BRANCH = 2.5
#: a dependency costs about this many route hops of work (its sorts, the cycle search)
DEP_WORK = 15


def _random_router(router: Any) -> bool:
    """Whether the router can make random choices (``tie``/``choice`` = random, scc-random)."""
    opts = getattr(router, "options", {}) or {}
    return "random" in str(getattr(router, "name", "")) or "random" in opts.values()


def deadlock_dependencies(topo: Topology, setup: Any) -> int:
    """The estimated dependencies of a deadlock analysis (:func:`estimate_deadlock`)."""
    links, hops = topo.num_nodes * topo.degree, mean_hops(topo)
    per_turn = min(setup.classes, math.ceil(1.5 * hops)) if setup.top is not None else 1
    if getattr(setup, "per_turn", None) is not None:  # VC level: the policy's own count
        per_turn = setup.per_turn(hops)
    return links * max(topo.degree - 1, 1) * per_turn


def estimate_deadlock(topo: Topology, router: Any, setup: Any) -> Estimate:
    """Memory of ``mpinet deadlock`` (on rank 0) and its work, from the inputs alone.

    Dependencies: every directed link times its ``degree - 1`` turns (the number for
    minimal routers on star, ms, scc and ccc; fewer for e-cube), times the hop classes a
    turn is used in with ``--buffer-classes hops`` (1.5 x the mean route length, at most
    the classes there are). Routes: ``(targets + 4 checks) x N`` with symmetry, ``N^2``
    for every destination, each ``mean_hops`` long; at most ``2**20`` route states at
    once (times ``2.5 x degree`` for a random router).

    Parameters
    ----------
    topo, router : the network and the built router (its tables are not built yet)
    setup : :class:`mpinet.deadlock.analysis.Setup`
    """
    n, deg = topo.num_nodes, topo.degree
    links = n * deg
    hops = mean_hops(topo)
    deps = deadlock_dependencies(topo, setup)
    branch = RANDOM_BRANCH * deg if _random_router(router) else 1.0
    rows = []
    if setup.mode == "symmetry":
        targets = len(topo.translation_targets)
        rows.append((targets + SAMPLES) * n)
    if setup.mode == "all" or setup.fallback:
        rows.append(n * (n - 1))
    pairs = max(rows)
    est = Estimate(f"deadlock analysis of {getattr(router, 'name', router)} on {describe(topo)}")
    est.add("neighbour table", links * 12)  # int64, and the int32 table it is made from
    est.add("router tables", router_tables(router))
    # one target's sources in chunks, or (every destination) whole destinations per chunk
    every = setup.mode == "all" or setup.fallback
    states = min(MAX_STATES, n * n if every else n) * branch
    est.add("route states", FOLLOW_BASE + states * (STATE_BYTES + STATE_HOP_BYTES * hops), "follow")
    if setup.mode == "symmetry":
        # the hop keys to each target, the translations, the keys made for every node
        keys = len(topo.translation_targets) * n * 8 * (hops if setup.top is not None else 2)
        est.add("hop keys", keys + 16 * (deps + links), "follow")
        est.add("translations", n * TRANSLATE_BYTES, "follow")
    est.add("dependency graph", DEP_BYTES * deps + 8 * links, "graph")
    est.work = pairs * hops * branch + DEP_WORK * deps
    est.work_unit = "route hops (a dependency counts as 15)"
    return base(est)


def plan_deadlock(
    topo: Topology,
    router: Any,
    setup: Any,
    size: int,
    ranks_here: int | None = None,
) -> Estimate:
    """Check ``mpinet deadlock`` before a route is followed: dependencies, then memory.

    Refuses (one line, with the way out) an estimated dependency graph over
    :data:`~mpinet.deadlock.analysis.MAX_EDGES` edges, and an analysis whose
    estimate does not fit this machine next to the other ranks here.
    """
    check_ids(topo, size)
    est = estimate_deadlock(topo, router, setup)
    ways = "a smaller network"
    if setup.mode == "all" and topo.translation_targets is not None:
        ways = "--destinations symmetry, or a smaller network"
    deps = deadlock_dependencies(topo, setup)
    if deps > MAX_EDGES:
        raise ResourceError(
            f"{est.what}: its dependency graph would have about {deps:,} dependencies "
            f"(estimated from {topo.num_nodes * topo.degree:,} links), over the limit of "
            f"{MAX_EDGES:,}; way out: {ways}"
        )
    return check(lambda r: est, size, ranks_here, smaller=ways, serial=True)
