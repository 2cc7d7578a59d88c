"""Workload kinds by their job name: :data:`WORKLOADS`, :func:`register`, :func:`make_workload`.

Like :data:`mpinet.routing.ROUTERS` for routers: ``workload.kind`` in a job
names a :class:`~mpinet.workloads.base.WorkloadKind` subclass here, and
:mod:`mpinet.jobs.execute` builds and runs it without knowing which it is.
A new kind is a subclass (anywhere) added to the table below, or passed to
:func:`register`.
"""

from __future__ import annotations

from mpinet.errors import WorkloadError
from mpinet.topology.base import Topology
from mpinet.workloads.base import ENGINES, WorkloadKind
from mpinet.workloads.kinds import BUILTIN

#: every workload kind by its ``workload.kind`` name
WORKLOADS: dict[str, type[WorkloadKind]] = {name: cls for cls in BUILTIN for name in cls.names}


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
