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
from mpinet.routing.base import CompiledHop, HopContext
from mpinet.routing.compiled import NO_HOP

QUEUES = ("auto", "links", "calendar")
_NO_PORTS = np.zeros(0, np.int64)


def _column(a: np.ndarray) -> np.ndarray:
    """Headers as the kernels read them: (M, 1) int64 (headerless: zeros, never read)."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    return a if a.shape[1] else np.zeros((a.shape[0], 1), np.int64)


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
    """Buckets of packets by departure step, and the link records of one rank.

    ``rule`` is the router's compiled hop (:mod:`mpinet.routing.compiled`):
    with one, packets that stay on this rank are routed inside :meth:`fire`.
    """

    def __init__(self, block: int, deg: int, nbt: np.ndarray, caps: np.ndarray, hw: int,
                 lo: int, hi: int, rule: CompiledHop = NO_HOP) -> None:  # fmt: skip
        self.deg, self.hw, self.lo, self.hi, self.block = deg, hw, lo, hi, block
        self.rule = rule
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
        self.live = 0  # packets filed or arrived on this rank
        # the step's arrivals: records, chained per link (gnext), their ids, links touched
        self.A = np.empty(0, ck.RECORD)
        self.gnext = np.empty(0, np.int32)  # like G: an index into this step's arrivals
        self.gpid = np.empty(0, np.int64)
        self.touched = np.empty(0, np.int32 if nl < 2**31 else np.int64)
        self.acc = np.zeros(2, np.int64)  # arrivals, links touched
        self.err = np.zeros(5, np.int64)  # (code, pid, node, hops, port) of the first bad port
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

    def _room(self, more: int) -> None:
        """Room for ``more`` arrivals in this step (the ones so far kept)."""
        n = int(self.acc[0])
        if n + more <= self.A.size:
            return
        cap = max(n + more, self.A.size + self.A.size // 4, 1024)
        for name in ("A", "gnext", "gpid", "touched"):
            old = getattr(self, name)
            new = aligned_empty(cap, old.dtype) if name == "A" else np.empty(cap, old.dtype)
            new[:n] = old[:n]
            setattr(self, name, new)

    # -- arrivals ------------------------------------------------------------------
    def chain(self, rows: np.ndarray, ports: np.ndarray | None = None, new=None) -> None:
        """Packets (wire rows) that reached a node in this step, routed by the rule or ``ports``.

        Without a compiled rule the caller gives the router's ``ports`` and
        headers ``new``. The first bad port is kept in :attr:`err`.
        """
        n = rows.shape[0]
        if n == 0 or self.err[0]:
            return
        self._room(n)
        rule = self.rule
        if ports is None:
            ports, new = _NO_PORTS, _NO_PORTS.reshape(0, 1)
        else:
            ports = np.ascontiguousarray(ports, dtype=np.int64)
            new = _column(np.asarray(new).reshape(n, -1))
        ck.chain_rows(np.ascontiguousarray(rows), ports, new, rule.code, rule.prm, rule.ta,
                      rule.tb, self.lo, self.deg, self.nbt, self.G, self.A, self.gnext,
                      self.gpid, self.touched, self.acc, self.err)  # fmt: skip
        self.live += n

    def chain_injected(self, pid, src, dst, hdr, t: int, ports, new) -> None:
        """Packets injected at step ``t`` at their sources (see :meth:`chain`)."""
        n = pid.size
        if n == 0 or self.err[0]:
            return
        self._room(n)
        rule = self.rule
        ck.chain_injected(np.ascontiguousarray(pid, np.int64), np.ascontiguousarray(src, np.int64),
                          np.ascontiguousarray(dst, np.int64), _column(hdr), t,
                          np.ascontiguousarray(ports, dtype=np.int64), _column(new), rule.code,
                          rule.prm, rule.ta, rule.tb, self.lo, self.deg, self.nbt, self.G, self.A,
                          self.gnext, self.gpid, self.touched, self.acc, self.err)  # fmt: skip
        self.live += n

    def flush(self, t: int) -> tuple[int, int, int, int, int] | None:
        """File the arrivals of step ``t``; None, or (code, pid, node, hops, port) of a bad port.

        All of a step's arrivals are placed together: packets that join one link
        in one step take its places in id order, whichever batch they came in.
        """
        if self.err[0]:
            return tuple(int(x) for x in self.err)  # type: ignore[return-value]
        n, nt = int(self.acc[0]), int(self.acc[1])
        if n == 0:
            return None
        dep = np.empty(n, np.int64)
        top = ck.place(t, self.deg, self.caps, self.LS, self.G, self.gnext, self.gpid, dep,
                       self.touched, nt)  # fmt: skip
        if top >= self.bhead.size:
            self._grow_buckets(top)
        need = n // ck.CH + min(n, top - t) + 1
        if int(self.nfree[0]) < need:
            self._grow_chunks(max(2 * self.cnext.size, self.cnext.size + need))
        ck.file_records(self.A, n, dep, self.C, self.cnext, self.cfree, self.nfree,
                        self.bhead, self.btail, self.bfill, self.bcount)  # fmt: skip
        self.acc[:] = 0
        return None

    # -- a step ----------------------------------------------------------------------
    def fire(self, t: int, record: bool, count_load: bool) -> Outputs:
        """Move the packets filed under step ``t``; the outputs as ``select`` writes them.

        With a compiled rule the packets that stay on this rank are chained as
        arrivals here (``cnt[C_LOCAL]`` counts them; ``mv`` holds no rows of theirs).
        """
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
            rule = self.rule
            if rule.code:
                self._room(moves)
            ck.fire(t, self.lo, self.hi, self.deg, self.nbt, self.load, count_load, record,
                    self.C, self.cnext, self.cfree, self.nfree, self.bhead, self.btail,
                    self.bfill, self.bcount, b["chunks"], b["link"], b["deliv"], b["mv"],
                    b["hop"], self.cnt, rule.code, rule.prm, rule.ta, rule.tb, self.G, self.A,
                    self.gnext, self.gpid, self.touched, self.acc, self.err)  # fmt: skip
        self.live -= int(self.cnt[kn.C_MOVES])
        if self.rule.code:
            self.live += int(self.cnt[kn.C_LOCAL])  # already arrived
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
    if cal.rule.code:  # the local arrivals are chained already
        cal.chain(rows)
        return moves, ndel, nrem
    local = out.mv[: int(cnt[kn.C_LOCAL]), :width]
    # one router call per step (a long tail of small steps pays its fixed cost once)
    route_rows(eng, np.concatenate([local, rows]) if rows.shape[0] else local, t)
    return moves, ndel, nrem


def inject(eng, workload, pid: np.ndarray, src: np.ndarray, dst: np.ndarray, t: int) -> None:
    """Packets injected at step ``t`` (not at home): routed and chained, no rows built."""
    if hasattr(workload, "headers"):  # schedule-driven workloads set the router header
        hdr = workload.headers(pid, src, dst, t)
    else:
        hdr = eng.router.init_headers(src, dst)
    hdr = np.asarray(hdr, dtype=np.int64).reshape(pid.size, -1)
    cal = eng.cal
    if cal.rule.code:
        ports, new = _NO_PORTS, _NO_PORTS.reshape(0, 1)
    else:
        if eng.msg is not None:
            return
        ctx = HopContext(step=t + 1, pids=pid, hops=np.zeros(pid.size, np.int64), seed=eng.seed)
        ports, new = eng.router.next_port(src, dst, hdr, ctx)
        new = np.asarray(new, dtype=np.int64).reshape(pid.size, -1)
    cal.chain_injected(pid, src, dst, hdr, t, ports, new)


def file_step(eng, t: int) -> None:
    """File the arrivals of step ``t`` (a bad port becomes the run's message)."""
    bad = eng.cal.flush(t)
    if bad is not None and eng.msg is None:
        code, pid, node, hops, port = bad
        eng.msg = port_error(eng, code, node, pid, hops, port, t)
