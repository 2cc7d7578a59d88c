"""The injections of a block of steps for the compiled steps, drawn before the call.

:class:`InjectionBlocks` is the part of :class:`~mpinet.engine.flit.chunk.Steps` that
prepares a call of :func:`~mpinet.engine.flit.chunk.run_steps`: the packets injected at each
step of the block as the step-by-step path makes them (from the workload's blocks when it
has them, else step by step with the router's headers), and, for routers whose routes are
walked at injection into rows (:class:`~mpinet.routing.route_rows.SourceRouted`), their
routes walked once for the block. Why apart: the loop and its error handling are one
concern, the workload's and the router's Python side another.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import route_heads as heads
from mpinet.routing import compiled

Injections = namedtuple("Injections", ["off", "pid", "src", "dst", "hdr", "hoff", "hpid", "hsrc",
                                       "hdst"])  # fmt: skip
Injections.__doc__ = """The injections of a block of steps: step ``k``'s packets are rows
``off[k]:off[k + 1]`` of ``pid, src, dst, hdr``; those injected at their destination rows
``hoff[k]:hoff[k + 1]`` of ``hpid, hsrc, hdst``."""


def split_ids(ids: list, t: int) -> tuple[list, list]:
    """The ids drawn (:meth:`InjectionBlocks._injections`' ``(steps, ids)`` entries) split
    at step ``t``: the id arrays of steps up to ``t`` (the engine's list) and the entries of
    the later steps (for the next call)."""
    done, later = [], []
    for steps, a in ids:
        k = int(np.searchsorted(steps, t, side="right"))
        if k:
            done.append(a[:k])
        if k < steps.size:
            later.append((steps[k:], a[k:]))
    return done, later


class InjectionBlocks:
    """Draws the injections of a block of steps for :class:`~mpinet.engine.flit.chunk.Steps`
    (which sets ``eng``, ``rows`` and calls :meth:`_set_rule`)."""

    eng: Any
    rows: Any

    def _set_rule(self) -> None:
        r = compiled.rule_of(self.eng.router)  # walked rows: the table as it is now
        self.rule = (np.int64(r.code), r.prm, r.ta, r.tb)

    def _injections(self, workload: Any, t: int, t_end: int, ids: list | None = None) -> tuple:
        """The injections of steps ``t + 1 .. t_end`` as the step-by-step path makes them;
        ``ids`` gets ``(steps, injected ids)`` arrays, a block or a step each, steps
        ascending (the engine's list, once run: :func:`split_ids`; None: the engine's list
        at once). With walked rows, their routes walked (:meth:`_walk`):
        once for all the steps drawn (a walk costs a router call per hop index however few
        its packets: in blocks of 16 steps it was a third of a borel-cr run)."""
        eng = self.eng
        if ids is None:
            ids = []
            out = self._injections(workload, t, t_end, ids)
            eng.injected.extend(a for _, a in ids)
            return out
        inj = self._queued(workload, t, t_end, ids)
        return inj if self.rows is None else self._walk(inj, t + 1)

    def _walk(self, inj: tuple, step: int) -> tuple:
        """Walk the routes of the injections drawn, once and vectorized over them (the
        router's ``next_port`` once per hop index), into rows; their words become the
        packets' headers. First the rows of packets no longer on this rank are freed: those
        not named by a live packet record (the injections drawn before have all been run).
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

    def _queued(self, workload: Any, t: int, t_end: int, ids: list) -> tuple:
        """:meth:`_injections` with the router's headers."""
        eng = self.eng
        hw = eng.st.hw
        got = self._spans(workload, t, t_end)
        if got is not None and not hasattr(workload, "headers"):
            return self._span(*got, t, ids)
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
            ids.append((np.full(got[0].size, step, np.int64), got[0]))
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

    def _spans(self, workload: Any, t: int, t_end: int) -> tuple | None:
        """Steps ``t + 1 .. t_end``' injections from the workload's blocks
        (``injection_span(..., partial=True)``: the steps that lie in one block, then the
        rest from the next), ``(ids, sources, dests, offsets)``; None without blocks."""
        span = getattr(workload, "injection_span", None)
        if span is None:
            return None
        eng, parts, offs, a, base = self.eng, [], [np.zeros(1, np.int64)], t + 1, 0
        while a <= t_end:
            if a > workload.last_injection_step:  # none from here on
                offs.append(np.full(t_end + 1 - a, base, np.int64))
                break
            got = span(eng.lo, eng.hi, a, t_end + 1, partial=True)
            if got is None:
                return None
            parts.append(got[:3])
            offs.append(np.asarray(got[3][1:], np.int64) + base)
            base += int(got[3][-1])
            a += got[3].size - 1
        cat = lambda k: np.concatenate([x[k] for x in parts]) if parts else np.empty(0, np.int64)  # noqa: E731
        return cat(0), cat(1), cat(2), np.concatenate(offs)

    def _span(self, pid, src, dst, off, t: int, ids: list) -> tuple:
        """:meth:`_injections` from a block of steps (ids ascending: each step's sorted)."""
        eng = self.eng
        step = np.repeat(np.arange(off.size - 1), np.diff(off))
        if pid.size:  # the engine's list of injected ids: one entry for the block
            ids.append((step + (t + 1), pid))
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
