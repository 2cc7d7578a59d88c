"""The flit engine: wormhole, cut-through and store-and-forward of multi-flit packets.

The model is docs/switching.md, step by step; this module runs it on the rank's block of
nodes with the compiled kernels of :mod:`mpinet.engine.flit.kernels` and the arrays of
:mod:`mpinet.engine.flit.state`. One step ``t``:

1. :func:`~mpinet.engine.flit.kernels.collect` the requests (front segments with flits);
2. the port model chooses the links that may send (:func:`~mpinet.engine.flit.kernels.port_model`;
   sdc: one ``Allreduce`` of the movable requests per port);
3. :func:`~mpinet.engine.flit.kernels.move` allocates VCs and moves flits, link by link in
   (injection step, packet id) order; :func:`~mpinet.engine.flit.step_end.settle` applies
   the local arrivals, VC releases and credits;
4. flits bound for other ranks, and credits owed to them, travel in one ``Alltoallv``
   (:func:`~mpinet.engine.exchange.exchange_packets`): a head carries its packet's record;
5. the heads that reached a node are routed there (the router, vectorized over them), and
   the step's injections join their source queues;
6. one ``Allreduce`` of the step counters: the trace row, termination, deadlock.

Results are the engines' :class:`~mpinet.engine.run.RunRecord`: latency from the
head's injection to the tail's delivery, link loads in flits, hop rows of the head.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mpinet.engine.comm import resolve, sum_op
from mpinet.engine.flit import chunk, direct, mpi_native, python_step, rank_loop, results
from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import route_heads as heads
from mpinet.engine.flit import state as fs
from mpinet.engine.flit.deadlock import wait_for_cycle
from mpinet.engine.flit.deadlock_live import CHECK_EVERY, LiveCheck
from mpinet.engine.flit.iq_blocks import dor_ties
from mpinet.engine.flit.iq_run import run_iq
from mpinet.engine.flit.layout import Params, StepOut, far
from mpinet.engine.flit.rank_steps import RankSteps, calls_path
from mpinet.engine.models import Model
from mpinet.engine.partition import block_bounds
from mpinet.engine.run import RunRecord, Workload, raise_collected
from mpinet.engine.state import neighbor_block
from mpinet.model_names import SWITCHING
from mpinet.routing import route_tables as rt
from mpinet.routing.base import Router
from mpinet.topology.base import Topology

#: the kernels' code of each switching mode
MODES = dict(zip(SWITCHING, (fk.SAF, fk.CUT, fk.WORM), strict=True))
#: the switching keys of a job's [model] (any of them given: the flit engine, most likely)
FLIT_KEYS = ("switching", "flits", "vcs", "vc_buffer", "vc_policy")


def preload_kernels(model: dict, ranks: int) -> None:
    """Start loading the compiled steps' kernel of a flit run on ``ranks`` ranks from numba's
    cache in a thread (:func:`~mpinet.engine.flit.direct.preload`), as soon as the job's
    ``model`` keys say it will most likely run here: the load then happens while the job is
    set up, before the engine's clock starts (measured: the main thread waits on numba's
    compiler lock meanwhile, so it moves out of engine time without shortening the process;
    docs/performance.md, "A fresh run's fixed cost", seventh pass). Not for
    ``model.router = "iq"`` (kernels of their own)."""
    if model.get("router") == "iq" or all(model.get(k) is None for k in FLIT_KEYS):
        return
    direct.preload((chunk.run_steps,) if ranks == 1 else (rank_loop.run_block,))


def collect_young() -> None:
    """Collect the cyclic collector's youngest generation while a run is set up (if the
    collector runs): the set-up's objects are then not the ones that start a collection
    inside the run's clock (a fresh hypercube:8 run had one in about half its runs, 70-95
    us of its 6 ms; docs/performance.md, "hypercube:8 at light load in session 11")."""
    if gc.isenabled():
        gc.collect(0)


class FlitEngine:
    """Run unicast traffic at flit level (see the module docstring and docs/switching.md).

    Parameters
    ----------
    topo, router, model : the network, the per-hop rule, and the model with its switching
        keys (``model.switching``, ``flits``, ``vcs``, ``vc_buffer``, ``vc_policy``)
    policy : the VC policy object (:mod:`mpinet.routing.vc_policies`): ``hop(cur, nxt,
        hops, state) -> (lo, hi, state)``
    live_check : look for worms blocked for good every 16 steps while packets are injected
        (:mod:`mpinet.engine.flit.deadlock_live`); False: only the stall after the last injection
    compiled_steps : run many steps per compiled call where :func:`mpinet.engine.flit.chunk.usable`
        (the same results); False: every step through Python
    comm, seed, max_steps, record_hops, progress, load_window : as
        :class:`~mpinet.engine.core.Engine`
    """

    def __init__(
        self,
        topo: Topology,
        router: Router,
        model: Model,
        policy: Any,
        comm: Any = None,
        *,
        seed: int = 0,
        max_steps: int = 100_000,
        record_hops: bool = False,
        progress: Callable[[int, int, int, int], None] | None = None,
        load_window: tuple[int, int] | None = None,
        live_check: bool = True,
        compiled_steps: bool = True,
    ) -> None:
        self.topo, self.router, self.model, self.policy = topo, router, model, policy
        self.comm = resolve(comm)
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.seed, self.max_steps = int(seed), int(max_steps)
        self.record_hops, self.progress = record_hops, progress
        self.live_check = live_check  # False: only the stall after the last injection
        self.compiled_steps = compiled_steps  # False: every step through Python (the tests)
        self.load_window = (0, 1 << 62) if load_window is None else tuple(map(int, load_window))
        #: the run's deliveries handed out between calls (mpinet.jobs.booksim_live.Watch)
        self.watch: Any = None
        self.bounds = block_bounds(topo.num_nodes, self.size)
        self.lo, self.hi = int(self.bounds[self.rank]), int(self.bounds[self.rank + 1])
        self.deg = topo.degree
        self.caps = model.port_capacities(topo)
        # the reverse port of each of the rank's links (it may differ by node: file networks)
        nodes = np.repeat(np.arange(self.lo, self.hi, dtype=np.int64), self.deg)
        self.rev = topo.reverse_of(nodes, np.tile(np.arange(self.deg), self.hi - self.lo))
        self.mode = MODES[model.switching]
        self.flits, self.vcs, self.bsize = model.flits, model.vcs, model.vc_buffer
        self.need = 1 if self.mode == fk.WORM else self.flits
        self.kind = {"all-port": fk.ALL, "sdc": fk.SDC}.get(model.kind, fk.KPORT)
        #: how the router routes inside the compiled steps, and why not faster (route_tables)
        self.routes, self.routes_why = self._compiled_routes()
        #: the run's state, built with the engine: before its clock, as BookSim2 builds its
        #: routers and buffers before its "Total run time" (:meth:`run` takes it once)
        self._built = self._build() if model.router != "iq" else None

    def _build(self) -> tuple[fs.FlitState, Params]:
        """The rank's flit state (links, VC buffers, pools) and the kernels' parameters."""
        nbt = neighbor_block(self.topo, self.lo, self.hi).astype(np.int64)
        st = fs.FlitState(self.hi - self.lo, self.deg, self.vcs, self.bsize, nbt,
                          self.router.header_width, self.lo, self.rev, self.caps)  # fmt: skip
        prm = Params(self.mode, self.flits, self.vcs, self.need, self.deg, self.lo, self.hi,
                     st.nvcbuf, self.bsize, self.kind, self.model.k, int(self.record_hops),
                     far(st.nvcbuf))  # fmt: skip
        return st, prm

    def _compiled_routes(self) -> tuple[str, str]:
        """How the router routes inside the compiled steps (``mpinet run --json``:
        ``switching.routes``): its own compiled hop; its translated route table where that is
        exact and affordable (the same ports hop for hop, checked when the table is built;
        the same table on every rank); else its routes walked at injection into rows
        (:class:`~mpinet.routing.route_rows.SourceRouted`, driven by
        :class:`~mpinet.engine.flit.chunk.Steps`). ``why``: why a faster way did not apply."""
        if not self.compiled_steps or self.router.compiled_hop() is not None:
            return rt.PATH_COMPILED if self.compiled_steps else rt.PATH_NEXT_PORT, ""
        router, how, why = rt.compile_routes(self.router)
        if how == rt.PATH_WALKED and self.policy.compiled is None:
            return rt.PATH_NEXT_PORT, why  # no compiled steps to drive the rows: chunk.path
        if (
            how == rt.PATH_WALKED
            and getattr(self.model, "router", None) == "iq"
            and dor_ties(self.router)
        ):  # the iq steps draw dor's torus ties at injection, keyed as the router draws them
            return rt.PATH_NEXT_PORT, why
        if how in (rt.PATH_TABLE, rt.PATH_WALKED):
            self.router = router
        return how, why

    @property
    def takes_watch(self) -> bool:
        """Whether :meth:`run` hands its deliveries to :attr:`watch` between its calls and
        takes its limits: ``watch.limit(t)``, the last step the next call may run;
        ``watch.seen(t, delivered, live, last, max_steps)``, the new last injection step
        and steps at most (collective). The iq router's blocks, one rank's calls and several
        ranks' blocks of compiled steps (:class:`~mpinet.engine.flit.rank_loop.Blocks`, where
        the MPI library can be called from them) do; the step-by-step exchange does not."""
        if self.model.router == "iq" or self.size == 1:
            return True
        return chunk.path(self) == chunk.COMPILED and mpi_native.native(self.comm) is not None

    # -- the run -----------------------------------------------------------------
    def run(self, workload: Workload) -> RunRecord:
        """Inject the workload's packets and step until all are delivered."""
        if self.model.router == "iq":  # BookSim's input-queued router (docs/iq-router.md)
            return run_iq(self, workload)
        built, self._built = self._built, None  # a second run builds its own
        self.st, self.prm = built if built is not None else self._build()
        #: which path runs the steps and why (``mpinet run --json``: switching.steps)
        self.steps_path = chunk.path(self)
        compiled = self.steps_path == chunk.COMPILED
        steps = chunk.Steps(self) if compiled and self.size == 1 else None
        last = workload.last_injection_step
        live = LiveCheck(self) if self.live_check and last >= CHECK_EVERY else None
        if steps is not None:  # its arrays and first call's entry point, before the clock
            steps.prepare(workload, live)
        collect_young()
        t0 = time.perf_counter()
        self.delivered: list[np.ndarray] = []
        self.hop_rows: list[np.ndarray] = []
        self.injected: list[np.ndarray] = []
        self.msg: str | None = None
        comm, op = self.comm, sum_op()
        self._routing = np.empty(0, np.int64)  # heads that reached a node this step
        ranks = RankSteps(self) if compiled and self.size > 1 else None
        if ranks is not None and ranks.blocks is not None:
            # step 0 in a block too: no other kernel to load (totals; errors raised in it)
            injected, delivered = ranks.blocks.first(workload)
        else:
            if steps is not None:  # step 0 in the compiled steps too: no other kernel to load
                n_inj = steps.first(workload)
            else:
                n_inj, _ = heads.inject(self, workload, 0)
            mine = np.array([n_inj, sum(d.shape[0] for d in self.delivered),
                             self.msg is not None])  # fmt: skip
            tot = np.empty_like(mine)
            comm.Allreduce(mine, tot, op=op)
            if tot[2]:
                if ranks is not None:
                    ranks.close()
                raise_collected(self.comm, self.msg)
            injected, delivered = int(tot[0]), int(tot[1])
        in_flight = injected - delivered
        counters, t, deadlock = [], 0, None
        local, glob = np.zeros(6, np.int64), np.zeros(6, np.int64)
        self.live = live

        def st_nact() -> int:  # the step's work, for pacing the search (0 without it)
            return int(self.st.nact[0] + self.st.nact[2]) if live is not None else 0

        if ranks is not None and ranks.blocks is not None:
            steps = ranks.blocks  # many steps in one compiled call on each rank, the looks too
        self.calls_path = calls_path(self, ranks)  # mpinet run --json: switching.calls
        blocks = ranks is not None and ranks.blocks is not None
        watch = self.watch if self.size == 1 or blocks else None
        while (in_flight > 0 or t < last) and t < self.max_steps:
            if steps is not None:  # many steps in one compiled call (one rank or blocks)
                t, injected, delivered, deadlock = self._compiled_rows(
                    steps, workload, t, last, injected, delivered, counters, live
                )
                in_flight = injected - delivered
                if deadlock is not None:
                    break
                if watch is not None:
                    last = self._watched(watch, steps, t, last)
                continue
            if ranks is not None:  # compiled calls and the exchanges in them
                rows = ranks.run(workload, t, last, in_flight, live)
            else:
                t += 1
                if hasattr(comm, "where"):
                    comm.where = f"step {t}"
                flits, ndel, cross = self._step(t)
                n_inj, n_home = heads.inject(self, workload, t)
                local[:] = (flits, ndel + n_home, n_inj, cross, self.msg is not None, st_nact())
                if self.size == 1:  # the watched communicator's polled call: microseconds
                    glob[:] = local
                else:
                    comm.Allreduce(local, glob, op=op)
                if glob[4]:
                    raise_collected(self.comm, self.msg)
                rows = [(t, glob[0], glob[1], glob[2], glob[3], glob[5])]
            stop = False
            for t, flits, ndel, n_inj, cross, work in rows:
                injected += int(n_inj)
                delivered += int(ndel)
                in_flight = injected - delivered
                counters.append((flits, ndel, in_flight, cross))
                if self.progress is not None and self.rank == 0:
                    self.progress(t, delivered, injected, in_flight)
                if live is not None and live.due(t, last, in_flight, int(flits + work)):
                    deadlock = live.find(t, in_flight)  # worms blocked for good, still injecting
                    if deadlock is not None:
                        stop = True
                        break
                # a packet injected at step `last` can first move at last + 1
                if not flits and in_flight and t > last:
                    deadlock = wait_for_cycle(self, t, in_flight)
                    stop = True
                    break
            if stop:
                break
            if watch is not None:
                last = self._watched(watch, None, t, last)
        if ranks is not None:
            ranks.close()
        return results.record(self, t, counters, deadlock, in_flight, t0)

    def _compiled_rows(self, steps: Any, workload: Workload, t: int, last: int, injected: int,
                       delivered: int, counters: list, live: Any) -> tuple:  # fmt: skip
        """One call of the compiled steps (:meth:`chunk.Steps.run`), its rows taken at once
        (no Python per step: the deadlock looks were paced and scanned in the call); returns
        ``(t, injected, delivered, deadlock or None)``."""
        cap = ()
        if self.watch is not None:  # no call past the step it reads next (one rank, blocks)
            cap = (min(t + steps.steps, self.max_steps, self.watch.limit(t)),)
            if steps.pending is not None and steps.pending[1] > cap[0]:
                steps.pending = None  # drawn past it: drawn again (keyed by node and step)
        rows, code, scanned = steps.run(workload, t, last, injected - delivered, live, *cap)
        if rows.shape[0]:
            inj = injected + np.cumsum(rows[:, 3])
            dlv = delivered + np.cumsum(rows[:, 2])
            counters.append(np.stack([rows[:, 1], rows[:, 2], inj - dlv, rows[:, 4]], 1))
            if self.progress is not None and self.rank == 0:  # the call's last step: the line
                i = rows.shape[0] - 1  # shows the latest at its interval, never a step apart
                self.progress(int(rows[i, 0]), int(dlv[i]), int(inj[i]), int(inj[i] - dlv[i]))
            t, injected, delivered = int(rows[-1, 0]), int(inj[-1]), int(dlv[-1])
        in_flight = injected - delivered
        deadlock = None
        if code == chunk.LOOK:  # the look listed fronts: the search
            deadlock = live.search(t, in_flight, scanned)
        elif code == chunk.FIND:  # the look is due, its scan did not fit the call's scratch
            deadlock = live.find(t, in_flight)
        elif rows.shape[0] and not rows[-1, 1] and in_flight and t > last:
            deadlock = wait_for_cycle(self, t, in_flight)
        return t, injected, delivered, deadlock

    def _watched(self, watch: Any, steps: Any, t: int, last: int) -> int:
        """The watch's turn after step ``t``: the last injection step from now on (the
        compiled steps' own draws told too)."""
        live = lambda: results.live_rows(self)  # noqa: E731
        last, self.max_steps = watch.seen(t, self.delivered, live, last, self.max_steps)
        drw = getattr(steps, "drw", None)  # several ranks' blocks draw at each call
        if drw is not None and drw.last > last:
            steps.drw = drw._replace(last=last)
        return last

    # -- one step through Python (python_step) --------------------------------------
    def _step(self, t: int) -> tuple[int, int, int]:
        return python_step.step(self, t)

    def _scratch(self, n: int) -> StepOut:
        """The step's work arrays, for up to ``n`` requests (kept and grown between steps)."""
        so = getattr(self, "_sc", None)
        if so is None or so.rq_prev.size < n:
            n = max(n, 2 * (so.rq_prev.size if so is not None else 0), 1024)
            so = StepOut(
                touched=np.empty(n, np.int64),
                allow=np.empty(n, np.bool_),
                rq=np.empty(2 * n, np.int64),  # the requests, then their buckets
                rq_prev=np.empty(n, np.int64),  # a link's requests chained
                local=np.empty((n, 3), np.int64),
                wire=np.empty((n, fk.W_WIDTH + self.st.hw), np.int64),
                deliv=np.empty((n, fk.D_WIDTH), np.int64),
                cred_l=np.empty((n, 2), np.int64),
                cred_r=np.empty((n, 2), np.int64),
                rel=np.empty(n, np.int64),
                drain=np.empty(n, np.int64),
                hop=np.empty((n if self.record_hops else 1, 5), np.int64),
                cnt=np.zeros(fk.NCOUNT, np.int64),
                out=np.zeros(2, np.int64),
                bufs=np.empty(n, np.int64),
                new=np.empty(n, np.int64),
                node=np.full(self.st.block, -1, np.int64),
                route=np.empty((11, n), np.int64),
                rhdr=np.empty((n, self.st.hw), np.int64),
            )
            self._sc = so
        return so

    def _violation(self, t: int, out: np.ndarray, sdc_port: int) -> None:
        """The message of a model violation (:func:`~mpinet.engine.flit.python_step.violation`)."""
        python_step.violation(self, t, out, sdc_port)
