"""The flit engine's steps compiled end to end: many steps per call on one rank.

On one rank, with a router that has a compiled hop (:mod:`mpinet.routing.compiled`:
``shortest`` on translated tables, ``fccn-shortest``, ``anynet-min``), a VC policy with a
compiled rule (:attr:`~mpinet.routing.vc_policies.VCPolicy.compiled`: ``any``, ``hops``,
``negative-hop``, ``dateline``) and any port model (``all-port``, ``one-port``,
``k-port:K``, ``sdc``: on one rank its demand is the rank's), :func:`run_steps` runs whole steps
without returning to Python: the kernels of a step (:func:`~mpinet.engine.flit.kernels.collect`,
:func:`~mpinet.engine.flit.kernels.move`, :func:`~mpinet.engine.flit.step_end.settle`), then
the routing of the heads that reached a node and of the step's injections, exactly as
:func:`mpinet.engine.flit.route_heads.route` does it with the router's and the
policy's vectorized calls. Why: Python between the kernels (the router call, the policy,
the bookkeeping, the numba dispatch of some 200 arguments) was a quarter of a step on the
issue's wormhole run (docs/performance.md, "The flit engine").

It returns to Python after the last step asked for (up to :data:`ONE_RANK_CHUNK` steps, whose
injections are drawn before the call), when the run ends or stalls, on a model or routing
error, when a deadlock look (paced and scanned here as
:class:`~mpinet.engine.flit.deadlock_live.LiveCheck` would, every
:data:`~mpinet.engine.flit.deadlock_live.CHECK_EVERY` steps) lists fronts to search, or
before a step for which the segment or packet pools, the scratch arrays or the delivery rows
might not have room (the engine grows them and calls again). Per step one row: flits moved,
packets delivered and injected, flits that crossed ranks (0), the step's work for the
deadlock search's pacing (active buffers). The step-by-step path's answers (the tests).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from mpinet.engine.flit import deadlock_live as dl
from mpinet.engine.flit import kept_requests as kr
from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import look_search as ls
from mpinet.engine.flit import port_demand as pd
from mpinet.engine.flit import port_links as pl
from mpinet.engine.flit import route_heads as heads
from mpinet.engine.flit import step_draws as sd
from mpinet.engine.flit import step_end
from mpinet.engine.flit.deadlock_live import CHECK_EVERY as CHECK
from mpinet.engine.flit.direct import Direct
from mpinet.engine.flit.injection_blocks import InjectionBlocks, split_ids
from mpinet.engine.flit.kept_choice import kept_deny
from mpinet.engine.flit.kport_nodes import kport_deny, kport_nodes_ok
from mpinet.engine.flit.step_route import PORT_ERR, VC_ERR, route_in
from mpinet.engine.flit.steps_path import COMPILED, path, usable  # noqa: F401 (chunk.path)
from mpinet.engine.run import raise_collected
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.vc_policies import COUNT_VC

#: :func:`run_steps`' status codes (``status[0]``); ``status[1]`` is the last step run;
#: PORT_ERR, VC_ERR: routing errors (:mod:`~mpinet.engine.flit.step_route`); LOOK: the
#: deadlock look of that step found a dead front (Python's search reports it);
#: FIND: the look is due and its scan did not fit the scratch (Python scans)
DONE, ROOM, FINISHED, STALL, MODEL_ERR = range(5)
LOOK, FIND = 7, 8
#: ``status``' slots: the packets in flight, the deadlock look's budget (deadlock_live.PACE),
#: the looks searched in the call (no dead front: no return to Python), the last step whose
#: injections the call drew (step_draws)
S_FLIGHT, S_BUDGET, S_SEARCHED, S_DRAWN = 5, 6, 7, 8
#: columns of a step row
R_FLITS, R_DELIV, R_INJ, R_CROSS, R_WORK = range(5)


@njit(cache=True, error_model="numpy", _nrt=False)
def run_steps(t0, t_end, last, win_lo, win_hi, room, inj, rule, vrule, prm, segs, pkts, links,
              bufs, so, rows, status, look, lscr, inc, drw):  # fmt: skip
    """Run steps ``t0 + 1 .. t_end`` (see the module docstring); returns the last step run.

    ``inj``: the :class:`~mpinet.engine.flit.injection_blocks.Injections` of each step
    (``inj.off[k]:inj.off[k + 1]`` for step ``t0 + 1 + k``, sorted by id, source and destination
    apart) and the packets injected at their destination (delivered at once); ``room = (scratch
    rows, delivery rows, hop rows or -1)``; ``status[S_FLIGHT]``: the packets in flight, in and
    out. ``look``: the deadlock search while injecting
    (:class:`~mpinet.engine.flit.deadlock_live.LiveCheck`): ``(on,
    rev, nv, nl, snap, fronts, waits, fpid, hf, hb, closed, cnt)``; its looks are paced here
    as :meth:`~mpinet.engine.flit.deadlock_live.LiveCheck.due` paces them (budget in
    ``status[S_BUDGET]``), its scan and search run here (``lscr``: the search's scratch,
    :func:`~mpinet.engine.flit.look_search.any_dead`), and only a look that finds a dead
    front returns (:data:`LOOK`, Python's search names the cycle): a return to Python every
    16 steps was the fixed cost of small networks (issue 33). ``inc``: sdc's demand kept
    between steps (:class:`~mpinet.engine.flit.port_demand.Demand`; counted afresh at the
    call's first step). ``drw``: the call's injections drawn here into ``inj``
    (:func:`~mpinet.engine.flit.step_draws.draw_block`; ``drw.on`` False: drawn before the
    call), up to the last step whose draws fit it; a return for :data:`ROOM` gives the
    next step's injections in ``status[2]``, and ``status[3]`` 1 when ``inj`` had not room
    for them.
    """
    cnt, deliv = so.cnt, so.deliv
    scratch, drows, hrows = room
    in_flight = status[S_FLIGHT]
    live, rev, nv, nl, snap, fronts, waits, fpid, hf, hb, closed, scnt = look
    budget = status[S_BUDGET]
    fit = min(
        fronts.shape[0] // (prm.nvc + 1), hf.shape[0] // (prm.nvc + 2), closed.shape[0] // 3
    )  # the active buffers a scan has room for
    status[3] = 0
    if drw.on:  # the call's injections, drawn before its first step
        t_end = sd.draw_block(t0, t_end, drw, inj.off, inj.pid, inj.src, inj.dst)
        if t_end == t0:  # not even the first step's: the engine gives room
            status[0], status[1], status[2], status[3] = ROOM, t0, inj.off[1], 1
            status[S_FLIGHT], status[S_BUDGET] = in_flight, budget
            return t0
        status[S_DRAWN] = t_end
    for t in range(t0 + 1, t_end + 1):
        k = t - t0 - 1
        ia, ni = inj.off[k], inj.off[k + 1] - inj.off[k]
        ha, nh = inj.hoff[k], inj.hoff[k + 1] - inj.hoff[k]
        need = pl.room_need(ni, scratch, bufs, inc)  # sdc's holes (port_links) not counted
        if (segs.nfree[0] < need + ni or pkts.nfree[0] < ni or need + ni > scratch
                or cnt[fk.C_DELIV] + need + nh > drows
                or (hrows >= 0 and cnt[fk.C_HOPS] + need > hrows)):  # fmt: skip
            status[0], status[1], status[2] = ROOM, t - 1, ni
            status[S_FLIGHT], status[S_BUDGET] = in_flight, budget
            return t - 1
        if t % 8 == 0:  # buffers in id order, as the step-by-step path sorts them
            pl.sort_kept(bufs, inc, so.rq)
        sdc = -1
        if prm.kind == fk.SDC:  # one rank: the demand is the rank's; requests kept
            if t == t0 + 1 or inc.chk[3]:  # afresh; else recounted at the last step's end
                inc.chk[3] = 0
                kr.rebuild(prm, segs, bufs, inc)
                kr.recount(True, prm, segs, pkts, links, bufs, inc)
            if inc.chk[0]:
                kr.check(prm, segs, pkts, links, bufs, inc)
            sdc = fk.sdc_port(inc.dem)
            nt = na = kr.collect_port(sdc, prm, segs, pkts, links, bufs, so, inc, True)
        else:
            nt = fk.collect(prm, segs, pkts, links, bufs, so)
            na = nt  # the links move visits: k-port's allowed ones, moved to the front
            if prm.kind == fk.ALL:  # every touched link (no call: a call's bundles cost)
                so.allow[:nt] = True
            else:  # k-port, one-port: port_model's choice (the denied links emptied)
                if prm.k == 1:  # one-port: a node's decision kept while nothing changed
                    na = kept_deny(nt, t, t0, prm, segs, pkts, links, so, inc)
                else:
                    na = kport_deny(nt, t, prm, segs, pkts, links, so, inc)
        for c in range(fk.NCOUNT):
            if c != fk.C_FLITS and c != fk.C_DELIV and c != fk.C_HOPS and c != fk.C_CROSS:
                cnt[c] = 0
        f0, d0, x0 = cnt[fk.C_FLITS], cnt[fk.C_DELIV], cnt[fk.C_CROSS]
        if na:  # no request, no move (the call unpacks some 60 arrays)
            fk.move(t, na, win_lo <= t < win_hi, prm, segs, pkts, links, bufs, so)
        # the links after na (k-port's denied) moved nothing and have nreq 0 (kport_deny)
        nck = na  # the links settle checks: none if the k-port check of the nodes passed
        if prm.kind == fk.KPORT and kport_nodes_ok(na, prm.k, prm.deg, so.bufs, so.touched,
                                                   links.flits, links.cap):  # fmt: skip
            nck = 0
        nnew = step_end.settle(nck, sdc, prm, segs, pkts, links, bufs, so)
        if so.out[0]:
            status[0], status[1], status[2] = MODEL_ERR, t, sdc
            return t
        if prm.kind == fk.SDC:
            kr.mark_moved(na, prm, segs, links, bufs, so, inc, fk.C_CRED_L, fk.C_REL, fk.C_LOCAL)
        for i in range(nh):  # injected at their destination: delivered now
            r = cnt[fk.C_DELIV]
            deliv[r, 0], deliv[r, 1] = inj.hpid[ha + i], inj.hsrc[ha + i]
            deliv[r, 2] = inj.hdst[ha + i]
            deliv[r, 3], deliv[r, 4], deliv[r, 5], deliv[r, 6] = t, t, 0, t
            cnt[fk.C_DELIV] += 1
        # the heads and injections fit the scratch (room above): route_in at once
        if nnew + ni and not route_in(t, nnew, ni, ia, inj, rule, vrule, prm, segs, pkts,
                                      links, bufs, so, status, so.route, so.rhdr):  # fmt: skip
            return t
        if prm.kind == fk.SDC:
            kr.mark_injected(nnew, ni, prm, so, inc)
            kr.settle_buffers(prm, segs, bufs, inc)
            kr.recount(False, prm, segs, pkts, links, bufs, inc)  # while the moves' are hot
        flits, ndel = cnt[fk.C_FLITS] - f0, cnt[fk.C_DELIV] - d0
        rows[k, R_FLITS], rows[k, R_DELIV], rows[k, R_INJ] = flits, ndel, ni + nh
        work = bufs.nact[0] + bufs.nact[2] - inc.hole[pl.H_DEAD]  # the reference's active
        rows[k, R_CROSS], rows[k, R_WORK] = cnt[fk.C_CROSS] - x0, work
        in_flight += ni + nh - ndel
        if live:  # LiveCheck.due, then find's scan
            budget += flits + work
            if t % CHECK == 0 and t <= last and in_flight > 0 and budget >= 0:
                pl.squeeze(bufs, inc)
                status[S_BUDGET], status[S_FLIGHT], status[1] = budget, in_flight, t
                if bufs.nact[0] + bufs.nact[2] >= fit:
                    status[0] = FIND
                    return t
                dl._scan(prm, segs, pkts, links, bufs, rev, nv, nl, snap, fronts, waits, fpid,
                         hf, hb, closed, scnt)  # fmt: skip
                if scnt[0] > 0:  # fronts listed: the search here, Python's for a dead set
                    if ls.any_dead(scnt[0], scnt[1], scnt[2], fronts, waits, hf, hb, closed,
                                   lscr[0], lscr[1]) != ls.NONE_DEAD:  # fmt: skip
                        status[0] = LOOK
                        return t
                    budget = -dl.PACE * scnt[0]  # as LiveCheck.search paces (one rank)
                    status[S_SEARCHED] += 1
        if in_flight <= 0 and t >= last:
            status[0], status[1], status[S_FLIGHT] = FINISHED, t, in_flight
            status[S_BUDGET] = budget
            return t
        if flits == 0 and in_flight > 0 and t > last:
            status[0], status[1], status[S_FLIGHT] = STALL, t, in_flight
            status[S_BUDGET] = budget
            return t
    status[0], status[1], status[S_FLIGHT] = DONE, t_end, in_flight
    status[S_BUDGET] = budget
    return t_end


#: steps one call runs at most on one rank: the injections of these steps are drawn before it
ONE_RANK_CHUNK = 1024
#: the same with a progress line (written after each call), and the injection blocks of the
#: steps on several ranks (:mod:`~mpinet.engine.flit.ranks`)
MAX_CHUNK = 64


class Steps(InjectionBlocks):
    """The engine's side of :func:`run_steps`: the injections of the steps asked for, room
    in the pools and scratch arrays, the rows and the errors turned into the engine's."""

    def __init__(self, eng: Any) -> None:
        self.eng = eng
        st, lo, deg = eng.st, eng.lo, eng.deg
        #: the rows of routes walked at injection, or None (:meth:`_walk`)
        self.rows = eng.router if isinstance(eng.router, SourceRouted) else None
        self._set_rule()
        pol = eng.policy
        lcount = np.zeros(st.block * deg, np.int64)
        if pol.compiled == COUNT_VC:
            links = np.flatnonzero(st.nbt >= 0)
            lcount[links] = pol.counts(links // deg + lo, st.nbt[links])
        self.vrule = (np.int64(pol.compiled), np.int64(eng.vcs), lcount)
        self.status = np.zeros(9, np.int64)
        self.look: tuple | None = None  # run_steps' deadlock-look arrays (_look)
        self.lscr: tuple = ()  # and its search's scratch (look_search.scratch)
        self.off_look, self.off_lscr = None, ()  # the same for a call without looks (step 0)
        self.pending: tuple | None = None  # injections drawn and not run: (t, t_end, inj, ids)
        #: sdc's demand between steps (port_demand); ``check``: compared every step (tests)
        nbuf = st.bhead.size if eng.prm.kind == fk.SDC else 0  # sdc keeps its requests
        self.inc = pd.make_demand(st.block * deg, deg, getattr(eng, "check_demand", False), nbuf)
        self.inc.hole[pl.H_CAP] = int(st.links.cap.sum())  # the most buffers a step activates
        self.c_run = Direct(run_steps)  # the dispatch typed ~70 arrays a call: 2 ms a run
        #: the injections drawn in the steps (step_draws), and the arrays they fill: made
        #: at the first call (the workload's); ``most``: the most a step drew so far
        self.drw: sd.Draw | None = None
        self.off: sd.Draw | None = None  # the same, not drawing (its calls read the draws)
        self.dinj: Any = None
        self.most = 16
        self.steps = ONE_RANK_CHUNK if eng.progress is None else MAX_CHUNK

    def _look(self, live: Any, m: int) -> tuple:
        """:func:`run_steps`' ``look`` for a scratch of ``m`` rows (kept while it fits; its
        search's scratch :attr:`lscr`); ``live`` None: no look (step 0's call)."""
        if live is None:
            if self.off_look is None:
                z = np.zeros(0, np.int64)
                self.off_look = (False, z, 0, 0, np.zeros((0, 3), np.int64), z, z, z, z, z, z,
                                 np.zeros(3, np.int64))  # fmt: skip
                self.off_lscr = ls.scratch(z, z)
            return self.off_look
        if self.look is None or self.look[5].shape[0] < m * (self.eng.vcs + 1) + 1:
            rev = np.ascontiguousarray(self.eng.rev, np.int64)
            self.look = (True, rev, live.nv, live.nl, live.snap, *live.scratch(m))
            self.lscr = ls.scratch(self.look[5], self.look[8])
        return self.look

    def prepare(self, workload: Any, live: Any) -> None:
        """Set the run up before the engine's clock (as BookSim2 its traffic manager): the
        draws' arrays, the scratch, the looks' arrays, the compiled call's entry point for
        step 0's arguments (docs/performance.md, session 11). Nothing is drawn or run."""
        eng = self.eng
        self.drw, self.dinj = sd.make_draw(eng, workload, self.rows is not None, self.steps)
        self.off = self.drw._replace(on=False)
        so = eng._scratch(2 + self.most)  # the first call's, as run() sizes it
        if live is not None:
            self._look(live, so.touched.size)
        if self.drw.on:  # step 0's call reads the draws' arrays: its arguments known here
            rows, off = np.zeros((1, 5), np.int64), self._look(None, 0)
            args = self._args(-1, 0, workload.last_injection_step, self.dinj, so, rows, off,
                              self.drw)  # fmt: skip
            self.c_run.prime(*args, compile=False)  # a compilation stays the first call's

    def _args(self, t0: int, t_end: int, last: int, part: Any, so: Any, rows: np.ndarray,
              look: tuple, draw: Any) -> tuple:  # fmt: skip
        """:func:`run_steps`' arguments (the same types on every call of a run)."""
        eng, st = self.eng, self.eng.st
        hop_rows = so.hop.shape[0] if eng.record_hops else -1
        room = (so.touched.size, so.deliv.shape[0], hop_rows)
        return (t0, t_end, last, eng.load_window[0], eng.load_window[1], room, part, self.rule,
                self.vrule, eng.prm, st.segs, st.pkts, st.links, st.bufs, so, rows, self.status,
                look, self.lscr if look[0] else self.off_lscr, self.inc, draw)  # fmt: skip

    def first(self, workload: Any) -> int:
        """Step 0, as :func:`~mpinet.engine.flit.route_heads.inject` makes it: its packets
        routed and queued at their sources, those injected at their destination delivered;
        returns the packets injected. In one compiled call (nothing is in flight, nothing
        moves): the step-by-step kernels it would call are not loaded, which was a fifth of
        a fresh small run's engine time (docs/performance.md, "A fresh run's fixed cost")."""
        rows, _, _ = self.run(workload, -1, workload.last_injection_step, 0, None, t_end=0)
        return int(rows[0, 1 + R_INJ]) if rows.shape[0] else 0

    def run(self, workload: Any, t: int, last: int, in_flight: int, live: Any,
            t_end: int | None = None) -> tuple:  # fmt: skip
        """Run from step ``t + 1`` for up to :data:`ONE_RANK_CHUNK` steps (:data:`MAX_CHUNK`
        with a progress line; to ``t_end`` if given), to the end, or to a deadlock look that
        lists fronts; returns ``(rows, code, scanned)``: a row ``(step, flits, delivered,
        injected, cross, work)`` per step run, :func:`run_steps`' last status code and, for
        :data:`LOOK`, the scan (for :meth:`~mpinet.engine.flit.deadlock_live.LiveCheck.search`).
        Errors are raised as the step-by-step path raises them."""
        eng = self.eng
        if self.drw is None:  # not prepared (:meth:`prepare`)
            self.drw, self.dinj = sd.make_draw(eng, workload, self.rows is not None, self.steps)
            self.off = self.drw._replace(on=False)
        drw = self.drw
        if self.pending is not None and self.pending[0] == t:  # drawn by the last call
            _, t_end, inj, ids = self.pending
        else:
            t_end = min(t + self.steps, eng.max_steps) if t_end is None else t_end
            ids = []
            inj = self.dinj if drw.on else self._injections(workload, t, t_end, ids)
        self.pending = None
        rows = np.zeros((t_end - t, 5), np.int64)
        status = self.status
        status[S_FLIGHT] = in_flight
        status[S_BUDGET] = live.budget if live is not None else 0
        status[S_SEARCHED] = 0
        t0, draw = t, drw  # the run's first call draws, the calls after a return for room read
        while True:
            st = eng.st
            k = t0 - t
            if drw.on:  # drawn in the call: room for the most a step drew so far
                most, homes, part = self.most, 0, self.dinj
                if not draw.on:
                    part = part._replace(off=part.off[k:], hoff=part.hoff[k:])
            else:  # injections of one step, at most
                most = int(np.diff(inj.off[k:]).max(initial=0))
                homes = int(np.diff(inj.hoff[k:]).max(initial=0))
                part = inj._replace(off=inj.off[k:], hoff=inj.hoff[k:])
            need = int(st.nact[0] + st.nact[2]) + 1  # the look scans the parked too
            st.reserve(2 * need + most, most + 1)
            so = eng._scratch(2 * need + homes + most)  # run_steps routes need + most
            so.cnt[:] = 0
            look = self._look(live, so.touched.size)
            tl = self.c_run(*self._args(t0, t_end, last, part, so, rows[k:], look, draw))
            if self.inc.hole[pl.H_DEAD]:  # sdc's holes out of the list Python reads
                pl.squeeze(st.bufs, self.inc)
            self._flush(so)
            code = int(status[0])
            if draw.on and not (code == ROOM and status[3]):  # drawn: the next calls read them
                t_end, draw = int(status[S_DRAWN]), self.off
            if code != ROOM or tl >= t_end:
                break
            if draw.on:  # not even the first step's draws fitted: larger arrays, draw again
                self._more_draws(int(status[2]), True)
            else:
                self.most = max(self.most, int(status[2]))
            t0 = tl
        if drw.on:  # the ids of the steps run (the draws start at step t + 1)
            eng.injected.append(self.dinj.pid[: int(self.dinj.off[tl - t])].copy())
        if live is not None:
            live.budget = int(status[S_BUDGET])
            live.searches += int(status[S_SEARCHED])
        done, later = split_ids(ids, tl)
        eng.injected.extend(done)
        if code in (LOOK, FIND) and tl < t_end and not drw.on:  # drawn, not run: the next call's
            k = tl - t
            self.pending = (tl, t_end, inj._replace(off=inj.off[k:], hoff=inj.hoff[k:]), later)
        n = int(tl) - t
        done = np.empty((n, 6), np.int64)
        done[:, 0] = np.arange(t + 1, int(tl) + 1)
        done[:, 1:] = rows[:n]
        if code in (MODEL_ERR, PORT_ERR, VC_ERR):
            self._error(code, so)
            raise_collected(eng.comm, eng.msg)
        return done, code, (look[5:] if code == LOOK else None)

    def _more_draws(self, ni: int, arrays: bool) -> None:
        """After a return for room with ``ni`` injections drawn for the next step: room for
        them in the next call (the pools and scratch by :attr:`most`; ``arrays``: the
        draws' arrays, which had not room for them)."""
        self.most = max(self.most, ni)
        if arrays:
            self.dinj = sd.injections(self.eng, 2 * max(ni, self.dinj.pid.size), self.steps)

    def _flush(self, so: Any) -> None:
        """The delivery and hop rows of the call, to the engine's lists."""
        eng, cnt = self.eng, so.cnt
        n = int(cnt[fk.C_DELIV])
        if n:
            eng.delivered.append(so.deliv[:n].copy())
        h = int(cnt[fk.C_HOPS])
        if eng.record_hops and h:
            eng.hop_rows.append(so.hop[:h].copy())

    def _error(self, code: int, so: Any) -> None:
        eng, s = self.eng, self.status
        t = int(s[1])
        if code == MODEL_ERR:
            eng._violation(t, so.out, int(s[2]))
        elif code == PORT_ERR:
            heads.port_error(eng, t, int(s[2]), int(s[3]), int(s[4]))
        else:
            heads.vc_error(eng, int(s[2]), int(s[3]), int(s[4]))
