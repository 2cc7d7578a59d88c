"""Workloads: what the nodes inject (unicast traffic) or run (collectives)."""

from mpinet.workloads.unicast import PATTERNS, Unicast

__all__ = ["PATTERNS", "Unicast"]
