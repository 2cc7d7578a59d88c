"""Routing the packets that reached a node, and queueing them on their output links.

Called by the engine for each batch of a step's arrivals (moved locally,
received from another rank, injected, admitted, released from a hold). The
router decides once per node, vectorized over the batch; packets held by a
schedule-driven router go to the engine's calendar; with faults, packets
without a route are dropped with their reason (:mod:`mpinet.engine.faults`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine import faults as flt
from mpinet.engine import kernels as kn
from mpinet.routing.base import DROP, HopContext

#: the step passed to a holding router when asking where a packet will go
_FAR = np.iinfo(np.int64).max // 4


def route(eng: Any, slots, cur, dst, hdr, pid, hops, t: int) -> None:
    """Decide the next port of packets that reached a node in step ``t``, and queue them.

    ``cur, dst, hdr, pid, hops`` are the packets' fields (contiguous rows
    written by the kernels: no gather from the pool).
    """
    if slots.size == 0 or eng.msg is not None:
        return
    cur, dst = np.asarray(cur, np.int64), np.asarray(dst, np.int64)
    hops = np.asarray(hops, np.int64)
    if eng.down_node is not None and eng.down_node[dst].any():  # dynamic faults
        dead = eng.down_node[dst]
        flt.drop(eng, slots[dead], flt.DEST_FAILED, t)
        keep = ~dead
        slots, cur, dst, hdr = slots[keep], cur[keep], dst[keep], hdr[keep]
        pid, hops = pid[keep], hops[keep]
    ctx = HopContext(step=_FAR if eng.holds else t + 1, pids=pid, hops=hops, seed=eng.seed)
    ports, new = eng.router.next_port(cur, dst, hdr, ctx)
    ports = np.asarray(ports, dtype=np.int64)
    if eng.down_node is not None:
        ok = (ports >= 0) & (ports < eng.deg)
        failed = ok.copy()
        failed[ok] = eng.faults.link_down(cur[ok], ports[ok])
        lost = (ports == DROP) | failed
        if lost.any():  # no route around the faults
            flt.drop(eng, slots[lost], flt.NO_ROUTE, t)
            keep = ~lost
            slots, cur, dst, hdr, ports = (
                slots[keep],
                cur[keep],
                dst[keep],
                hdr[keep],
                ports[keep],
            )
            new, pid, hops = new[keep], pid[keep], hops[keep]
            ctx = HopContext(step=ctx.step, pids=pid, hops=hops, seed=eng.seed)
    if eng.holds:
        ready = np.asarray(eng.router.ready_steps(cur, dst, hdr, ctx), dtype=np.int64)
        later = ready > t + 1
        if later.any():
            p = eng.pool
            held = slots[later]
            p.hdr[held] = new[later]
            p.rec["port"][held] = ports[later]
            for step in np.unique(ready[later]):
                at = slots[later & (ready == step)]
                eng.calendar.setdefault(int(step), []).append(at)
                eng.waiting += at.size
            keep = ~later
            slots, ports, new = slots[keep], ports[keep], new[keep]
    enqueue(eng, slots, ports, new, t)


def enqueue(eng: Any, slots: np.ndarray, ports: np.ndarray, new, t: int) -> None:
    """Queue packets on their output links; ``new``: headers after the hop (None: kept)."""
    st, p = eng.st, eng.pool
    err = np.zeros(3, dtype=np.int64)
    hdr = np.empty((0, p.hw), np.int64) if new is None else np.ascontiguousarray(new, np.int64)
    kn.enqueue(np.ascontiguousarray(slots, dtype=np.int64), ports, hdr, new is not None,
               st.nbt, eng.lo, eng.deg, st.ncls, st.use_cls, p.rec, p.hdr, st.qhead,
               st.qtail, st.lcount, st.pcount, st.act, st.na, err)  # fmt: skip
    if err[0] and eng.msg is None:
        eng.msg = _enqueue_error(eng, int(err[0]), slots[int(err[1])], int(ports[err[1]]), t)


def route_rows(eng: Any, rows: np.ndarray, t: int) -> None:
    """Decide the next port of packets (wire rows) that reached a node in step ``t``.

    The departure calendar's path (:mod:`mpinet.engine.calendar`): no holds,
    no faults; the packets are chained and filed at the end of the step.
    """
    if rows.shape[0] == 0 or eng.msg is not None:
        return
    ctx = HopContext(step=t + 1, pids=rows[:, kn.W_PID], hops=rows[:, kn.W_HOPS], seed=eng.seed)
    cur, dst, hdr = rows[:, kn.W_CUR], rows[:, kn.W_DST], rows[:, kn.W_WIDTH :]
    ports, new = eng.router.next_port(cur, dst, hdr, ctx)
    eng.cal.chain(rows, np.asarray(ports, dtype=np.int64), new)


def _enqueue_error(eng: Any, code: int, s: int, port: int, t: int) -> str:
    p = eng.pool
    return port_error(eng, code, int(p.cur[s]), int(p.pid[s]), int(p.hops[s]), port, t)


def port_error(eng: Any, code: int, cur: int, pid: int, hops: int, port: int, t: int) -> str:
    """The message for a packet at ``cur`` that cannot be queued on ``port`` (``code``)."""
    name = eng.router.name
    node = eng.topo.label(cur)
    if code == kn.ERR_PORT:
        return (
            f"step {t}: router {name} chose port {port} at node {node}; "
            f"valid ports are 0..{eng.deg - 1}"
        )
    if code == kn.ERR_NO_LINK:
        return (
            f"step {t}: router {name} sent a packet from node {node} on port "
            f"{eng.topo.ports[port]}, which has no link there"
        )
    return (
        f"step {t}: packet {pid} at node {node} has taken {hops} hops "
        f"and needs buffer class {hops + 1}; buffer_classes = 'hops' has "
        f"classes 0..{eng.st.ncls - 1}: raise model.max_hops"
    )
