"""What this machine holds, and the check of an estimate against it.

The available memory is ``MemAvailable`` of ``/proc/meminfo``, or
``MPINET_MEMORY_LIMIT`` (e.g. ``512M``, ``2G``) when that is set and smaller; a
``ulimit -v`` binds each process too (:func:`mpinet.engine.limits.memory`).
:func:`check` refuses, with one line naming the estimate and a way out, an
:class:`~mpinet.jobs.estimate.Estimate` the ranks on this machine cannot hold;
:func:`check_ids` refuses ids int64 arithmetic cannot hold. Every command's plan
(:mod:`mpinet.jobs.resources` for ``run``, :mod:`mpinet.jobs.plans` and
:mod:`mpinet.jobs.plans_io` for the others) ends in these checks.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from mpinet.engine import limits  # limits.memory(), looked up at each call (tests fake it)
from mpinet.errors import ResourceError
from mpinet.jobs.estimate import Estimate, size_text
from mpinet.netfile import load_topology
from mpinet.topology.base import Topology
from mpinet.values import parse_size

#: environment variable that caps the memory mpinet believes it has (tests, shared nodes)
MEMORY_ENV = "MPINET_MEMORY_LIMIT"
#: one rank's interpreter, numpy, numba kernels and MPI (about 100 MiB measured)
BASE_BYTES = 112 << 20
#: ids must stay below this (int64 arithmetic such as ``rank * N`` must not overflow)
MAX_ID = 2**62


def parse_bytes(text: str) -> int:
    """``"512M"``, ``"2G"``, ``"1.5GiB"``, ``"1000000"`` -> bytes.

    Raises
    ------
    ResourceError
        Not a size.
    """
    return parse_size(MEMORY_ENV, text, error=ResourceError)


def available_memory() -> int:
    """Bytes this machine can give (MemAvailable), capped by ``MPINET_MEMORY_LIMIT``."""
    return _available()[0]


def _available() -> tuple[int, str]:
    """Available bytes on this machine and where the figure comes from."""
    got = limits.memory()
    return got.machine, got.machine_origin


def per_rank_memory(ranks_here: int = 1) -> int:
    """Bytes one of ``ranks_here`` ranks on this machine may use: its share of the machine's
    memory, or what ``ulimit -v`` leaves it, whichever is smaller."""
    got = limits.memory()
    share = got.machine // max(ranks_here, 1)
    return share if got.rank is None else min(share, got.rank)


def out_of_memory(what: str, planned: int | None = None) -> ResourceError:
    """The one line of a MemoryError the plan did not foresee: what ran out, the plan's
    figure and the limits this process has now (:func:`mpinet.engine.limits.memory`)."""
    got = limits.memory()
    have = f"{size_text(got.machine)} available ({got.machine_origin})"
    if got.rank is not None:
        have += f", {got.rank_origin}"
    plan = f" (planned about {size_text(planned)} per rank)" if planned else ""
    return ResourceError(
        f"{what} ran out of memory{plan}; {have}; way out: fewer ranks on this machine, "
        "a larger limit, or a smaller network"
    )


def load_network(spec: str, ranks_here: int = 1, allow_disconnected: bool = False) -> Topology:
    """The topology of a spec (``file:PATH`` read from disk), planned against this machine.

    A file whose reading would not fit in :func:`available_memory` with
    ``ranks_here`` ranks reading it is refused before it is read.
    """
    memory = available_memory()
    return load_topology(spec, allow_disconnected, memory=memory, ranks_here=ranks_here)


def ranks_on_this_machine(comm: Any) -> int:
    """Ranks of ``comm`` sharing this rank's host (collective: call it on every rank)."""
    host = socket.gethostname()
    return sum(h == host for h in comm.allgather(host))


def check(
    estimate: Callable[[int], Estimate],
    size: int,
    ranks_here: int | None = None,
    *,
    smaller: str | Callable[[], str] = "a smaller network",
    have: int | None = None,
    serial: bool = False,
) -> Estimate:
    """Refuse, with one line, an estimate the ranks on this machine cannot hold.

    Parameters
    ----------
    estimate : callable
        ``estimate(ranks)`` for the job on ``ranks`` ranks.
    size, ranks_here : int
        Ranks of the job, and those on this machine (default ``size``).
    smaller : str or callable
        The job-specific way out, e.g. ``"fewer packets (workload.packets <= 12 fits)"``,
        or a function computing it (called only when refusing).
    have : int, optional
        Available bytes (default :func:`available_memory`).
    serial : bool
        The work runs on rank 0 alone (``deadlock``, ``export``): the estimate is rank
        0's, every other rank on this machine holds :data:`BASE_BYTES`, and more ranks
        are no way out.

    Returns
    -------
    The estimate for ``size`` ranks, when it fits.

    Raises
    ------
    ResourceError
        ``<what> needs about X per rank (parts), Y for the R rank(s) on this machine,
        but Z is available; way out: ...``
    """
    here = size if ranks_here is None else ranks_here
    est = estimate(size)
    got = limits.memory() if have is None else limits.Memory(have, "given")
    have, origin = got.machine, got.machine_origin
    need = est.bytes + (here - 1) * BASE_BYTES if serial else est.bytes * here
    # the smallest limit binds: one rank's share of the machine, or what ulimit -v leaves it
    share = have - (here - 1) * BASE_BYTES if serial else have // max(here, 1)
    if got.rank is not None and got.rank < share and est.bytes > got.rank:
        _refuse_rank(estimate, est, size, got, smaller, serial, need if here > 1 else 0, here)
    if need <= have:
        return est
    ways = []
    if serial:
        pass
    elif est.bytes <= have:
        ways.append(f"at most {have // est.bytes} rank(s) per machine (more machines)")
    else:  # more ranks shrink the distributed parts; the first count that fits, if any
        more = next((r for r in (size << i for i in range(1, 21)) if estimate(r).bytes <= have), 0)
        if more:
            per = have // estimate(more).bytes
            ways.append(f"{more} or more ranks (at most {per} per machine)")
    ways.append(smaller if isinstance(smaller, str) else smaller())
    who = "on rank 0" if serial else "per rank"
    raise ResourceError(
        f"{est.what} needs about {size_text(est.bytes)} {who} ({est.largest()}), "
        f"{size_text(need)} for the {here} rank(s) on this machine, but {size_text(have)} "
        f"is available ({origin}); way out: {', or '.join(ways)}"
    )


def _refuse_rank(
    estimate: Callable[[int], Estimate],
    est: Estimate,
    size: int,
    got: Any,
    smaller: str | Callable[[], str],
    serial: bool,
    need: int = 0,
    here: int = 1,
) -> None:
    """Refuse an estimate over the per-process limit (``ulimit -v``), naming it (and what
    the ``here`` ranks on this machine need together, when ``need``)."""
    ways = []
    if not serial:  # more ranks shrink the distributed parts
        more = next((r for r in (size << i for i in range(1, 21))
                     if estimate(r).bytes <= got.rank), 0)  # fmt: skip
        if more:
            ways.append(f"{more} or more ranks")
    ways.append("a larger ulimit -v")
    ways.append(smaller if isinstance(smaller, str) else smaller())
    who = "on rank 0" if serial else "per rank"
    total = f", {size_text(need)} for the {here} rank(s) on this machine" if need else ""
    raise ResourceError(
        f"{est.what} needs about {size_text(est.bytes)} {who} ({est.largest(2)}){total}, but "
        f"{got.rank_origin}; way out: {', or '.join(ways)}"
    )


def check_ids(topo: Topology, size: int, count: int = 0, what: str = "packet ids") -> None:
    """Refuse a network (or an id space) too large for int64 arithmetic.

    The block partition computes ``rank * N`` and packet ids go up to ``N * packets``
    (``N**2`` for a total exchange); both must stay below :data:`MAX_ID`.
    """
    n = topo.num_nodes
    if n * max(size, 1) >= MAX_ID:
        raise ResourceError(
            f"{topo.spec} has {n:,} nodes, more than mpinet's int64 node ids allow on {size} "
            f"rank(s) (N * ranks < 2**62); use a smaller network"
        )
    if count >= MAX_ID:
        raise ResourceError(
            f"{what} on {topo.spec} would number {count:,}, over 2**62 (int64 ids); "
            "use fewer packets or a smaller network"
        )


def base(est: Estimate) -> Estimate:
    """Add the :data:`BASE_BYTES` every rank holds to ``est``; return it."""
    est.add("interpreter, numpy, MPI", BASE_BYTES)
    return est
