"""The iq router's cycles on several ranks (docs/iq-router.md): each rank runs the routers and
terminals of its block of nodes, and the flits and credits its routers send to another rank's
go in the ideal model's exchange (:mod:`~mpinet.engine.flit.rank_loop`'s ``post`` and
``wait``, MPI called from the compiled block through the library's function pointers; the
messages' layout is :mod:`~mpinet.engine.flit.ranks`'): a message per partner rank a cycle,
its header (rows, credit pairs, heads, the cycle's counters), then the rows (the input port
the flit reaches, ``node * degree + port``, the VC, the flit's index in its packet; a head
carries its packet's record), then the credit pairs (the output port they return to, the
mask of VCs), then, with routes walked at injection, each head's remaining route
(:mod:`~mpinet.engine.flit.route_carry`: the receiver writes it into rows of its own). A
rank keeps the links' tables and channels of its own nodes only: what comes from another
rank's node names the port it reaches.

Why the same run on any rank count: a flit or credit sent at cycle ``t`` is taken in at
``t + channel_latency + 1`` or later, so one exchange at the end of each cycle, before any
rank reads, delivers it on time; the routers of a cycle touch only their own state and
channels, so the order in which a rank visits them changes nothing; the cycle's counters
(flits, deliveries, injections, moves) are summed over the ranks in the messages, so every
rank stops at the same cycle (finished, stalled, a routing error).

:func:`run_block` here compiles in the phases it calls (:mod:`~mpinet.engine.flit.iq_step`,
:mod:`~mpinet.engine.flit.iq_router`, :mod:`.iq_moves`); a change of any of them renews its
cache, because :mod:`mpinet.numba_cache` stamps every kernel with all of mpinet's numba files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit import iq_looks as iql
from mpinet.engine.flit import iq_router as ir
from mpinet.engine.flit import iq_step as ist
from mpinet.engine.flit import mpi_native, rank_loop, turns
from mpinet.engine.flit import rank_looks as lk
from mpinet.engine.flit import ranks as rk
from mpinet.engine.flit import route_carry as rc
from mpinet.engine.flit.iq_write import ROW, take_record
from mpinet.routing import compiled
from mpinet.routing.route_rows import SourceRouted

#: :func:`run_block`'s codes beyond :mod:`~mpinet.engine.flit.iq_step`'s: waiting for the
#: messages, a rank failed (:meth:`Ranks.call`)
WAIT, FAILED = 7, 8
#: a row's head flag (the packet's record after it: :func:`~.iq_write.put_record`)
ROW_HEAD = 3


def why_not(eng: Any) -> str | None:
    """Why the iq model cannot run on ``eng``'s ranks, or None."""
    if eng.size > 1 and mpi_native.native(eng.comm) is None:
        return ("model.router = 'iq' on more than one rank calls the MPI library's C functions "
                "from compiled code (MPICH ABI or Open MPI: handles of 4 or 8 bytes, the "
                "library loaded by mpi4py); not found here: run on one rank")  # fmt: skip
    return None


@njit(cache=True, error_model="numpy")
def pack(prm, s, ex):
    """The cycle's rows and credit pairs (``s.wo``, ``s.co``) into one message per partner,
    by the rank owning the far node (``ex.owner``: the ranks' first nodes)."""
    nn = ex.send.shape[0]
    width = ex.width
    nrow = np.zeros(nn, np.int64)
    ncred = np.zeros(nn, np.int64)
    deg = prm.deg
    for i in range(s.wn[0]):
        w = s.wo[i, 0] // deg  # rows name their reader's port: node * degree + port
        nrow[ex.slot[np.searchsorted(ex.owner, w, side="right") - 1]] += 1
    for i in range(s.cn[0]):
        w = s.co[i, 0] // deg
        ncred[ex.slot[np.searchsorted(ex.owner, w, side="right") - 1]] += 1
    at = np.empty(nn, np.int64)
    cat = np.empty(nn, np.int64)
    for j in range(nn):
        ex.send[j, rk.H_ROWS], ex.send[j, rk.H_CRED], ex.send[j, rk.H_HEADS] = nrow[j], ncred[j], 0
        at[j] = rk.HEADER
        cat[j] = rk.HEADER + nrow[j] * width
        ex.nsend[j] = cat[j] + 2 * ncred[j]
    for i in range(s.wn[0]):
        j = ex.slot[np.searchsorted(ex.owner, s.wo[i, 0] // deg, side="right") - 1]
        for c in range(width):
            ex.send[j, at[j] + c] = s.wo[i, c]
        ex.send[j, rk.H_HEADS] += s.wo[i, 3]
        at[j] += width
    for i in range(s.cn[0]):
        j = ex.slot[np.searchsorted(ex.owner, s.co[i, 0] // deg, side="right") - 1]
        ex.send[j, cat[j]], ex.send[j, cat[j] + 1] = s.co[i, 0], s.co[i, 1]
        cat[j] += 2
    s.wn[0], s.cn[0] = 0, 0


@njit(cache=True, error_model="numpy")
def take_in(t, prm, s, ex):
    """The partners' rows and credits of cycle ``t`` into the channels' slots of ``t`` (a
    head takes a packet slot; the flits after it on the same VC are that packet's)."""
    sl, fl, deg, nport, nvc = prm.sl, prm.fl, prm.deg, prm.nport, prm.nvc
    tl = t % sl
    w1 = il.words((prm.hi - prm.lo) * nport)  # the event sets' words per slot
    width = ex.width
    for j in range(ex.recv.shape[0]):
        m = ex.recv[j]
        nr = m[rk.H_ROWS]
        for i in range(nr):
            a = rk.HEADER + i * width
            key, v, k = m[a], m[a + 1], m[a + 2]  # key: the input port, node * deg + port
            w = key // deg
            iv = ((w - prm.lo) * nport + key % deg) * nvc + v
            if m[a + 3]:
                pk = take_record(m, a, s)
                s.pk_away[pk] = 0
                s.rmap[iv] = pk
            x = (key - prm.lo * deg) * sl + tl
            s.fc[x] = (s.rmap[iv] * fl + k) << 6 | v  # flit and VC in one word
            il.mark(s.fm, ((tl * w1) << 6) + key - prm.lo * deg + w - prm.lo)
            il.activate(w - prm.lo, s.work, s.inact, s.act, s.nact, s.actb)
        a = rk.HEADER + nr * width
        for c in range(m[rk.H_CRED]):
            key = m[a + 2 * c]  # the output port they return to
            s.cr[(key - prm.lo * deg) * sl + tl] = np.uint64(m[a + 2 * c + 1])
            il.mark(s.cm, ((tl * w1) << 6) + key - prm.lo * deg + key // deg - prm.lo)
            il.activate(key // deg - prm.lo, s.work, s.inact, s.act, s.nact, s.actb)


@njit(cache=True, error_model="numpy")
def run_block(fns, hnd, t0, t_end, last, win_lo, win_hi, quiet, acc, inj, prm, s, rule, vrule,
              deliv, hop, rows, status, look, ex, net, max_in, cy):  # fmt: skip
    """Cycles ``status[1] + 1 .. t_end`` as :func:`~mpinet.engine.flit.iq_step.run_block`
    runs them on one rank, each cycle's exchange at its end; ``inj``'s and ``rows``' index
    ``k`` is cycle ``t0 + 1 + k``. ``status`` as there, plus ``[9]`` 2 while the cycle's
    messages are out, ``[10]`` their requests, ``[11]`` this rank's routing error, and ``[9]``
    from 4 on while a cycle's deadlock look runs
    (:func:`~mpinet.engine.flit.iq_looks.ranks_look`; ``look`` its arrays); ``cy``: the walked
    rows whose routes the messages carry (:mod:`~mpinet.engine.flit.route_carry`;
    ``cy.width`` 0: none); returns the code (:data:`WAIT`, :data:`~.iq_looks.NOFIT`: call
    again)."""
    off, pid, src, dst, hdr = inj
    route_out = np.zeros(3, np.int64)
    moved = np.zeros(1, np.int64)
    in_flight, nd, nh, idle = status[5], status[6], status[7], status[8]
    nnode = prm.nnode
    mine, tot = net.mine, net.tot
    nn = net.peers.shape[0]
    status[0] = ist.DONE  # read_phase records a routing error only over DONE
    for t in range(status[1] + 1, t_end + 1):
        k = t - t0 - 1
        a, b = off[k], off[k + 1]
        if status[9] >= iql.P_SCAN:  # the cycle ran: its deadlock look
            code = iql.ranks_look(fns, hnd, prm, s, net, look, status)
            if code:
                status[0], status[1] = code, t if code == iql.DEAD else t - 1
                break
            status[0], status[1] = ist.DONE, t
            continue
        if status[9] == 0:
            if (nd + nnode > deliv.shape[0]
                    or (prm.record_hops and nh + nnode * prm.nport > hop.shape[0])
                    or s.pk_nfree[0] < b - a + max_in
                    or (cy.width > 0 and cy.nfree[0] < cy.need)):  # fmt: skip
                status[0], status[1] = ist.ROOM, t - 1
                break
            ist.compact(s)
            moved[0] = 0
            d0 = nd
            nd = ist.read_phase(t, s.istep[0], prm, s, rule, vrule, status, route_out, deliv, nd,
                                moved)  # fmt: skip
            if b > a:
                ist.enqueue(t, pid[a:b], src[a:b], dst[a:b], hdr[a:b], prm, s)
            ist.inject_phase(t, prm, s, moved)
            acc[0] += acc[1]
            while acc[0] >= 1.0:
                acc[0] -= 1.0
                moved[0] += ir.internal_steps(t, s.istep[0], prm, s, rule, vrule, status,
                                              route_out)  # fmt: skip
                s.istep[0] += 1
            flits, nh = ist.write_phase(t, win_lo <= t < win_hi, prm, s, hop, nh)
            mine[:] = 0
            mine[rk.K_FLITS], mine[rk.K_DELIV], mine[rk.K_INJ] = flits, nd - d0, b - a
            mine[rk.K_CROSS], mine[rk.K_MOVED] = s.wn[0], moved[0]
            if status[0] >= ir.PORT_ERR:  # kept over a wait (status[0] then WAIT)
                mine[rk.K_ERR], status[11] = 1, status[0]
            pack(prm, s, ex)
            if cy.width > 0:  # the heads sent carry the rest of their routes
                rc.add_routes(ex, cy)
            status[10] = rank_loop.post(fns, hnd, net, ex)
            status[9] = 2
        if status[9] == 2 and not rank_loop.wait(fns, net, status[10]):
            status[0], status[1] = WAIT, t - 1
            break
        status[9] = 0
        if net.fold:
            tot[:] = mine
            for j in range(nn):
                for c in range(rk.NK):
                    tot[c] += ex.recv[j, rk.H_CNT + c]
        if tot[rk.K_ERR]:
            status[0], status[1] = (status[11] if status[11] else FAILED), t
            break
        if cy.width > 0:  # the heads that came: rows of this rank for their routes
            rc.take_routes(ex, cy)
        take_in(t, prm, s, ex)
        flits, moves = tot[rk.K_FLITS], tot[rk.K_MOVED] + tot[rk.K_FLITS]
        rows[k, ist.R_FLITS], rows[k, ist.R_DELIV] = flits, tot[rk.K_DELIV]
        rows[k, ist.R_INJ], rows[k, ist.R_MOVED], rows[k, ist.R_WORK] = tot[rk.K_INJ], moves, 0
        rows[k, ist.R_CROSS] = tot[rk.K_CROSS]
        in_flight += tot[rk.K_INJ] - tot[rk.K_DELIV]
        idle = 0 if moves > 0 else idle + 1
        status[0], status[1] = ist.DONE, t
        if in_flight <= 0 and t >= last:
            status[0] = ist.FINISHED
            break
        if in_flight > 0 and t > last and idle >= quiet:
            status[0] = ist.STALL
            break
        if iql.pace(t, last, in_flight, moves, prm.nnode, look):
            status[9] = iql.P_SCAN
            code = iql.ranks_look(fns, hnd, prm, s, net, look, status)
            if code:
                status[0], status[1] = code, t if code == iql.DEAD else t - 1
                break
    status[5], status[6], status[7], status[8] = in_flight, nd, nh, idle
    return status[0]


class Ranks:
    """The exchange's arrays and MPI calls of a rank (the ideal model's
    :class:`~mpinet.engine.flit.ranks.Exchange` and :class:`~mpinet.engine.flit.rank_loop.Net`),
    and the compiled block called until it ends a block (waits returned to Python sleep a
    little, as the ideal model's do). Walked rows (``rows``): the heads that cross carry the
    rest of their routes in the messages (:class:`~mpinet.engine.flit.route_carry.CarriedRows`,
    ``carried``: :meth:`~.route_carry.CarriedRows.start` once a block's injections are
    walked)."""

    def __init__(self, eng: Any, nbt: np.ndarray, width: int,
                 live: Callable[[], np.ndarray] | None = None) -> None:  # fmt: skip
        self.eng = eng
        #: walked rows: the router's rule read again after a call that grew the table
        self.walked = isinstance(eng.router, SourceRouted)
        nat = mpi_native.native(eng.comm)
        self.fns, self.hnd = nat.fns, nat.hnd
        far = nbt.ravel()  # the rank's own rows
        owner = np.searchsorted(eng.bounds, far[far >= 0], side="right") - 1
        away = owner[owner != eng.rank]
        ranks, links = np.unique(away, return_counts=True)  # links both ways: rows and credits
        fold = eng.size <= rank_loop.FOLD_MAX
        if fold:  # every other rank a partner: the counters ride in the messages
            every = np.array([r for r in range(eng.size) if r != eng.rank], np.int64)
            grown = np.zeros(every.size, np.int64)
            grown[np.searchsorted(every, ranks)] = links
            ranks, links = every, grown
        slot = np.full(eng.size, -1, np.int64)
        slot[ranks] = np.arange(ranks.size)
        self.most = int(links.max(initial=0))  # the rows (and credit pairs) a partner sends
        words = self._words(width, 0)
        nn = ranks.size
        self.max_in = int(links.sum())  # heads a cycle brings at most
        first = np.asarray(eng.bounds, np.int64)  # the owner of a node: its rank's first node
        self.ex = rk.Exchange(slot, first, np.zeros((nn, words), np.int64),
                              np.zeros(nn, np.int64), np.zeros((nn, words), np.int64),
                              np.empty(1, np.int64), np.int64(width))  # fmt: skip
        self.net = rank_loop.new_net(ranks, np.full(nn, words, np.int64), fold, nat.status_words,
                                     size=eng.size, handle=nat.handle)  # fmt: skip
        self.c_block = rk.Direct(run_block)
        self.primed = False
        self.grown = False
        self.carried = rc.CarriedRows(eng.router if self.walked else None, eng.comm,
                                      self.max_in, (ROW_HEAD, ROW), self.carry_routes,
                                      live, self._regrown)  # fmt: skip

    def _words(self, width: int, per_head: int) -> int:
        """A message's words: the header, a row (and a head's route) and a credit pair per
        link to the partner."""
        return rk.HEADER + self.most * (width + per_head + 2)

    def carry_routes(self, per_head: int) -> None:
        """Room in the messages for heads' routes of ``per_head`` words each (the same on
        every rank): the buffers grown, the partners' capacities too."""
        words = self._words(int(self.ex.width), per_head)
        if words <= self.ex.recv.shape[1]:
            return
        nn = self.ex.recv.shape[0]
        self.ex = self.ex._replace(send=np.zeros((nn, words), np.int64),
                                   recv=np.zeros((nn, words), np.int64))  # fmt: skip
        self.net = self.net._replace(cap=np.full(nn, words, np.int64))

    def _regrown(self) -> None:
        self.grown = True

    def call(self, args: tuple, status: np.ndarray, look: Any) -> int:
        """:func:`run_block` on ``args`` until it returns other than :data:`WAIT` or
        :data:`~.iq_looks.NOFIT` (the deadlock look's scratch grown: ``look``, an
        :class:`~.iq_deadlock.Look`); walked rows freed and grown first where a cycle's
        heads might not find free rows (the rule in ``args`` read again if the table grew)."""
        part = args[7]
        self.grown = False
        cy = self.carried.bundle(part[4][int(part[0][0]) :])  # the injections not yet run
        if self.grown:
            r = compiled.rule_of(self.eng.router)
            args = (*args[:10], (np.int64(r.code), r.prm, r.ta, r.tb), *args[11:])
        since = None
        try:
            while True:
                call = (self.fns, self.hnd, *args, status, look.arrays, self.ex, self.net,
                        self.max_in, cy)  # fmt: skip
                if not self.primed:  # a cold cache: one compilation a node (turns)
                    turns.prime_in_turn(self.eng.comm, self.c_block, call)
                    self.primed = True
                code = int(self.c_block(*call))
                if code == iql.NOFIT:
                    look.grow()
                    continue
                if code != WAIT:
                    return code
                since = rank_loop.waiting(self.eng.comm, since)
        finally:
            self.carried.done(cy)

    def grow_gather(self) -> None:
        """After a look whose listings outgrew the gather's buffers (Python searched it):
        room for twice them (the same on every rank: the votes are)."""
        net = self.net
        v = net.votes.reshape(-1, lk.VOTE)
        words = 2 * v[:, lk.V_NF] + 2 * v[:, lk.V_NH] + v[:, lk.V_NC]
        mine, tot = int(words[self.eng.rank]), int(words.sum())
        if mine > net.gsend.size or tot > net.gbuf.size:
            self.net = net._replace(gsend=np.empty(max(2 * mine, net.gsend.size), np.int64),
                                    gbuf=np.empty(max(2 * tot, net.gbuf.size),
                                                  np.int64))  # fmt: skip
