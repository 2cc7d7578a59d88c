"""The router interface: a vectorized per-hop decision.

A router decides, for every packet of a rank at once, which port it leaves
on, from the current node, the destination and a small fixed-width integer
header carried by the packet (``header_width`` int64 words). Source-based
routers fill the header at injection (:meth:`Router.init_headers`) and the
intermediate nodes follow it; distributed routers keep it empty or use it for
a little state (e.g. the FCCN level pointer).

A router may also define ``distance(src, dst) -> np.ndarray``: by convention
the *exact* shortest distance (not its own route length), which the engine
uses for stretch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from mpinet import rng
from mpinet.topology.base import Topology

#: the port a router returns to keep a packet where it is for one step
WAIT = -1
#: the port a router returns when it has no route (faults): the engine drops the
#: packet and counts it under "no route"
DROP = -3


@dataclass
class HopContext:
    """What a router may know besides node, destination and header.

    ``pids`` and ``hops`` (hops taken so far) key the counter-based random
    numbers, so random choices do not depend on the number of ranks.
    """

    step: int
    pids: np.ndarray
    hops: np.ndarray
    seed: int = 0

    def uniform(self, stream: int = rng.STREAM_ROUTE) -> np.ndarray:
        """One uniform [0, 1) value per packet, keyed by (seed, pid, hop, stream)."""
        return rng.uniform(self.seed, self.pids, self.hops, stream)


class CompiledHop(NamedTuple):
    """A router's next-port rule for the engine's compiled loops (:mod:`mpinet.routing.compiled`).

    ``code`` names the rule, ``prm`` its int64 parameters, ``ta`` (uint8) and
    ``tb`` (int32) its tables.
    """

    code: int
    prm: np.ndarray
    ta: np.ndarray
    tb: np.ndarray


class Router(ABC):
    """Base class of all routers; subclasses register under :attr:`name`."""

    #: the ``router`` value of a job
    name: ClassVar[str] = ""
    #: one line for ``--help`` listings
    summary: ClassVar[str] = ""
    #: families this router applies to (empty = every topology)
    families: ClassVar[tuple[str, ...]] = ()
    #: True when intermediate nodes decide (distributed), False when the source does
    distributed: ClassVar[bool] = True
    #: True when :meth:`next_port` may return :data:`WAIT`; such a router also
    #: defines :meth:`ready_steps`, so the engine keeps a held packet out of every
    #: queue until its step (a waiting packet costs nothing)
    holds: ClassVar[bool] = False
    #: True when the router routes around failed links and nodes: built with
    #: ``faults=FaultSet``, it never chooses a failed link and returns
    #: :data:`DROP` where the destination cannot be reached
    fault_tolerant: ClassVar[bool] = False

    header_width: int = 0

    def __init__(self, topo: Topology, **options: Any) -> None:
        self.topo = topo
        self.options = options

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Headers of packets injected at ``src`` for ``dst``: ``(M, header_width)`` int64."""
        return np.zeros((np.asarray(src).size, self.header_width), dtype=np.int64)

    @abstractmethod
    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """Ports to leave on and the headers after that hop.

        Called only for packets not yet at their destination.

        Parameters
        ----------
        nodes, dests : (M,) int64 node ids
        headers : (M, header_width) int64
        ctx : HopContext

        Returns
        -------
        ports : (M,) int64 in ``[0, degree)``, or :data:`WAIT` (-1) to hold the
            packet at its node this step (schedule-driven routers)
        headers : (M, header_width) int64, what each packet carries after the hop
        """

    def compiled_hop(self) -> CompiledHop | None:
        """This router's rule as a scalar compiled function, or None (the default).

        Only deterministic routers that never hold or drop a packet offer one;
        the engine may then route inside its compiled loops (same answers).
        """
        return None

    def ready_steps(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> np.ndarray:
        """First step at which :meth:`next_port` gives each packet a port (``holds`` routers).

        The engine asks once, when the packet reaches a node; a packet may
        leave at ``max(arrival step + 1, ready step)``.
        """
        return np.zeros(np.asarray(nodes).size, dtype=np.int64)
