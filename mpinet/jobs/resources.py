"""Plan before work: what a command will need, estimated and checked before anything is allocated.

Every command (``run`` here, ``info``, ``routes`` and ``verify`` in
:mod:`mpinet.jobs.plans`) makes an :class:`Estimate` of its peak memory per rank
(and of its work) from the job, the topology's size and the router's tables
alone, and :func:`check` refuses with one line, naming the estimate and a way
out, when the ranks on this machine would not fit in its available memory. The
check runs inside the CLI's plan phase, so every rank agrees on the refusal before
any collective work starts.

Memory of a unicast run, per rank (``B = ceil(N / R)`` nodes, ``L = B * degree``
links, ``c`` buffer classes, ``h`` router header words):

* neighbour table ``L * 4`` (int32 ids; 8 bytes from 2**31 nodes);
* link queues ``L * (24 + c * 8)`` (plus credits with finite buffers), link
  statistics ``L * 18``;
* packet pool: the packets in flight (twice that when they come over many
  steps: the pool doubles) times :func:`~mpinet.engine.pool.slot_bytes`; step
  buffers (a row per possible move), the routing temporaries of the largest
  injection or step, and 64 bytes per delivered packet;
* packet records: :data:`RECORD_BYTES` per packet injected (the end-of-run
  exchange, sort and summary);
* router tables (``router.table_bytes``; the ``shortest`` router's tables for
  exact stretch), trace rows, and :data:`BASE_BYTES` of interpreter, numpy,
  numba kernels and MPI.

The queues, pool and step buffers (phase ``run``) are freed before the records
are gathered (phase ``end``): the estimate is the larger phase plus the parts
held throughout. Measured against it (peak RSS, 2 ranks): routed TE on ms:3,2
4.99 GiB per rank (estimate 5.31 GiB), scc:10 with 1 packet per node 7.39 GiB
(estimate 9.8 GiB).

The machine's side (available memory, ranks per host, the check that refuses and
the id limits) is :mod:`mpinet.jobs.machine`; its names are importable from here too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mpinet.engine import kernels as kn
from mpinet.engine.pool import slot_bytes
from mpinet.errors import MpinetError, ResourceError
from mpinet.jobs.engines import ENGINES, flit_model, job_engine
from mpinet.jobs.estimate import END, RUN, Estimate, describe, mean_hops, node_bytes, size_text
from mpinet.jobs.machine import (
    BASE_BYTES,
    MAX_ID,
    MEMORY_ENV,
    available_memory,
    base,
    check,
    check_ids,
    load_network,
    out_of_memory,
    parse_bytes,
    per_rank_memory,
    ranks_on_this_machine,
)
from mpinet.routing import ROUTERS
from mpinet.routing.route_tables import planned_bytes
from mpinet.routing.shortest import ShortestRouter
from mpinet.topology.base import Topology
from mpinet.workloads.base import COLLECTIVE
from mpinet.workloads.registry import WORKLOADS

# the machine's names, and the estimate's, stay importable from here (commands, tests)
__all__ = [
    "BASE_BYTES",
    "END",
    "HOP_ROW_BYTES",
    "MAX_ID",
    "MEMORY_ENV",
    "RECORD_BYTES",
    "RUN",
    "Estimate",
    "available_memory",
    "base",
    "check",
    "check_ids",
    "collective_state",
    "describe",
    "engine_state",
    "estimate_run",
    "fewer_packets",
    "fewer_vcs",
    "load_network",
    "mean_hops",
    "node_bytes",
    "out_of_memory",
    "packets_state",
    "parse_bytes",
    "per_rank_memory",
    "plan_run",
    "ranks_on_this_machine",
    "router_tables",
    "size_text",
    "stretch_tables",
]

#: bytes per packet for its records after the run: the delivered row (7 int64), the
#: end-of-run exchange to the id owner, the sort there and the summary's temporaries
#: (measured: 413 bytes per packet at the end of a routed total exchange on ms:3,2)
RECORD_BYTES = 7 * 56 + 8 + 5 * 8
#: bytes per hop row of trace level "hops" (5 int64, concatenated, exchanged and sorted)
HOP_ROW_BYTES = 4 * 40 + 8


# -- engine state -----------------------------------------------------------------------
def engine_state(est: Estimate, topo: Topology, size: int, model: dict) -> None:
    """The unicast engine's per-rank tables: neighbours, link queues, statistics.

    ``model`` is the job's ``[model]`` section (``buffer``, ``buffer_classes``,
    ``max_hops``, ``kind``); sizes follow :mod:`mpinet.engine.state`.
    """
    b = -(-topo.num_nodes // size)
    links = b * topo.degree
    finite = (model.get("buffer") or 0) > 0
    classes = (model.get("max_hops") or 32) + 1 if model.get("buffer_classes") == "hops" else 1
    kport = str(model.get("kind", "")).partition(":")[0] in ("one-port", "k-port")
    est.add("neighbour table", links * node_bytes(topo.num_nodes), RUN)
    # lcount, act, srv, lcnt (int32), load (int64); queue ends (int32) and credits per class
    per_link = 24 + 4 * kport + classes * (8 + 4 * finite)
    est.add("link queues", links * per_link + b * (4 + 4 * kport + 28 * finite), RUN)
    est.add("link statistics", links * 18, RUN)


def packets_state(
    est: Estimate,
    topo: Topology,
    size: int,
    fp: Any,
    header_width: int,
    *,
    record_hops: bool = False,
    trace: bool = False,
    capacity: int = 1,
    flit: bool = False,
) -> None:
    """Pool, step buffers, injection temporaries and records of a workload footprint
    (``flit``: only the records; :mod:`mpinet.jobs.plans_flit` has the flit engine's own)."""
    b = -(-topo.num_nodes // size)
    flight = -(-fp.in_flight // size)
    slot = slot_bytes(topo.num_nodes, header_width)
    per_step = -(-fp.per_step // size)
    if not flit:
        # the pool doubles when it fills; injected all at once, it is allocated to size
        est.add("packet pool", (1 if per_step >= flight else 2) * flight * slot, RUN)
        moves = min(flight, b * topo.degree * capacity)  # at most one move per link slot
        # link, delivery row (7), one move row (arrival or wire) with its header, two credits
        row = 8 * (1 + 7 + max(kn.A_WIDTH, kn.W_WIDTH) + header_width + 2) + 40 * record_hops
        est.add("step buffers", 1.25 * moves * row, RUN)  # the buffers grow by 1.25x at most
        # the router's vectorized temporaries over the largest injection or step of arrivals
        est.add("injection", max(per_step, moves) * (128 + 16 * header_width), RUN)
    records = fp.packets if fp.concentrated and size > 1 else -(-fp.packets // size)
    est.add("delivered rows", records * 64, RUN)  # kept during the run, with the ids
    est.add("packet records", records * RECORD_BYTES, END)
    if trace:
        est.add("trace rows", records * 56, END)
    if record_hops:  # gathered during the run and after it: held throughout
        est.add("trace hop rows", records * mean_hops(topo) * HOP_ROW_BYTES)
    est.work = fp.packets * mean_hops(topo) / size
    est.work_unit = "packet-hops per rank"


def collective_state(est: Estimate, topo: Topology, size: int, messages: int) -> None:
    """The collective engine: an int64 neighbour table, (node, message) holdings."""
    b = -(-topo.num_nodes // size)
    est.add("neighbour table", 2 * b * topo.degree * 8)
    # when (int32), port (int8), wanted (bool), the step's comparisons and a node program's
    # own per-(node, message) arrays
    est.add("holdings", b * messages * 16)
    est.work = float(topo.num_nodes) * messages * topo.degree / size
    est.work_unit = "transmissions per rank (at most)"


def router_tables(router: Any) -> int:
    """Bytes of a router's tables, as it states them (``table_bytes``), else 0."""
    return int(getattr(router, "table_bytes", 0) or 0)


def stretch_tables(topo: Topology, router: Any, limit: int) -> int:
    """Bytes of the exact-distance tables built for the stretch statistics, if any."""
    if router is not None and hasattr(router, "distance"):
        return 0
    if topo.family in ("fccn", "ccc", "hypercube") or topo.num_nodes > limit:
        return 0  # closed forms, or no stretch
    try:
        return router_tables(ShortestRouter(topo))  # states its size, builds lazily
    except MpinetError:
        return 0


# -- commands ---------------------------------------------------------------------------
def estimate_run(
    job: Any,
    topo: Topology,
    size: int,
    *,
    router: Any = None,
    trace_path: str | None = None,
    footprint: Any = None,
    stretch_limit: int = 4_000_000,
) -> Estimate:
    """Peak memory per rank and work of ``mpinet run`` for ``job`` on ``size`` ranks.

    Parameters
    ----------
    job : mpinet.jobs.spec.Job
    topo : Topology
    size : int
        Ranks.
    router : Router, optional
        The built router (its ``header_width`` and ``table_bytes``); before it is
        built, the class attributes of the job's router are used.
    trace_path : str, optional
        Where the trace goes (None: no trace rows are kept).
    footprint : Footprint, optional
        Default: the workload kind's :meth:`~mpinet.workloads.base.WorkloadKind.footprint`.
    """
    est = Estimate(f"run on {describe(topo)}")
    cls = WORKLOADS.get(job.workload["kind"])
    fp = footprint
    if fp is None and cls is not None:
        fp = cls.footprint(job.workload, topo)
    if cls is not None and cls.engine == COLLECTIVE:
        collective_state(est, topo, size, fp.messages if fp is not None else 1)
        return base(est)
    if router is None:
        router = ROUTERS.get(job.router["name"])  # class attributes only

    flit = flit_model(job.model)
    if flit is not None:  # the flit engine's links, VC buffers, segments and records
        plans = ENGINES["flit"]
        hw = int(getattr(router, "header_width", 0) or 0)
        live = plans.injects_late(job, topo)
        flight = plans.in_flight(job, topo, fp, flit) if fp is not None else None
        caps = [int(v) for v in (job.model.get("capacity") or {}).values()] or [1]
        plans.flit_state(est, topo, size, flit, fp, hw, live=live, in_flight=flight,
                              router=router, capacity=max(caps))  # fmt: skip
        if fp is not None:
            packets_state(est, topo, size, fp, hw, record_hops=job.trace["level"] == "hops"
                          and trace_path is not None, trace=trace_path is not None,
                          flit=True)  # fmt: skip
            est.work, est.work_unit = est.work * flit.flits, "flit-hops per rank"
    else:
        engine_state(est, topo, size, job.model)
    if job_engine(job.model) == "flit":  # the iq router's arrays (its own plan), if it runs
        hw = int(getattr(router, "header_width", 0) or 0)
        ENGINES["flit"].iq_state(est, topo.num_nodes, size, topo.degree, job.model, hw,
                                 None if fp is None else fp.in_flight,
                                 router is None or isinstance(router, type)
                                 or ENGINES["flit"].walked(router), topo)  # fmt: skip
    if fp is not None and flit is None:
        caps = [int(v) for v in (job.model.get("capacity") or {}).values()] or [1]
        packets_state(
            est,
            topo,
            size,
            fp,
            int(getattr(router, "header_width", 0) or 0),
            record_hops=job.trace["level"] == "hops" and trace_path is not None,
            trace=trace_path is not None,
            capacity=max(caps),
        )
    if router is not None and not isinstance(router, type):
        est.add("router tables", router_tables(router))
        est.add("translated route table", planned_bytes(router))
        est.add("exact distances (stretch)", stretch_tables(topo, router, stretch_limit))
    return base(est)


def fewer_packets(job: Any, topo: Topology, size: int, have_per_rank: int, **kw: Any) -> str:
    """The way out by packets: the most per node that fit, or "a smaller network"."""
    w = job.workload
    cls = WORKLOADS.get(w["kind"])
    if cls is None or "packets" in cls.unused_keys(w["kind"], w) or cls.footprint(w, topo) is None:
        return "a smaller network"  # this kind has no packets per node to lower

    def fits(p: int) -> bool:
        fp = cls.footprint({**w, "packets": p}, topo)
        return estimate_run(job, topo, size, footprint=fp, **kw).bytes <= have_per_rank

    lo, hi = 0, int(w["packets"] or 1)
    while hi - lo > 1:  # the largest p < packets that fits (0: none)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    if lo == 0:
        return "a smaller network"
    return f"fewer packets (workload.packets <= {lo} fits), or a smaller network"


def fewer_vcs(job: Any, topo: Topology, size: int, have_per_rank: int, **kw: Any) -> str | None:
    """The way out by VCs: the most ``model.vcs`` below the job's that fit, or None."""
    vcs = int(job.model.get("vcs") or 1)

    def fits(v: int) -> bool:
        trial = replace(job, model={**job.model, "vcs": v})
        return estimate_run(trial, topo, size, **kw).bytes <= have_per_rank

    lo, hi = 0, vcs
    while hi - lo > 1:  # the largest v < vcs that fits (0: none)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return f"fewer VCs (model.vcs <= {lo} fits)" if lo else None


def _smaller(job: Any, topo: Topology, size: int, have: int, flit: Any, kw: dict) -> str:
    """The job-specific ways out: fewer VCs (flit runs), fewer packets, a smaller network."""
    ways = fewer_packets(job, topo, size, have, **kw)
    if flit is not None and flit.vcs > 1:
        vcs = fewer_vcs(job, topo, size, have, **kw)
        ways = ways if vcs is None else f"{vcs}, or {ways}"
    return ways


def plan_run(
    job: Any,
    topo: Topology,
    size: int,
    ranks_here: int | None = None,
    **kw: Any,
) -> Estimate:
    """Check :func:`estimate_run` against this machine; return it, or refuse.

    Also refuses ids that int64 arithmetic cannot hold (:func:`check_ids`).
    """
    cls = WORKLOADS.get(job.workload["kind"])
    fp = cls.footprint(job.workload, topo) if cls is not None else None
    check_ids(topo, size, fp.packets if fp is not None else 0)

    flit = flit_model(job.model)
    if flit is not None:  # the flit engine's int32 buffer ids
        ENGINES["flit"].check_buffers(topo, flit, size)
    here = size if ranks_here is None else ranks_here
    est = check(
        lambda r: estimate_run(job, topo, r, footprint=fp, **kw),
        size,
        here,
        smaller=lambda: _smaller(job, topo, size, per_rank_memory(here), flit, kw),
    )
    if flit is None and (cls is None or cls.engine != COLLECTIVE):  # int32 (engine/state.py)
        m = job.model
        classes = (m.get("max_hops") or 32) + 1 if m.get("buffer_classes") == "hops" else 1
        queues = -(-topo.num_nodes // size) * topo.degree * classes
        if queues >= 2**31:
            raise ResourceError(
                f"run on {describe(topo)} is {queues:,} link queues per rank on {size} "
                f"rank(s), over 2**31; way out: {size * (-(-queues // 2**31)) + size} or more ranks"
            )
    return est
