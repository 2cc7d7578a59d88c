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
from mpinet.errors import JobError, WorkloadError
from mpinet.routing.base import Router
from mpinet.topology.base import Topology
from mpinet.workloads import baseline_broadcast as bb
from mpinet.workloads import scc_broadcast as sb
from mpinet.workloads.base import COLLECTIVE, Footprint, WorkloadKind
from mpinet.workloads.broadcast import FloodingBroadcast, TreeBroadcast
from mpinet.workloads.emulate_star import MODE_MODEL, EmulateStar, packet_checks
from mpinet.workloads.mnb_routed import RoutedMNB
from mpinet.workloads.mnb_te import TreeMNB
from mpinet.workloads.star_neighbour import StarNeighbourKind
from mpinet.workloads.te import build_te, default_algorithm, te_lower_bound
from mpinet.workloads.unicast import PATTERNS, Unicast

#: keys of [workload] read only by the collectives / emulation, and only by unicast patterns
_COLLECTIVE_KEYS = ("algorithm", "emulation", "messages", "interval", "source")
_UNICAST_KEYS = ("packets", "injection", "rate", "steps", "target", "locality")
#: BookSim's hotspot list (booksim-hotspot only)
_HOTSPOT_KEYS = ("hotspot_nodes", "hotspot_rates")
#: the keys of BookSim's injection (on_off's bursts and start states, the rate in flits)
_BURST_KEYS = ("burst_alpha", "burst_beta", "burst_r1")
_BURST_DEFAULTS = (0.5, 0.5, -1.0)
_INJECTION_KEYS = ("rate_uses_flits", *_BURST_KEYS, "burst_initial", *_HOTSPOT_KEYS)


def _others(kind: str, keep: tuple[str, ...]) -> dict[str, str]:
    """Every [workload] key except ``kind`` and ``keep``, as unused by ``kind``."""
    return {
        k: f"workload.kind = {kind!r} does not read it"
        for k in _COLLECTIVE_KEYS + _UNICAST_KEYS + _INJECTION_KEYS
        if k not in keep
    }


class UnicastKind(WorkloadKind):
    """The unicast traffic patterns (:class:`~mpinet.workloads.unicast.Unicast`)."""

    names = PATTERNS

    def __init__(self, kind: str, workload: dict, topo: Topology, seed: int = 0) -> None:
        super().__init__(kind, workload, topo, seed)
        w = workload
        target = None if w["target"] is None else topo.parse_label(str(w["target"]))
        self._args = dict(
            packets=w["packets"],
            injection=w["injection"],
            steps=w["steps"] or 0,
            seed=self.seed,
            target=target,
            locality=w["locality"],
            burst=tuple(
                float(w.get(k, d)) for k, d in zip(_BURST_KEYS, _BURST_DEFAULTS, strict=True)
            ),
            burst_initial=w.get("burst_initial"),
            hotspots=_hotspots(w, topo),
        )
        self.traffic = Unicast(topo, kind, rate=float(w["rate"] or 0.0), **self._args)

    def build(self, model: Any, router: Any) -> None:
        """As :meth:`WorkloadKind.build`; with ``rate_uses_flits`` the rate divided by the
        flits per packet (BookSim's ``injection_rate_uses_flits``: rate / packet_size)."""
        super().build(model, router)
        w, flits = self.workload, int(getattr(model, "flits", 1))
        if w.get("rate_uses_flits") and flits > 1 and w["injection"] != "once":
            rate = float(w["rate"] or 0.0) / flits
            self.traffic = Unicast(self.topo, self.kind, rate=rate, **self._args)

    @classmethod
    def footprint(cls, workload: dict, topo: Topology) -> Footprint:
        """``packets`` per node at step 0, or ``rate * steps`` per node (bernoulli)."""
        n = topo.num_nodes
        if workload["injection"] in ("bernoulli", "on_off"):
            steps, rate = workload["steps"] or 0, float(workload["rate"] or 0.0)
            total = int(n * steps * rate) + n  # the expected count, with room for chance
            # on_off bursts: up to every node on at once, injecting with r1 <= 1
            step = n if workload["injection"] == "on_off" else int(n * rate) + 1
        else:
            total = step = n * int(workload["packets"] or 1)
        to_one = workload["kind"] in ("hotspot", "all-to-identity")
        return Footprint(packets=total, in_flight=total, per_step=step, concentrated=to_one)

    @classmethod
    def unused_keys(cls, kind: str, workload: dict) -> dict[str, str]:
        out = _others(kind, _UNICAST_KEYS + _INJECTION_KEYS)
        inj = workload["injection"]
        if inj != "on_off":
            out.update(
                {k: "applies to injection = 'on_off' only" for k in (*_BURST_KEYS, "burst_initial")}
            )
        if kind != "booksim-hotspot":
            out.update(
                {k: "applies to workload.kind = 'booksim-hotspot' only" for k in _HOTSPOT_KEYS}
            )
        if inj in ("bernoulli", "on_off"):
            out["packets"] = f"injection = {inj!r} injects by rate and steps"
        else:
            out["rate_uses_flits"] = "applies to injection = 'bernoulli' or 'on_off' only"
            why = "applies to injection = 'bernoulli' only; injection = 'once' injects packets"
            out.update(rate=why, steps=why)
        if kind not in ("hotspot", "booksim-hotspot"):
            out["target"] = "applies to workload.kind = 'hotspot' or 'booksim-hotspot' only"
        if kind != "locality":
            out["locality"] = "applies to workload.kind = 'locality' only"
        return out


def _hotspots(w: dict, topo: Topology) -> tuple[list[int], list[int] | None] | None:
    """booksim-hotspot's lists: labels as node ids (a negative int stays: drawn at random)."""
    if w.get("hotspot_nodes") is None:
        if w.get("hotspot_rates") is not None:
            raise WorkloadError(
                "workload.hotspot_rates needs workload.hotspot_nodes (the hotspots)"
            )
        return None
    nodes = [v if isinstance(v, int) else topo.parse_label(str(v)) for v in w["hotspot_nodes"]]
    return nodes, w.get("hotspot_rates")


class TotalExchangeKind(WorkloadKind):
    """Total exchange (:mod:`mpinet.workloads.te`): ``schedule`` brings its own router."""

    names = ("te",)

    @classmethod
    def footprint(cls, workload: dict, topo: Topology) -> Footprint:
        """N (N - 1) packets; ``routed`` injects them all at step 0, the schedule lazily."""
        n = topo.num_nodes
        total = n * (n - 1)
        if (workload["algorithm"] or default_algorithm(topo)) == "schedule":
            # each offset is injected the step before its first hop: the pool holds the
            # offsets under way, a few per port (docs/architecture.md, "Total exchange")
            return Footprint(
                packets=total, in_flight=min(total, 4 * n * topo.degree), per_step=n * topo.degree
            )
        return Footprint(packets=total, in_flight=total, per_step=total)

    @classmethod
    def unused_keys(cls, kind: str, workload: dict) -> dict[str, str]:
        return _others(kind, ("algorithm",))

    def build(self, model: Model, router: Router) -> None:
        self.model = model
        self.router, self.traffic = build_te(self.topo, model, self.workload["algorithm"], router)
        if self.router.name == "te-schedule":
            self.ignores_router = (
                "the total exchange's schedule (algorithm = 'schedule') moves every packet "
                "along its own word; set workload.algorithm = 'routed' to follow [router]"
            )

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

    @classmethod
    def footprint(cls, workload: dict, topo: Topology) -> Footprint:
        """One packet per star transmission: N (N - 1) for mnb, N - 1 for a broadcast,
        N per star dimension otherwise; injected when their star step begins."""
        n, k = topo.num_nodes, topo.degree
        algo = workload["algorithm"] or "all-dims"
        total = {"mnb": n * n, "broadcast": n}.get(algo, n * k)
        return Footprint(packets=total, in_flight=min(total, n * k), per_step=min(total, n * k))

    @classmethod
    def unused_keys(cls, kind: str, workload: dict) -> dict[str, str]:
        return _others(kind, ("algorithm", "emulation"))

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
        self.ignores_router = "the emulation moves every packet along its MS word"

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

    @classmethod
    def footprint(cls, workload: dict, topo: Topology) -> Footprint:
        return Footprint(messages=int(workload["messages"] or 1))

    @classmethod
    def unused_keys(cls, kind: str, workload: dict) -> dict[str, str]:
        out = _others(kind, ("algorithm", "messages", "interval", "source"))
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
        return _others(kind, ("algorithm",))

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


#: every built-in kind, in the order the registry lists them
BUILTIN = (UnicastKind, TotalExchangeKind, EmulateStarKind, StarNeighbourKind, BroadcastKind,
           MNBKind)  # fmt: skip
