"""Per-hop routers and their registry.

A router (:class:`~mpinet.routing.base.Router`) decides, for all packets at
once, the port each leaves on. :data:`ROUTERS` maps the ``router`` value of a
job to its class; :func:`make_router` builds one for a topology and checks it
applies; :func:`~mpinet.routing.walk.walk` follows routes without contention.
Routers import only ``topology``, ``perm``, ``rng`` and ``errors``.
"""

from __future__ import annotations

import inspect
from typing import Any

from mpinet.errors import RoutingError
from mpinet.lazy import LazyRegistry
from mpinet.routing.base import HopContext, Router
from mpinet.topology.base import Topology

#: every router by its job name: the generic ones, then one module per family; each is
#: imported at its first lookup (mpinet.lazy), so a run imports its own router's module
#: only. ``families`` (the class attribute) is read without importing, for the listings.
ROUTERS: LazyRegistry = LazyRegistry(
    (name, f"mpinet.routing.{mod}", cls, {"families": fams})
    for name, mod, cls, fams in (
        ("shortest", "shortest", "ShortestRouter", ()),
        ("hypercube-ecube", "ecube", "HypercubeEcube", ("hypercube",)),
        ("star-greedy", "star", "StarGreedy", ("star",)),
        ("scc-random", "scc", "SCCRandom", ("scc",)),
        ("scc-greedy", "scc", "SCCGreedy", ("scc",)),
        ("scc-nobacktrack", "scc", "SCCNoBacktrack", ("scc",)),
        ("scc-optimal", "scc_optimal", "SCCOptimal", ("scc",)),
        ("ms-balls-to-boxes", "macrostar", "BallsToBoxes", ("ms",)),
        ("ms-merged", "macrostar", "Merged", ("ms",)),
        ("ms-star-emulation", "macrostar", "StarEmulation", ("ms",)),
        ("ms-two-phase", "macrostar", "TwoPhase", ("ms",)),
        ("ims-two-phase", "ims", "ImsTwoPhase", ("ims",)),
        ("ims-star-emulation", "ims", "ImsStarEmulation", ("ims",)),
        ("cms-clusters", "ims", "CmsClusters", ("cms",)),
        ("fccn-sroute", "fccn", "FccnSRoute", ("fccn",)),
        ("fccn-shortest", "fccn", "FccnShortest", ("fccn",)),
        ("borel-cr", "borel", "BorelCRRouter", ("borel",)),
        ("borel-two-phase", "borel_two_phase", "BorelTwoPhaseRouter", ("borel",)),
        ("borel-table", "borel", "BorelTableRouter", ("borel",)),
        ("ccc", "ccc", "CCCRouter", ("ccc",)),
        ("anynet-min", "anynet_min", "AnynetMinRouter", ()),
        ("dor", "dor", "DimensionOrder", ("mesh", "torus")),
    )
)

__all__ = [
    "ROUTERS",
    "HopContext",
    "Router",
    "available_routers",
    "exact_distance",
    "make_router",
]

#: routers whose ``distance`` is exact without N-sized tables, by family
_CLOSED_FORM = {
    "fccn": "fccn-shortest",
    "ccc": "ccc",
    "hypercube": "hypercube-ecube",
    "mesh": "dor",
    "torus": "dor",
}


def _fits(families: tuple, topo: Topology) -> bool:
    """Whether a router for ``families`` (empty: any) applies to ``topo``'s family."""
    return not families or topo.family in families


def applies(cls: type[Router], topo: Topology) -> bool:
    """Whether router class ``cls`` applies to ``topo``'s family."""
    return _fits(cls.families, topo)


def available_routers(topo: Topology) -> list[str]:
    """Names of the routers that apply to ``topo``, in registry order (read from the
    registry's facts: no router module imported)."""
    return [name for name in ROUTERS if _fits(ROUTERS.fact(name, "families"), topo)]


def make_router(name: str, topo: Topology, faults: Any = None, **options: Any) -> Router:
    """Build router ``name`` for ``topo`` with its ``options``.

    Raises
    ------
    RoutingError
        Unknown name (the message lists the known ones), a router that does
        not apply to the family (lists the families it applies to and the
        routers that do), or an unknown option.
    ResourceError
        The router's tables would not fit (e.g. ``shortest`` on fccn:5).

    ``faults`` (a FaultSet) is given to routers that route around faults
    (``cls.fault_tolerant``); the others are built as usual and the engine
    drops a packet they send towards a failed link ("no route").
    """
    cls = ROUTERS.get(name)
    if cls is None:
        raise RoutingError(f"unknown router {name!r}; known: {', '.join(ROUTERS)}")
    if not applies(cls, topo):
        raise RoutingError(
            f"router {name!r} applies to {', '.join(cls.families)} only, not {topo.spec}; "
            f"routers for {topo.family}: {', '.join(available_routers(topo))}"
        )
    params = inspect.signature(cls.__init__).parameters
    named = [
        p
        for p in list(params)[2:]
        if params[p].kind is inspect.Parameter.KEYWORD_ONLY
        or params[p].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]
    open_ended = cls.__init__ is not Router.__init__ and any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )
    unknown = [o for o in options if o not in named]
    if unknown and not open_ended:
        raise RoutingError(
            f"router {name!r} has no option(s) {', '.join(map(repr, unknown))}; "
            f"its options: {', '.join(named) or 'none'}"
        )
    if faults is not None and cls.fault_tolerant:
        return cls(topo, faults=faults, **options)
    return cls(topo, **options)


def exact_distance(topo: Topology):
    """A function ``(src, dst) -> exact distances`` for ``topo``.

    The closed-form or criterion-based distance of the family's own router
    where one exists (FCCN Thm 4.1, CCC, hypercube), else the ``shortest``
    router's BFS tables (which raise ResourceError when they do not fit).
    """
    name = _CLOSED_FORM.get(topo.family)
    if name in ROUTERS:
        return make_router(name, topo).distance
    return make_router("shortest", topo).distance
