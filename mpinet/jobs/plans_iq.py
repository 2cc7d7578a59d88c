"""The iq router's arrays in the memory plan (``model.router = "iq"``, docs/iq-router.md):
the bytes :func:`~mpinet.engine.flit.iq_state.make_arrays` allocates on a rank.

Every array there is sized by the rank's own nodes (its routers' and terminals' state, its
nodes' links' tables and channels, the rows it sends to other ranks) or by the packet
slots, plus a few constants (the allocators' scratch), so its bytes are ``C own + P slots +
D`` (``A nodes`` too, 0 since the links' arrays are the rank's): the four are read from
three tiny allocations of the same keys, exact for any network (tests/test_plans_iq.py
compares with a real run's arrays), plus the event bit sets, sized in 64-bit words and
counted apart (:func:`~mpinet.engine.flit.iq_state.event_bytes`).

A run whose keys the lean path takes (:func:`~mpinet.engine.flit.iq_lean_run.keys_refusal`)
allocates the lean arrays instead (:func:`~mpinet.engine.flit.iq_lean_state.make_lean`,
about 2.5x fewer bytes), whatever its router (a compiled hop, a table or routes walked):
those are counted, in the same way (:func:`lean_bytes`); on several ranks a rank's block of
routers, its input VCs' packet map and its exchange's buffers (:func:`lean_ranks_bytes`,
:mod:`~mpinet.engine.flit.iq_lean_ranks`), from the partition's cut.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine.flit import iq_lean_run, iq_ranks
from mpinet.engine.flit import iq_lean_state as ils
from mpinet.engine.flit import iq_state as iqs
from mpinet.engine.flit import ranks as rk
from mpinet.engine.flit.rank_looks import VOTE
from mpinet.engine.flit.rank_loop import FOLD_MAX, GATHER
from mpinet.engine.flit.route_carry import words_per_head
from mpinet.engine.iq_config import IQConfig, check_iq
from mpinet.engine.models import parse_model, switching_model
from mpinet.engine.partition import block_bounds
from mpinet.engine.state import neighbor_block
from mpinet.errors import MpinetError
from mpinet.jobs.estimate import RUN, Estimate, mean_hops

#: packet slots a run starts with (:func:`~mpinet.engine.flit.iq_run.run_iq`)
START_SLOTS = 1024
#: an MPI request's bytes and an ``MPI_Status``'s 4-byte words, at most (Open MPI's handles
#: are pointers; MPICH's 4 bytes and a status of 5 words)
HANDLE_BYTES, STATUS_WORDS = 8, 8
#: ranks whose exchange is counted (evenly spread; all when fewer): the most of them
SAMPLE = 8


def iq_keys(model: dict) -> tuple | None:
    """``(flits, vcs, vc_buffer, IQConfig)`` of a job's ``[model]`` as the iq router runs it
    (:func:`~mpinet.jobs.iq_job.iq_model`), or None: not ``router = "iq"``, or keys refused
    later by the job's own checks."""
    if (model.get("router") or "ideal") != "iq":
        return None
    try:
        iq = IQConfig(**check_iq("model.iq", model.get("iq")))
        m = switching_model(parse_model("all-port"), "wormhole", model.get("flits"),
                            model.get("vcs"), model.get("vc_buffer"),
                            model.get("vc_policy"))  # fmt: skip
    except (MpinetError, TypeError, ValueError):
        return None
    buf = m.vc_buffer if model.get("vc_buffer") is not None else 4
    return m.flits, m.vcs, buf, iq


def iq_bytes(nodes: int, own: int, deg: int, keys: tuple, hw: int, slots: int) -> int:
    """Bytes of a rank's iq arrays: ``nodes`` in the network, ``own`` of them the rank's
    (``own == nodes``: one rank), ``slots`` packet slots, a router header of ``hw`` words."""
    flits, vcs, buf, iq = keys
    width = iq_ranks.ROW + max(hw, 1)

    def size(n: int, b: int, p: int) -> int:  # less the event sets, counted exactly below
        prm = iqs.make_params(n, deg, vcs, buf, flits, iq, False, 0, b)
        z = np.zeros(b * deg, np.int64)  # the links' tables: the rank's nodes' rows
        arrays = iqs.make_arrays(prm, z, z, z, hw, p, width)
        return sum(a.nbytes for a in arrays) - iqs.event_bytes(prm)

    ev = iqs.event_bytes(iqs.make_params(nodes, deg, vcs, buf, flits, iq, False, 0,
                                         min(own, nodes)))  # fmt: skip
    if own >= nodes:  # one rank: nothing sent away, no rows or slot map
        a, p = size(3, 3, 1) - size(2, 2, 1), size(2, 2, 2) - size(2, 2, 1)
        return a * nodes + p * slots + size(2, 2, 1) - 2 * a - p + ev
    a, c = size(4, 1, 1) - size(3, 1, 1), size(4, 2, 1) - size(4, 1, 1)
    p = size(3, 1, 2) - size(3, 1, 1)
    return a * nodes + c * own + p * slots + size(3, 1, 1) - 3 * a - c - p + ev


def lean(deg: int, keys: tuple) -> bool:
    """Whether a one-rank run of ``keys`` (:func:`iq_keys`) on a network of degree ``deg``
    takes the lean path (its router routing by a compiled hop or a table)."""
    flits, vcs, buf, iq = keys
    prm = iqs.make_params(2, deg, vcs, buf, flits, iq, False)
    return iq_lean_run.keys_refusal(prm, iq) is None


def lean_bytes(nodes: int, deg: int, keys: tuple, hw: int, slots: int) -> int:
    """Bytes of the lean path's arrays on one rank (:func:`~.iq_lean_state.make_lean`):
    linear in ``nodes`` and ``slots`` but for the routers' bit set (``actb``)."""
    flits, vcs, buf, iq = keys

    def size(n: int, p: int) -> int:
        prm = iqs.make_params(n, deg, vcs, buf, flits, iq, False)
        z = np.zeros(n * deg, np.int64)
        lean = ils.make_lean(prm, z, z, z, z, hw, p, speedup=float(iq.internal_speedup))
        return sum(a.nbytes for a in lean)  # (a row a link)

    a, p = size(3, 1) - size(2, 1), size(2, 2) - size(2, 1)
    return a * nodes + p * slots + size(2, 1) - 2 * a - p + 8 * ((nodes + 63) // 64 - 1)


def lean_ranks_bytes(topo: Any, size: int, keys: tuple, hw: int, slots: int,
                     route_words: int = 0, rank: int | None = None, handle: int = HANDLE_BYTES,
                     status_words: int = STATUS_WORDS) -> int:  # fmt: skip
    """Bytes of the lean path's arrays on rank ``rank`` of ``size`` (None: the most of
    :data:`SAMPLE` ranks spread evenly; :func:`~.iq_lean_ranks.run`): the lean arrays of its
    block of routers, its input VCs' packet map and the slots' flags, and its exchange's
    buffers and requests per partner (every other rank up to ``FOLD_MAX`` ranks, else those
    its links reach): the general path's set (built, kept) and two of the lean path's (even
    and odd cycles), each a message out and one in as wide as the widest (a row and a
    credit a word per input speedup a link; ``route_words`` more where heads carry walked
    routes). ``handle``, ``status_words``: the MPI library's (the defaults bound both)."""
    flits, vcs, buf, iq = keys
    deg, width = topo.degree, iq_ranks.ROW + max(hw, 1)
    isp = iqs.make_params(2, deg, vcs, buf, flits, iq, False).isp
    bounds = block_bounds(topo.num_nodes, size)
    ranks = np.unique(np.linspace(0, size - 1, min(size, SAMPLE)).astype(np.int64))
    most = 0
    for r in ranks if rank is None else [rank]:
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        far = neighbor_block(topo, lo, hi).astype(np.int64).ravel()
        owner = np.searchsorted(bounds, far[far >= 0], side="right") - 1
        links = np.bincount(owner[owner != r], minlength=size)
        nn = size - 1 if size <= FOLD_MAX else int(np.count_nonzero(links))
        cut = int(links.max(initial=0))  # a partner's links (rows and credits a cycle)
        ex = 2 * nn * (rk.HEADER + cut * (width + 2)) + 2 * (2 * nn * (rk.HEADER + cut * (
            width + isp + route_words)))  # fmt: skip
        ex += 3 * nn + 2 * size + 2  # nsend (3 sets), slot, owner, the receive's scratch
        net = 2 * nn + 2 * rk.NK + 5 + VOTE * (size + 1) + GATHER * (size + 1) + 2
        net += 2 * (nn + 2 * rk.NK)  # the two sets' capacities and counters
        req = 3 * handle * (2 * nn + 1) + 4 * (2 + (2 * nn + 1) * status_words + 2 * size)
        own = hi - lo
        arrays = lean_bytes(own, deg, keys, hw, slots) + 8 * (own * (deg + 1) * vcs + slots)
        most = max(most, arrays + 8 * (ex + net) + req)
    return most


def iq_state(est: Estimate, nodes: int, size: int, deg: int, model: dict, hw: int,
             flight: int | None, walked: bool = True, topo: Any = None) -> None:  # fmt: skip
    """Add the iq router's arrays of the most loaded rank to ``est`` (phase ``run``), where
    the job runs it; packet slots: the run's start, or twice the packets in flight on a rank
    (the pool doubles when full). ``walked``: the router may walk its routes at injection
    (:func:`~mpinet.jobs.plans_flit.walked`: on several ranks a head carries the rest of
    its route in the messages, counted up to twice the mean hops). ``topo``: the network,
    for the lean path's exchange on several ranks (without it, the general arrays)."""
    keys = iq_keys(model)
    if keys is None:
        return
    own = -(-nodes // size)
    slots = max(START_SLOTS, 2 * -(-(flight or 0) // size))
    if lean(deg, keys) and size == 1:
        est.add("iq router arrays", lean_bytes(nodes, deg, keys, hw, slots), RUN)
        return
    if lean(deg, keys) and topo is not None:
        words = words_per_head(int(np.ceil(2 * mean_hops(topo) + 1))) if walked else 0
        b = lean_ranks_bytes(topo, size, keys, 1 if walked else hw, slots, words)
        est.add("iq router arrays", b, RUN)
        return
    est.add("iq router arrays", iq_bytes(nodes, min(own, nodes) if size > 1 else nodes, deg,
                                         keys, hw, slots), RUN)  # fmt: skip
