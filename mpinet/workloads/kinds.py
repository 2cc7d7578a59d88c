"""The unicast workload kinds of a job (see :mod:`mpinet.workloads.base`).

The unicast patterns (:class:`UnicastKind`) and the keys every kind checks as unused;
total exchange and star emulation (:mod:`mpinet.workloads.kinds_exchange`), broadcast
and MNB (:mod:`mpinet.workloads.kinds_collective`) live in their own modules, each
imported when the registry is asked for it (:mod:`mpinet.workloads.registry`). Each
class reads its keys of the job's ``[workload]`` section; the error messages name the
key and the valid values.
"""

from __future__ import annotations

from typing import Any

from mpinet.errors import WorkloadError
from mpinet.topology.base import Topology
from mpinet.workloads.base import Footprint, WorkloadKind
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


def others_unused(kind: str, keep: tuple[str, ...]) -> dict[str, str]:
    """Every [workload] key except ``kind`` and ``keep``, as unused by ``kind`` (every kind's
    ``unused_keys`` starts from it)."""
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
        out = others_unused(kind, _UNICAST_KEYS + _INJECTION_KEYS)
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
