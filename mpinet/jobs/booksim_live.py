"""BookSim's measurement taken while the engine runs: one engine run per ``mpinet booksim``.

The engine hands its deliveries out between its calls (``engine.watch``: the iq router's
blocks, :mod:`mpinet.engine.flit.iq_run`, and the ideal router's calls on one rank); the
replay (:func:`mpinet.jobs.booksim_measure.replay`) reads them as they come and says which
step it needs next, so each call runs at most to there. When the replay ends, the traffic
stops where BookSim's measurement stops (latency: the step after the last measured
packet's delivery, found with calls of one step while those packets drain; throughput:
the end of the measurement) and the run drains as a run with that traffic would: its
steps before that are the same (the engine is causal, the draws keyed by node and step,
and what the engine does with its last injection step compares it with the step only).
An unstable measurement stops the run at once: no figure reads further.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from mpinet.engine.comm import max_op, sum_op

#: the record columns of a live row ``(pid, src, dst, at, inj, hops, adm)``; delivery -1
LIVE_COLUMNS = [0, 1, 2, 4, 4, 5, 6]


class LiveSource:
    """:class:`~mpinet.jobs.booksim_measure.Source` over a run still going: its deliveries and
    its packets in flight after step :attr:`covered` (the steps up to there are final)."""

    def __init__(self, nodes: int, flits: int, horizon: int, comm: Any, record: type,
                 lag: int) -> None:  # fmt: skip
        self.nodes, self.flits, self.horizon, self.comm = nodes, flits, horizon, comm
        #: the steps after an event's time that may still write it: the ideal router dates
        #: a head leaving its source at step t at t - 1 (BookSim's itime), the iq router none
        self.lag = lag
        self.record = record  # booksim_run.RecordSource (not imported: it imports this)
        self.covered = -1
        self.end = -1
        self._src: Any = None
        self._delivered: list = []
        self._live: Callable[[], np.ndarray] | None = None
        self._count: dict[tuple, list] = {}  # (glo, ghi) -> [total, delivered, last, seen]
        # the delivery rows so far, copied once each into a buffer that doubles as it fills
        # (a period's statistics read them all: concatenating the whole run again at every
        # period cost most of the measurement's reads, docs/performance.md)
        self._buf = np.empty((0, 7), np.int64)
        self._rows = 0  # rows of the buffer that hold deliveries
        self._taken = 0  # items of ``_delivered`` copied into the buffer

    def refresh(self, t: int, delivered: list, live: Callable[[], np.ndarray]) -> None:
        """The run has done step ``t``: ``delivered`` its delivery rows so far (a list that
        grows), ``live`` its packets in flight (called only if a statistic needs them)."""
        self.covered = self.end = int(t) - self.lag
        if delivered is not self._delivered:  # another run's list: its rows from the start
            self._rows = self._taken = 0
        self._delivered, self._live, self._src = delivered, live, None

    def _whole(self) -> Any:
        if self._src is None:
            live = self._live()
            rows = live[:, LIVE_COLUMNS].astype(np.int64).reshape(-1, 7)
            rows[:, 4] = -1
            rec = SimpleNamespace(packets=self._packets(rows), steps=self.covered)
            self._src = self.record(rec, self.nodes, self.flits, self.horizon, self.comm)
        return self._src

    def _packets(self, live_rows: np.ndarray) -> np.ndarray:
        """The deliveries so far, then ``live_rows``: the rows ``np.concatenate`` would give,
        each delivery copied once in the run (the live rows, after them, are rewritten by the
        next call: a view valid until the next :meth:`refresh`)."""
        new = self._delivered[self._taken :]
        if any(d.dtype != np.int64 or d.ndim != 2 or d.shape[1] != 7 for d in new):
            return np.concatenate([*self._delivered, live_rows])  # not the engines' rows
        n = self._rows + sum(d.shape[0] for d in new)
        need = n + live_rows.shape[0]
        if need > self._buf.shape[0]:
            grown = np.empty((max(need, 2 * self._buf.shape[0]), 7), np.int64)
            grown[: self._rows] = self._buf[: self._rows]
            self._buf = grown
        at = self._rows
        for d in new:
            self._buf[at : at + d.shape[0]] = d
            at += d.shape[0]
        self._rows, self._taken = n, len(self._delivered)
        self._buf[n:need] = live_rows
        return self._buf[:need]

    def packets(self, a: int, b: int, glo: int | None, ghi: int | None) -> dict:
        return self._whole().packets(a, b, glo, ghi)

    def flat(self, a: int, b: int) -> Any:
        return self._whole().flat(a, b)

    def per_node(self, what: str, a: int, b: int) -> np.ndarray:
        return self._whole().per_node(what, a, b)

    def in_flight(self, t: int, glo: int | None = None) -> tuple[int, int]:
        return self._whole().in_flight(t, glo)

    def last_delivered(self, glo: int, ghi: int) -> int | None:
        """None until every packet generated in ``[glo, ghi)`` is delivered: counted on the
        deliveries as they come (a step at a time while they drain), not on the whole run."""
        c = self._count.get((glo, ghi))
        if c is None:  # how many there are: once, on the whole run so far
            pk = self._whole().gen
            total = self.comm.allreduce(int(((pk >= glo) & (pk < ghi)).sum()), op=sum_op())
            c = self._count[(glo, ghi)] = [total, 0, -1, 0]
        new = self._delivered[c[3] :]
        c[3] = len(self._delivered)
        got, last = 0, -1
        for rows in new:
            sel = (rows[:, 3] >= glo) & (rows[:, 3] < ghi)
            got += int(sel.sum())
            last = max(last, int(rows[sel, 4].max(initial=-1)))
        got = self.comm.allreduce(got, op=sum_op())
        c[1] += got
        if got:
            c[2] = max(c[2], self.comm.allreduce(last, op=max_op()))
        return c[2] if c[1] >= c[0] else None


class Watch:
    """The engine's ``watch``: the measurement's step the calls run to, and the traffic's
    stop and the run's end once it is decided. Collective (every rank alike)."""

    def __init__(self, src: LiveSource, steps: Any, drain: int, traffic: Any) -> None:
        self.src, self.steps, self.drain, self.traffic = src, steps, drain, traffic
        self.outcome: Any = None
        self.again = False  # the measurement stopped the traffic at a step already run
        self.wanted = next(steps)  # the first period's end: no events read before it

    def limit(self, t: int) -> int:
        """The last step the next call may run (the run's own limits apart)."""
        return self.wanted + self.src.lag if self.outcome is None else math.inf

    def seen(self, t: int, delivered: list, live: Callable[[], np.ndarray],
             last: int, max_steps: int) -> tuple[int, int]:  # fmt: skip
        """The run has done step ``t``; returns its last injection step and its steps at
        most from now on."""
        if self.outcome is not None:
            return last, max_steps
        self.src.refresh(t, delivered, live)
        try:
            while self.src.covered >= self.wanted:
                self.wanted = self.steps.send(None)
        except StopIteration as done:
            self.outcome = done.value
            return self.stop(t, last, max_steps)
        return last, max_steps

    def stop(self, t: int, last: int, max_steps: int) -> tuple[int, int]:
        """The traffic stopped after step ``t`` (unstable: the run too) or at the
        measurement's stop (then at most ``drain`` steps more), the workload told."""
        out = self.outcome
        self.again = out.stable and out.stop <= t  # traffic of step `stop` on already ran
        stop, end = (out.stop, out.stop + self.drain) if out.stable else (t + 1, t)
        if self.again:  # the run ends; a second one, its traffic stopped there (run's caller)
            stop, end = t + 1, t
        w = self.traffic  # the paths that read the workload's window (unicast's keys)
        w.steps, w.last_injection_step = min(w.steps, stop), min(w.last_injection_step, stop - 1)
        return min(last, stop - 1), min(max_steps, end)
