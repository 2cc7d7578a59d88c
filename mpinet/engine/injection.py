"""Packets entering the network: injection at their source, and releases from holds.

Called by the engine (:mod:`mpinet.engine.core`) once per step, after the
step's moves: the workload's packets of the step are recorded, those
addressed to their own node delivered at once, the others routed and queued
(:mod:`mpinet.engine.arrivals`) or, with finite buffers, put in their
source's queue until its injection buffer has a slot; then the packets a
schedule-driven router held until the next step are queued, and the source
queues admit what the injection buffers can take. Under the departure
calendar both go to :mod:`mpinet.engine.calendar`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine import faults as flt
from mpinet.engine import kernels as kn
from mpinet.engine.arrivals import enqueue, route
from mpinet.engine.calendar import file_step as cal_file
from mpinet.engine.calendar import inject as cal_inject
from mpinet.engine.run import Workload


def inject(eng: Any, workload: Workload, step: int) -> tuple[int, int]:
    """Packets injected at ``step``: home ones recorded, the rest routed or source-queued."""
    if step > workload.last_injection_step:  # the protocol's promise: nothing more comes
        return 0, 0  # (a unicast workload's call costs an arange over the block: 0.1 ms)
    pid, src, dst = (
        np.asarray(a, dtype=np.int64) for a in workload.injections(eng.lo, eng.hi, step)
    )
    if pid.size == 0:  # most steps of most workloads: skip the header and routing calls
        return 0, 0
    eng.injected.append(pid)
    if eng.down_node is not None:
        keep = flt.drop_injected(eng, pid, src, dst, step)
        pid, src, dst = pid[keep], src[keep], dst[keep]
    home = src == dst
    if home.any():
        rec = np.zeros((int(home.sum()), 7), dtype=np.int64)
        rec[:, 0], rec[:, 1], rec[:, 2] = pid[home], src[home], dst[home]
        rec[:, 3] = rec[:, 4] = rec[:, 6] = step
        eng.delivered.append(rec)
    go = ~home
    pid, src, dst = pid[go], src[go], dst[go]
    if eng.cal is not None:
        cal_inject(eng, workload, pid, src, dst, step)
        return int(eng.injected[-1].size), int(home.sum())
    p = eng.pool
    slots = p.alloc(pid.size)
    rec = p.rec
    rec["pid"][slots], rec["src"][slots], rec["dst"][slots] = pid, src, dst
    rec["cur"][slots], rec["inj"][slots], rec["hops"][slots] = src, step, 0
    rec["key"][slots] = rec["adm"][slots] = step
    if hasattr(workload, "headers"):  # schedule-driven workloads set the router header
        hdr = np.asarray(workload.headers(pid, src, dst, step), dtype=np.int64)
    else:
        hdr = eng.router.init_headers(src, dst)
    if eng.st.finite:
        rec["up"][slots] = kn.INJ_BUF
        rec["adm"][slots] = -1  # set when its injection buffer admits it
        p.hdr[slots] = hdr
        eng.st.source_push(slots, eng.lo, p)
    else:
        rec["up"][slots] = kn.NO_BUF
        route(eng, slots, src, dst, hdr, pid, np.zeros(pid.size, np.int64), step)
    return int(eng.injected[-1].size), int(home.sum())


def release_and_admit(eng: Any, t: int) -> int:
    """Queue the held packets whose step is ``t + 1``; admit source-queued packets."""
    if eng.cal is not None:  # no holds, no finite buffers: file the step's arrivals
        cal_file(eng, t)
        return 0
    due = eng.calendar.pop(t + 1, None)
    if due:
        slots = np.concatenate(due)
        eng.waiting -= slots.size
        if eng.down_node is not None:
            dead = eng.down_node[eng.pool.cur[slots]]
            flt.drop(eng, slots[dead], flt.NODE_FAILED, t)
            slots = slots[~dead]
        enqueue(eng, slots, eng.pool.port[slots].astype(np.int64), None, t)
    if not eng.st.finite:
        return 0
    slots = eng.st.admit()
    if slots.size:
        p = eng.pool
        p.key[slots] = t if eng.order == "fifo" else p.inj[slots]
        p.rec["adm"][slots] = t
        route(eng, slots, p.cur[slots], p.dst[slots], p.hdr[slots], p.pid[slots], p.hops[slots], t)
    return int(slots.size)
