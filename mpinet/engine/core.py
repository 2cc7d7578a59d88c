"""The hop-by-hop engine: synchronous steps over per-link FIFO queues.

Each rank owns node ids ``[lo, hi)`` and the packets at them, in a pool of
slots (:mod:`mpinet.engine.pool`). A packet's next port is decided once, when
it reaches a node (or is injected): the router is called, vectorized, on the
step's arrivals only, and the packet joins the queue of that output link
(:mod:`mpinet.engine.kernels`). A schedule-driven router may hold a packet
until a later step (:meth:`Router.ready_steps`): it then waits in a calendar,
outside every queue, and costs nothing until its step.

One step ``t`` (1, 2, ...), on every rank:

1. under ``sdc`` one ``Allreduce`` of the demand per port fixes the step's
   dimension;
2. the ``select`` kernel serves the heads of the active links under the model
   (oldest movable head first, ties by packet id) and moves them; a finite
   buffer admits a packet only with a credit (a free slot at the start of the
   step), and the slots freed in step ``t`` are credited back for ``t + 1``;
3. the moves are checked again against the model by an independent kernel;
4. packets now owned by another rank, and credits owed to another rank, travel
   in one ``Alltoallv``;
5. arrivals, injections of step ``t`` and packets whose hold ends are routed
   and queued; with finite buffers, injections wait in a source queue until
   their node's injection buffer has a slot (:mod:`mpinet.engine.injection`);
6. one ``Allreduce`` of the step counters gives the trace row, the
   termination test and the deadlock test (with finite buffers, every
   ``CHECK_EVERY`` steps and when nothing moves after the last injection:
   :mod:`mpinet.engine.deadlock`).

Under ``all-port`` with unbounded buffers and FIFO order (no holds, no
faults) the engine keeps no queues: the departure step of a packet is fixed
when it joins a link, and steps 2 and 5 become "move the bucket of step
``t``" and "file the arrivals under their departure steps"
(:mod:`mpinet.engine.calendar`; same answers, ``queues="links"`` forces the
queues).

A packet received in step ``t`` can leave in step ``t + 1`` (store and
forward); one injected "at step t" can leave in step ``t + 1``; one crossing
its last link in step ``t`` has ``deliver_step = t``. The cost of a step is
O(moving packets + active links), whatever the backlog.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mpinet.engine import faults as flt
from mpinet.engine import kernels as kn
from mpinet.engine import kernels_check as kc
from mpinet.engine.arrivals import enqueue, route
from mpinet.engine.calendar import QUEUES, DepartureCalendar, eligible
from mpinet.engine.calendar import step as cal_step
from mpinet.engine.comm import resolve, sum_op
from mpinet.engine.deadlock import Watch
from mpinet.engine.exchange import exchange_packets
from mpinet.engine.injection import inject, release_and_admit
from mpinet.engine.models import Model, ModelError
from mpinet.engine.partition import block_bounds
from mpinet.engine.pool import Pool
from mpinet.engine.run import (  # noqa: F401  (CollectiveError, Workload: re-exported)
    CollectiveError,
    RunRecord,
    Workload,
    joined,
    packet_rows,
    raise_collected,
    stuck_packets,
)
from mpinet.engine.state import LinkState, neighbor_block
from mpinet.routing.base import Router
from mpinet.routing.compiled import rule_of
from mpinet.routing.route_tables import PATH_COMPILED, PATH_NEXT_PORT, PATH_TABLE, compile_routes
from mpinet.topology.base import Topology

#: packet row columns on the wire: pid, src, dst, cur, inj, hops, up, then the header
_WIRE = ("pid", "src", "dst", "cur", "inj", "hops", "up")


def select_kind(model: Model) -> int:
    """The kernel's model code (a hook: tests break it to prove the check works)."""
    return {"all-port": kn.KIND_ALL, "sdc": kn.KIND_SDC}.get(model.kind, kn.KIND_K)


class Engine:
    """Run unicast traffic on a topology under a model with a router.

    Parameters
    ----------
    topo, router, model : the network, the per-hop rule and the port model
        (the model also carries the buffers: ``model.buffer``, ``model.classes``)
    comm : mpi4py communicator, or None for a serial run
    seed : key of the counter-based random numbers
    max_steps : stop (and report the stuck packets) after this many steps
    order : ``"fifo"`` or ``"oldest-first"`` priority at each output link
    record_hops : keep one row per hop (trace level ``hops``)
    progress : called as ``progress(step, delivered, injected, in_flight)`` on rank 0
    load_window : count link loads only in steps ``[a, b)`` (a measurement window)
    faults : a :class:`~mpinet.topology.faults.FaultSet`, active from its ``step``
        (see :mod:`mpinet.engine.faults`)
    queues : ``"auto"`` (the departure calendar where it applies, see
        :mod:`mpinet.engine.calendar`, else per-link queues), ``"links"`` or
        ``"calendar"`` (an error where it does not apply); the answers are the same
    route_tables : read a deterministic, translation-invariant router's routes from a
        table (:func:`~mpinet.routing.route_tables.compile_routes`; ``route_path`` says
        which path routes); False: call its ``next_port`` (the same answers)
    """

    def __init__(
        self,
        topo: Topology,
        router: Router,
        model: Model,
        comm: Any = None,
        *,
        seed: int = 0,
        max_steps: int = 100_000,
        order: str = "fifo",
        record_hops: bool = False,
        progress: Callable[[int, int, int, int], None] | None = None,
        load_window: tuple[int, int] | None = None,
        faults: Any = None,
        queues: str = "auto",
        route_tables: bool = True,
    ) -> None:
        if order not in ("fifo", "oldest-first"):
            raise ModelError(f"order must be 'fifo' or 'oldest-first', got {order!r}")
        if queues not in QUEUES:
            raise ModelError(f"queues must be one of {', '.join(QUEUES)}, got {queues!r}")
        # a router with fixed, translation-invariant routes reads them from a table, in the
        # calendar's compiled loop too (same answers; docs/performance.md, "Routes computed
        # at injection"); rows walked at injection are not used here (they are rank-local)
        self.route_path, self.route_why = PATH_NEXT_PORT, "route_tables = False"
        if route_tables:
            run, path, why = compile_routes(router, dynamic_faults=faults is not None)
            router = run if path in (PATH_COMPILED, PATH_TABLE) else router
            self.route_path = path if router is run else PATH_NEXT_PORT
            self.route_why = why
        elif router.compiled_hop() is not None:
            self.route_path, self.route_why = PATH_COMPILED, ""
        self.topo, self.router, self.model = topo, router, model
        self.comm = resolve(comm)
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.seed, self.max_steps, self.order = int(seed), int(max_steps), order
        self.record_hops, self.progress = record_hops, progress
        self.load_window = (0, 1 << 62) if load_window is None else tuple(map(int, load_window))
        self.bounds = block_bounds(topo.num_nodes, self.size)
        self.lo, self.hi = int(self.bounds[self.rank]), int(self.bounds[self.rank + 1])
        self.deg = topo.degree
        self.caps = model.port_capacities(topo)
        self.nbt = neighbor_block(topo, self.lo, self.hi)
        self.holds = bool(getattr(router, "holds", False))
        self.faults = faults
        self.down_node: np.ndarray | None = None  # failed nodes, once the faults are active
        why = eligible(model, order, router, faults, topo.num_nodes)
        if queues == "calendar" and why is not None:
            raise ModelError(f"queues = 'calendar' does not apply here: {why}")
        self.use_calendar = queues != "links" and why is None
        self.cal: DepartureCalendar | None = None
        self.watch: Any = None  # the deadlock checks of a run with finite buffers

    # -- the run ---------------------------------------------------------------
    def run(self, workload: Workload) -> RunRecord:
        """Inject the workload's packets and step until all are delivered."""
        t0 = time.perf_counter()
        self._workload = workload
        if self.use_calendar:
            self.pool = self.st = None
            self.cal = DepartureCalendar(self.hi - self.lo, self.deg, self.nbt, self.caps,
                                         self.router.header_width, self.lo, self.hi,
                                         rule_of(self.router))  # fmt: skip
        else:
            self.pool = Pool(self.topo.num_nodes, self.router.header_width)
            self.st = LinkState(self.hi - self.lo, self.deg, self.model, self.pool, self.nbt)
            self.st.set_max_capacity(self.caps)
        self.calendar: dict[int, list[np.ndarray]] = {}
        self.waiting = 0
        self.delivered: list[np.ndarray] = []
        self.hop_rows: list[np.ndarray] = []
        self.injected: list[np.ndarray] = []
        self.msg: str | None = None
        self.drops: list[np.ndarray] = []
        self.pending_cl: list[np.ndarray] = []  # credits of dropped packets' buffers
        self.pending_cr: list[np.ndarray] = []
        self.down_node = None  # a run starts fault-free until its fault step
        comm = self.comm
        if self.faults is not None and self.faults.step == 0:
            flt.activate(self, 0)
        inject(self, workload, 0)
        entered = release_and_admit(self, 0)
        start = np.array(
            [sum(a.size for a in self.injected), sum(d.shape[0] for d in self.delivered),
             self._live_count(), int(self.msg is not None)], dtype=np.int64,
        )  # fmt: skip
        glob = np.empty_like(start)
        comm.Allreduce(start, glob, op=sum_op())
        if glob[3]:
            raise_collected(self.comm, self.msg)
        total_injected, total_delivered, in_flight = (int(x) for x in glob[:3])
        counters = []
        t = 0
        local = np.zeros(10, dtype=np.int64)
        glob = np.zeros(10, dtype=np.int64)
        last = workload.last_injection_step
        deadlock = None
        op = sum_op()
        watch = self.watch = None
        if self.st is not None and self.st.finite:  # deadlocks: see mpinet.engine.deadlock
            watch = self.watch = Watch(self)
        while (in_flight > 0 or t < last) and t < self.max_steps:
            t += 1
            if hasattr(comm, "where"):  # the watchdog names the step it waited in
                comm.where = f"step {t}"
            ndrop = len(self.drops)
            if self.faults is not None and t == self.faults.step:
                flt.activate(self, t)
            moves, ndel, away = self._step(t)
            n_inj, n_home = inject(self, workload, t)
            entered = release_and_admit(self, t)
            entered += len(self.drops) - ndrop  # a drop frees buffers: not a deadlock
            check = watch is not None and watch.due(t)
            local[:] = (moves, ndel + n_home, self._live_count(), away, n_inj,
                        self.msg is not None, self.waiting, entered,
                        watch.scan(t) if check else 0,
                        self.st.na[0] if watch is not None else 0)  # fmt: skip
            comm.Allreduce(local, glob, op=op)
            if glob[5]:
                raise_collected(self.comm, self.msg)
            counters.append(glob[:4].copy())
            total_delivered += int(glob[1])
            total_injected += int(glob[4])
            in_flight = int(glob[2])
            if self.progress is not None and self.rank == 0:
                self.progress(t, total_delivered, total_injected, in_flight)
            if watch is not None:
                watch.account(int(glob[0]), int(glob[9]))
            if watch is not None and in_flight:
                # after the last injection, a step in which nothing moved, nothing was
                # admitted and nothing is held: every front counts; else, every
                # CHECK_EVERY steps, the fronts whose link sent nothing since the last check
                stalled = not glob[0] and not glob[6] and not glob[7] and t >= last
                if stalled or glob[8]:
                    deadlock = watch.find(t, in_flight, stall=bool(stalled))
                    if deadlock is not None:
                        break
        stuck = stuck_packets(self.comm, self.topo, self._live_rows()) if in_flight else []
        # still in flight at max_steps: dropped, deliver_step = -1
        packets = packet_rows(self.delivered, self._live_rows())
        self.delivered = []  # the per-step pieces: one copy of the records less at the peak
        rec = RunRecord(
            steps=t,
            counters=np.array(counters, dtype=np.int64).reshape(-1, 4),
            packets=packets,
            injected_ids=joined(self.injected),
            link_load=(self.cal or self.st).link_load(),
            hop_rows=joined(self.hop_rows, 5) if self.record_hops else None,
            stuck=stuck,
            deadlock=deadlock,
            drops=joined(self.drops, 4),
            seconds=time.perf_counter() - t0,
            lo=self.lo,
            hi=self.hi,
        )
        self.pool = self.st = self.cal = self.watch = None  # the reports need none of them
        return rec

    def _live_count(self) -> int:
        """Packets on this rank: queued, held or filed."""
        return self.cal.live if self.cal is not None else self.pool.used

    def _live_rows(self) -> np.ndarray:
        """(pid, src, dst, cur, inj, hops, adm) of the packets still on this rank."""
        if self.cal is not None:
            return self.cal.live_rows()
        p, live = self.pool, self.pool.live()
        cols = (p.pid, p.src, p.dst, p.cur, p.inj, p.hops, p.adm)
        return np.stack([c[live] for c in cols], axis=1).astype(np.int64).reshape(-1, 7)

    # -- one step --------------------------------------------------------------
    def _step(self, t: int) -> tuple[int, int, int]:
        """Select, check and perform step ``t``'s moves; route and queue the arrivals."""
        if self.cal is not None:
            return cal_step(self, t)
        st, p = self.st, self.pool
        sdc_port = self._sdc_port() if self.model.kind == "sdc" else -1
        out = st.outputs(self.record_hops)
        kind = select_kind(self.model)
        kn.select(t, kind, self.model.k, sdc_port, self.caps, st.nbt, self.lo, self.hi,
                  self.deg, st.ncls, st.use_cls, st.finite, self.order == "fifo", p.rec, p.hdr,
                  st.qhead, st.qtail, st.lcount, st.pcount, st.act, st.na, st.credit, st.injfree,
                  st.load, st.nstamp, st.lstamp, st.srv, st.mark, st.mark8, p.free, p.nfree,
                  self.record_hops, self.load_window[0] <= t < self.load_window[1], out.link,
                  out.deliv, out.mv, out.cl, out.cr, out.hop, out.cnt)  # fmt: skip
        cnt = out.cnt
        moves, ndel = int(cnt[kn.C_MOVES]), int(cnt[kn.C_DELIV])
        links = out.link[:moves]
        if self.watch is not None:  # the last step each link moved (a deadlock's "closed")
            self.watch.moved[links] = t
        if self.msg is None:
            self.msg = self._check(t, links, sdc_port)
        self.delivered.append(out.deliv[:ndel].copy())
        if self.record_hops:
            self.hop_rows.append(out.hop[:moves].copy())
        cap, nrem = out.mv.shape[0], int(cnt[kn.C_REMOTE])
        wire = out.mv[cap - nrem :, : kn.W_WIDTH + self.pool.hw]
        arr = out.mv[: int(cnt[kn.C_LOCAL]), : kn.A_WIDTH + self.pool.hw]
        a = kn
        # local arrivals first: their rows are views of buffers the exchange does not touch
        self._route(arr[:, a.A_SLOT], arr[:, a.A_CUR], arr[:, a.A_DST], arr[:, a.A_WIDTH :],
                    arr[:, a.A_PID], arr[:, a.A_HOPS], t)  # fmt: skip
        cr, cl = out.cr[: int(cnt[kn.C_CRED_REMOTE])], out.cl[: int(cnt[kn.C_CRED_LOCAL])]
        if self.pending_cr or self.pending_cl:  # buffers freed by drops
            cr = np.concatenate([cr, *self.pending_cr]).astype(np.int64)
            cl = np.concatenate([cl, *self.pending_cl]).astype(np.int64)
            self.pending_cr, self.pending_cl = [], []
        rows, credits = self._exchange(wire, cr)
        st.return_credits(cl, credits, self.lo)
        if rows.shape[0]:
            slots = p.alloc(rows.shape[0])
            kn.unpack(rows, slots, p.rec, p.hdr, t, self.order == "fifo")
            self._route(slots, rows[:, a.W_CUR], rows[:, a.W_DST], rows[:, a.W_WIDTH :],
                        rows[:, a.W_PID], rows[:, a.W_HOPS], t)  # fmt: skip
        return moves, ndel, int(wire.shape[0])

    def _sdc_port(self) -> int:
        """The step's dimension: the port most packets want (among those that can move)."""
        demand = self.st.pcount.astype(np.int64)
        if not self.st.finite:
            total = np.empty_like(demand)
            self.comm.Allreduce(demand, total, op=sum_op())
            return int(np.argmax(total))
        # finite buffers: only ports where some head can move compete
        both = np.concatenate([demand, self.st.movable_ports(self.pool)])
        total = np.empty_like(both)
        self.comm.Allreduce(both, total, op=sum_op())
        dem, mov = total[: self.deg], total[self.deg :]
        return int(np.argmax(np.where(mov > 0, dem, -1))) if mov.any() else -1

    def _check(self, t: int, links: np.ndarray, sdc_port: int) -> str | None:
        """Independent check of the moves against the model; a message or None."""
        scratch = self.cal if self.cal is not None else self.st
        i, why = kc.check_moves(links, self.deg, self.caps, select_kind_check(self.model),
                               self.model.k, sdc_port, scratch.lcnt, scratch.ncnt)  # fmt: skip
        if i < 0:
            return None
        node, port = divmod(int(links[i]), self.deg)
        reason = {
            1: f"more packets than the capacity {int(self.caps[port])} of the link",
            2: f"more than {self.model.k} ports used, {self.model.name} allows {self.model.k}",
            3: f"dimensions other than {sdc_port} in one step",
        }[why]
        return (
            f"model {self.model.name} violated in step {t} at node "
            f"{self.topo.label(node + self.lo)}, port {self.topo.ports[port]}: {reason}"
        )

    def _exchange(self, wire: np.ndarray, credits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Send departing packets (wire rows) and owed credits; returns what arrived."""
        if self.size == 1:
            return wire[:0], credits
        owner = np.searchsorted(self.bounds, wire[:, kn.W_CUR], side="right") - 1
        ncls = self.st.ncls if self.st is not None else 1
        cowner = np.searchsorted(self.bounds * self.deg * ncls, credits, "right") - 1
        return exchange_packets(self.comm, wire, owner, credits, cowner)

    # -- routing ---------------------------------------------------------------
    def _route(self, slots, cur, dst, hdr, pid, hops, t: int) -> None:
        route(self, slots, cur, dst, hdr, pid, hops, t)

    def _enqueue(self, slots: np.ndarray, ports: np.ndarray, new, t: int) -> None:
        enqueue(self, slots, ports, new, t)


def select_kind_check(model: Model) -> int:
    """The model code the independent check uses (never patched)."""
    return {"all-port": kn.KIND_ALL, "sdc": kn.KIND_SDC}.get(model.kind, kn.KIND_K)
