"""Static deadlock analysis at virtual-channel level (wormhole and virtual cut-through).

A channel is a ``(link, VC)`` pair: the VC's flit buffer at the far end of a
directed link. A worm (or a cut-through packet) that holds ``(l1, v1)`` and is
not delivered by its next hop waits for a VC of the next link ``l2`` that its
policy allows (:mod:`mpinet.routing.vc_policies`): a dependency
``(l1, v1) -> (l2, v2)`` for every such ``v2`` — all V of them under ``any``,
one under ``hops`` and ``negative-hop`` (Dally & Seitz 1987). A hop into the
destination takes no VC. With an acyclic graph no run can deadlock whatever the
buffer sizes; a cycle is printed as ``(node, port, VC)`` triples.

The same machinery builds the packet-buffer graph
(:mod:`mpinet.deadlock.analysis`); here the route follower tracks the
policy's state (``negative-hop``: the negative hops so far). The graph with V
VCs is a subgraph of the one with V + 1 for every policy here (``any`` adds
VCs; the others never use the extra ones), so the smallest V that makes it
acyclic is the policy's :meth:`~mpinet.routing.vc_policies.VCPolicy.needed`, or
none when that graph has a cycle (``any`` on a router whose one-VC graph has one).
"""

from __future__ import annotations

import math
import time
from typing import Any

from mpinet.deadlock.analysis import Analysis, Setup, graph, graph_facts, search
from mpinet.deadlock.routes import Progress, quiet
from mpinet.deadlock.vc_need import follow, plan_mode, requirement_of
from mpinet.errors import RoutingError
from mpinet.model_names import SWITCHING
from mpinet.routing.base import Router
from mpinet.routing.vc_policies import VC_POLICIES, make_vc_policy
from mpinet.routing.walk import default_max_hops
from mpinet.topology.base import Topology


def analyze_vc(
    topo: Topology,
    router: Router,
    policy: str,
    *,
    vcs: int | None = None,
    switching: str = "wormhole",
    max_hops: int | None = None,
    destinations: str = "auto",
    seed: int = 0,
    progress: Progress = quiet,
) -> Analysis:
    """Build and check the (link, VC) dependency graph of ``router`` under ``policy``.

    Parameters
    ----------
    policy : a name of :data:`~mpinet.routing.vc_policies.VC_POLICIES`
    vcs : V; None: the policy's :meth:`needed` (the smallest V that can be acyclic)
    switching : ``wormhole`` or ``cut-through`` (the same dependencies: a blocked
        packet holds its VC in both), or ``store-and-forward`` with VCs
    max_hops, destinations, seed, progress : as :func:`deadlock_analysis.analyze`
        (``max_hops``: the longest route followed)

    Returns
    -------
    Analysis at VC level, whose ``report`` has ``acyclic``, ``cycle`` (``node``,
    ``port``, ``next``, ``vc``), ``vcs``, ``vcs_needed``, ``smallest_vcs`` (None:
    no V makes the graph acyclic), ``requirement`` and the graph's sizes.

    Raises
    ------
    RoutingError
        An unknown policy or switching, ``vcs`` below what the policy needs.
    """
    t0 = time.perf_counter()
    if switching not in SWITCHING:
        raise RoutingError(f"switching must be one of {', '.join(SWITCHING)}, got {switching!r}")
    if policy not in VC_POLICIES:
        raise RoutingError(f"unknown vc_policy {policy!r}; valid: {', '.join(VC_POLICIES)}")
    progress("building the neighbour table", 0, 1)
    # the follower's classes do not depend on V: follow once, with V = 1 if none is given
    pol = make_vc_policy(policy, topo, 1 if vcs is None else vcs)
    fw = follow(
        pol, router, seed=seed, max_hops=max_hops, destinations=destinations,
        progress=progress, every_node=True,
    )  # fmt: skip
    req = requirement_of(pol, fw)
    v = req.vcs if vcs is None else pol.vcs
    if v < req.vcs:
        raise RoutingError(
            f"vc_policy {policy!r} needs vcs >= {req.vcs} for {router.name} on {topo.spec} "
            f"({req.why}); got vcs = {v}"
        )
    res, acyclic, cycle, core = _at(topo, make_vc_policy(policy, topo, v), fw, progress)
    smallest = req.vcs if acyclic else None
    if not acyclic and not pol.monotone:  # pragma: no cover (every policy here is monotone)
        smallest = _search(topo, policy, fw, v, progress)
    res.report = {
        "spec": topo.spec,
        "router": router.name,
        "options": {k: x for k, x in router.options.items() if k != "max_table_bytes"},
        "switching": switching,
        "vc_policy": policy,
        "vcs": v,
        "vcs_given": vcs is not None,
        "vcs_needed": req.vcs,
        # fewer than needed cannot serve the routes; a monotone policy's graph is acyclic
        # for every V >= needed or for none
        "smallest_vcs": smallest,
        "requirement": req.as_dict(),
        "colours": getattr(pol, "colours", None),
        "max_hops": None,
        **graph_facts(fw.f, fw.mode, res, acyclic, cycle, core),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return res


def _at(topo: Topology, pol: Any, fw: Any, progress: Progress) -> tuple:
    """The graph with ``pol.vcs`` VCs from the followed hops: (Analysis, acyclic, cycle, core)."""
    progress("building the dependency graph", 0, 1)
    src, dst, channels = graph(fw.f, fw.keys, pol.tracker(fw.tracker.limit))
    res = Analysis(topo, pol.vcs, src, dst, channels, vc_level=True)
    return (res, *search(res, progress))


#: VCs above the needed ones a policy that is not monotone is tried with
SEARCH_VCS = 16


def _search(topo: Topology, policy: str, fw: Any, v: int, progress: Progress) -> int | None:
    """The smallest V above ``v`` (at most :data:`SEARCH_VCS` more) with an acyclic graph."""
    for w in range(v + 1, v + 1 + SEARCH_VCS):
        if _at(topo, make_vc_policy(policy, topo, w), fw, progress)[1]:
            return w
    return None


def vc_setup(policy: Any, max_hops: int | None = None, destinations: str = "auto") -> Setup:
    """What :func:`analyze_vc` will follow, for the plan (nothing followed): the mode,
    the route limit and the dependencies per turn from the mean route length (``any``:
    V x V; ``hops``: 1.5 x mean hops, as hop classes; the counting policies about half)."""
    mode, fallback = plan_mode(policy, destinations, every_node=True)
    limit = default_max_hops(policy.topo) if max_hops is None else int(max_hops)
    v = policy.vcs
    if policy.name == "any":
        return Setup(mode, fallback is not None, None, limit, v, lambda hops: v * v)
    half = policy.name != "hops"

    def per_turn(hops: float) -> int:
        return math.ceil(0.75 * hops) + 1 if half else math.ceil(1.5 * hops)

    return Setup(mode, fallback is not None, limit, limit, limit + 1, per_turn)
