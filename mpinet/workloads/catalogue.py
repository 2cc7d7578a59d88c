"""Every collective check of ``mpinet verify``, gathered from the modules that define them.

Each collective module lists its checks in ``CHECKS`` (built with
:class:`mpinet.workloads.checks.Check`); the order here is the catalogue's order.
"""

from __future__ import annotations

from mpinet.workloads import (
    baseline_broadcast,
    broadcast,
    emulate_star,
    mnb_routed,
    mnb_te,
    scc_broadcast,
    te,
)
from mpinet.workloads.checks import Check

MODULES = (broadcast, scc_broadcast, baseline_broadcast, mnb_te, mnb_routed, te, emulate_star)


def all_checks() -> list[Check]:
    """Every check of every collective module, in catalogue order."""
    return [c for m in MODULES for c in m.CHECKS]
