"""Communication models: what a node may transmit in one synchronous step.

* ``all-port``: every port, each link carrying up to its capacity;
* ``one-port`` / ``k-port:K``: at most 1 / K ports per node per step;
* ``sdc``: single-dimension communication, every transmission of the whole
  network in a step uses the same port (dimension).

Capacities are packets per directed link per step, per port class (default 1;
e.g. ``{"local": 2}`` models SCC local links twice as fast as lateral ones).

:func:`arbitrate` picks, from packets that want to leave, those that go, FIFO
within each link in the order of the packet arrays (the engine keeps them
sorted by priority). :func:`violations` checks any set of transmissions
against the model: the engine runs it every step on what actually moved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mpinet.errors import MpinetError, check_int
from mpinet.topology.base import Topology

KINDS = ("all-port", "one-port", "k-port", "sdc")


class ModelError(MpinetError, ValueError):
    """A bad model specification, or transmissions that break the model."""


@dataclass(frozen=True)
class Model:
    """A communication model with per-port-class link capacities."""

    kind: str = "all-port"
    k: int = 0  # ports per node per step; 0 = all (all-port, sdc)
    capacity: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"k-port:{self.k}" if self.kind == "k-port" else self.kind

    def port_capacities(self, topo: Topology) -> np.ndarray:
        """Capacity of each port of ``topo`` as an int64 array."""
        unknown = set(self.capacity) - set(topo.port_classes)
        if unknown:
            raise ModelError(
                f"model capacity names port class(es) {sorted(unknown)} that {topo.spec} lacks; "
                f"its classes are {sorted(set(topo.port_classes))}"
            )
        return np.array([self.capacity.get(c, 1) for c in topo.port_classes], dtype=np.int64)


def parse_model(text: str, capacity: dict[str, int] | None = None) -> Model:
    """Parse ``all-port``, ``one-port``, ``k-port:K`` or ``sdc``."""
    s = str(text).strip().lower()
    caps = {}
    for cls, val in (capacity or {}).items():
        caps[str(cls)] = check_int(f"model capacity of port class {cls!r}", val, 1, 1 << 20)
    if s in ("all-port", "sdc"):
        return Model(s, 0, caps)
    if s in ("one-port", "single-port"):
        return Model("one-port", 1, caps)
    if s.startswith("k-port"):
        _, _, kv = s.partition(":")
        return Model("k-port", check_int("K in model k-port:K", kv or "?", 1, 1 << 16), caps)
    raise ModelError(f"model must be one of all-port, one-port, k-port:K, sdc; got {text!r}")


class Arbiter:
    """Chooses who transmits in a step, in O(packets) per step.

    Packets earlier in the arrays have priority (the engine keeps them in FIFO
    or oldest-first order). Each round picks the first remaining packet of
    every link (or node) with ``np.minimum.at`` over scratch arrays kept
    between steps, so no sort is needed: capacity c takes c rounds, a
    ``k-port`` node's k links take k rounds.
    """

    def __init__(self, model: Model, block: int, degree: int, caps: np.ndarray) -> None:
        self.model, self.degree, self.caps = model, degree, caps
        self.link_first = np.zeros(block * degree, dtype=np.int64)
        self.link_flag = np.zeros(block * degree, dtype=bool)
        self.node_first = np.zeros(block, np.int64)

    def _first(self, scratch: np.ndarray, keys: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """Positions in ``cand`` of the first candidate of each key."""
        scratch[keys] = np.iinfo(np.int64).max
        np.minimum.at(scratch, keys, cand)
        return scratch[keys] == cand

    def __call__(
        self, local_nodes: np.ndarray, ports: np.ndarray, sdc_port: int = -1
    ) -> np.ndarray:
        """Boolean mask of the packets that transmit this step.

        Parameters
        ----------
        local_nodes : (M,) node index within the rank's block
        ports : (M,) chosen port of each packet
        sdc_port : under ``sdc``, the dimension of this step (same on all ranks)
        """
        m = ports.size
        go = np.zeros(m, dtype=bool)
        if m == 0:
            return go
        # a negative port (the router's WAIT) does not compete for any link
        want = ports >= 0 if self.model.kind != "sdc" else ports == sdc_port
        ports = np.maximum(ports, 0)
        link = local_nodes * self.degree + ports
        if self.model.kind in ("one-port", "k-port"):
            want &= self._links_per_node(local_nodes, link, want)
        cap_of = self.caps[ports]
        for r in range(int(self.caps.max())):
            cand = np.flatnonzero(want)
            if cand.size == 0:
                break
            heads = cand[self._first(self.link_first, link[cand], cand)]
            go[heads[cap_of[heads] > r]] = True
            want[heads] = False
        return go

    def _links_per_node(self, nodes: np.ndarray, link: np.ndarray, want: np.ndarray) -> np.ndarray:
        """Packets on the k best links of their node (ranked by each link's first packet)."""
        allowed = np.zeros(nodes.size, dtype=bool)
        rest = want.copy()
        for _ in range(self.model.k):
            cand = np.flatnonzero(rest)
            if cand.size == 0:
                break
            heads = cand[self._first(self.node_first, nodes[cand], cand)]
            self.link_flag[link[heads]] = True
            on = cand[self.link_flag[link[cand]]]
            self.link_flag[link[heads]] = False
            allowed[on] = True
            rest[on] = False
        return allowed

    def check(
        self, nodes: np.ndarray, ports: np.ndarray, sdc_port: int | None = None
    ) -> list[tuple[int, int, str]]:
        """Violations of the model by these transmissions (see :func:`violations`)."""
        bad: list[tuple[int, int, str]] = []
        m = ports.size
        if m == 0:
            return bad
        deg, model = self.degree, self.model
        link = nodes * deg + ports
        cand = np.arange(m)
        head = self._first(self.link_first, link, cand)  # one packet per used link
        self.link_first[link] = 0
        np.add.at(self.link_first, link, 1)
        count = self.link_first[link]
        over = head & (count > self.caps[ports])
        for i in np.flatnonzero(over)[:5]:
            cap = int(self.caps[ports[i]])
            bad.append(
                (int(nodes[i]), int(ports[i]), f"{count[i]} packets on a link of capacity {cap}")
            )
        if model.kind in ("one-port", "k-port"):
            scratch = self.node_first
            scratch[nodes] = 0
            np.add.at(scratch, nodes[head], 1)  # distinct links per node
            for i in np.flatnonzero(head & (scratch[nodes] > model.k))[:5]:
                used = np.unique(ports[nodes == nodes[i]]).tolist()
                bad.append(
                    (
                        int(nodes[i]),
                        int(ports[i]),
                        f"ports {used} used, {model.name} allows {model.k}",
                    )
                )
                break
        if model.kind == "sdc":
            dims = np.unique(ports)
            if dims.size > 1 or (sdc_port is not None and dims[0] != sdc_port):
                bad.append(
                    (int(nodes[0]), int(ports[0]), f"dimensions {dims.tolist()} in one step")
                )
        return bad


def arbitrate(
    model: Model,
    local_nodes: np.ndarray,
    ports: np.ndarray,
    degree: int,
    caps: np.ndarray,
    sdc_port: int = -1,
) -> np.ndarray:
    """One-off :class:`Arbiter` call (the engine keeps an Arbiter per run)."""
    block = int(local_nodes.max()) + 1 if local_nodes.size else 1
    return Arbiter(model, block, degree, caps)(local_nodes, ports, sdc_port)


def violations(
    model: Model,
    step: int,
    nodes: np.ndarray,
    ports: np.ndarray,
    degree: int,
    caps: np.ndarray,
    sdc_port: int | None = None,
) -> list[tuple[int, int, str]]:
    """Transmissions of one rank in one step that break the model.

    Returns up to 5 ``(node, port, reason)``; empty when the model held. Under
    ``sdc`` every transmission must use ``sdc_port`` (the step's dimension,
    agreed by all ranks) or, when it is None, one common port.
    """
    block = int(nodes.max()) + 1 if nodes.size else 1
    return Arbiter(model, block, degree, caps).check(nodes, ports, sdc_port)
