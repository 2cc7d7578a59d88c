"""The lean iq path on several ranks (docs/iq-router.md, "Session 19: the lean path on several
ranks"): each rank runs the lean cycle (:func:`~mpinet.engine.flit.iq_lean.run_block`, one
cycle a call from the compiled block :func:`run_block`) on its block of routers, and the
flits and credits bound for another rank's routers go in one exchange a cycle, the general
path's (:class:`~mpinet.engine.flit.iq_ranks.Ranks`: its partners, buffers and MPI calls).

How a flit leaves: a link to another rank's router has a downstream input port past the
rank's own (``down >= own * nport``: ``own * nport`` + the global input port), so the lean
cycle writes its flit into the arrivals' ring as any other; after the cycle,
:func:`~.iq_lean_exchange.flits_out` takes those entries out of the ring slot into the
messages (a head with its packet's record; the sender's slot is freed with the tail).
Credits likewise: an input port fed from another rank returns its credits past ``cred``
(``cred.size`` + the global output VC). At the cycle's end the messages are exchanged;
:func:`~.iq_lean_exchange.flits_in` puts the flits and credits into the receiver's rings at
the cycles they are due (``t + channel_latency + 2`` and ``t + channel_latency + 1 +
credit_delay``, both after this cycle), so each arrives when it would on one rank. Order
inside a ring slot decides nothing (each entry touches its own VC or counter). With output
speedup a flit granted at ``t`` may leave its output queue cycles later: the lean cycle
writes it into the ring slot of its arrival then, which :func:`~.iq_lean_exchange.flits_out`
scans at the cycle before it leaves, so it crosses when it would leave on one rank
(docs/iq-router.md, "Session 20: a watch, speculation and output speedup on several ranks").
Under internal speedup a flit may leave in its grant's cycle, so a cycle's messages carry
the flits sent in that cycle instead (:func:`~.iq_lean_exchange.now`; "Session 23"). The
counters that end the run (flits, deliveries, injections, moves, an error) are summed over
the ranks, so every rank stops at the same cycle, or goes to the general path at the same
cycle (a stall, a routing error, packets in flight at the end). A watch (``mpinet
booksim``'s measurement) caps the blocks and is handed each rank's deliveries and live
packets (each listed by its head's rank) after every block, on every rank at the same cycle.

Why a cycle may run before the last one's messages are in (docs/iq-router.md, "Session 21:
the lean path's several-rank loop compiled"): cycle ``t - 1``'s messages fill ring slots
``t + channel_latency + 1`` and ``t + channel_latency + credit_delay``, read at those
cycles, so they may go in after cycle ``t`` when ``channel_latency + credit_delay >= 1``.
While injecting (``t - 1 < last``) no end can be decided at ``t - 1`` (a finish or a stall
needs ``t - 1 >= last``), so every rank runs ``t`` first, its messages out beside ``t -
1``'s (two sets of buffers and requests, even and odd cycles), and waits for ``t - 1``'s
after: a rank no longer waits each cycle for the slowest. The choice depends only on ``t``
and ``last``, so every rank posts the same cycles; a routing error summed at ``t - 1`` waits
for ``t``'s messages too before all go to the general path. From ``last`` on, a cycle's
messages are in before the next runs, as before.

Routes walked at injection (docs/iq-router.md, "Session 22: the lean path on several ranks,
completed"): a head that crosses carries the rest of its route after its message's credits
(:mod:`~mpinet.engine.flit.route_carry`'s kernels, a credit one word here), and the receiver
writes it into free rows of its own table before it takes the head in.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import njit

from mpinet.engine.comm import max_op
from mpinet.engine.flit import iq_blocks as ib
from mpinet.engine.flit import iq_lean as lean
from mpinet.engine.flit import iq_lean_exchange as xc
from mpinet.engine.flit import iq_lean_mode, iq_ranks, rank_loop, turns
from mpinet.engine.flit import iq_lean_state as ils
from mpinet.engine.flit import iq_step as ist
from mpinet.engine.flit import ranks as rk
from mpinet.engine.flit import route_carry as rc
from mpinet.engine.flit.iq_lean_run import LEAN_PATH, RebuiltState, live
from mpinet.engine.flit.iq_write import ROW
from mpinet.engine.flit.rank_steps import BLOCKS
from mpinet.routing.route_rows import SourceRouted

#: the kernel's codes beyond :mod:`~mpinet.engine.flit.iq_step`'s
WAIT, ERROR = iq_ranks.WAIT, iq_ranks.FAILED
#: ``gst``: the code, the last cycle whose messages are in, packets in flight, idle cycles,
#: the cycles run whose messages are out (0-2), their requests, the remote flits granted
#: last cycle, the block's first cycle, this rank's routing error, a routing error summed
G_CODE, G_T, G_FLIGHT, G_IDLE, G_PEND, G_REQ, G_CROSS, G_T0, G_LERR, G_FAIL = range(10)
ROW_HEAD = iq_ranks.ROW_HEAD
NEVER = 1 << 62  # the lean cycle's own end tests off: the summed counters decide


def links(s: ils.LeanArrays, prm: Any) -> None:
    """``s.down`` and ``s.up`` of the rank's links in the rank's numbering: a port of its
    own routers from 0, another rank's past them (see the module's doc)."""
    n, deg, npt, nv = prm.nnode, prm.deg, prm.nport, prm.nvc
    link = np.flatnonzero(s.nbt >= 0)
    at = link // deg * npt + link % deg
    g, r = s.nbt[link], s.rev[link]
    mine = (g >= prm.lo) & (g < prm.hi)
    s.down[at] = np.where(mine, (g - prm.lo) * npt + r, n * npt + g * npt + r)
    s.up[at] = np.where(mine, ((g - prm.lo) * npt + r) * nv, s.cred.size + (g * npt + r) * nv)


@njit(cache=True, error_model="numpy", _nrt=False)
def run_block(fns, hnd, t_end, last, win_lo, win_hi, quiet, inj, prm, s, rule, vrule, deliv,
              hop, rows, status, gst, ex2, net2, max_in, rmap, away, mode, cy):  # fmt: skip
    """Cycles ``gst[G_T] + 1 .. t_end``: each the lean cycle on this rank's routers, then the
    exchange (``inj``'s and ``rows``' index ``k`` is cycle ``gst[G_T0] + 1 + k``;
    ``status``: the lean cycle's, its deliveries' and hop rows' counts in ``[6]``, ``[7]``;
    ``ex2``, ``net2``: the exchange's buffers and requests of even and odd cycles;
    ``mode``: :data:`~.iq_lean_mode.ALL`, one copy for every key set; ``cy``: the walked rows whose
    routes the heads that cross carry, :mod:`~.route_carry`, width 0: none). While injecting, cycle
    ``t`` runs before ``t - 1``'s messages are in (see the module's doc). Returns
    ``gst[G_CODE]``: DONE, FINISHED, STALL, ROOM (rows or packet slots: call again),
    :data:`WAIT` (call again) or :data:`ERROR` (a routing error on some rank)."""
    off = inj[0]
    own = prm.nnode
    nn = net2[0].peers.shape[0]
    gst[G_CODE] = ist.DONE
    while True:
        npend = gst[G_PEND]
        t = gst[G_T] + 1 + npend  # the next cycle to run
        # run t with t - 1's messages out: the same on every rank (no end decided at t - 1)
        ahead = (npend == 1 and t - 1 < last and t <= t_end and gst[G_FAIL] == 0
                 and prm.lat + prm.cd > 0)  # (t - 1's credits read after t: flits_in)  # fmt: skip
        if npend == 2 or (npend == 1 and not ahead):  # the oldest cycle's messages in
            tp = gst[G_T] + 1
            net, ex = net2[tp & 1], ex2[tp & 1]
            if not rank_loop.wait(fns, net, gst[G_REQ]):
                gst[G_CODE] = WAIT
                break
            gst[G_PEND] = npend - 1
            gst[G_T] = tp
            if gst[G_FAIL]:  # (a failed run's last messages, read and dropped)
                if npend == 1:
                    gst[G_CODE] = ERROR
                    break
                continue
            mine, tot = net.mine, net.tot
            if net.fold:
                for c in range(rk.NK):  # (a loop: slice copies need NRT)
                    tot[c] = mine[c]
                for j in range(nn):
                    for c in range(rk.NK):
                        tot[c] += ex.recv[j, rk.H_CNT + c]
            if tot[rk.K_ERR]:
                gst[G_FAIL] = 1
                if npend == 1:
                    gst[G_CODE] = ERROR
                    break
                continue
            if cy.width > 0:  # the heads that came: rows of this rank for their routes
                rc.take_routes(ex, cy)
            xc.flits_in(tp, prm, s, ex, rmap)
            k = tp - gst[G_T0] - 1
            moves = tot[rk.K_MOVED]
            rows[k, ist.R_FLITS], rows[k, ist.R_DELIV] = tot[rk.K_FLITS], tot[rk.K_DELIV]
            rows[k, ist.R_INJ], rows[k, ist.R_MOVED] = tot[rk.K_INJ], moves
            rows[k, ist.R_CROSS] = tot[rk.K_CROSS]
            gst[G_FLIGHT] += tot[rk.K_INJ] - tot[rk.K_DELIV]
            gst[G_IDLE] = 0 if moves > 0 else gst[G_IDLE] + 1
            if gst[G_FLIGHT] <= 0 and tp >= last:  # (tp >= last: none ahead)
                gst[G_CODE] = ist.FINISHED
                break
            if gst[G_FLIGHT] > 0 and tp > last and gst[G_IDLE] >= quiet:
                gst[G_CODE] = ist.STALL
                break
            continue
        if t > t_end:
            break
        k = t - gst[G_T0] - 1
        a, b = off[k], off[k + 1]
        # walked routes: rows for the cycles taken in before the next test (t - 1's after t
        # runs, and t's too where t + 1 will not run ahead), a head's route each
        takes = 2 if npend == 1 and not (t < last and t < t_end and prm.lat + prm.cd > 0) else 1
        if (status[6] + own > deliv.shape[0]
                or (prm.record_hops and status[7] + own * prm.deg * prm.osp * s.spg[1]
                    > hop.shape[0])
                or s.pk_nfree[0] < b - a + max_in
                or (cy.width > 0 and cy.nfree[0] < cy.need * takes)):  # fmt: skip
            gst[G_CODE] = ist.ROOM  # (a cycle's messages may stay out: Python keeps them)
            break
        net, ex = net2[t & 1], ex2[t & 1]
        mine = net.mine
        mine[:] = 0
        if gst[G_LERR] == 0:
            part = (off[k:], inj[1], inj[2], inj[3], inj[4])  # the cycle's injections
            lean.run_block(t - 1, t, NEVER, win_lo, win_hi, quiet, part, prm, s, rule, vrule,
                           deliv, hop, rows[k:], status, mode)  # fmt: skip
            mine[rk.K_FLITS], mine[rk.K_DELIV] = rows[k, ist.R_FLITS], rows[k, ist.R_DELIV]
            mine[rk.K_INJ], mine[rk.K_MOVED] = rows[k, ist.R_INJ], rows[k, ist.R_MOVED]
            mine[rk.K_CROSS] = gst[G_CROSS]  # granted last cycle: on their links in this one
            if status[0] != ist.DONE:  # a routing error, reported by the general path
                gst[G_LERR] = 1
                mine[rk.K_ERR] = 1
            gst[G_CROSS] = xc.flits_out(t, prm, s, ex, away)
            if xc.now(s):  # (internal speedup: the flits taken out leave in this cycle)
                mine[rk.K_CROSS], gst[G_CROSS] = gst[G_CROSS], 0
            if cy.width > 0:  # the heads sent carry the rest of their routes
                rc.add_routes(ex, cy)
        else:  # a rank that failed runs no more cycles: its messages say so
            for j in range(nn):
                ex.send[j, rk.H_ROWS], ex.send[j, rk.H_CRED], ex.send[j, rk.H_HEADS] = 0, 0, 0
                ex.nsend[j] = rk.HEADER
            mine[rk.K_ERR] = 1
        gst[G_REQ] = rank_loop.post(fns, hnd, net, ex)
        gst[G_PEND] = npend + 1
    return gst[G_CODE]


def run(eng: Any, workload: Any, prm: Any, tables: tuple, hw: int, rule: tuple, vrule: tuple,
        order: Any, t0: float, rerun: Any, nbt: np.ndarray) -> tuple:  # fmt: skip
    """The lean path on ``eng``'s ranks: ``(record, None)``, or ``(None, why)`` on every rank
    at once where it goes to the general path (as :func:`~.iq_lean_run.run`, a watch
    included; ``nbt``: the rank's neighbours in mpinet's ports, for the partners)."""
    own = eng.hi - eng.lo
    prm = prm._replace(nnode=own)  # the lean arrays: the rank's routers only
    s = ils.make_lean(prm, *tables, hw, 1024, speedup=float(eng.model.iq.internal_speedup))
    links(s, prm)
    rmap = np.zeros(own * prm.nport * prm.nvc, np.int64)
    width = iq_ranks.ROW + max(hw, 1)
    rx = iq_ranks.Ranks(eng, nbt, width)
    words = rk.HEADER + rx.most * (width + prm.isp)  # a row and isp credits a link
    nn = rx.ex.recv.shape[0]
    # the buffers and requests of even and odd cycles: two cycles' messages may be out
    ex2 = tuple(_twin(rx.ex, nn, words) for _ in range(2))
    net2 = tuple(_twin_net(rx.net, nn, words) for _ in range(2))

    def room(per_head: int) -> None:  # the messages' room for heads' routes (every rank's)
        nonlocal ex2, net2
        more = rk.HEADER + rx.most * (width + prm.isp + per_head)
        if more > ex2[0].recv.shape[1]:  # (between blocks: no cycle's messages out)
            ex2 = tuple(_twin(e, nn, more) for e in ex2)
            net2 = tuple(_twin_net(n, nn, more) for n in net2)

    # routes walked at a block's start (as one rank's lean path: blocks of BLOCK cycles); a
    # head that crosses carries the rest of its route (route_carry, a credit one word here)
    walked = isinstance(eng.router, SourceRouted)
    carried = rc.CarriedRows(eng.router if walked else None, eng.comm, rx.max_in,
                             (ROW_HEAD, ROW), room, lambda: ib.slot_words(s), lambda: None,
                             cw=1)  # fmt: skip
    # one compiled copy for every key set (each copy of this kernel takes about 35 s to
    # compile: four copies put CI's MPI stage 1:45 over its budget); every key's branch is
    # taken at run time, as the lean cycle's code reads prm
    mode = iq_lean_mode.ALL
    last = int(workload.last_injection_step)
    quiet = 64 + 4 * (prm.lat + prm.cd + prm.rd + prm.vad + prm.sad + prm.xd)
    status = np.zeros(12, np.int64)
    gst = np.zeros(10, np.int64)
    win_lo, win_hi = eng.load_window
    delivered, hop_rows, counters, injected = [], [], [], []
    hop = np.empty((max(4096, 4 * own * prm.nport) if eng.record_hops else 1, 5), np.int64)
    t, n_inj, n_del = -1, 0, 0
    eng.steps_path, eng.calls_path, eng.block_calls = LEAN_PATH, BLOCKS, 0
    gst[G_T] = -1
    away = np.zeros(s.pk_pid.size, np.int64)  # see iq_lean_exchange.flits_out
    block, big, most = ib.BLOCK, np.zeros(2, np.int64), np.zeros(2, np.int64)
    watch = eng.watch  # a measurement read while the run goes: its steps cap each block
    prime = rk.Direct(run_block)
    while (gst[G_FLIGHT] > 0 or t < last) and t < eng.max_steps:
        t_end = min(t + block, eng.max_steps, watch.limit(t) if watch else eng.max_steps)
        inj = ib.injections(eng, workload, t, t_end, last, hw, injected)
        if walked:  # into rows, as one rank's (the rows no live slot names freed)
            inj = ib.walk(eng, s, inj, t + 1)
        carried.start()  # (collective)
        need = int(inj[1].size) + rx.max_in
        if int(s.pk_nfree[0]) < need:
            s, away = _grow(s, away, need)
        # every rank goes together; the next block the shortest any rank asks (as one rank's)
        big[0] = s.pk_pid.size > ils.MAX_SLOTS
        big[1] = -(ib.BLOCK if walked else ib.next_block(block, int(inj[1].size), t_end - t,
                                                          own, 16384))  # fmt: skip
        eng.comm.Allreduce(big, most, op=max_op())
        if most[0]:
            return None, f"more than {ils.MAX_SLOTS} packets in flight"
        block = int(-most[1])
        alive = s.pk_pid.size - int(s.pk_nfree[0])
        deliv = np.empty((alive + need + own + 1, 7), np.int64)
        rows = np.zeros((t_end - t, 6), np.int64)
        start = gst[G_T0] = t
        status[6] = status[7] = 0
        while True:
            eng.block_calls += 1
            # rows freed (but the live slots' and the cycles' not run) or grown where short
            cy = carried.bundle(inj[4][int(inj[0][int(gst[G_T]) - start]) :])
            if walked:  # the table may have grown (walked, or rows for the routes to come)
                rule = ib.rule_of(eng.router)
            args = (rx.hnd, t_end, last, win_lo, win_hi, quiet, inj, prm, s, rule, vrule, deliv,
                    hop, rows, status, gst, ex2, net2, rx.max_in, rmap, away, mode, cy)  # fmt: skip
            if prime is not None:  # a cold cache: one compilation a node (turns)
                turns.prime_in_turn(eng.comm, prime, (rx.fns, *args))
                prime = None
            code = _call(eng, fns=rx.fns, args=args)
            carried.done(cy)
            t = int(gst[G_T])
            if code != ist.ROOM:
                break
            delivered.append(deliv[: int(status[6])].copy())
            hop_rows.append(hop[: int(status[7])].copy())
            if status[7] + own * prm.deg * prm.osp > hop.shape[0]:
                hop = np.empty((hop.shape[0] * 2, 5), np.int64)
            status[6] = status[7] = 0
            if int(s.pk_nfree[0]) < need:  # heads from other ranks took the slots
                s, away = _grow(s, away, need)
        if code == ERROR:
            return None, "a routing error"
        if code == ist.STALL:
            return None, "stopped moving"
        delivered.append(deliv[: int(status[6])].copy())
        if eng.record_hops:
            hop_rows.append(hop[: int(status[7])].copy())
        n_inj, n_del = ib.block_rows(eng, rows[: t - start], start, n_inj, n_del, counters)
        if watch is not None:  # every rank at the same cycle (collective): may stop the
            now = functools.partial(live, s, prm, t, away)  # traffic and the run
            last, eng.max_steps = watch.seen(t, delivered, now, last, eng.max_steps)
    if gst[G_FLIGHT]:  # the stuck packets' rows: the general path's (a head's rank lists it)
        return None, "packets in flight at the end"
    if eng.record_hops and hop_rows:  # the general path's order: by cycle, node and port
        h = np.concatenate(hop_rows)
        hop_rows = [h[np.lexsort((h[:, 4], h[:, 2], h[:, 0]))]]
    eng.iq_state = RebuiltState(eng, workload, rerun)
    rec = ib.record(eng, s, prm, max(t, 0), counters, delivered, hop_rows, injected, 0, t0,
                    None, order, None)  # fmt: skip
    return rec, None


def _twin(ex: Any, nn: int, words: int) -> Any:
    """``ex`` with buffers of its own, ``words`` a message."""
    z = np.zeros
    return ex._replace(send=z((nn, words), np.int64), nsend=z(nn, np.int64),
                       recv=z((nn, words), np.int64))  # fmt: skip


def _twin_net(net: Any, nn: int, words: int) -> Any:
    """``net`` with requests and counters of its own (the waits' scratch shared)."""
    z = np.zeros
    return net._replace(cap=np.full(nn, words, np.int64), reqs=np.zeros_like(net.reqs),
                        mine=z(rk.NK, np.int64), tot=z(rk.NK, np.int64))  # fmt: skip


def _grow(s: ils.LeanArrays, away: np.ndarray, need: int) -> tuple:
    """``s`` with packet slots for ``need`` more, and ``away`` as long (the new slots 0)."""
    s = ils.grow_packets(s, max(need, s.pk_pid.size))
    return s, np.concatenate([away, np.zeros(s.pk_pid.size - away.size, np.int64)])


def _call(eng: Any, fns: Any, args: tuple) -> int:
    """:func:`run_block` until it returns other than :data:`WAIT` (a wait returned to Python
    sleeps a little, and aborts past the communicator's timeout, as the general path's)."""
    since = None
    while True:
        code = int(run_block(fns, *args))
        if code != WAIT:
            return code
        since = rank_loop.waiting(eng.comm, since)
