"""The departure calendar: the engine's queues when a departure is known on arrival.

Under ``all-port`` with unbounded buffers, FIFO order and no packet held by
its router, a link sends ``capacity`` packets in every step its queue is not
empty, and nothing that arrives later can overtake a queued packet. So the
step a packet will cross its next link follows from the link's last
departure the moment the packet joins it, and the engine need not keep the
queue at all: it files the packet under that step
(:mod:`mpinet.engine.calendar_kernels`), and step ``t`` moves exactly the
packets filed under ``t``, read as a stream.

Why: the per-link queues (:mod:`mpinet.engine.kernels`) read every moving
packet's record and its queue's tail at random; on networks whose packets do
not fit the caches that is two to three memory misses per hop. Here a hop
costs sequential reads and writes plus random accesses to small per-link
arrays (the neighbour, 4 bytes; the last departure, 8; the group head, 4),
measured in docs/performance.md.

Same answers: every move, step and record is the one the per-link queues
give (tested on both paths, 1-4 ranks). The engine takes this path by itself
(:func:`eligible`); ``Engine(queues="links")`` forces the queues.
"""

from __future__ import annotations

import numpy as np

from mpinet.engine import calendar_kernels as ck
from mpinet.engine import kernels as kn
from mpinet.engine.arrivals import port_error, route_rows
from mpinet.engine.exchange import exchange_rows
from mpinet.engine.pool import aligned_empty
from mpinet.engine.state import Outputs, check_scratch

QUEUES = ("auto", "links", "calendar")


def eligible(model, order: str, router, faults, num_nodes: int) -> str | None:
    """Why the calendar cannot run this engine (None: it can)."""
    if model.kind != "all-port":
        return f"model {model.name}: a link's turn depends on other links"
    if model.buffer > 0:
        return "finite buffers: a packet may wait for a credit"
    if order != "fifo":
        return f"order {order}: a later packet may overtake a queued one"
    if getattr(router, "holds", False):
        return f"router {router.name} holds packets until a later step"
    if router.header_width > 1:
        return f"router {router.name} carries a {router.header_width}-word header"
    if faults is not None:
        return "faults: a packet may be dropped from its queue"
    if num_nodes >= 2**31:
        return "node ids above 2**31"
    return None


class DepartureCalendar:
    """Buckets of packets by departure step, and the link records of one rank."""

    def __init__(self, block: int, deg: int, nbt: np.ndarray, caps: np.ndarray, hw: int,
                 lo: int, hi: int) -> None:  # fmt: skip
        self.deg, self.hw, self.lo, self.hi, self.block = deg, hw, lo, hi, block
        self.caps = np.array(caps, dtype=np.int64)  # its own copy: the model check keeps one
        nl = block * deg
        self.nbt = nbt
        self.LS = np.zeros(nl, ck.LINK)
        self.G = np.full(nl, -1, np.int32)
        self.load = np.zeros(nl, dtype=np.int64)
        self.lcnt = check_scratch(nl, self.caps)  # zeroed scratch of the model check
        self.ncnt = np.zeros(1, dtype=np.int32)
        self.C = aligned_empty(0, ck.RECORD)
        self.cnext = np.empty(0, np.int32)
        self.cfree = np.empty(0, np.int32)
        self.nfree = np.zeros(1, np.int64)
        self._grow_chunks(1024)
        self.bhead = np.full(1024, -1, np.int64)
        self.btail = np.full(1024, -1, np.int64)
        self.bfill = np.zeros(1024, np.int64)
        self.bcount = np.zeros(1024, np.int64)
        self.live = 0  # packets filed or staged on this rank
        self._staged: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._scratch = np.empty(0, np.int64)
        self._bufs: dict[str, np.ndarray] = {}
        self._cap = 0
        self.cnt = np.zeros(8, dtype=np.int64)

    # -- storage -----------------------------------------------------------------
    def _grow_chunks(self, n: int) -> None:
        old = self.cnext.size
        store = aligned_empty(n * ck.CH, ck.RECORD)
        store[: old * ck.CH] = self.C
        self.C = store
        self.cnext = np.concatenate([self.cnext, np.full(n - old, -1, np.int32)])
        k = int(self.nfree[0])
        free = np.empty(n, np.int32)
        free[:k] = self.cfree[:k]
        free[k : k + n - old] = np.arange(n - 1, old - 1, -1, dtype=np.int32)
        self.cfree = free
        self.nfree[0] = k + n - old

    def _grow_buckets(self, top: int) -> None:
        n = max(2 * self.bhead.size, top + 1)
        for name, fill in (("bhead", -1), ("btail", -1), ("bfill", 0), ("bcount", 0)):
            a = getattr(self, name)
            b = np.full(n, fill, np.int64)
            b[: a.size] = a
            setattr(self, name, b)

    # -- filing --------------------------------------------------------------------
    def stage(self, rows: np.ndarray, ports: np.ndarray, new: np.ndarray) -> None:
        """Packets (wire rows) that joined a node in this step, with their ports and headers."""
        if rows.shape[0]:
            self._staged.append((rows, ports, new))
            self.live += rows.shape[0]

    def flush(self, t: int) -> tuple[int, np.ndarray, int] | None:
        """File the packets staged in step ``t``; ``(code, row, port)`` of a bad port, or None.

        All of a step's arrivals are filed together: packets that join one link
        in one step take its places in id order, whichever batch they came in.
        """
        if not self._staged:
            return None
        if len(self._staged) == 1:
            rows, ports, new = self._staged[0]
            rows = np.ascontiguousarray(rows)
        else:
            rows = np.concatenate([s[0] for s in self._staged])
            ports = np.concatenate([s[1] for s in self._staged])
            new = np.concatenate([s[2] for s in self._staged])
        self._staged = []
        ports = np.ascontiguousarray(ports, dtype=np.int64)
        new = np.ascontiguousarray(new, dtype=np.int64).reshape(rows.shape[0], -1)
        n = rows.shape[0]
        if self._scratch.size < 3 * n:
            self._scratch = np.empty(3 * n, np.int64)
        gnext, touched, gpid = self._scratch[:n], self._scratch[n : 2 * n], self._scratch[2 * n :]
        dep = np.empty(n, np.int64)
        err = np.zeros(2, np.int64)
        top = ck.place(rows, ports, t, self.lo, self.deg, self.caps, self.nbt, self.LS, self.G,
                       gnext, gpid[:n], dep, touched, err)  # fmt: skip
        if err[0]:
            i = int(err[1])
            return int(err[0]), rows[i], int(ports[i])
        if top >= self.bhead.size:
            self._grow_buckets(top)
        need = n // ck.CH + min(n, top - t) + 1
        if int(self.nfree[0]) < need:
            self._grow_chunks(max(2 * self.cnext.size, self.cnext.size + need))
        ck.file_rows(rows, ports, new, dep, self.C, self.cnext, self.cfree, self.nfree,
                     self.bhead, self.btail, self.bfill, self.bcount)  # fmt: skip
        return None

    # -- a step ----------------------------------------------------------------------
    def fire(self, t: int, record: bool, count_load: bool) -> Outputs:
        """Move the packets filed under step ``t``; the outputs as ``select`` writes them."""
        moves = int(self.bcount[t]) if t < self.bcount.size else 0
        if moves > self._cap or not self._bufs:
            cap = max(moves, self._cap + self._cap // 4, 1024)
            self._bufs = {
                "link": np.empty(cap, np.int64),
                "deliv": np.empty((cap, 7), np.int64),
                "mv": np.empty((cap, kn.W_WIDTH + self.hw), np.int64),
                "hop": np.empty((cap if record else 0, 5), np.int64),
                "chunks": np.empty(cap // ck.CH + 2, np.int64),
            }
            self._cap = cap
        b = self._bufs
        self.cnt[:] = 0
        if moves:
            ck.fire(t, self.lo, self.hi, self.deg, self.hw, self.nbt, self.load, count_load,
                    record, self.C, self.cnext, self.cfree, self.nfree, self.bhead, self.btail,
                    self.bfill, self.bcount, b["chunks"], b["link"], b["deliv"], b["mv"],
                    b["hop"], self.cnt)  # fmt: skip
        self.live -= int(self.cnt[kn.C_MOVES])  # arrivals come back through stage()
        none = np.empty(0, np.int64)
        return Outputs(link=b["link"], deliv=b["deliv"], mv=b["mv"], cl=none, cr=none,
                       hop=b["hop"], cnt=self.cnt)  # fmt: skip

    # -- after the run ---------------------------------------------------------------
    def live_rows(self) -> np.ndarray:
        """(pid, src, dst, cur, inj, hops, adm) of every packet still filed, int64 rows."""
        out = np.empty((int(self.bcount.sum()), 7), np.int64)
        m = ck.gather(self.bhead, self.btail, self.bfill, self.cnext, self.C, out)
        return out[:m]

    def link_load(self) -> np.ndarray:
        return self.load.reshape(self.block, self.deg).copy()


# -- the engine's steps on the calendar (called by :class:`~mpinet.engine.core.Engine`) --
def step(eng, t: int) -> tuple[int, int, int]:
    """Step ``t``: move the bucket, check the moves, route the arrivals (local, then received)."""
    cal = eng.cal
    out = cal.fire(t, eng.record_hops, eng.load_window[0] <= t < eng.load_window[1])
    cnt = out.cnt
    moves, ndel = int(cnt[kn.C_MOVES]), int(cnt[kn.C_DELIV])
    if eng.msg is None:
        eng.msg = eng._check(t, out.link[:moves], -1)
    eng.delivered.append(out.deliv[:ndel].copy())
    if eng.record_hops:
        eng.hop_rows.append(out.hop[:moves].copy())
    width, cap, nrem = kn.W_WIDTH + cal.hw, out.mv.shape[0], int(cnt[kn.C_REMOTE])
    rows = out.mv[cap - nrem :, :width]
    if eng.size > 1:  # rows only: no credits travel on the calendar's path
        owner = np.searchsorted(eng.bounds, rows[:, kn.W_CUR], side="right") - 1
        rows = exchange_rows(eng.comm, rows, owner)
    # local rows are views of the step buffers: staged until file_step, before the next fire
    local = out.mv[: int(cnt[kn.C_LOCAL]), :width]
    # one router call per step (a long tail of small steps pays its fixed cost once)
    route_rows(eng, np.concatenate([local, rows]) if rows.shape[0] else local, t)
    return moves, ndel, nrem


def inject(eng, workload, pid: np.ndarray, src: np.ndarray, dst: np.ndarray, t: int) -> None:
    """Packets injected at step ``t`` (not at home) as wire rows, routed and staged."""
    rows = np.empty((pid.size, kn.W_WIDTH + eng.cal.hw), dtype=np.int64)
    rows[:, kn.W_PID], rows[:, kn.W_SRC], rows[:, kn.W_DST] = pid, src, dst
    rows[:, kn.W_CUR], rows[:, kn.W_INJ], rows[:, kn.W_HOPS] = src, t, 0
    rows[:, kn.W_UP], rows[:, kn.W_ADM] = kn.NO_BUF, t
    if hasattr(workload, "headers"):  # schedule-driven workloads set the router header
        hdr = workload.headers(pid, src, dst, t)
    else:
        hdr = eng.router.init_headers(src, dst)
    rows[:, kn.W_WIDTH :] = np.asarray(hdr, dtype=np.int64).reshape(pid.size, -1)
    route_rows(eng, rows, t)


def file_step(eng, t: int) -> None:
    """File the arrivals of step ``t`` (a bad port becomes the run's message)."""
    bad = eng.cal.flush(t)
    if bad is not None and eng.msg is None:
        code, row, port = bad
        eng.msg = port_error(eng, code, int(row[kn.W_CUR]), int(row[kn.W_PID]),
                             int(row[kn.W_HOPS]), port, t)  # fmt: skip
