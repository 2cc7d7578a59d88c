"""The iq router's arrays in the memory plan (``model.router = "iq"``, docs/iq-router.md):
the bytes :func:`~mpinet.engine.flit.iq_state.make_arrays` allocates on a rank.

Every array there is sized by the rank's own nodes (its routers' and terminals' state, its
nodes' links' tables and channels, the rows it sends to other ranks) or by the packet
slots, plus a few constants (the allocators' scratch), so its bytes are ``C own + P slots +
D`` (``A nodes`` too, 0 since the links' arrays are the rank's): the four are read from
three tiny allocations of the same keys, exact for any network (tests/test_plans_iq.py
compares with a real run's arrays), plus the event bit sets, sized in 64-bit words and
counted apart (:func:`~mpinet.engine.flit.iq_state.event_bytes`).

A run on one rank whose keys the lean path takes
(:func:`~mpinet.engine.flit.iq_lean_run.keys_refusal`) and whose router has a compiled hop
or a table allocates the lean arrays instead
(:func:`~mpinet.engine.flit.iq_lean_state.make_lean`, about 2.5x fewer bytes): those are
counted, in the same way (:func:`lean_bytes`). Several ranks, and routers that may walk
their routes, are counted with the general arrays (the larger).
"""

from __future__ import annotations

import numpy as np

from mpinet.engine.flit import iq_lean_run, iq_ranks
from mpinet.engine.flit import iq_lean_state as ils
from mpinet.engine.flit import iq_state as iqs
from mpinet.engine.iq_config import IQConfig, check_iq
from mpinet.engine.models import parse_model, switching_model
from mpinet.errors import MpinetError
from mpinet.jobs.estimate import RUN, Estimate

#: packet slots a run starts with (:func:`~mpinet.engine.flit.iq_run.run_iq`)
START_SLOTS = 1024


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
        return sum(a.nbytes for a in ils.make_lean(prm, z, z, np.zeros(n, np.int64), z, hw, p))

    a, p = size(3, 1) - size(2, 1), size(2, 2) - size(2, 1)
    return a * nodes + p * slots + size(2, 1) - 2 * a - p + 8 * ((nodes + 63) // 64 - 1)


def iq_state(est: Estimate, nodes: int, size: int, deg: int, model: dict, hw: int,
             flight: int | None, walked: bool = True) -> None:  # fmt: skip
    """Add the iq router's arrays of the most loaded rank to ``est`` (phase ``run``), where
    the job runs it; packet slots: the run's start, or twice the packets in flight on a rank
    (the pool doubles when full). ``walked``: the router may walk its routes at injection
    (then the general path runs; :func:`~mpinet.jobs.plans_flit.walked`)."""
    keys = iq_keys(model)
    if keys is None:
        return
    own = -(-nodes // size)
    slots = max(START_SLOTS, 2 * -(-(flight or 0) // size))
    if size == 1 and not walked and lean(deg, keys):
        est.add("iq router arrays", lean_bytes(nodes, deg, keys, hw, slots), RUN)
        return
    est.add("iq router arrays", iq_bytes(nodes, min(own, nodes) if size > 1 else nodes, deg,
                                         keys, hw, slots), RUN)  # fmt: skip
