"""``mpinet booksim``: a BookSim2 configuration run on the flit engine, measured as BookSim.

:func:`prepare` reads the configuration and plans the job (before any work: the CLI agrees
on it across ranks); :func:`run` runs the engine once and takes BookSim's measurement
(:mod:`mpinet.jobs.booksim_measure`) while it runs (:mod:`mpinet.jobs.booksim_live`): the
engine hands its deliveries out between its calls, the measurement decides the warm-up, the
convergence and where the traffic stops (latency: the step after the last measured packet's
delivery; throughput: the end of the measurement), the traffic is stopped there during the
run, and the run drains for the overall statistics. Traffic runs for at most
``max_samples + 1`` periods and the drain allowance (which the plan's memory estimate
counted). Where the engine takes no watch (the ideal router on several ranks whose exchange
cannot be called from the compiled steps), or had
already run the stop step's traffic (the ideal router reads a period a step late), the
two runs of before (:func:`_two_runs`): a first one with traffic past the measurement,
replayed, and a second one with the traffic stopped (the same up to there: the engine is
causal, the draws keyed by node and step).

Every statistic is reduced over the ranks from the rows each holds, so the figures are
the same on any rank count.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.jobs.booksim_config import read_config
from mpinet.jobs.booksim_live import LiveSource, Watch
from mpinet.jobs.booksim_map import to_job
from mpinet.jobs.booksim_measure import Dist, Measure, overall, replay, single_sim
from mpinet.jobs.run_plan import plan
from mpinet.jobs.spec import validate
from mpinet.jobs.switching import make_engine
from mpinet.workloads.registry import make_workload

#: steps a run may take after its traffic ends, per sample period (and at least 10,000)
DRAIN_PERIODS = 10
#: engine runs of the first pass at most (each doubles the traffic's horizon)
MAX_RUNS = 4


@dataclass
class Prepared:
    """A configuration read, mapped and planned."""

    plan: Any  # jobs.run_plan.Plan
    measure: Measure
    info: dict  # what the configuration became (booksim_map.to_job's)
    cfg: Any


class RecordSource:
    """:class:`~mpinet.jobs.booksim_measure.Source` over one run's packet records."""

    def __init__(self, rec: Any, nodes: int, flits: int, horizon: int, comm: Any) -> None:
        pk = rec.packets
        self.comm, self.nodes, self.flits, self.horizon = comm, nodes, flits, horizon
        self.end = int(rec.steps)
        self.pid, self.src, self.dst = pk[:, 0], pk[:, 1], pk[:, 2]
        self.gen, self.dlv, self.hops, self.adm = pk[:, 3], pk[:, 4], pk[:, 5], pk[:, 6]
        self.done = self.dlv >= 0
        big = np.iinfo(np.int64).max
        self.dlv_or_inf = np.where(self.done, self.dlv, big)

    def _dist(self, values: np.ndarray, ids: np.ndarray) -> Dist:
        c = self.comm
        n = c.allreduce(int(values.size), op=sum_op())
        if n == 0:
            return Dist()
        tot = c.allreduce(int(values.sum()), op=sum_op())
        big = np.iinfo(np.int64).max
        # minima as maxima of the negated values (the comm layer has SUM and MAX)
        lo = -c.allreduce(-int(values.min()) if values.size else -big, op=max_op())
        hi = c.allreduce(int(values.max()) if values.size else -big, op=max_op())
        at = ids[values == hi]
        arg = -c.allreduce(-int(at.min()) if at.size else -big, op=max_op())
        return Dist(n, float(tot), float(lo), float(hi), arg)

    def packets(self, a: int, b: int, glo: int | None, ghi: int | None) -> dict[str, Dist]:
        sel = self.done & (self.dlv >= a) & (self.dlv < b)
        if glo is not None:
            sel &= self.gen >= glo
        if ghi is not None:
            sel &= self.gen < ghi
        ids = self.pid[sel]
        return {"plat": self._dist(self.dlv[sel] - self.gen[sel], ids),
                "nlat": self._dist(self.dlv[sel] - self.adm[sel], ids),
                "hops": self._dist(self.hops[sel], ids)}  # fmt: skip

    def flat(self, a: int, b: int) -> Dist:
        if self.flits != 1:  # per-flit times are not recorded: see docs/booksim.md
            return Dist()
        return self.packets(a, b, None, None)["nlat"]

    def per_node(self, what: str, a: int, b: int) -> np.ndarray:
        at, who = (self.adm, self.src) if what == "sent" else (self.dlv, self.dst)
        sel = (at >= a) & (at < b)
        mine = np.bincount(who[sel], minlength=self.nodes).astype(np.int64)
        out = np.empty_like(mine)
        self.comm.Allreduce(mine, out, op=sum_op())
        return out

    def in_flight(self, t: int, glo: int | None = None) -> tuple[int, int]:
        sel = (self.gen < t) & (self.dlv_or_inf >= t)
        if glo is not None:
            sel &= self.gen >= glo
        mine = np.array([sel.sum(), (t - self.gen[sel]).sum()], dtype=np.int64)
        out = np.empty_like(mine)
        self.comm.Allreduce(mine, out, op=sum_op())
        return int(out[0]), int(out[1])

    def last_delivered(self, glo: int, ghi: int) -> int | None:
        sel = (self.gen >= glo) & (self.gen < ghi)
        lost = self.comm.allreduce(int((sel & ~self.done).sum()), op=sum_op())
        if lost:
            return None
        d = self.dlv[sel]
        return self.comm.allreduce(int(d.max()) if d.size else -1, op=max_op())


def prepare(path: str, overrides: list[str], ranks: int = 1, ranks_here: int | None = None):
    """Read, map and plan (every refusal before any work)."""
    cfg = read_config(path, overrides)
    raw, measure, info = to_job(cfg)
    # the longest traffic a run may get (run's cap), so the plan counts its packets
    raw["workload"]["steps"] = traffic_cap(measure)
    raw["max_steps"] = traffic_cap(measure) + drain_steps(measure)
    job = validate(raw, f"BookSim configuration {path}")
    return Prepared(plan(job, ranks=ranks, ranks_here=ranks_here), measure, info, cfg)


def drain_steps(m: Measure) -> int:
    """Steps a run may take after its traffic (BookSim drains without a limit)."""
    return max(DRAIN_PERIODS * m.sample_period, 10_000)


def traffic_cap(m: Measure) -> int:
    """The most steps of traffic a run gets: the periods, one more, and the drain allowance."""
    return (m.max_samples + 1) * m.sample_period + drain_steps(m)


def _engine_run(prep: Prepared, steps: int, comm: Any) -> tuple[Any, dict]:
    eng, kind = _engine(prep, steps, comm)
    return eng.run(kind.traffic), _path(eng)


def _path(eng: Any) -> dict:
    """Which of the engine's step paths ran (``mpinet run --json``'s ``switching.steps``)
    and its compiled calls, for ``--json``: a slow run says why it is slow."""
    return {"steps": getattr(eng, "steps_path", None),
            "block_calls": getattr(eng, "block_calls", None)}  # fmt: skip


def _cut_at_deadlock(out: Any, dl: dict) -> None:
    """The run stopped where the engine found a deadlock: the periods after that step are
    not the network's, so the measurement ends there, unstable (BookSim would warn of a
    possible deadlock and never finish)."""
    step, kept = int(dl["step"]), []
    for kind, x in out.items:
        if kind == "stats" and x["time"] > step:
            break
        kept.append((kind, x))
    out.items = [*kept, ("line", "WARNING: Possible network deadlock."),
                 ("line", "Simulation unstable, ending ...")]  # fmt: skip
    out.stable, out.reason = False, f"deadlocked at step {step}: {dl['message']}"


def run(prep: Prepared, comm: Any) -> dict:
    """Run and measure; the result as ``--json`` prints it (collective): in one engine run
    where the engine takes a watch (:mod:`mpinet.jobs.booksim_live`), else in two."""
    comm = resolve(comm)
    wall0 = time.perf_counter()
    m, p = prep.measure, prep.plan
    cap = traffic_cap(m)
    eng, kind = _engine(prep, cap, comm)
    if not getattr(eng, "takes_watch", False):
        return _two_runs(prep, comm, wall0)
    lag = 0 if p.model.router == "iq" else 1
    src = LiveSource(p.topo.num_nodes, p.model.flits, cap, comm, RecordSource, lag)
    eng.watch = watch = Watch(src, replay(src, m), drain_steps(m), kind.traffic)
    rec = eng.run(kind.traffic)
    final = RecordSource(rec, p.topo.num_nodes, p.model.flits, cap, comm)
    if watch.outcome is None:  # the run ended first: the rest is read on its record
        steps, src.covered = watch.steps, math.inf
        src._src, src.end = final, final.end
        while True:
            try:
                steps.send(None)
            except StopIteration as done:
                watch.outcome = done.value
                break
    out, runs, path = watch.outcome, 1, _path(eng)
    if watch.again:  # rare: the ideal router's run had gone a step past the traffic's stop
        rec, path = _engine_run(prep, out.stop, comm)
        final, runs = RecordSource(rec, p.topo.num_nodes, p.model.flits, out.stop, comm), 2
    return _finish(prep, comm, wall0, out, rec, final if out.stable else None, runs, cap,
                   path)  # fmt: skip


def _engine(prep: Prepared, steps: int, comm: Any) -> tuple[Any, Any]:
    p = prep.plan
    w = dict(p.job.workload, steps=int(steps))
    kind = make_workload(w["kind"], w, topo=p.topo, seed=p.job.seed)
    kind.build(p.model, p.router)
    eng = make_engine(p, comm, seed=p.job.seed, max_steps=int(steps) + drain_steps(prep.measure))
    return eng, kind


def _finish(prep: Prepared, comm: Any, wall0: float, out: Any, rec: Any, final: Any,
            runs: int, horizon: int, path: dict) -> dict:  # fmt: skip
    """The result of the measurement ``out`` (its run's record ``rec``) and, when stable, of
    the run with its traffic stopped where the measurement stopped (``final``)."""
    m = prep.measure
    if out.need_horizon > horizon and out.stable:  # the replay read past the traffic
        out.stable = False
        out.reason = (f"the measured packets were not delivered within {horizon} steps of "
                      "traffic (mpinet's drain allowance)")  # fmt: skip
        out.items.append(("line", "Simulation unstable, ending ..."))
    deadlock = rec.deadlock
    if deadlock is not None and int(deadlock["step"]) < out.need_horizon:
        _cut_at_deadlock(out, deadlock)
    result: dict[str, Any] = {"outcome": out, "overall": None, "time_taken": None}
    if out.stable and final is not None:
        left = comm.allreduce(int((final.dlv < 0).sum()), op=sum_op())
        if left:
            out.stable = False
            out.reason = f"{left} packets still in flight {drain_steps(m)} steps after the traffic"
            out.reason += " stopped (deadlocked)" if deadlock else " stopped"
            out.items.append(("line", "Simulation unstable, ending ..."))
        else:
            out.items.append(("line", "Draining remaining packets ..."))
            result["time_taken"] = final.end
            result["overall"] = overall(final, out.reset, out.drain_time)
    result.update(
        runs=runs,
        path=path,
        horizon=horizon,
        deadlock=None if deadlock is None else deadlock["message"],
        seconds=round(comm.allreduce(time.perf_counter() - wall0, op=max_op()), 3),
    )
    return result


def _two_runs(prep: Prepared, comm: Any, wall0: float) -> dict:
    """The engines that take no watch (the ideal router's step-by-step exchange on several
    ranks): a first run
    with traffic past the measurement, replayed, and a second with the traffic stopped."""
    m, p = prep.measure, prep.plan
    nodes, flits = p.topo.num_nodes, p.model.flits
    horizon = (m.max_samples + 1) * m.sample_period
    runs = 0
    while True:
        rec, path = _engine_run(prep, horizon, comm)
        runs += 1
        out = single_sim(RecordSource(rec, nodes, flits, horizon, comm), m)
        if out.need_horizon <= horizon or runs >= MAX_RUNS or horizon >= traffic_cap(m):
            break
        horizon = min(max(2 * horizon, out.need_horizon), traffic_cap(m))
    final = None
    if (
        out.stable
        and not (out.need_horizon > horizon)
        and not (rec.deadlock is not None and int(rec.deadlock["step"]) < out.need_horizon)
    ):
        last, path = _engine_run(prep, out.stop, comm)
        runs += 1
        final = RecordSource(last, nodes, flits, out.stop, comm)
        rec = SimpleNamespace(deadlock=last.deadlock)  # the pass-1 deadlock came after
    return _finish(prep, comm, wall0, out, rec, final, runs, horizon, path)
