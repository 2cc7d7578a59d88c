"""The flit engine's steps on several ranks in one compiled call per block of steps, the
exchange with the other ranks included (MPI called from the compiled code through
:mod:`~mpinet.engine.flit.mpi_native`'s function pointers).

A step ``t`` on rank ``r``, as :mod:`~mpinet.engine.flit.ranks` describes it, without a
return to Python: the requests, the port model (sdc: the movable requests per port summed
over the ranks by one ``MPI_Iallreduce`` first, :func:`~mpinet.engine.flit.ranks.post_demand`)
and the moves; the step's packets injected
at their destination delivered; the wire rows, credits and the step's counters packed into
one message per partner rank (:func:`~mpinet.engine.flit.ranks.pack`), sent with
``MPI_Isend`` beside an ``MPI_Irecv`` from each partner; then the messages in, the heads
and injections routed. The counters ride in the messages: when every other rank is a
partner (``fold``: up to :data:`FOLD_MAX` ranks every rank is one, empty messages
included), each rank sums the step's counters itself; otherwise one ``MPI_Iallreduce`` of
them travels beside the messages. What a rank knows only after the messages came (an
error routing a head, its active buffers for the deadlock search's pacing) rides in the
next step's message; the block's last step's in one reduction after the call.

The deadlock look while injecting (:class:`~mpinet.engine.flit.deadlock_live.LiveCheck`)
is paced, scanned, voted and searched in the block (:mod:`~mpinet.engine.flit.rank_looks`):
the block returns to Python (:data:`LOOKED`) only for a look whose search found dead fronts
or could not be made there.

So every rank takes the same decisions at the same step (the run finished, stalled or
failed; a look that listed fronts) and the results are the step-by-step path's, bit for
bit, on any rank count. A rank that waits longer than :data:`SPIN` seconds
for its messages returns to Python (:data:`WAIT`), which sleeps a little and calls again
where it stopped: a stopped rank then ends the job as the watched communicator's calls do.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numba import njit

from mpinet.engine.comm import park, stopping, sum_op
from mpinet.engine.flit import chunk, turns
from mpinet.engine.flit import deadlock_live as dl
from mpinet.engine.flit import kept_requests as kq
from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import rank_looks as lk
from mpinet.engine.flit import ranks as rk
from mpinet.engine.flit import route_carry as rc
from mpinet.engine.flit import step_route as sr
from mpinet.engine.flit.deadlock_live import CHECK_EVERY as CHECK
from mpinet.engine.flit.rank_looks import FAILED, LOOKED, S_BUDGET, WAIT, wait
from mpinet.engine.flit.rank_net import Net, post
from mpinet.engine.run import raise_collected

#: ``status[6]``: sdc's demand out, the step's messages out (the look's phases: :mod:`.rank_looks`)
P_SDC, P_OUT = 1, 2
#: up to this many ranks every rank is a partner of every other (the counters fold in)
FOLD_MAX = 8
#: words of a rank's deadlock-look listing the block's gather has room for at first (grown
#: after a look whose listings did not fit: Python searched it)
GATHER = 1024
#: seconds a compiled call waits for its messages before it returns to Python (``Net.spin``)
SPIN = 0.05


@njit(cache=True, error_model="numpy")
def run_block(fns, hnd, tc, last, win_lo, win_hi, room, inj, rule, vrule, prm, segs, pkts,
              links, bufs, so, ex, net, rows, status, err, looks, cy, inc):  # fmt: skip
    """Run the block's steps from ``status[1] + 1`` to ``tc + rows.shape[0]``; returns
    ``status[0]`` (:mod:`~mpinet.engine.flit.chunk`'s codes, :data:`WAIT`, :data:`FAILED`).

    ``status``: [1] the last step done, [2] and [3] sdc's requests and port of the step,
    [5] the packets in flight (over all ranks), [6] the step's phase (:data:`P_OUT` while step
    ``status[1] + 1``'s messages are out), [7] its heads that reached a local node;
    ``inj``'s step ``k`` is step ``status[1] + 1 + k`` (as the call began); ``rows`` the
    block's (row ``t - tc - 1``); ``room = (scratch, delivery rows, hop rows or -1, most wire
    rows in)``; ``err``: this rank's first error (``chunk``'s status layout, 0: none);
    ``looks``: the deadlock look's arrays (:meth:`~mpinet.engine.flit.chunk.Steps._look`),
    its budget in ``status[S_BUDGET]``; ``cy``: the walked rows whose routes the messages
    carry (:mod:`~mpinet.engine.flit.route_carry`; ``cy.width`` 0: none); ``inc``: sdc's
    demand kept between steps (:mod:`~mpinet.engine.flit.port_demand`).
    """
    cnt = so.cnt
    scratch, drows, hrows, max_in = room
    t_start = status[1]
    t_end = tc + rows.shape[0]
    in_flight = status[5]
    mine, tot, lag = net.mine, net.tot, net.lag
    nn = net.peers.shape[0]
    live = looks[0]
    for t in range(t_start + 1, t_end + 1):
        k = t - t_start - 1
        kr = t - tc - 1
        ia, ni = inj.off[k], inj.off[k + 1] - inj.off[k]
        nh = inj.hoff[k + 1] - inj.hoff[k]
        if status[6] >= lk.P_WORK:  # the step ran: its deadlock look
            code = look_at(fns, hnd, t, kr, in_flight, prm, segs, pkts, links, bufs, net, rows,
                        status, err, looks)  # fmt: skip
            if code != chunk.DONE:
                return code
            continue
        if status[6] == lk.P_STEP:
            need = bufs.nact[0] + 1
            if err[0] == 0 and (
                segs.nfree[0] < need + ni + max_in or pkts.nfree[0] < ni + max_in
                or need + max_in > scratch or cnt[fk.C_DELIV] + need + nh > drows
                or (hrows >= 0 and cnt[fk.C_HOPS] + need > hrows)
                or (cy.width > 0 and cy.nfree[0] < cy.need)
            ):  # fmt: skip
                status[0], status[1], status[5] = chunk.ROOM, t - 1, in_flight
                return chunk.ROOM
            mine[:] = 0
            if prm.kind == fk.SDC:  # every rank's movable requests per port, summed
                status[2] = rk.post_demand(fns, hnd, t, prm, segs, pkts, links, bufs, so, net, err,
                                           inc)  # fmt: skip
                status[6] = P_SDC
        if status[6] == P_SDC:
            if not wait(fns, net, 1):
                status[0], status[1], status[5] = WAIT, t - 1, in_flight
                return WAIT
            status[3] = fk.sdc_port(net.dem[prm.deg :])
            status[6] = lk.P_STEP
        if status[6] == lk.P_STEP:
            nnew = 0
            if err[0] == 0:
                nnew = rk.block_moves(t, win_lo <= t < win_hi, prm, segs, pkts, links, bufs,
                                      so, ex, mine, status, inc)  # fmt: skip
                if so.out[0]:
                    err[0], err[1], err[2] = chunk.MODEL_ERR, t, status[3]
                else:
                    if cy.width > 0:  # the heads sent carry their routes
                        rc.add_routes(ex, cy)
                    rk.home_deliveries(t, k, inj, so)
                    mine[rk.K_DELIV] += nh
                    mine[rk.K_INJ] = ni + nh
            if err[0] != 0:  # a failed rank sends nothing but the news
                for j in range(nn):
                    ex.send[j, rk.H_ROWS], ex.send[j, rk.H_CRED], ex.send[j, rk.H_HEADS] = 0, 0, 0
                    ex.nsend[j] = rk.HEADER
                mine[rk.K_ERR] = 1
            mine[rk.K_LAG], mine[rk.K_LAG_ERR], mine[rk.K_LAG_WORK] = lag[0], lag[1], lag[2]
            status[7] = nnew
            status[8] = post(fns, hnd, net, ex)
            status[6] = P_OUT
        if not wait(fns, net, status[8]):
            status[0], status[1], status[5] = WAIT, t - 1, in_flight
            return WAIT
        status[6] = lk.P_STEP
        if net.fold:
            tot[:] = mine
            for j in range(nn):
                for c in range(rk.NK):
                    tot[c] += ex.recv[j, rk.H_CNT + c]
        if tot[rk.K_LAG] and kr > 0:
            rows[kr - 1, chunk.R_WORK] = tot[rk.K_LAG_WORK]
        if live:  # LiveCheck.due's work: the step's flits, the last step's active buffers
            status[S_BUDGET] += tot[rk.K_FLITS] + (tot[rk.K_LAG_WORK] if tot[rk.K_LAG] else 0)
        if tot[rk.K_ERR] or tot[rk.K_LAG_ERR]:
            status[0], status[1], status[5] = FAILED, t, in_flight
            return FAILED
        if cy.width > 0:  # the heads that came: rows of this rank for their routes
            rc.take_routes(ex, cy)
        heads = rk.take_in(t, status[7], status[3], prm, segs, pkts, links, bufs, so, ex, err)
        ok = heads >= 0
        if ok and prm.kind == fk.SDC:
            rk.mark_taken(prm, segs, links, bufs, ex, inc)
        m = heads + ni if ok else 0
        if 0 < m <= so.route.shape[1]:  # in the scratch, as run_steps routes (no allocation)
            ok = sr.route_in(t, heads, ni, ia, inj, rule, vrule, prm, segs, pkts, links, bufs,
                              so, err, so.route, so.rhdr)  # fmt: skip
            if ok and prm.kind == fk.SDC:  # the kept requests read again, recounted
                kq.mark_injected(heads, ni, prm, so, inc)
                kq.settle_buffers(prm, segs, bufs, inc)
                kq.recount(False, prm, segs, pkts, links, bufs, inc)
        elif m:
            ok = sr.route(t, heads, ni, ia, inj, rule, vrule, prm, segs, pkts, links, bufs,
                             so, err)  # fmt: skip
            inc.chk[3] = 1  # routed outside the scratch: the next step reads afresh
        elif ok and prm.kind == fk.SDC:  # nothing routed
            kq.settle_buffers(prm, segs, bufs, inc)
            kq.recount(False, prm, segs, pkts, links, bufs, inc)
        lag[0], lag[1], lag[2] = 1, 0 if ok else 1, bufs.nact[0] + bufs.nact[2]
        rows[kr, chunk.R_FLITS], rows[kr, chunk.R_DELIV] = tot[rk.K_FLITS], tot[rk.K_DELIV]
        rows[kr, chunk.R_INJ], rows[kr, chunk.R_CROSS] = tot[rk.K_INJ], tot[rk.K_CROSS]
        in_flight += tot[rk.K_INJ] - tot[rk.K_DELIV]
        if live and t % CHECK == 0 and t <= last and in_flight > 0:  # the same on every rank
            status[6] = lk.P_SCAN if status[S_BUDGET] >= 0 else lk.P_WORK
            code = look_at(fns, hnd, t, kr, in_flight, prm, segs, pkts, links, bufs, net, rows,
                        status, err, looks)  # fmt: skip
            if code != chunk.DONE:
                return code
            continue  # a look's step: in flight, injecting (neither the end nor a stall)
        if not ok:  # the others hear of it in the next step's messages
            continue
        if in_flight <= 0 and t >= last:
            status[0], status[1], status[5] = chunk.FINISHED, t, in_flight
            return chunk.FINISHED
        if tot[rk.K_FLITS] == 0 and in_flight > 0 and t > last:
            status[0], status[1], status[5] = chunk.STALL, t, in_flight
            return chunk.STALL
    status[0], status[1], status[5] = chunk.DONE, t_end, in_flight
    return chunk.DONE


@njit(cache=True, error_model="numpy")
def look_at(fns, hnd, t, kr, in_flight, prm, segs, pkts, links, bufs, net, rows, status,
            err, look_):  # fmt: skip
    """Step ``t``'s deadlock look (:func:`~mpinet.engine.flit.rank_looks.look_votes`); the
    block's end noted in ``status`` unless the look returned ``chunk.DONE``."""
    code = lk.look_votes(fns, hnd, kr, prm, segs, pkts, links, bufs, net, rows, status, err,
                         look_)  # fmt: skip
    if code != chunk.DONE:  # to wait: the step is done, its look is not
        status[0], status[1], status[5] = code, t - 1 if code == WAIT else t, in_flight
    return code


def new_net(peers: np.ndarray, cap: np.ndarray, fold: bool, status_words: int,
            size: int = 1, deg: int = 1, handle: Any = np.int32) -> Net:  # fmt: skip
    """The :class:`Net` of a rank's partners ``peers`` (each sending at most ``cap`` words)
    among ``size`` ranks, nodes of ``deg`` ports; waits of :data:`SPIN` seconds; ``handle``:
    the numpy type of the library's requests (:class:`~mpinet.engine.flit.mpi_native.Native`)."""
    nn = peers.size
    return Net(np.ascontiguousarray(peers, np.int64), np.ascontiguousarray(cap, np.int64),
               np.zeros(2 * nn + 1, handle), np.zeros(1, np.int32),
               np.zeros((2 * nn + 1) * status_words + 1, np.int32), np.zeros(rk.NK, np.int64),
               np.zeros(rk.NK, np.int64), np.zeros(3, np.int64), np.int64(fold),
               np.zeros(1, np.float64), np.zeros(1, np.int64), np.float64(SPIN),
               np.zeros(lk.VOTE, np.int64), np.zeros(lk.VOTE * size, np.int64),
               np.zeros(size, np.int32), np.zeros(size, np.int32), np.empty(GATHER, np.int64),
               np.empty(GATHER * size, np.int64), np.zeros(2 * deg, np.int64))  # fmt: skip


def waiting(comm: Any, since: float | None) -> float:
    """A compiled block returned :data:`WAIT` (its rank waited :data:`SPIN` seconds for
    messages): a stopping process parks, a rank that waited since ``since`` past the watched
    communicator's timeout ends the job as its calls do; else a short sleep before the next
    call. Returns when the wait began (every rank path's loop calls it)."""
    now = time.monotonic()
    since = now if since is None else since
    if stopping():
        park()
    timeout = getattr(comm, "timeout", None)
    if timeout is not None and now - since > timeout and hasattr(comm, "_roll_call_and_abort"):
        comm._roll_call_and_abort(now - since)
    time.sleep(0.0005)
    return since


class Blocks:
    """The engine's side of :func:`run_block`: a block of steps per call up to a deadlock
    look that listed fronts (as one rank's :class:`~mpinet.engine.flit.chunk.Steps`), room in
    the pools, the calls that returned to wait, and the block's last step's lagged values."""

    def __init__(self, ranks: Any, net: Net) -> None:
        self.ranks, self.net = ranks, net
        self.status = np.zeros(12, np.int64)
        self.pending: tuple | None = None  # injections drawn and not run: (t, t_end, inj, ids)
        self.err = np.zeros(8, np.int64)
        self.c_block = rk.Direct(run_block)
        self.primed = False
        # walked rows: their routes ride in the messages
        self.carried = rc.CarriedRows(ranks.inner.rows, ranks.eng.comm, ranks.max_in,
                                      (fk.W_HEAD, fk.W_WIDTH), ranks.carry_routes, self._live,
                                      ranks.inner._set_rule)  # fmt: skip
        nat = ranks.native
        self.fns, self.hnd = nat.fns, nat.hnd
        # most steps a call runs, as one rank's Steps.steps (a progress line: shorter calls)
        self.steps = chunk.ONE_RANK_CHUNK if ranks.eng.progress is None else chunk.MAX_CHUNK

    def first(self, workload: Any) -> tuple[int, int]:
        """Step 0 in one block, as :meth:`~mpinet.engine.flit.chunk.Steps.first` on one rank:
        its packets routed and queued at their sources, those injected at their destination
        delivered, the step-by-step kernels not loaded (a fresh run's engine time); returns
        the packets injected and delivered over all ranks. Collective."""
        rows, _, _ = self.run(workload, -1, workload.last_injection_step, 0, None, t_end=0)
        if not rows.shape[0]:
            return 0, 0
        return int(rows[0, 1 + chunk.R_INJ]), int(rows[0, 1 + chunk.R_DELIV])

    def run(self, workload: Any, t: int, last: int, in_flight: int, live: Any,
            t_end: int | None = None) -> tuple:  # fmt: skip
        """Run from step ``t + 1`` for up to :data:`~mpinet.engine.flit.chunk.ONE_RANK_CHUNK`
        steps (:data:`~mpinet.engine.flit.chunk.MAX_CHUNK` with a progress line; to ``t_end``
        if given), to the run's end, or to a deadlock look that listed fronts; returns
        ``(rows, code, scanned)`` as :meth:`~mpinet.engine.flit.chunk.Steps.run` (rows summed
        over the ranks; for :data:`~mpinet.engine.flit.chunk.LOOK` this rank's scan).
        Collective."""
        rs = self.ranks
        eng, inner = rs.eng, rs.inner
        if self.pending is not None and self.pending[0] == t:  # drawn by the last call
            _, t_end, inj, ids = self.pending
        else:
            t_end = min(t + self.steps, eng.max_steps) if t_end is None else t_end
            ids = []
            inj = inner._injections(workload, t, t_end, ids)
        self.pending = None
        inner.inc.chk[3] = 1  # sdc: counted afresh at the block's first step, as on one rank
        self.carried.start()  # walked rows: the messages' room for their routes
        ex, net = rs.ex, self.net
        rows = np.zeros((t_end - t, 5), np.int64)
        status, err = self.status, self.err
        status[:] = 0
        status[1], status[3], status[5] = t, -1, in_flight  # [3]: sdc's port (-1: not sdc)
        status[S_BUDGET] = live.budget if live is not None else 0
        err[:] = 0
        net.lag[:] = 0
        since = None
        while True:
            st = eng.st
            k = int(status[1]) - t
            part = inj._replace(off=inj.off[k:], hoff=inj.hoff[k:])  # from the next step on
            if status[6] == 0:  # between steps: room for the next one (not while it is out)
                most = int(np.diff(inj.off[k:]).max(initial=0))
                homes = int(np.diff(inj.hoff[k:]).max(initial=0))
                need = int(st.nact[0] + st.nact[2]) + 1  # the look scans the parked too
                st.reserve(2 * need + most + rs.max_in, most + 1 + rs.max_in)
                so = eng._scratch(2 * need + homes + rs.max_in)
                look = inner._look(live, so.touched.size)
                cy = self.carried.bundle(inj.hdr[int(inj.off[k]) :])
                if hasattr(eng.comm, "where"):
                    eng.comm.where = f"step {int(status[1]) + 1}"
            hop_rows = so.hop.shape[0] if eng.record_hops else -1
            room = (so.touched.size, so.deliv.shape[0], hop_rows, rs.max_in)
            args = (self.fns, self.hnd, t, last, eng.load_window[0], eng.load_window[1], room,
                    part, inner.rule, inner.vrule, eng.prm, st.segs, st.pkts, st.links, st.bufs,
                    so, ex, net, rows, status, err, look, cy, inner.inc)  # fmt: skip
            if not self.primed:  # a cold cache: one compilation a node (turns)
                turns.prime_in_turn(eng.comm, self.c_block, args)
                self.primed = True
            code = self.c_block(*args)
            self.carried.done(cy)
            inner._flush(so)
            so.cnt[:] = 0
            if code == WAIT:
                since = waiting(self.ranks.eng.comm, since)
                continue
            since = None
            if code == chunk.ROOM and status[1] < t_end:
                continue
            break
        eng.native_exchange = (float(net.waited[0]), int(net.sent[0]))  # bench --phases
        if live is not None:  # the looks searched in the block (no dead front found)
            live.searches += int(status[lk.S_SEARCHED])
        tl = int(status[1])
        done, later = chunk.split_ids(ids, tl)  # drawn: run, and for the next call
        eng.injected.extend(done)
        if code == LOOKED:
            self._grow()
        if code == LOOKED and tl < t_end:  # the steps drawn and not run, for the next call
            k = tl - t
            self.pending = (tl, t_end, inj._replace(off=inj.off[k:], hoff=inj.hoff[k:]), later)
        out = self._end(t, rows, code, so, live)
        scanned = None
        if code == LOOKED:
            scanned = look[5:]
            if status[lk.S_NOFIT]:  # this rank's scan did not fit the call's scratch
                scanned = live.scratch(int(eng.st.nact[0] + eng.st.nact[2]))
                st = eng.st
                dl._scan(eng.prm, st.segs, st.pkts, st.links, st.bufs, eng.rev, live.nv, live.nl,
                         live.snap, *scanned)  # fmt: skip
            code = chunk.LOOK
        return out, code, scanned

    def _live(self) -> np.ndarray:
        """The header words of the packets on the rank (their walked rows kept)."""
        pkts = self.ranks.eng.st.pkts
        live = np.ones(pkts.hdr.shape[0], bool)
        live[pkts.free[: int(pkts.nfree[0])]] = False
        return pkts.hdr[live, 0]

    def _grow(self) -> None:
        """After a look whose listings did not fit the gather's buffers: room for twice them
        (the same on every rank: the votes are)."""
        net = self.net
        v = net.votes.reshape(-1, lk.VOTE)
        words = 2 * v[:, lk.V_NF] + 2 * v[:, lk.V_NH] + v[:, lk.V_NC]
        mine = int(words[self.ranks.eng.rank])
        if mine > net.gsend.size or int(words.sum()) > net.gbuf.size:
            self.net = net._replace(gsend=np.empty(max(2 * mine, net.gsend.size), np.int64),
                                    gbuf=np.empty(2 * int(words.sum()), np.int64))  # fmt: skip

    def _end(self, t: int, rows: np.ndarray, code: int, so: Any, live: Any) -> np.ndarray:
        """The block's last step's lagged values summed, the errors raised, the rows
        ``(step, flits, delivered, injected, cross, work)``; the look's budget to ``live``."""
        rs, lag, err = self.ranks, self.net.lag, self.err
        eng = rs.eng
        tl = int(self.status[1])
        mine = np.array([lag[1] if lag[0] else 0, lag[2] if lag[0] else 0, err[0] != 0, lag[0]],
                        np.int64)  # fmt: skip
        tot = np.empty_like(mine)
        eng.comm.Allreduce(mine, tot, op=sum_op())
        if code == FAILED or tot[0] or tot[2]:
            if err[0] == chunk.MODEL_ERR:
                eng._violation(int(err[1]), so.out, int(err[2]))
            elif err[0] == -1:
                eng.msg = eng.msg or (
                    f"flit engine: flits of packet {int(err[2])} arrived without their head"
                )
            elif err[0]:
                rs.inner.status[:5] = err[:5]
                rs.inner._error(int(err[0]), so)
            rs.close()
            raise_collected(eng.comm, eng.msg)
        if tl > t and tot[3]:  # not counted by a look's vote
            rows[tl - t - 1, chunk.R_WORK] = tot[1]
            self.status[S_BUDGET] += tot[1]
        if live is not None:
            live.budget = int(self.status[S_BUDGET])
        done = np.empty((tl - t, 6), np.int64)
        done[:, 0] = np.arange(t + 1, tl + 1)
        done[:, 1:] = rows[: tl - t]
        return done
