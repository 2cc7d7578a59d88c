"""Broadcast and multinode broadcast as workload kinds (see :mod:`mpinet.workloads.base`).

Node programs for the collective engine; the registry (:mod:`mpinet.workloads.registry`)
imports this module when a job asks for one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpinet.engine.models import Model
from mpinet.errors import JobError
from mpinet.routing.base import Router
from mpinet.topology.base import Topology
from mpinet.workloads import baseline_broadcast as bb
from mpinet.workloads import scc_broadcast as sb
from mpinet.workloads.base import COLLECTIVE, Footprint, WorkloadKind
from mpinet.workloads.broadcast import FloodingBroadcast, TreeBroadcast
from mpinet.workloads.kinds import others_unused
from mpinet.workloads.mnb_routed import RoutedMNB
from mpinet.workloads.mnb_te import TreeMNB

#: broadcast algorithm -> (family it needs or None, one message only,
#: node program factory ``(topo, source, messages, interval)``)
BROADCASTS: dict[str, tuple[str | None, bool, Callable[..., Any]]] = {
    "flooding": (None, True, lambda t, s, m, i: FloodingBroadcast(t, s)),
    "tree": (None, True, lambda t, s, m, i: TreeBroadcast(t, s)),
    "scc-one-port": ("scc", False, sb.SCCOnePortBroadcast),
    "scc-multi-port": ("scc", False, sb.SCCMultiPortBroadcast),
    "hypercube": ("hypercube", False, lambda t, s, m, i: bb.HypercubeBroadcast(t, s, m)),
    "greedy": (None, False, lambda t, s, m, i: bb.GreedyOnePortBroadcast(t, s, m)),
    "ccc": ("ccc", False, lambda t, s, m, i: bb.CCCBroadcast(t, s, m)),
}


class BroadcastKind(WorkloadKind):
    """One source broadcasts ``messages`` messages; ``algorithm`` from :data:`BROADCASTS`."""

    names = ("broadcast",)
    engine = COLLECTIVE

    @classmethod
    def footprint(cls, workload: dict, topo: Topology) -> Footprint:
        return Footprint(messages=int(workload["messages"] or 1))

    @classmethod
    def unused_keys(cls, kind: str, workload: dict) -> dict[str, str]:
        out = others_unused(kind, ("algorithm", "messages", "interval", "source"))
        if workload["algorithm"] not in ("scc-one-port", "scc-multi-port"):
            out["interval"] = "applies to algorithm = 'scc-one-port' or 'scc-multi-port' only"
        return out

    def build(self, model: Model, router: Router) -> None:
        super().build(model, router)
        w, topo = self.workload, self.topo
        algo = w["algorithm"] or ("flooding" if model.kind == "all-port" else "tree")
        if algo not in BROADCASTS:
            raise JobError(
                f"workload.algorithm must be one of {', '.join(BROADCASTS)}; got {algo!r}"
            )
        need, single, make = BROADCASTS[algo]
        source = topo.identity if w["source"] is None else topo.parse_label(str(w["source"]))
        msgs = int(w["messages"])
        if msgs < 1:
            raise JobError(f"workload.messages must be >= 1, got {msgs}")
        if single and msgs != 1:
            raise JobError(f"workload.algorithm {algo!r} broadcasts one message (messages = 1)")
        if need and topo.family != need:
            raise JobError(f"workload.algorithm {algo!r} needs a {need} topology, not {topo.spec}")
        self.program = make(topo, source, msgs, w["interval"])
        self.router_name = f"broadcast-{algo}"  # the trace's and summary's, not [router]'s
        self.ignores_router = f"the broadcast algorithm {algo!r} is a node program, not routed"


def _tree_mnb(topo: Topology, model: Model, router: Router) -> TreeMNB:
    if model.kind not in ("sdc", "one-port", "all-port"):
        raise JobError(
            f"mnb algorithm 'tree' runs under sdc, one-port or all-port, not {model.name}"
        )
    return TreeMNB(topo, model.kind)


#: mnb algorithm -> node program factory ``(topo, model, router)``
MNBS: dict[str, Callable[[Topology, Model, Router], Any]] = {
    "tree": _tree_mnb,  # star, ms: translated spanning trees
    "routed": lambda t, m, r: RoutedMNB(t, r, m),  # any topology, along the job's router
}


class MNBKind(WorkloadKind):
    """Multinode broadcast: ``tree`` (star, ms; the default there) or ``routed``."""

    names = ("mnb",)
    engine = COLLECTIVE

    @classmethod
    def footprint(cls, workload: dict, topo: Topology) -> Footprint:
        return Footprint(messages=topo.num_nodes)  # every node's message, at every node

    @classmethod
    def unused_keys(cls, kind: str, workload: dict) -> dict[str, str]:
        return others_unused(kind, ("algorithm",))

    def build(self, model: Model, router: Router) -> None:
        super().build(model, router)
        topo = self.topo
        algo = self.workload["algorithm"] or ("tree" if topo.family in ("star", "ms") else "routed")
        if algo not in MNBS:
            raise JobError(f"workload.algorithm for mnb must be {' or '.join(MNBS)}, got {algo!r}")
        self.program = MNBS[algo](topo, model, router)
        # the trace's and summary's name: a routed MNB follows the job's router
        self.router_name = f"mnb-{algo}" + (f" via {router.name}" if algo == "routed" else "")
        if algo != "routed":
            self.ignores_router = (
                f"mnb algorithm {algo!r} sends along its own spanning trees; set "
                "workload.algorithm = 'routed' to follow [router]"
            )
