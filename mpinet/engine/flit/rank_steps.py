"""The engine's side of the flit engine's steps on several ranks: the partner ranks, the
messages' buffers, and which path runs the steps (a block of steps per compiled call,
:class:`~mpinet.engine.flit.rank_loop.Blocks`, sdc's reduction in mid-step included, or one
step per call here where the MPI library's calls cannot be had from compiled code; the
kernels of both are :mod:`~mpinet.engine.flit.ranks`'). Routes walked at injection run in the
blocks too: a head that crosses carries the rest of its route
(:mod:`~mpinet.engine.flit.route_carry`); one step per call walks it again on arrival.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine.comm import loaded_mpi, sum_op
from mpinet.engine.flit import chunk, mpi_native, rank_loop
from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit.ranks import (
    H_HEADS,
    H_ROWS,
    HEADER,
    TAG,
    Direct,
    Exchange,
    arrivals,
    moves,
    requests,  # fmt: skip
    step_moves,
)
from mpinet.engine.run import raise_collected

#: ``mpinet run --json``'s ``switching.calls``: many steps per compiled call, or one
BLOCKS = "blocks of steps"
ONE_STEP = "one step per call"


def calls_path(eng: Any, ranks: RankSteps | None) -> str:
    """How many steps a call runs (``switching.calls``): :data:`BLOCKS` (one rank's compiled
    steps, or several ranks' blocks with MPI called from the compiled code), else
    :data:`ONE_STEP` and why."""
    if eng.steps_path != chunk.COMPILED:
        return f"{ONE_STEP}: {eng.steps_path}"
    if ranks is not None and ranks.blocks is None:
        return f"{ONE_STEP}: the MPI library's calls cannot be had from compiled code"
    return BLOCKS


def neighbours(eng: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ranks that own a far end of the rank's links, ascending, and per neighbour the
    most wire rows out (the capacities of the links to it) and in (of the links from it:
    each is the reverse of one of the rank's links) and the most credits either way (one
    per VC of those links: a buffer's front moves once a step)."""
    st = eng.st
    far = st.nbt
    linked = np.flatnonzero(far >= 0)
    owner = np.searchsorted(eng.bounds, far[linked], side="right") - 1
    away = owner != eng.rank
    ranks = np.unique(owner[away])
    j = np.searchsorted(ranks, owner[away])
    out_rows = np.bincount(j, weights=st.lcap[linked[away]], minlength=ranks.size)
    in_rows = np.bincount(j, weights=eng.caps[eng.rev[linked[away]]], minlength=ranks.size)
    cred = np.bincount(j, minlength=ranks.size) * eng.vcs
    return ranks, np.maximum(out_rows, 0).astype(np.int64), in_rows.astype(np.int64), cred


class RankSteps:
    """The engine's side of the steps on several ranks (see the module docstring)."""

    def __init__(self, eng: Any) -> None:
        self.eng = eng
        self.inner = chunk.Steps(eng)  # the compiled rules, the injections, the error messages
        ranks, out_rows, in_rows, cred = neighbours(eng)
        #: MPI called from the compiled steps (rank_loop), or None: one step per call here
        #: (where the MPI library's calls cannot be had from compiled code)
        self.native = mpi_native.native(eng.comm)
        fold = self.native is not None and eng.size <= rank_loop.FOLD_MAX
        if fold:  # every other rank a partner: the counters ride in the messages
            every = np.array([r for r in range(eng.size) if r != eng.rank], np.int64)
            at = np.searchsorted(every, ranks)
            grown = [np.zeros(every.size, np.int64) for _ in range(3)]
            for g, a in zip(grown, (out_rows, in_rows, cred), strict=True):
                g[at] = a
            ranks, (out_rows, in_rows, cred) = every, grown
        self.rows_out, self.rows_in, self.cred = out_rows, in_rows, cred
        width = fk.W_WIDTH + eng.st.hw
        slot = np.full(eng.size, -1, np.int64)
        slot[ranks] = np.arange(ranks.size)
        self.max_in = int(in_rows.sum())
        send, recv = self._buffers(width, 0)
        self.ex = Exchange(slot, eng.bounds * eng.deg * eng.vcs, send,
                           np.zeros(ranks.size, np.int64), recv,
                           np.empty(max(self.max_in, 1), np.int64), np.int64(width))  # fmt: skip
        self.ranks = [int(r) for r in ranks]
        comm = eng.comm
        self.recvs = [
            comm.Recv_init(self.ex.recv[j], source=r, tag=TAG) for j, r in enumerate(self.ranks)
        ]  # fmt: skip (one step per call)
        self.block, self.t0 = None, 0
        self.status = np.zeros(8, np.int64)
        self.local, self.glob = np.zeros(6, np.int64), np.zeros(6, np.int64)
        self.c_moves, self.c_step = Direct(moves), Direct(step_moves)
        self.c_requests, self.c_arrivals = Direct(requests), Direct(arrivals)
        self.blocks = None
        if self.native is not None:
            net = rank_loop.new_net(ranks, self._caps(), fold, self.native.status_words,
                                    eng.size, eng.deg, self.native.handle)  # fmt: skip
            self.blocks = rank_loop.Blocks(self, net)

    def _buffers(self, width: int, per_head: int) -> tuple[np.ndarray, np.ndarray]:
        """The messages' arrays out and in (one row per partner): the header, the wire rows
        of ``width`` words, the credits, and ``per_head`` words of a head's carried route per
        wire row (walked rows in the blocks: :mod:`~mpinet.engine.flit.route_carry`)."""
        nn = max(self.rows_out.size, 1)
        row = width + per_head
        most = lambda rows: int((rows * row + 2 * self.cred).max(initial=0))  # noqa: E731
        send = np.zeros((nn, HEADER + most(self.rows_out)), np.int64)
        recv = np.zeros((nn, HEADER + most(self.rows_in)), np.int64)
        return send[: self.rows_out.size], recv[: self.rows_out.size]

    def _caps(self) -> np.ndarray:
        """The words each partner may send (the receive buffers' width)."""
        return np.full(self.rows_in.size, self.ex.recv.shape[1], np.int64)

    def carry_routes(self, per_head: int) -> None:
        """Room in the messages for heads' routes of ``per_head`` words each (the blocks'
        walked rows; the same on every rank): the buffers grown, the blocks' capacities too."""
        send, recv = self._buffers(int(self.ex.width), per_head)
        if recv.shape[1] <= self.ex.recv.shape[1] and send.shape[1] <= self.ex.send.shape[1]:
            return
        self.ex = self.ex._replace(send=send, recv=recv)
        if self.blocks is not None:
            self.blocks.net = self.blocks.net._replace(cap=self._caps())

    def run(self, workload: Any, t: int, last: int, in_flight: int, live: Any) -> list[tuple]:
        """Run from step ``t + 1`` on: a block of steps in one compiled call where MPI can
        be called from it (:class:`~mpinet.engine.flit.rank_loop.Blocks`), else one step.
        Returns the rows as :meth:`step`'s. Collective."""
        if self.blocks is not None:
            return self.blocks.run(workload, t, last, in_flight, live)
        if hasattr(self.eng.comm, "where"):
            self.eng.comm.where = f"step {t + 1}"
        return self.step(workload, t + 1, live is not None)

    def close(self) -> None:
        """Free the persistent requests."""
        for r in self.recvs:
            r.Free()
        self.recvs = []

    def _exchange(self) -> None:
        MPI = loaded_mpi()  # noqa: N806 (mpi4py's name; loaded: a communicator exists)
        comm, ex = self.eng.comm, self.ex
        MPI.Prequest.Startall(self.recvs)
        sends = [comm.Isend(ex.send[j, : ex.nsend[j]], dest=r, tag=TAG)
                 for j, r in enumerate(self.ranks)]  # fmt: skip
        MPI.Request.Waitall(self.recvs + sends)

    def _injections(self, workload: Any, t: int) -> tuple[Any, int]:
        """The block of injections holding step ``t`` and ``t``'s index in it."""
        if self.block is None or t > self.t0 + self.block.off.size - 1:
            eng = self.eng
            t_end = min(t - 1 + chunk.MAX_CHUNK, eng.max_steps)
            last = workload.last_injection_step
            if eng.live is not None and t - 1 < last:  # no ids past a deadlock look
                t_end = min(t_end, ((t - 1) // chunk.CHECK + 1) * chunk.CHECK)
            self.block, self.t0 = self.inner._injections(workload, t - 1, t_end), t - 1
        return self.block, t - self.t0 - 1

    def step(self, workload: Any, t: int, work: bool) -> list[tuple]:
        """Run step ``t``; returns its row ``(t, flits, delivered, injected, cross, work)``
        summed over the ranks (the step-by-step path's row). Collective."""
        eng = self.eng
        st, prm, so_ = eng.st, eng.prm, None
        inj, k = self._injections(workload, t)
        ni = int(inj.off[k + 1] - inj.off[k])
        nh = int(inj.hoff[k + 1] - inj.hoff[k])
        nact = int(st.nact[0])
        st.reserve(nact + 1, 0)
        so_ = eng._scratch(nact + 1 + self.max_in + nh)
        win = eng.load_window[0] <= t < eng.load_window[1]
        sdc = -1
        if eng.kind == fk.SDC:
            nt = self.c_requests(t, prm, st.segs, st.pkts, st.links, st.bufs, so_)
            first = np.empty(nt, np.int64)
            demand = fk.sdc_demand(nt, prm, st.segs, st.pkts, st.links, so_, first)
            total = np.empty_like(demand)
            eng.comm.Allreduce(demand, total, op=sum_op())
            sdc = int(fk.sdc_port(total))
            nnew = self.c_moves(t, nt, win, sdc, first, prm, st.segs, st.pkts, st.links,
                                st.bufs, so_, self.ex)  # fmt: skip
        else:
            nnew = self.c_step(t, win, prm, st.segs, st.pkts, st.links, st.bufs, so_, self.ex)
        if nnew < 0:
            eng._violation(t, so_.out, sdc)
        self._exchange()
        if self.inner.rows is not None:  # walked rows are the sender's: walk them again here
            ex = self.ex
            for m in ex.recv:
                self.inner.rewalk(
                    m[HEADER : HEADER + m[H_ROWS] * ex.width].reshape(-1, ex.width), t
                )
        heads = int(self.ex.recv[:, H_HEADS].sum()) if self.ranks else 0
        st.reserve(heads + ni + 1, heads + ni + 1)
        status = self.status = self.inner.status  # one array: the messages read it
        ok = eng.msg is not None or self.c_arrivals(
            t, k, max(nnew, 0), sdc, inj, self.inner.rule, self.inner.vrule, prm, st.segs,
            st.pkts, st.links, st.bufs, so_, self.ex, status)  # fmt: skip
        if not ok:
            self._error(t)
        self.inner._flush(so_)
        cnt = so_.cnt
        local, glob = self.local, self.glob
        local[:] = (cnt[fk.C_FLITS], cnt[fk.C_DELIV], ni + nh, cnt[fk.C_CROSS],
                    eng.msg is not None, int(st.nact[0] + st.nact[2]) if work else 0)  # fmt: skip
        eng.comm.Allreduce(local, glob, op=sum_op())
        if glob[4]:
            self.close()
            raise_collected(eng.comm, eng.msg)
        return [(t, glob[0], glob[1], glob[2], glob[3], glob[5])]

    def _error(self, t: int) -> None:
        eng, s = self.eng, self.status
        code = int(s[0])
        if code == -1:
            eng.msg = eng.msg or (
                f"flit engine: flits of packet {int(s[2])} arrived without their head"
            )
        else:
            self.inner._error(code, eng._sc)
