"""Communication models: what a node may transmit in one synchronous step.

* ``all-port``: every port, each link carrying up to its capacity;
* ``one-port`` / ``k-port:K``: at most 1 / K ports per node per step;
* ``sdc``: single-dimension communication, every transmission of the whole
  network in a step uses the same port (dimension).

Capacities are packets per directed link per step, per port class (default 1;
e.g. ``{"local": 2}`` models SCC local links twice as fast as lateral ones).

Buffers: ``buffer = B`` gives every input port of a node (and its injection
port) B packet slots; 0 (the default) is unbounded. ``classes = "hops"``
splits each into ``max_hops + 1`` classes by hops taken (the structured
buffer pool: class h only waits for class h + 1, so no cycle of waits).

Who transmits is decided by the engine's kernels (:mod:`mpinet.engine.kernels`);
:func:`violations` checks any set of transmissions against the model, and the
engine runs the same check every step on what actually moved.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mpinet.engine import kernels as kn
from mpinet.engine import kernels_check as kc
from mpinet.errors import MpinetError
from mpinet.model_names import SWITCHING
from mpinet.topology.base import Topology
from mpinet.values import check_int

KINDS = ("all-port", "one-port", "k-port", "sdc")


class ModelError(MpinetError, ValueError):
    """A bad model specification, or transmissions that break the model."""


@dataclass(frozen=True)
class Model:
    """A communication model with per-port-class link capacities."""

    kind: str = "all-port"
    k: int = 0  # ports per node per step; 0 = all (all-port, sdc)
    capacity: dict[str, int] = field(default_factory=dict)
    buffer: int = 0  # slots per input port (and injection port); 0 = unbounded
    classes: str = "none"  # "none" | "hops" (structured buffer pool)
    max_hops: int = 32  # with classes = "hops": classes 0..max_hops (routes up to max_hops + 1)
    #: switching (docs/switching.md): the flit engine runs when ``flit`` is True
    switching: str = "store-and-forward"
    flits: int = 1
    vcs: int = 1
    vc_buffer: int = 1
    vc_policy: str = "any"
    flit: bool = False
    #: the flit engine's router model: "ideal" or "iq" (BookSim's input-queued router, with
    #: its keys in ``iq``, an :class:`~mpinet.engine.iq_config.IQConfig`)
    router: str = "ideal"
    iq: Any = None

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


BUFFER_CLASSES = ("none", "hops")


def switching_model(model: Model, switching: str | None, flits: int | None, vcs: int | None,
                    vc_buffer: int | None, vc_policy: str | None) -> Model:  # fmt: skip
    """``model`` with the switching keys of docs/switching.md; ``flit`` says whether the flit
    engine runs: any key other than store-and-forward of one-flit packets on one VC with
    the default buffer and policy. Packet buffers (``buffer``, ``classes``) and flit keys
    do not mix: ``vc_buffer`` and ``vc_policy = "hops"`` say the same in flits.
    """
    sw = "store-and-forward" if switching is None else str(switching)
    if sw not in SWITCHING:
        raise ModelError(f"model.switching must be one of {', '.join(SWITCHING)}; got {sw!r}")
    nf = 1 if flits is None else check_int("model.flits (flits per packet)", flits, 1, 1 << 16)
    nv = 1 if vcs is None else check_int("model.vcs (virtual channels per link)", vcs, 1, 64)
    flit = sw != "store-and-forward" or nf > 1 or nv > 1 or vc_buffer is not None
    flit = flit or vc_policy is not None
    nb = (4 if sw == "wormhole" else nf) if vc_buffer is None else check_int(
        "model.vc_buffer (flit slots per virtual channel)", vc_buffer, 1, 1 << 16)  # fmt: skip
    if not flit:
        return model
    if model.buffer or model.classes != "none":
        raise ModelError(
            "model.buffer and model.buffer_classes are packet buffers of the store-and-forward "
            "engine; with switching keys use model.vc_buffer (flit slots per virtual channel) "
            "and model.vc_policy = 'hops'"
        )
    if sw != "wormhole" and nb < nf:
        raise ModelError(
            f"model.vc_buffer = {nb} is smaller than model.flits = {nf}: {sw} keeps a whole packet "
            f"in one buffer; set vc_buffer >= {nf} (or switching = 'wormhole')"
        )
    policy = "any" if vc_policy is None else str(vc_policy)
    return replace(model, switching=sw, flits=nf, vcs=nv, vc_buffer=nb, vc_policy=policy, flit=True)


def parse_model(
    text: str,
    capacity: dict[str, int] | None = None,
    *,
    buffer: int | None = None,
    buffer_classes: str | None = None,
    max_hops: int | None = None,
) -> Model:
    """Parse ``all-port``, ``one-port``, ``k-port:K`` or ``sdc``, with optional buffers.

    Parameters
    ----------
    text : the model kind
    capacity : packets per link per step, by port class
    buffer : slots per input port; 0 or None = unbounded
    buffer_classes : ``"none"`` or ``"hops"`` (needs a finite ``buffer``)
    max_hops : highest buffer class with ``"hops"`` (default 32): a packet may take
        ``max_hops + 1`` hops, the last one into its destination needing no buffer
    """
    s = str(text).strip().lower()
    caps = {}
    for cls, val in (capacity or {}).items():
        caps[str(cls)] = check_int(f"model capacity of port class {cls!r}", val, 1, 1 << 20)
    try:  # check_int speaks of topologies; a model's errors are ModelErrors
        buf = (
            0
            if buffer is None
            else check_int("model buffer (slots per input port)", buffer, 0, 1 << 20)
        )
        hops = 32 if max_hops is None else check_int("model max_hops", max_hops, 1, 1024)
    except MpinetError as exc:
        raise ModelError(str(exc)) from None
    classes = "none" if buffer_classes is None else str(buffer_classes)
    if classes not in BUFFER_CLASSES:
        raise ModelError(f"model buffer_classes must be 'none' or 'hops'; got {buffer_classes!r}")
    if classes == "hops" and buf == 0:
        raise ModelError("model buffer_classes = 'hops' needs a finite model buffer (>= 1)")
    extra = {"buffer": buf, "classes": classes, "max_hops": hops}
    if s in ("all-port", "sdc"):
        return Model(s, 0, caps, **extra)
    if s in ("one-port", "single-port"):
        return Model("one-port", 1, caps, **extra)
    if s.startswith("k-port"):
        _, _, kv = s.partition(":")
        k = check_int("K in model k-port:K", kv or "?", 1, 1 << 16)
        return Model("k-port", k, caps, **extra)
    raise ModelError(f"model must be one of all-port, one-port, k-port:K, sdc; got {text!r}")


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

    Returns the first ``(node, port, reason)``, or an empty list when the model
    held. Under ``sdc`` every transmission must use ``sdc_port`` (the step's
    dimension) or, when it is None, the port of the first transmission.
    """
    nodes, ports = np.asarray(nodes, np.int64), np.asarray(ports, np.int64)
    if ports.size == 0:
        return []
    kind = {"all-port": kn.KIND_ALL, "sdc": kn.KIND_SDC}.get(model.kind, kn.KIND_K)
    block = int(nodes.max()) + 1
    links = nodes * degree + ports
    dim = int(ports[0]) if sdc_port is None else int(sdc_port)
    caps = np.asarray(caps, dtype=np.int64)
    i, why = kc.check_moves(
        links, degree, caps, kind, model.k, dim,
        np.zeros(block * degree, np.int32), np.zeros(block, np.int32),
    )  # fmt: skip
    if i < 0:
        return []
    node, port = int(nodes[i]), int(ports[i])
    if why == 1:
        n = int(((nodes == node) & (ports == port)).sum())
        reason = f"{n} packets on a link of capacity {int(caps[port])}"
    elif why == 2:
        used = np.unique(ports[nodes == node]).tolist()
        reason = f"ports {used} used, {model.name} allows {model.k}"
    else:
        reason = f"dimensions {np.unique(ports).tolist()} in one step"
    return [(node, port, reason)]
