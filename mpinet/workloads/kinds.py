"""The built-in workload kinds of a job (see :mod:`mpinet.workloads.base`).

Unicast patterns, total exchange and star emulation run on the unicast engine;
broadcast and MNB are node programs for the collective engine. Each class
reads its keys of the job's ``[workload]`` section; the error messages name
the key and the valid values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mpinet.engine.models import Model
from mpinet.errors import JobError
from mpinet.routing.base import Router
from mpinet.topology.base import Topology
from mpinet.workloads import baseline_broadcast as bb
from mpinet.workloads import scc_broadcast as sb
from mpinet.workloads.base import COLLECTIVE, WorkloadKind
from mpinet.workloads.broadcast import FloodingBroadcast, TreeBroadcast
from mpinet.workloads.emulate_star import MODE_MODEL, EmulateStar, packet_checks
from mpinet.workloads.mnb_routed import RoutedMNB
from mpinet.workloads.mnb_te import TreeMNB
from mpinet.workloads.te import build_te, te_lower_bound
from mpinet.workloads.unicast import PATTERNS, Unicast


class UnicastKind(WorkloadKind):
    """The unicast traffic patterns (:class:`~mpinet.workloads.unicast.Unicast`)."""

    names = PATTERNS

    def __init__(self, kind: str, workload: dict, topo: Topology, seed: int = 0) -> None:
        super().__init__(kind, workload, topo, seed)
        w = workload
        target = None if w["target"] is None else topo.parse_label(str(w["target"]))
        self.traffic = Unicast(
            topo,
            kind,
            packets=w["packets"],
            injection=w["injection"],
            rate=float(w["rate"]),
            steps=w["steps"],
            seed=self.seed,
            target=target,
            locality=w["locality"],
        )


class TotalExchangeKind(WorkloadKind):
    """Total exchange (:mod:`mpinet.workloads.te`): ``schedule`` brings its own router."""

    names = ("te",)

    def build(self, model: Model, router: Router) -> None:
        self.model = model
        self.router, self.traffic = build_te(self.topo, model, self.workload["algorithm"], router)

    def summarize(
        self, steps: int, packets: np.ndarray | None, comm: Any
    ) -> tuple[dict[str, dict], list[dict]]:
        """How the exchange was built, its exact lower bound and the measured ratio to it."""
        lb = te_lower_bound(self.topo, self.model)
        algo = "schedule" if self.router.name == "te-schedule" else "routed"
        return {"te": {"algorithm": algo, "lower_bound": lb, "ratio": round(steps / lb, 4)}}, []


class EmulateStarKind(WorkloadKind):
    """A star algorithm on a macro-star (:mod:`mpinet.workloads.emulate_star`)."""

    names = ("emulate-star",)

    def build(self, model: Model, router: Router) -> None:
        w = self.workload
        mode = w["emulation"] or ("all-port" if model.kind == "all-port" else "sdc")
        if MODE_MODEL.get(mode, model.kind) != model.kind:
            raise JobError(
                f"workload.emulation = {mode!r} runs under model {MODE_MODEL[mode]!r}, "
                f"not {model.name!r}; set model = {MODE_MODEL[mode]!r}"
            )
        self.model = model
        self.traffic = EmulateStar(self.topo, w["algorithm"] or "all-dims", mode)
        self.router = self.traffic.router

    def summarize(
        self, steps: int, packets: np.ndarray | None, comm: Any
    ) -> tuple[dict[str, dict], list[dict]]:
        """Star steps, MS steps beside the schedule and the theorem; per-packet checks."""
        em = self.traffic
        paper, source = em.theorem()
        checks = packet_checks(em, packets, comm)
        checks.append(
            {
                "name": "MS steps equal the emulation schedule and are within the theorem",
                "expected": em.promised_steps(),
                "measured": int(steps),
                "ok": steps == em.promised_steps() and steps <= paper,
                "detail": f"{source}: {paper}",
            }
        )
        section = {
            "algorithm": em.algo.name,
            "mode": em.mode,
            "star_steps": em.star_steps(),
            "ms_steps": int(steps),
            "schedule_steps": em.promised_steps(),
            "paper_steps": paper,
            "paper_source": source,
            "slowdown": round(steps / max(em.star_steps(), 1), 4),
        }
        return {"emulation": section}, checks


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

    def build(self, model: Model, router: Router) -> None:
        super().build(model, router)
        topo = self.topo
        algo = self.workload["algorithm"] or ("tree" if topo.family in ("star", "ms") else "routed")
        if algo not in MNBS:
            raise JobError(f"workload.algorithm for mnb must be {' or '.join(MNBS)}, got {algo!r}")
        self.program = MNBS[algo](topo, model, router)


#: every built-in kind, in the order the registry lists them
BUILTIN = (UnicastKind, TotalExchangeKind, EmulateStarKind, BroadcastKind, MNBKind)
