"""Workload kinds by their job name: :data:`WORKLOADS`, :func:`register`, :func:`make_workload`.

Like :data:`mpinet.routing.ROUTERS` for routers: ``workload.kind`` in a job
names a :class:`~mpinet.workloads.base.WorkloadKind` subclass here, and
:mod:`mpinet.jobs.execute` builds and runs it without knowing which it is.
A new kind is a subclass (anywhere) added to the table below, or passed to
:func:`register`. The table's kinds are imported at their first lookup
(:mod:`mpinet.lazy`): a run imports its own kind's module only.
"""

from __future__ import annotations

from mpinet.errors import WorkloadError
from mpinet.lazy import LazyRegistry
from mpinet.topology.base import Topology
from mpinet.workloads.base import ENGINES, WorkloadKind
from mpinet.workloads.unicast import PATTERNS

#: every workload kind by its ``workload.kind`` name (each name is one of the class's
#: ``names``; the unicast patterns are :data:`~mpinet.workloads.unicast.PATTERNS`)
WORKLOADS: LazyRegistry = LazyRegistry(
    [
        *((name, "mpinet.workloads.kinds", "UnicastKind") for name in PATTERNS),
        ("te", "mpinet.workloads.kinds_exchange", "TotalExchangeKind"),
        ("emulate-star", "mpinet.workloads.kinds_exchange", "EmulateStarKind"),
        ("star-neighbour", "mpinet.workloads.star_neighbour", "StarNeighbourKind"),
        ("broadcast", "mpinet.workloads.kinds_collective", "BroadcastKind"),
        ("mnb", "mpinet.workloads.kinds_collective", "MNBKind"),
    ]
)


def register(cls: type[WorkloadKind]) -> type[WorkloadKind]:
    """Add ``cls`` under each of its ``names`` (a class decorator).

    Raises
    ------
    WorkloadError
        No names, a name already taken, or an ``engine`` that is not one of
        :data:`~mpinet.workloads.base.ENGINES`.
    """
    if not cls.names:
        raise WorkloadError(f"workload class {cls.__name__} has no names")
    if cls.engine not in ENGINES:
        raise WorkloadError(
            f"workload class {cls.__name__}: engine must be one of {', '.join(ENGINES)}, "
            f"got {cls.engine!r}"
        )
    taken = [n for n in cls.names if n in WORKLOADS and WORKLOADS[n] is not cls]
    if taken:
        raise WorkloadError(f"workload kind {', '.join(map(repr, taken))} is already registered")
    for name in cls.names:
        WORKLOADS[name] = cls
    return cls


def make_workload(kind: str, workload: dict, *, topo: Topology, seed: int = 0) -> WorkloadKind:
    """The workload kind ``kind`` for ``topo``, not yet built (see ``WorkloadKind.build``).

    Parameters
    ----------
    kind : str
        The job's ``workload.kind``.
    workload : dict
        The job's ``[workload]`` section, every key present (``mpinet.jobs.spec.SCHEMA``).
    topo : Topology
    seed : int
        The job's seed.

    Raises
    ------
    WorkloadError
        Unknown ``kind`` (the message lists the known ones); the kind's own
        checks raise the errors of its parameters.
    """
    cls = WORKLOADS.get(kind)
    if cls is None:
        raise WorkloadError(f"workload.kind must be one of {', '.join(WORKLOADS)}; got {kind!r}")
    return cls(kind, workload, topo, seed)
