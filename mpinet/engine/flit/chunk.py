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

It returns to Python (:class:`Status`) after the last step asked for (the engine asks up
to the next deadlock look, every :data:`~mpinet.engine.flit.deadlock_live.CHECK_EVERY` steps), when
the run ends or stalls, on a model or routing error, or before a step for which the
segment or packet pools, the scratch arrays or the delivery rows might not have room (the
engine grows them and calls again). Per step it writes one row: flits moved, packets
delivered, packets injected, flits that crossed ranks (0), and the step's work for the
deadlock search's pacing (active buffers). The same answers as the step-by-step path, checked by the
tests on every switching mode and policy.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np
from numba import njit

from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import route_heads as heads
from mpinet.engine.flit import route_io, step_end
from mpinet.engine.flit import state as fs
from mpinet.engine.flit.deadlock_live import CHECK_EVERY as CHECK
from mpinet.routing import compiled
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.vc_policies import ANY_VC, COUNT_VC, HOPS_VC

#: :func:`run_steps`' status codes (``status[0]``); ``status[1]`` is the last step run
DONE, ROOM, FINISHED, STALL, MODEL_ERR, PORT_ERR, VC_ERR = range(7)
#: columns of a step row
R_FLITS, R_DELIV, R_INJ, R_CROSS, R_WORK = range(5)

Injections = namedtuple("Injections", ["off", "pid", "src", "dst", "hdr", "hoff", "hpid", "hsrc",
                                       "hdst"])  # fmt: skip
Injections.__doc__ = """The injections of a block of steps: step ``k``'s packets are rows
``off[k]:off[k + 1]`` of ``pid, src, dst, hdr``; those injected at their destination rows
``hoff[k]:hoff[k + 1]`` of ``hpid, hsrc, hdst``."""


@njit(cache=True, error_model="numpy", inline="always")
def _vc_range(vpol, vcs, count, hops, state):
    """``(lo, hi, state after)`` of a hop under the compiled VC rule."""
    if vpol == ANY_VC:
        return 0, vcs, state
    if vpol == HOPS_VC:
        return hops, hops + 1, state
    s = state + count  # COUNT_VC
    return s, s + 1, s


@njit(cache=True, inline="always")
def _fail(status, code, t, a, b, c):
    """A routing error for :meth:`Steps._error`: ``status[:5] = (code, t, a, b, c)``; False."""
    status[0], status[1], status[2], status[3], status[4] = code, t, a, b, c
    return False


@njit(cache=True, error_model="numpy")
def route(t, nnew, ni, ia, inj, rule, vrule, prm, segs, pkts, links, bufs, so, status):
    """Route the ``nnew`` heads that reached a node and the ``ni`` packets injected at ``t``
    (rows ``ia..`` of the injections) as :func:`mpinet.engine.flit.route_heads.route` does,
    with the router's and the policy's calls replaced by their compiled rules; open the
    injected packets' source segments. Returns False (``status`` set) on a routing error:
    first an invalid port among all, else the first VC range out of bounds."""
    code, rprm, ta, tb = rule
    vpol, vcs, lcount = vrule
    hw = pkts.hdr.shape[1]
    m = nnew + ni
    heads, ib = so.new[:nnew], ia + ni
    ipid, isrc, idst, ihdr = inj.pid[ia:ib], inj.src[ia:ib], inj.dst[ia:ib], inj.hdr[ia:ib]
    cur, dst, pid, hops, state = np.empty((5, m), np.int64)
    hdr = np.empty((m, hw), np.int64)
    route_io.gather_heads(heads, ipid, isrc, idst, ihdr, prm, segs, pkts, cur, dst, pid, hops,
                          state, hdr)  # fmt: skip
    ports = np.empty(m, np.int64)
    for i in range(m):  # the router's rule
        if i + 8 < m:  # the rule's table entry, a cache miss, eight heads ahead
            compiled.touch(code, rprm, ta, cur[i + 8], dst[i + 8])
        ports[i], h2 = compiled.hop(code, rprm, ta, tb, cur[i], dst[i], hdr[i, 0] if hw else 0)
        if hw:
            hdr[i, 0] = h2
    lk, nxt = np.empty(m, np.int64), np.empty(m, np.int64)
    i = route_io.links_of(cur, ports, prm.lo, prm.deg, links.nbt, lk, nxt)
    if i >= 0:
        return _fail(status, PORT_ERR, t, ports[i], cur[i], pid[i])
    lo_v, hi_v, after = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64)
    for i in range(m):  # the policy's rule
        lo_v[i], hi_v[i], after[i] = _vc_range(vpol, vcs, lcount[lk[i]], hops[i], state[i])
    bad = route_io.vc_ranges(nxt, dst, lo_v, hi_v, state, after, vcs)
    route_io.set_routes(heads, lk, lo_v, hi_v, hdr, after, segs, pkts)
    if ni:
        fs.open_sources(ipid, isrc, idst, t, hdr[nnew:], ports[nnew:], lo_v[nnew:], hi_v[nnew:],
                        after[nnew:], prm, segs, pkts, bufs)  # fmt: skip
    if bad >= 0:
        return _fail(status, VC_ERR, t, lo_v[bad], cur[bad], hops[bad])
    return True


@njit(cache=True, error_model="numpy")
def run_steps(t0, t_end, last, win_lo, win_hi, room, inj, rule, vrule, prm, segs, pkts, links,
              bufs, so, rows, status):  # fmt: skip
    """Run steps ``t0 + 1 .. t_end`` (see the module docstring); returns the last step run.

    ``inj``: the :class:`Injections` of each step (``inj.off[k]:inj.off[k + 1]`` for step
    ``t0 + 1 + k``, sorted by id, source and destination apart) and the packets injected at
    their destination (delivered at once); ``room = (scratch rows, delivery rows, hop rows
    or -1)``; ``status[5]``: the packets in flight, in and out.
    """
    cnt, deliv = so.cnt, so.deliv
    scratch, drows, hrows = room
    in_flight = status[5]
    for t in range(t0 + 1, t_end + 1):
        k = t - t0 - 1
        ia, ni = inj.off[k], inj.off[k + 1] - inj.off[k]
        ha, nh = inj.hoff[k], inj.hoff[k + 1] - inj.hoff[k]
        need = bufs.nact[0] + 1
        if (segs.nfree[0] < need + ni or pkts.nfree[0] < ni or need > scratch
                or cnt[fk.C_DELIV] + need + nh > drows
                or (hrows >= 0 and cnt[fk.C_HOPS] + need > hrows)):  # fmt: skip
            status[0], status[1] = ROOM, t - 1
            status[5] = in_flight
            return t - 1
        if t % 8 == 0:  # buffers in id order, as the step-by-step path sorts them
            fs.sort_active(bufs.act, bufs.nact[0], so.rq)
        nt = fk.collect(prm, segs, pkts, links, bufs, so)
        sdc = -1
        if prm.kind == fk.SDC:  # one rank: the demand is the rank's
            first = np.empty(nt, np.int64)
            sdc = fk.sdc_port(fk.sdc_demand(nt, prm, segs, pkts, links, so, first))
            fk.choose_links(nt, prm, segs, pkts, so, first, sdc)
        elif prm.kind == fk.ALL:  # every touched link (no call: a call's bundles cost)
            so.allow[:nt] = True
        else:
            fk.port_model(nt, prm, segs, pkts, links, so, sdc)
        for c in range(fk.NCOUNT):
            if c != fk.C_FLITS and c != fk.C_DELIV and c != fk.C_HOPS and c != fk.C_CROSS:
                cnt[c] = 0
        f0, d0, x0 = cnt[fk.C_FLITS], cnt[fk.C_DELIV], cnt[fk.C_CROSS]
        fk.move(t, nt, win_lo <= t < win_hi, prm, segs, pkts, links, bufs, so)
        nnew = step_end.settle(nt, sdc, prm, segs, pkts, links, bufs, so)
        if so.out[0]:
            status[0], status[1], status[2] = MODEL_ERR, t, sdc
            return t
        for i in range(nh):  # injected at their destination: delivered now
            r = cnt[fk.C_DELIV]
            deliv[r, 0], deliv[r, 1] = inj.hpid[ha + i], inj.hsrc[ha + i]
            deliv[r, 2] = inj.hdst[ha + i]
            deliv[r, 3], deliv[r, 4], deliv[r, 5], deliv[r, 6] = t, t, 0, t
            cnt[fk.C_DELIV] += 1
        if not route(t, nnew, ni, ia, inj, rule, vrule, prm, segs, pkts, links, bufs, so,
                      status):  # fmt: skip
            return t
        flits, ndel = cnt[fk.C_FLITS] - f0, cnt[fk.C_DELIV] - d0
        rows[k, R_FLITS], rows[k, R_DELIV], rows[k, R_INJ] = flits, ndel, ni + nh
        rows[k, R_CROSS], rows[k, R_WORK] = cnt[fk.C_CROSS] - x0, bufs.nact[0]
        in_flight += ni + nh - ndel
        if in_flight <= 0 and t >= last:
            status[0], status[1], status[5] = FINISHED, t, in_flight
            return t
        if flits == 0 and in_flight > 0 and t > last:
            status[0], status[1], status[5] = STALL, t, in_flight
            return t
    status[0], status[1], status[5] = DONE, t_end, in_flight
    return t_end


#: steps one call runs at most (the engine's progress line and the injection blocks)
MAX_CHUNK = 64
#: steps whose injections are walked at once with walked rows (:meth:`Steps._injections`)
WALK_AHEAD = 256


COMPILED = "compiled steps"


def path(eng: Any) -> str:
    """Which path runs ``eng``'s steps: :data:`COMPILED`, or ``"step by step: <why>"``."""
    if not eng.compiled_steps:
        return "step by step: asked for (compiled_steps=False)"
    hw = eng.router.header_width
    if eng.policy.compiled is None:
        return f"step by step: vc_policy {eng.model.vc_policy!r} has no compiled rule"
    if compiled.rule_of(eng.router) is compiled.NO_HOP:
        why = getattr(eng, "routes_why", "")
        how = getattr(eng, "routes", "")
        return f"step by step: router {eng.router.name!r} has no compiled hop" + (
            f" ({how}: {why})" if why else ""
        )
    if hw > 1:
        return f"step by step: router {eng.router.name!r} carries a header of {hw} words"
    return COMPILED


def usable(eng: Any) -> bool:
    """Whether :class:`Steps` can run ``eng``'s run (:func:`path`)."""
    return path(eng) == COMPILED


class Steps:
    """The engine's side of :func:`run_steps`: the injections of the steps asked for, room
    in the pools and scratch arrays, the rows and the errors turned into the engine's."""

    def __init__(self, eng: Any) -> None:
        self.eng = eng
        st, lo, deg = eng.st, eng.lo, eng.deg
        #: the rows of routes walked at injection, or None (:meth:`_walk`)
        self.rows = eng.router if isinstance(eng.router, SourceRouted) else None
        self.ahead: tuple | None = None  # (step before, injections, their ids) walked ahead
        self._set_rule()
        pol = eng.policy
        lcount = np.zeros(st.block * deg, np.int64)
        if pol.compiled == COUNT_VC:
            links = np.flatnonzero(st.nbt >= 0)
            lcount[links] = pol.counts(links // deg + lo, st.nbt[links])
        self.vrule = (np.int64(pol.compiled), np.int64(eng.vcs), lcount)
        self.status = np.zeros(8, np.int64)

    def _set_rule(self) -> None:
        r = compiled.rule_of(self.eng.router)  # walked rows: the table as it is now
        self.rule = (np.int64(r.code), r.prm, r.ta, r.tb)

    def _injections(self, workload: Any, t: int, t_end: int) -> tuple:
        """The injections of steps ``t + 1 .. t_end`` as the step-by-step path makes them
        (``off.size - 1`` steps: fewer with walked rows, up to the end of the block walked).

        With walked rows the routes of :data:`WALK_AHEAD` steps' injections are walked at once
        (:meth:`_walk`; a walk costs a vectorized router call per hop index, however few
        packets: blocks of 16 steps, between deadlock looks, made it a third of a borel-cr
        run) and handed out in the slices asked for; a step's ids join the engine's list
        of injected ids only when the step is handed out (a run may end before)."""
        if self.rows is None:
            return self._queued(workload, t, t_end)
        eng = self.eng
        if self.ahead is None or t >= self.ahead[0] + self.ahead[1].off.size - 1:
            ids, eng.injected = eng.injected, []
            end = min(t + max(WALK_AHEAD, t_end - t), eng.max_steps)
            inj = self._walk(self._queued(workload, t, end), t + 1)
            self.ahead, eng.injected = (t, inj, eng.injected), ids
        b0, inj, ids = self.ahead
        a, b = t - b0, min(t_end, b0 + inj.off.size - 1) - b0
        sent = (np.diff(inj.off) + np.diff(inj.hoff)) > 0  # steps whose ids were listed
        first = int(sent[:a].sum())
        eng.injected.extend(ids[first : first + int(sent[a:b].sum())])
        return inj._replace(off=inj.off[a : b + 1], hoff=inj.hoff[a : b + 1])

    def _walk(self, inj: tuple, step: int) -> tuple:
        """Walk the routes of a block's injections, once and vectorized over the block (the
        router's ``next_port`` once per hop index), into rows; their words become the
        packets' headers. First the rows of packets no longer on this rank are freed: those
        not named by a live packet record (the blocks before this one have all been injected).
        The router does not read the step (:mod:`mpinet.routing.source_routes`)."""
        eng, rows = self.eng, self.rows
        pkts = eng.st.pkts
        live = np.ones(pkts.hdr.shape[0], bool)
        live[pkts.free[: int(pkts.nfree[0])]] = False
        rows.keep(pkts.hdr[live, 0])
        words = rows.walk_rows(inj.src, inj.dst, inj.pid, eng.seed, step)
        self._set_rule()  # the table may have grown
        return inj._replace(hdr=np.ascontiguousarray(words.reshape(-1, 1)))

    def rewalk(self, wire: np.ndarray, t: int) -> None:
        """Heads received from other ranks (``wire``: their wire rows, changed in place) carry
        a word of the sender's rows: give each a word of this rank's rows, its route walked
        again from its source (the same route) past the hops it took. Walked rows only."""
        if self.rows is None or wire.shape[0] == 0:
            return
        h = np.flatnonzero(wire[:, fk.W_HEAD])
        if h.size == 0:
            return
        w = wire[h]
        wire[h, fk.W_WIDTH] = self.rows.rewalk(w[:, fk.W_SRC], w[:, fk.W_DST], w[:, fk.W_PID],
                                               self.eng.seed, t, w[:, fk.W_HOPS])  # fmt: skip
        self._set_rule()

    def _queued(self, workload: Any, t: int, t_end: int) -> tuple:
        """The injections of steps ``t + 1 .. t_end``, headers from the router."""
        eng = self.eng
        hw = eng.st.hw
        span = getattr(workload, "injection_span", None)
        got = span(eng.lo, eng.hi, t + 1, t_end + 1) if span is not None else None
        if got is not None and not hasattr(workload, "headers"):
            return self._span(*got)
        parts, homes = [], []
        ioff, hoff = [0], [0]
        for step in range(t + 1, t_end + 1):
            got = None
            if step <= workload.last_injection_step:
                got = workload.injections(eng.lo, eng.hi, step)
                got = [np.asarray(a, dtype=np.int64) for a in got]
            if got is None or got[0].size == 0:
                ioff.append(ioff[-1])
                hoff.append(hoff[-1])
                continue
            eng.injected.append(got[0])
            pid, src, dst, hdr, home = heads.queued(eng, workload, step, *got)
            homes.append(home)
            hoff.append(hoff[-1] + home[0].size)
            parts.append((pid, src, dst, hdr))
            ioff.append(ioff[-1] + pid.size)
        cat = lambda xs, k: np.concatenate([x[k] for x in xs]) if xs else np.empty(0, np.int64)  # noqa: E731
        pid, src, dst = cat(parts, 0), cat(parts, 1), cat(parts, 2)
        hdr = np.concatenate([x[3] for x in parts]) if parts else np.empty((0, hw), np.int64)
        hp, hs, hd = cat(homes, 0), cat(homes, 1), cat(homes, 2)
        return Injections(np.array(ioff, np.int64), pid, src, dst, hdr, np.array(hoff, np.int64),
                          hp, hs, hd)  # fmt: skip

    def _span(self, pid, src, dst, off) -> tuple:
        """:meth:`_injections` from a block of steps (ids ascending: each step's sorted)."""
        eng = self.eng
        for k in range(off.size - 1):  # the engine's list of injected ids, step by step
            if off[k + 1] > off[k]:
                eng.injected.append(pid[off[k] : off[k + 1]])
        step = np.repeat(np.arange(off.size - 1), np.diff(off))
        home = src == dst
        if home.any():
            hoff = np.searchsorted(step[home], np.arange(off.size))
            hp, hs, hd = pid[home], src[home], dst[home]
            pid, src, dst, step = pid[~home], src[~home], dst[~home], step[~home]
        else:
            hoff = np.zeros(off.size, np.int64)
            hp = hs = hd = np.empty(0, np.int64)
        if pid.size > 1 and not (pid[1:] > pid[:-1]).all():
            order = np.lexsort((pid, step))  # a source queue is (step, id) ordered
            pid, src, dst, step = pid[order], src[order], dst[order], step[order]
        ioff = np.searchsorted(step, np.arange(off.size))
        hdr = np.asarray(eng.router.init_headers(src, dst), dtype=np.int64)
        hdr = np.ascontiguousarray(hdr.reshape(pid.size, eng.st.hw))
        i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
        return Injections(i64(ioff), i64(pid), i64(src), i64(dst), hdr, i64(hoff), i64(hp),
                          i64(hs), i64(hd))  # fmt: skip

    def run(self, workload: Any, t: int, last: int, in_flight: int, live: Any) -> list[tuple]:
        """Run from step ``t + 1`` to the next deadlock look (or :data:`MAX_CHUNK` steps, or
        the end); returns a row ``(step, flits, delivered, injected, cross, work)`` per step
        run. Errors are raised as the step-by-step path raises them."""
        from mpinet.engine.run import raise_collected

        eng = self.eng
        t_end = min(t + MAX_CHUNK, eng.max_steps)
        if live is not None and t < last:  # stop where the engine looks for a deadlock
            t_end = min(t_end, (t // CHECK + 1) * CHECK)
        inj = self._injections(workload, t, t_end)
        t_end = t + inj.off.size - 1  # walked rows: up to the end of the block walked
        rows = np.zeros((t_end - t, 5), np.int64)
        status = self.status
        status[5] = in_flight
        t0 = t
        while True:
            st = eng.st
            k = t0 - t
            most = int(np.diff(inj.off[k:]).max(initial=0))  # injections of one step, at most
            homes = int(np.diff(inj.hoff[k:]).max(initial=0))
            need = int(st.nact[0]) + 1
            st.reserve(2 * need + most, most + 1)
            so = eng._scratch(2 * need + homes)
            so.cnt[:] = 0
            part = inj._replace(off=inj.off[k:], hoff=inj.hoff[k:])
            hop_rows = so.hop.shape[0] if eng.record_hops else -1
            room = (so.touched.size, so.deliv.shape[0], hop_rows)
            tl = run_steps(t0, t_end, last, eng.load_window[0], eng.load_window[1], room, part,
                           self.rule, self.vrule, eng.prm, st.segs, st.pkts, st.links, st.bufs,
                           so, rows[k:], status)  # fmt: skip
            self._flush(so)
            code = int(status[0])
            if code != ROOM or tl >= t_end:
                break
            t0 = tl
        done = [(s, *rows[s - t - 1]) for s in range(t + 1, int(tl) + 1)]
        if code in (MODEL_ERR, PORT_ERR, VC_ERR):
            self._error(code, so)
            raise_collected(eng.comm, eng.msg)
        return done

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
