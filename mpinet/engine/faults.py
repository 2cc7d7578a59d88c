"""Faults in the emulated network: activating them and dropping the packets they strand.

A :class:`~mpinet.topology.faults.FaultSet` becomes active before step 1
(``step = 0``) or at the start of a later step (dynamic faults). Activation
removes the failed links from the rank's neighbour table, so no packet can
cross them; with dynamic faults the packets already queued on a failed link
(or waiting at a failed node) are dropped. Routers that route around faults
(``Router.fault_tolerant``) are told the fault set and never choose a failed
link; a packet any other router sends towards a failed link, or whose
destination cannot be reached, is dropped too. Every drop is recorded with
its reason, so conservation still holds: injected = delivered + dropped (by
reason) + still in flight.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine import kernels as kn
from mpinet.engine import kernels_check as kc

#: drop reasons, by code (the run report counts drops per reason)
REASONS = {
    1: "destination failed",
    2: "source failed",
    3: "no route",
    4: "link failed",
    5: "node failed",
}
DEST_FAILED, SOURCE_FAILED, NO_ROUTE, LINK_FAILED, NODE_FAILED = 1, 2, 3, 4, 5


def activate(eng: Any, t: int) -> None:
    """Apply ``eng.faults`` at the start of step ``t`` (0: before the first step)."""
    f, deg, lo, hi = eng.faults, eng.deg, eng.lo, eng.hi
    eng.down_node = np.zeros(eng.topo.num_nodes, dtype=bool)
    eng.down_node[f.nodes] = True
    mine = f.links[(f.links >= lo * deg) & (f.links < hi * deg)] - lo * deg
    if t > 0:
        st, p = eng.st, eng.pool
        busy = mine[st.lcount[mine] > 0]
        out = np.empty(int(st.lcount[busy].sum()), dtype=np.int64)
        m = kc.drain(busy, st.ncls, st.qhead, st.qtail, st.lcount, st.pcount, deg, p.rec, out)
        at_node = eng.down_node[p.cur[out[:m]]]
        drop(eng, out[:m][~at_node], LINK_FAILED, t)
        drop(eng, out[:m][at_node], NODE_FAILED, t)
        if st.finite:
            dead = f.nodes[(f.nodes >= lo) & (f.nodes < hi)] - lo
            out = np.empty(p.used, dtype=np.int64)
            m = kc.drain_sources(dead, st.shead, st.stail, p.rec, out)
            drop(eng, out[:m], SOURCE_FAILED, t)
    # the run's link records only: the engine's own table stays the fault-free network,
    # so another run starts without these faults until its fault step
    eng.st.nbt[mine] = -1
    if t > 0 and getattr(eng.router, "fault_tolerant", False) and hasattr(eng.router, "set_faults"):
        eng.router.set_faults(f)


def drop(eng: Any, slots: np.ndarray, reason: int, t: int) -> None:
    """Drop the packets in ``slots``: record them, free their slots and buffers."""
    if slots.size == 0:
        return
    p = eng.pool
    rows = np.stack(
        [p.pid[slots], p.src[slots], p.dst[slots], p.inj[slots],
         np.full(slots.size, -1), p.hops[slots], p.adm[slots]], axis=1,
    ).astype(np.int64)  # fmt: skip
    eng.delivered.append(rows)
    eng.drops.append(
        np.stack(
            [
                rows[:, 0],
                np.full(slots.size, reason),
                np.full(slots.size, t),
                p.cur[slots].astype(np.int64),
            ],
            axis=1,
        )  # fmt: skip
    )
    if eng.st.finite:  # the buffers they held are free again from the next step on
        up = p.up[slots]
        local = up[(up >= 0)]
        g = local - eng.lo * eng.deg * eng.st.ncls
        inside = (g >= 0) & (g < eng.st.qhead.size)
        eng.pending_cl.append(g[inside])
        eng.pending_cr.append(local[~inside])
        inj = p.cur[slots[up == kn.INJ_BUF]].astype(np.int64) - eng.lo
        np.add.at(eng.st.injfree, inj, 1)
    p.release(np.asarray(slots, dtype=np.int64))


def drop_injected(eng: Any, pid, src, dst, step: int) -> np.ndarray:
    """Record injected packets whose source or destination failed; returns the mask kept."""
    dead_src = eng.down_node[src]
    dead_dst = eng.down_node[dst] & ~dead_src
    for mask, reason in ((dead_src, SOURCE_FAILED), (dead_dst, DEST_FAILED)):
        if mask.any():
            k = int(mask.sum())
            rows = np.zeros((k, 7), dtype=np.int64)
            rows[:, 0], rows[:, 1], rows[:, 2] = pid[mask], src[mask], dst[mask]
            rows[:, 3], rows[:, 4], rows[:, 6] = step, -1, -1
            eng.delivered.append(rows)
            eng.drops.append(
                np.stack([pid[mask], np.full(k, reason), np.full(k, step), src[mask]], axis=1)
            )
    return ~(dead_src | dead_dst)


def counts(drops: np.ndarray) -> dict[str, int]:
    """Drops per reason name (local rows)."""
    out = {}
    for code, name in REASONS.items():
        out[name] = int((drops[:, 1] == code).sum()) if drops.size else 0
    return out
