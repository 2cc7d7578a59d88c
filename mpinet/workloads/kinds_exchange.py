"""Total exchange and star emulation as workload kinds (see :mod:`mpinet.workloads.base`).

Both run on the unicast engine and bring their own routes; the registry
(:mod:`mpinet.workloads.registry`) imports this module when a job asks for one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine.models import Model
from mpinet.errors import JobError
from mpinet.routing.base import Router
from mpinet.topology.base import Topology
from mpinet.workloads.base import Footprint, WorkloadKind
from mpinet.workloads.emulate_star import MODE_MODEL, EmulateStar, packet_checks
from mpinet.workloads.kinds import others_unused
from mpinet.workloads.te import build_te, default_algorithm, te_lower_bound


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
        return others_unused(kind, ("algorithm",))

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
        return others_unused(kind, ("algorithm", "emulation"))

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
