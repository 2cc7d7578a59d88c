"""Total exchange's default algorithm of a network, apart from :mod:`mpinet.workloads.te`
(which imports the packet engine) so that the flit engine's memory plan reads it without
importing that engine."""

from __future__ import annotations

from mpinet.topology.base import Topology
from mpinet.topology.permgraph import PermCayley


def default_algorithm(topo: Topology) -> str:
    """``schedule`` on Cayley graphs of permutations, ``routed`` elsewhere."""
    return "schedule" if isinstance(topo, PermCayley) else "routed"
