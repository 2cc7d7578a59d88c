"""The flit engine's record of a run: packet rows (those still in flight included), the
step counters, link loads and hop rows, as :class:`~mpinet.engine.run.RunRecord`.

Why apart from :mod:`~mpinet.engine.flit.engine`: the run's end reads the pools as they
are left (which packet is where), a concern of its own beside the stepping.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mpinet.engine.flit import kernels as fk
from mpinet.engine.run import RunRecord, joined, packet_rows, stuck_packets


def counter_rows(counters: list) -> np.ndarray:
    """The run's ``(flits, delivered, in flight, cross)`` rows: ``counters`` holds a tuple
    per step (the step-by-step path) or an array per compiled call (no Python row per
    step: 7,000 steps' lists cost a millisecond on hypercube:8, docs/performance.md)."""
    if counters and all(isinstance(c, np.ndarray) for c in counters):
        return np.concatenate(counters).astype(np.int64, copy=False).reshape(-1, 4)
    return np.array(counters, dtype=np.int64).reshape(-1, 4)


def record(eng: Any, t: int, counters: list, deadlock: Any, in_flight: int,
           t0: float) -> RunRecord:  # fmt: skip
    """The engine's :class:`~mpinet.engine.run.RunRecord` after step ``t``; the engine's
    arrays are dropped (they go with the run)."""
    st = eng.st
    # ``in_flight``, the ranks' total: none anywhere, no pool to read (0.05-0.1 ms a run)
    live = live_rows(eng) if in_flight else np.empty((0, 7), np.int64)
    packets = packet_rows(eng.delivered, live)  # in flight: deliver_step = -1
    rec = RunRecord(
        steps=t,
        counters=counter_rows(counters),
        packets=packets,
        injected_ids=joined(eng.injected),
        link_load=st.link_load(),
        hop_rows=joined(eng.hop_rows, 5) if eng.record_hops else None,
        stuck=stuck_packets(eng.comm, eng.topo, live) if in_flight else [],
        deadlock=deadlock,
        drops=np.empty((0, 4), np.int64),
        seconds=time.perf_counter() - t0,
        lo=eng.lo,
        hi=eng.hi,
    )
    eng.st = eng._sc = None
    return rec


def live_rows(eng: Any) -> np.ndarray:
    """(pid, src, dst, cur, inj, hops, adm) of each undelivered packet, from the rank
    holding its head (so every packet once, whatever the rank count): the segment its
    head has not left yet, or the one sending it into its destination."""
    st = eng.st
    used = np.ones(st.nseg, bool)
    used[st.seg_free[: int(st.nfree[0])]] = False
    segs = np.flatnonzero(used)
    dest = st.seg_ovc[segs] == fk.DEST
    head = segs[(st.seg_sent[segs] == 0) | dest]
    p = st.seg_pkt[head]
    last = st.seg_ovc[head] == fk.DEST
    src_q = st.seg_buf[head] >= st.nvcbuf
    node = st.seg_buf[head] // (eng.deg * eng.vcs) + eng.lo
    cur = np.where(last, st.pkt_dst[p], np.where(src_q, st.pkt_src[p], node))
    hops = st.seg_hops[head] + last
    cols = (st.pkt_pid[p], st.pkt_src[p], st.pkt_dst[p], cur, st.pkt_inj[p], hops,
            st.pkt_adm[p])  # fmt: skip
    rows = np.stack(cols, axis=1).astype(np.int64).reshape(-1, 7)
    # by id: the pools' growth (which differs between the step paths) orders segments
    return rows[np.argsort(rows[:, 0], kind="stable")]
