"""The flit engine's part of a run's plan: links, VC buffers, segments and flits per rank.

Sizes follow :mod:`mpinet.engine.flit.state` (``B = ceil(N / R)`` nodes, ``nl = B * degree``
links, ``V`` VCs per link, ``nl * V`` VC buffers and ``nl`` source queues):

* per VC buffer, :data:`VC_BYTES` through the run (its sender's credit counter and hold
  flag, its receiver's FIFO ends, occupancy, active flag and slot in the active list), and
  :data:`SNAP_BYTES` more per buffer when worms are searched for deadlocks while traffic
  is injected (:class:`~mpinet.engine.flit.deadlock_live.LiveCheck`); while the per-VC tables are
  built the index temporaries make it :data:`VC_BUILD_BYTES` (tracemalloc);
* per link, :data:`LINK_BYTES` (int64 neighbour and reverse-port tables, capacities,
  the receiver's first VC, flit counts) and a source queue;
* per packet in flight, its record and its segments (one per buffer its flits occupy: its
  source queue and up to one per flit along its route, ``min(L, hops)``; 2 for
  store-and-forward), at most one per VC beyond the source queues (a VC belongs to one
  worm), in pools that double as they fill, and the step's scratch rows per active buffer;
* a router routed by walked rows (:class:`~mpinet.routing.route_rows.SourceRouted`): the
  rows of the routes of the packets in flight and of a block of injections, in a table that
  doubles (:func:`route_rows_bytes`);
* on several ranks, the exchange's messages to and from each neighbour rank
  (:class:`~mpinet.engine.flit.rank_steps.RankSteps`, :func:`exchange_bytes`).

Measured peaks against this plan are in docs/reliability.md ("The estimate").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import ranks as fr
from mpinet.engine.flit import state as fs
from mpinet.engine.flit.deadlock_live import CHECK_EVERY
from mpinet.engine.flit.rank_looks import VOTE
from mpinet.engine.flit.rank_loop import FOLD_MAX, GATHER
from mpinet.engine.flit.route_carry import words_per_head
from mpinet.engine.partition import block_bounds
from mpinet.engine.state import neighbor_block
from mpinet.errors import ResourceError
from mpinet.jobs.engines import flit_model as flit_model  # the flit engine's Model of a job
from mpinet.jobs.estimate import RUN, Estimate, describe, mean_hops
from mpinet.topology.base import Topology
from mpinet.workloads.te_algorithm import default_algorithm

#: per VC buffer: ucred (int64), credit, pwait (int32), held (uint8); bhead, btail, bocc,
#: act, park (int32) and inact (uint8)
VC_BYTES = 8 + 2 * 4 + 1 + 5 * 4 + 1
#: per VC buffer while FlitState._tables builds ucred: the buffer, link and sender index
#: arrays (int64) and the expression's temporaries (41 measured with tracemalloc)
VC_BUILD_BYTES = 41
#: per buffer (VC buffers and source queues) of the live deadlock check's snapshot (3 int64)
SNAP_BYTES = 24
#: per link: nbt, rev, down, load (int64), lcap, lflits, lreq, lstart (int32), the int32
#: neighbour block nbt is made from, and its source queue's FIFO ends, occupancy, lists
#: and flags
LINK_BYTES = 4 * 8 + 4 * 4 + 4 + 21
#: per segment: its 48-byte record and its slot in the free stack
SEG_BYTES = fs.SEG.itemsize + 8
#: per packet record: its 64-byte record and its free-stack slot (plus 8 per header word)
PKT_BYTES = fs.PKT.itemsize + 8
#: per active buffer: its request's entries in a step's scratch (touched, requests and
#: their buckets, chain, allow, the buffers filled, heads to route)
REQUEST_BYTES = 8 + 16 + 8 + 1 + 8 + 8
#: per flit moved in a step: its local row, delivery row, credits, release and drain entries
MOVE_BYTES = 24 + 8 * fk.D_WIDTH + 32 + 16
#: int64 words of a wire row (flits to another rank), before the header
WIRE_WIDTH = fk.W_WIDTH
#: injections made ahead for one compiled call of many steps (chunk.MAX_CHUNK steps)
CHUNK_STEPS = 64
#: cells of a walked row (route_tables.compile_routes' SourceRouted) and the hops it holds
ROW_CELLS = 32
#: per walked row: its cells, its link (int32), first row, last read and free-stack slot
ROW_BYTES = ROW_CELLS + 4 + 3 * 8
#: per route walked in a block: the walk's ports (up to 64 hops, doubled as routes grow)
#: and the router's vectorized temporaries (route_tables.BUILD_ROW_BYTES)
WALK_BYTES = 2 * 64 + 160
#: steps whose injections are walked at once: those one compiled call draws on one rank
#: (engine/flit/chunk.ONE_RANK_CHUNK)
WALK_AHEAD = 1024
#: ranks whose neighbour links are counted for the exchange (evenly spread; all when fewer)
EXCHANGE_SAMPLE = 8


def walked(router: Any) -> bool:
    """Whether the flit engine may route ``router`` by walked rows: a built router without a
    compiled hop (a translated table may take it instead: counted as if not, the larger)."""
    if router is None or isinstance(router, type) or getattr(router, "holds", False):
        return False
    return router.compiled_hop() is None


def route_rows_bytes(routes: int, hops: float) -> int:
    """Bytes of the walked rows of ``routes`` routes of ``hops`` hops on average (up to twice
    as long): rows of ``ROW_CELLS - 1`` hops and their end, in a table that doubles."""
    per = max(1, math.ceil((2 * hops + 1) / (ROW_CELLS - 1)))
    return 2 * routes * per * ROW_BYTES


def cut_links(topo: Topology, size: int) -> int:
    """Links into the rank with the most from other ranks (of :data:`EXCHANGE_SAMPLE` ranks
    spread evenly): the most heads a step may bring it, per flit a link carries."""
    most = 0
    for _, lo, hi, far, _ in _sampled_blocks(topo, size):
        most = max(most, int((far < lo).sum() + (far >= hi).sum()))
    return most


def _sampled_blocks(topo: Topology, size: int):
    """Per rank of :data:`EXCHANGE_SAMPLE` spread evenly: the rank, its block ``[lo, hi)``,
    the far ends of its nodes' links (no -1) and the block bounds."""
    bounds = block_bounds(topo.num_nodes, size)
    for r in np.unique(np.linspace(0, size - 1, min(size, EXCHANGE_SAMPLE)).astype(np.int64)):
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        far = neighbor_block(topo, lo, hi).astype(np.int64)
        yield int(r), lo, hi, far[far >= 0], bounds


def exchange_bytes(
    topo: Topology,
    size: int,
    vcs: int,
    header_width: int,
    capacity: int = 1,
    route_words: int = 0,
) -> int:
    """Bytes of the multi-rank exchange's arrays (:class:`~mpinet.engine.flit.rank_steps.RankSteps`)
    on the rank with the most (of :data:`EXCHANGE_SAMPLE` ranks spread evenly): per partner
    rank a message out and one in, each as wide as the widest (its header, a wire row per
    flit its links carry, two words per VC credit), the buffers a step's rows fill, and the
    compiled loop's requests, deadlock-look votes and gather buffers (as first allocated);
    ``route_words`` more per wire row for walked routes (a head carries the rest of its
    route: :mod:`~mpinet.engine.flit.route_carry`).
    Partners: every other rank up to :data:`~mpinet.engine.flit.rank_loop.FOLD_MAX` ranks
    (the counters ride in the messages), else the ranks its links reach. 0 on one rank."""
    if size < 2:
        return 0

    width = fk.W_WIDTH + header_width
    most = 0
    for r, _, _, far, bounds in _sampled_blocks(topo, size):
        owner = np.searchsorted(bounds, far, side="right") - 1
        links = np.bincount(owner[owner != r], minlength=size)
        links = links[links > 0]  # per neighbour rank: the links to it (and back)
        nn = size - 1 if size <= FOLD_MAX else links.size
        widest = int(links.max(initial=0)) * (capacity * (width + route_words) + 2 * vcs)
        words = nn * (2 * (fr.HEADER + widest) + 1) + 2 * size + 1 + int(links.sum()) * capacity
        # the loop's counters, requests, statuses, the looks' votes and gather (rank_looks)
        net = 2 * fr.NK + 2 * nn + 5 * (2 * nn + 1) + (VOTE + GATHER) * (size + 1) + size
        net += 2 * topo.degree  # sdc's demand per port, this rank's and summed
        most = max(most, 8 * (words + net))
    return most


def injects_late(job: Any, topo: Topology) -> bool:
    """Whether the run injects after step
    :data:`~mpinet.engine.flit.deadlock_live.CHECK_EVERY`, when the flit engine searches for
    dead worms while injecting (and keeps its snapshot)."""
    w = job.workload
    if w.get("injection") in ("bernoulli", "on_off"):
        return int(w.get("steps") or 0) - 1 >= CHECK_EVERY  # the last step is steps - 1
    if w.get("kind") == "te":  # the schedule injects each offset before its first hop
        return (w.get("algorithm") or default_algorithm(topo)) == "schedule"
    return w.get("kind") == "emulate-star"  # injects star step by star step


def segments_per_packet(m: Any, hops: float) -> int:
    """Buffers one packet's flits occupy at most: its source queue and, flits moving one a
    step, one buffer per flit along its route (``min(L, route)``; the buffer size only
    bounds how far a blocked worm compresses); store-and-forward: the buffer it leaves and
    the one it fills."""
    if m.switching == "store-and-forward":
        return 2
    return 1 + max(1, min(m.flits, math.ceil(2 * hops) + 1))


def flit_buffers(nodes: int, degree: int, vcs: int) -> tuple[int, int, int]:
    """(links, VC buffers, all buffers) of one rank holding ``nodes`` nodes."""
    nl = nodes * degree
    return nl, nl * vcs, nl * (vcs + 1)


def flit_state(
    est: Estimate,
    topo: Topology,
    size: int,
    m: Any,
    fp: Any,
    header_width: int,
    *,
    live: bool,
    in_flight: int | None = None,
    router: Any = None,
    capacity: int = 1,
) -> None:
    """Add the flit engine's per-rank arrays to ``est`` (phase ``run``).

    Parameters
    ----------
    est : Estimate
    topo : Topology
    size : int
        Ranks.
    m : Model
        From :func:`flit_model` (``switching``, ``flits``, ``vcs``, ``vc_buffer``).
    fp : Footprint or None
        The workload's packets (None: only the engine's own arrays).
    header_width : int
        The router's header words (one more int64 per packet record and wire row each).
    live : bool
        Worms are searched for deadlocks while traffic is injected (a snapshot per buffer).
    in_flight : int, optional
        Packets in the engine at once (whole network; default ``fp.in_flight``).
    router : Router, optional
        The built router: walked rows are counted where it may take them (:func:`walked`).
    capacity : int
        The largest link capacity (flits a link carries a step: wire rows per step).
    """
    b = -(-topo.num_nodes // size)
    nl, nvc, nbuf = flit_buffers(b, topo.degree, m.vcs)
    est.add("flit links", nl * LINK_BYTES, RUN)
    per_vc = max(VC_BYTES + SNAP_BYTES * live, VC_BUILD_BYTES)  # the run's, or the build's
    est.add("VC buffers", nvc * per_vc + nl * SNAP_BYTES * live, RUN)
    hw = 1 if walked(router) else header_width  # the rows carry the router's own header
    # walked routes ride in the messages: routes up to twice the mean hops, as the rows'
    carried = words_per_head(math.ceil(2 * mean_hops(topo) + 1)) if walked(router) else 0
    est.add("rank exchange", exchange_bytes(topo, size, m.vcs, hw, capacity, carried), RUN)
    if fp is None:
        return
    flight = -(-(fp.in_flight if in_flight is None else in_flight) // size)
    per_step = -(-fp.per_step // size)
    # a VC is held by one worm from its head to its tail: the pieces beyond the source
    # queues are at most one per VC buffer; the packets still at their source one each
    in_vc = min(flight * (segments_per_packet(m, mean_hops(topo)) - 1), nvc)
    active = min(flight, nl) + in_vc
    # the pool doubles when full, and a step keeps room for two segments per active buffer;
    # a step's injections are in flight already (a source queue's segment each)
    est.add("segments", 2 * (flight + in_vc + 2 * active) * SEG_BYTES, RUN)
    records = 2 * max(flight, per_step) * (PKT_BYTES + 8 * header_width)
    est.add("flit packet records", records, RUN)
    # the scratch is allocated for twice the active buffers but written (resident) as used:
    # a request and a move row per active buffer
    row = MOVE_BYTES + (8 * (WIRE_WIDTH + header_width) if size > 1 else 0)
    est.add("step scratch", active * (REQUEST_BYTES + row), RUN)
    ahead = min(CHUNK_STEPS * per_step, -(-fp.packets // size))
    if walked(router):  # the routes of WALK_AHEAD steps' injections are walked at once
        walk = min(WALK_AHEAD * per_step, -(-fp.packets // size))
        # on several ranks, free rows for two steps' heads from other ranks (route_carry)
        carried = 2 * cut_links(topo, size) * capacity if size > 1 else 0
        rows = route_rows_bytes(flight + walk + carried, mean_hops(topo))
        est.add("walked route rows", rows + walk * WALK_BYTES, RUN)
    est.add("injection", max(per_step * (128 + 16 * header_width),
                             ahead * (40 + 8 * header_width)), RUN)  # fmt: skip


def in_flight(job: Any, topo: Topology, fp: Any, m: Any) -> int:
    """Packets in the flit engine at once, at most (whole network).

    A job that injects once has them all at once. Uniform Bernoulli traffic well below
    saturation (offered flits per link and step ``rho = r H L / ports <= 1/2``, ``ports``
    the links a node may use in a step) holds about ``N r (H + L) / (1 - rho)`` (Little's
    law, a packet living ``H + L`` steps, longer as links fill), and a quarter more for
    chance; anything heavier or less even may queue all its packets at their sources.
    """
    w = job.workload
    if w.get("injection") != "bernoulli" or w.get("kind") != "uniform" or fp.concentrated:
        return fp.in_flight
    kind = str(job.model.get("kind") or "all-port")
    ports = {"all-port": topo.degree}.get(kind, 1)
    if kind.startswith("k-port:") and kind[7:].isdigit():
        ports = min(int(kind[7:]), topo.degree)
    hops, rate = mean_hops(topo), float(w.get("rate") or 0.0)
    rho = rate * hops * m.flits / ports
    if rho > 0.5:
        return fp.in_flight
    held = 1.25 * topo.num_nodes * rate * (hops + m.flits) / (1 - rho)
    return min(fp.in_flight, math.ceil(held) + 64)  # a few more: small networks fluctuate


def check_buffers(topo: Topology, m: Any, size: int) -> None:
    """Refuse a run whose buffers on one rank exceed the flit engine's int32 ids."""
    b = -(-topo.num_nodes // size)
    _, _, nbuf = flit_buffers(b, topo.degree, m.vcs)
    if nbuf >= 2**31:
        more = -(-topo.num_nodes * topo.degree * (m.vcs + 1) // (2**31 - 1))
        raise ResourceError(
            f"flit run on {describe(topo)} with vcs = {m.vcs} is {nbuf:,} buffers per rank "
            f"(links x (VCs + 1)) on {size} rank(s), over the flit engine's 2**31; way out: "
            f"{more} or more ranks, or fewer VCs"
        )
