"""The iq model's blocks, shared by its two paths (:mod:`~mpinet.engine.flit.iq_run`, the
general one, and :mod:`~mpinet.engine.flit.iq_lean_run`): how many cycles a compiled call
runs, the workload's injections of a block, a block's step rows into the counters and
progress lines, and the run's record."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mpinet import rng
from mpinet.engine.flit import iq_step as ist
from mpinet.engine.flit.results import counter_rows
from mpinet.engine.run import RunRecord, joined, stuck_packets
from mpinet.routing import compiled, dor
from mpinet.routing.base import CompiledHop

#: cycles one compiled call runs (the packet pool holds a block's injections, which the
#: memory plan counts: mpinet/jobs/plans_iq.py); on one rank, where traffic is light, up to
#: BLOCK_MAX (:func:`next_block`)
BLOCK, BLOCK_MAX = 64, 1024


def next_block(block: int, packets: int, cycles: int, own: int, spare: int = 1024) -> int:
    """The next call's cycles after one of ``cycles`` that injected ``packets``: doubled (to
    :data:`BLOCK_MAX`) while twice as many cycles at that rate hold at most ``16 own +
    spare`` packets (64 cycles at a quarter of a packet a node), back to :data:`BLOCK` past
    it. The Python between two calls (the injections drawn, the rows kept) costs about 60
    us, most of a light run's time at 64 cycles a call; the results do not depend on the
    blocks."""
    cap = (16 * own + spare) * cycles
    if packets * block > cap:
        return BLOCK
    return min(2 * block, BLOCK_MAX) if 2 * packets * block <= cap else block


def dor_ties(router: Any) -> bool:
    """``dor`` on an even torus with BookSim's random ties (no compiled rule of its own)."""
    return router.name == "dor" and getattr(router, "mode", None) == dor.RANDOM


def rule_of(router: Any, topo: Any = None) -> tuple:
    """The router's compiled hop as the steps take it (``dor``'s ties: its rule in random
    mode, the tie in the header)."""
    r = compiled.rule_of(router)
    if dor_ties(router):
        prm = np.array([topo.k, topo.n, dor.RANDOM], np.int64)
        r = CompiledHop(dor.HOP_CODE, prm, np.zeros(1, np.uint8), np.zeros(1, np.int32))
    return (np.int64(r.code), r.prm, r.ta, r.tb)


def walk(eng: Any, s: Any, inj: tuple, step: int) -> tuple:
    """``inj`` with the routes of its packets walked into rows (their words the headers), as
    the ideal model's compiled steps walk them (:meth:`~mpinet.engine.flit.chunk.Steps._walk`):
    first the rows of the packets no longer on the rank freed (those no live slot names).
    ``s``: either path's arrays (their packet slots and headers are named alike)."""
    rows = eng.router
    rows.keep(slot_words(s))
    words = rows.walk_rows(inj[2], inj[3], inj[1], eng.seed, step)
    return (*inj[:4], np.ascontiguousarray(np.asarray(words, np.int64).reshape(-1, 1)))


def slot_words(s: Any) -> np.ndarray:
    """The header words of the packets in the slots in use (their walked rows kept)."""
    used = np.ones(s.pk_pid.size, bool)
    used[s.pk_free[: int(s.pk_nfree[0])]] = False
    return s.pk_hdr[used, 0]


def ring_items(buf: np.ndarray, count: np.ndarray, head: np.ndarray, size: int) -> tuple:
    """Every item held in a set of ring buffers of ``size`` slots (ring ``i`` at
    ``buf[i * size:]``, ``count[i]`` items from slot ``head[i]``): ``(ring, item)`` arrays,
    by ring, then from its head. A saturated network's input buffers hold tens of thousands of
    flits, so the packets' places are read in one pass, not flit by flit."""
    rings = np.flatnonzero(count > 0)
    n = count[rings].astype(np.int64)
    ring = np.repeat(rings, n)
    j = np.arange(ring.size) - np.repeat(np.cumsum(n) - n, n)  # the item's place in its ring
    return ring, buf[ring * size + (head[ring] + j) % size]


def ties(eng: Any, pid: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``dor``'s random ties of each packet drawn at injection, as the router draws them
    (one uniform keyed by seed, packet and the hops before the tied dimension: its routes
    are fixed by then): bit ``i`` set when dimension ``i`` goes down."""
    topo = eng.topo
    k = topo.k
    a, b = topo.coords(src), topo.coords(dst)
    d = (b - a) % k
    dist = np.minimum(d, k - d)
    before = np.cumsum(dist, axis=1) - dist
    mask = np.zeros(pid.size, np.int64)
    for i in np.flatnonzero((2 * d == k).any(axis=0)):
        tied = np.flatnonzero(2 * d[:, i] == k)
        u = rng.uniform(eng.seed, pid[tied], before[tied, i], rng.STREAM_ROUTE)
        mask[tied] |= (u >= 0.5).astype(np.int64) << i
    return mask


def block_rows(eng: Any, done: np.ndarray, start: int, n_inj: int, n_del: int,
               counters: list) -> tuple[int, int]:  # fmt: skip
    """A block's step rows ``done`` (from cycle ``start + 1``) into ``counters`` (flits on
    links, delivered, in flight, crossed ranks) and the progress lines (rank 0); returns the
    packets injected and delivered after it (both paths' runs)."""
    ninj = n_inj + np.cumsum(done[:, ist.R_INJ])
    ndel = n_del + np.cumsum(done[:, ist.R_DELIV])
    counters.append(np.stack([done[:, ist.R_FLITS], done[:, ist.R_DELIV], ninj - ndel,
                              done[:, ist.R_CROSS]], axis=1))  # fmt: skip
    if eng.progress is not None and eng.rank == 0:
        for k in range(done.shape[0]):
            eng.progress(start + 1 + k, int(ndel[k]), int(ninj[k]), int(ninj[k] - ndel[k]))
    if done.shape[0]:
        return int(ninj[-1]), int(ndel[-1])
    return n_inj, n_del


def injections(eng, workload, t, t_end, last, hw, injected) -> tuple:
    """``(off, pid, src, dst, hdr)`` of cycles ``t + 1 .. t_end`` (ids ascending per cycle):
    the workload's block of steps at once where it has one (Bernoulli), else step by step."""
    span = getattr(workload, "injection_span", None)
    ok = span is not None and t + 1 >= 0
    top = max(min(t_end, last), t)  # a watch may have stopped the traffic before the span's
    got = span(eng.lo, eng.hi, max(t + 1, 0), top + 1) if ok else None
    if got is not None and not hasattr(workload, "headers"):
        pid, src, dst, off = (np.asarray(a, np.int64) for a in got)
        off = np.concatenate([off, np.full(t_end - top, off[-1], np.int64)])
        step = np.repeat(np.arange(off.size - 1), np.diff(off))
        if pid.size:  # the engine's list of injected ids: the steps' in order, as one piece
            injected.append(pid)  # (a loop over the block's steps cost 0.3 us a step)
        order = np.lexsort((pid, step))  # a source queue is (step, id) ordered
        pid, src, dst = pid[order], src[order], dst[order]
        return with_headers(eng, off, pid, src, dst, hw)
    parts, off = [], [0]
    for step in range(t + 1, t_end + 1):
        got = None
        if 0 <= step <= last:
            got = [np.asarray(a, dtype=np.int64) for a in workload.injections(eng.lo, eng.hi, step)]
        if got is None or got[0].size == 0:
            off.append(off[-1])
            continue
        pid, src, dst = got
        injected.append(pid)
        order = np.argsort(pid, kind="stable")
        parts.append((pid[order], src[order], dst[order]))
        off.append(off[-1] + pid.size)
    cat = lambda k: (np.concatenate([p[k] for p in parts]) if parts  # noqa: E731
                     else np.empty(0, np.int64))  # fmt: skip
    pid, src, dst = cat(0), cat(1), cat(2)
    return with_headers(eng, np.array(off, np.int64), pid, src, dst, hw)


def with_headers(eng, off, pid, src, dst, hw) -> tuple:
    """The block's injections with their header words (``dor``'s torus ties where it has none)."""
    if hw and pid.size:
        hdr = np.asarray(eng.router.init_headers(src, dst), np.int64).reshape(pid.size, hw)
    else:
        hdr = np.zeros((pid.size, 1), np.int64)
        if dor_ties(eng.router) and pid.size:  # dor carries no header: the ties go there
            hdr[:, 0] = ties(eng, pid, src, dst)
    i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
    return (i64(off), i64(pid), i64(src), i64(dst), np.ascontiguousarray(hdr))


def record(eng, s, prm, t, counters, delivered, hop_rows, injected, in_flight, t0, deadlock,
           order, live_of):  # fmt: skip
    """The run's :class:`~mpinet.engine.run.RunRecord` from its rows (both paths): ``live_of(s,
    prm)`` lists the packets in flight, ``order`` the state ports' mpinet ports (None: the same)."""
    packets = joined(delivered, 7)
    live = live_of(s, prm) if in_flight else np.empty((0, 7), np.int64)
    if live.shape[0]:
        rows = live[:, [0, 1, 2, 4, 4, 5, 6]]
        rows[:, 4] = -1
        packets = np.concatenate([packets, rows])
    hops = None
    if eng.record_hops:
        hops = joined(hop_rows, 5)
        if order is not None:  # a hop's port in mpinet's, the rows in its order (a cycle's
            hops[:, 4] = order.order[order.rows(hops[:, 2]), hops[:, 4]]  # by node and port)
            hops = hops[np.lexsort((hops[:, 4], hops[:, 2], hops[:, 0]))]
    load = s.load.reshape(prm.hi - prm.lo, prm.deg).copy()
    if order is not None:  # the links' loads in mpinet's ports
        mine = order.order[order.rows(np.arange(prm.lo, prm.hi))]
        np.put_along_axis(load, mine, load.copy(), axis=1)
    return RunRecord(
        steps=t,
        counters=counter_rows(counters),
        packets=packets,
        injected_ids=joined(injected),
        link_load=load,
        hop_rows=hops,
        stuck=stuck_packets(eng.comm, eng.topo, live) if in_flight else [],
        deadlock=deadlock,
        drops=np.empty((0, 4), np.int64),
        seconds=time.perf_counter() - t0,
        lo=prm.lo,
        hi=prm.hi,
    )
