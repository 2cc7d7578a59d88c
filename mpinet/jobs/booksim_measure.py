"""BookSim2's measurement (``TrafficManager::_SingleSim`` and ``Run``) over a recorded run.

BookSim steps its network a sample period at a time and decides between periods: clear
the statistics, declare the warm-up over, count a converged period, or abort. None of
those decisions changes the network: traffic keeps coming until the measured packets are
out (``sim_type = latency``) or until the measurement ends (``throughput``), and then the
network drains with no new traffic. So the decisions can be taken after the fact on the
packet records of one engine run: every statistic of a window ``[a, b)`` is a sum, minimum
or maximum over the packets generated, admitted or delivered in it, and a run whose
traffic goes on longer only adds events after those the decisions read (the engine is
causal). :func:`single_sim` replays the decisions on a :class:`Source`, and
:func:`replay` takes them while the run goes (:mod:`mpinet.jobs.booksim_live`), so the
runner (:mod:`mpinet.jobs.booksim_run`) stops the traffic during its one run.

Times: a packet generated at step ``s`` (the engine's inject step; BookSim's ``ctime``),
admitted at ``s'`` (``itime``) and delivered at ``d`` (its tail's ``atime``); sample
period ``k`` is the steps ``[kP, (k + 1)P)``, and the statistics at its end count the
events of steps before ``(k + 1)P``. Packet statistics (``plat``, ``nlat``, hops) are
taken when the tail is delivered, from every packet during the warm-up and from the
measured packets (generated from the reset on, before the drain time) after it; rates
count the packets admitted (injected) and delivered in the window, per node.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

WARM, RUN, DRAIN = "warming_up", "running", "draining"


@dataclass
class Measure:
    """BookSim's measurement keys (``booksim_config.cpp``'s names and defaults)."""

    sim_type: str = "latency"
    warmup_periods: int = 3
    sample_period: int = 1000
    max_samples: int = 10
    latency_thres: float = 500.0
    warmup_thres: float = 0.05
    acc_warmup_thres: float = 0.05
    stopping_thres: float = 0.05
    acc_stopping_thres: float = 0.05


@dataclass
class Dist:
    """Count, sum, minimum and maximum of samples, and the id of the maximum's packet."""

    count: int = 0
    total: float = 0.0
    lo: float = math.nan  # BookSim's empty statistics: min nan, max -nan, mean 0/0 = -nan
    hi: float = -math.nan
    arg: int = -1

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else -math.nan


class Source(Protocol):
    """What the measurement reads of a run (collective on every rank alike)."""

    nodes: int
    flits: int
    horizon: int  # packets are generated at steps [0, horizon)
    end: int  # the last step the run covers

    def packets(self, a: int, b: int, glo: int | None, ghi: int | None) -> dict[str, Dist]:
        """``plat``, ``nlat``, ``hops`` of the packets delivered in ``[a, b)`` and generated
        in ``[glo, ghi)`` (None: no bound)."""

    def flat(self, a: int, b: int) -> Dist:
        """Network latency of every flit delivered in ``[a, b)``."""

    def per_node(self, what: str, a: int, b: int) -> np.ndarray:
        """Packets per node ``sent`` (admitted, by source) or ``accepted`` (delivered, by
        destination) in ``[a, b)``."""

    def in_flight(self, t: int, glo: int | None = None) -> tuple[int, int]:
        """Packets generated before ``t`` (from ``glo`` on) not delivered before ``t``, and
        the sum of their ages ``t - generated``."""

    def last_delivered(self, glo: int, ghi: int) -> int | None:
        """The last delivery step of the packets generated in ``[glo, ghi)`` (-1 if none);
        None when one of them is not delivered within the run."""


@dataclass
class Outcome:
    """What the replay decided and printed, in BookSim's order."""

    items: list[tuple[str, Any]] = field(default_factory=list)  # ("stats", dict) | ("line", s)
    stable: bool = False
    reason: str = ""
    reset: int = 0
    drain_time: int = -1
    stop: int = 0  # traffic is generated at steps [0, stop) in the final run
    need_horizon: int = 0  # > source.horizon: the replay read past the run's traffic


def _ratio(num: float, den: float) -> float:
    """IEEE division as C++ does it (x/0 is +-inf, 0/0 is nan)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(num) / np.float64(den))


def window(src: Source, reset: int, t: int, state: str, rec_lo: int | None) -> dict:
    """The statistics BookSim prints at time ``t`` (``DisplayStats``) since ``reset``."""
    glo = None if state == WARM else rec_lo
    pk = src.packets(reset, t, glo, None)
    span = t - reset
    rates = {}
    for what in ("sent", "accepted"):
        c = src.per_node(what, reset, t)
        rates[what] = {"sum": int(c.sum()), "min": int(c.min()), "max": int(c.max()),
                       "min_at": int(c.argmin()), "max_at": int(c.argmax()),
                       "span": span}  # fmt: skip
    live, _ = src.in_flight(t)
    measured = src.in_flight(t, rec_lo)[0] if state != WARM and rec_lo is not None else 0
    return {"time": t, "reset": reset, **pk, "flat": src.flat(reset, t), "rates": rates,
            "in_flight_flits": live * src.flits, "measured_flits": measured * src.flits,
            "nodes": src.nodes, "flits": src.flits}  # fmt: skip


def _over(src: Source, pk: dict, t: int, thres: float) -> bool:
    """BookSim's latency-threshold test: the mean of the window's packet latencies and
    the ages of every flit still in flight (each packet's L flits) exceeds ``thres``."""
    n, age = src.in_flight(t)
    total = pk["plat"].total + age * src.flits
    count = pk["plat"].count + n * src.flits
    return thres >= 0.0 and _ratio(total, count) > thres


def _aborting(m: Measure) -> str:
    return (
        f"Average latency for class 0 exceeded {fmt(m.latency_thres)} cycles. Aborting simulation."
    )


def single_sim(src: Source, m: Measure) -> Outcome:
    """Replay ``_SingleSim`` and ``Run``'s decisions on ``src``, a whole run; see the module
    docstring."""
    steps = replay(src, m)
    while True:  # a whole run's source covers every step asked: no step is waited for
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def _until(src: Source, step: int) -> Generator[int, None, None]:
    """Wait (yield ``step``) until ``src`` covers the events of every step up to ``step``: a
    run still going (:mod:`mpinet.jobs.booksim_live`) is stepped on meanwhile."""
    while getattr(src, "covered", math.inf) < step:
        yield step


def replay(src: Source, m: Measure) -> Generator[int, None, Outcome]:
    """:func:`single_sim` as a generator over a run still going: it yields the step whose
    events it needs next (the run goes on to there) and returns the :class:`Outcome`. A
    period's statistics at ``t`` read the steps before ``t``; the drain of the measured
    packets is read step by step, so the traffic can stop the step after the last one."""
    out, period, lat_mode = Outcome(), m.sample_period, m.sim_type == "latency"
    state, converged, phases, clear_last = WARM, 0, 0, False
    prev_lat = prev_acc = 0.0
    reset = t = 0
    need = m.max_samples * period
    while phases < m.max_samples and (state != RUN or converged < 3):
        if clear_last or (state == WARM and phases % 2 == 0):
            clear_last, reset = False, t
        t += period
        yield from _until(src, t - 1)
        st = window(src, reset, t, state, reset)
        out.items.append(("stats", st))
        cur_lat = st["plat"].mean
        cur_acc = _ratio(_ratio(st["rates"]["accepted"]["sum"] * src.flits, t - reset), src.nodes)
        lat_chg = abs(_ratio(cur_lat - prev_lat, cur_lat))
        acc_chg = abs(_ratio(cur_acc - prev_acc, cur_acc))
        prev_lat, prev_acc = cur_lat, cur_acc
        lat_exc = _over(src, st, t, m.latency_thres)
        out.items.append(("line", f"latency change    = {fmt(lat_chg)}"))
        warm = state == WARM
        lat_thr = m.warmup_thres if warm else m.stopping_thres
        acc_thr = m.acc_warmup_thres if warm else m.acc_stopping_thres
        lat_bad = lat_thr >= 0.0 and lat_chg > lat_thr
        out.items.append(("line", f"throughput change = {fmt(acc_chg)}"))
        acc_bad = acc_thr >= 0.0 and acc_chg > acc_thr
        if lat_mode and lat_exc:
            out.items.append(("line", _aborting(m)))
            converged, state, out.drain_time = 0, DRAIN, t
            break
        calm = (not lat_mode or not lat_bad) and not acc_bad
        if state == WARM:
            if (phases + 1 >= m.warmup_periods) if m.warmup_periods > 0 else calm:
                out.items.append(("line", f"Warmed up ...Time used is {t} cycles"))
                clear_last, state = True, RUN
        elif state == RUN:
            converged = converged + 1 if calm else 0
        phases += 1
    out.reset = reset
    if state == RUN:
        converged += 1
        state, out.drain_time, out.stop = DRAIN, t, t
        if lat_mode:
            out.items.append(("line", "Draining all recorded packets ..."))
            converged, need = yield from _drain_measured(src, m, out, reset, t, converged, need)
    else:
        out.items.append(("line", "Too many sample periods needed to converge"))
    out.need_horizon = need
    out.stable = converged > 0
    if not out.stable:
        out.reason = out.reason or "unstable"
        out.items.append(("line", "Simulation unstable, ending ..."))
    return out


def _drain_measured(
    src: Source, m: Measure, out: Outcome, reset: int, t: int, converged: int, need: int
) -> Generator[int, None, tuple[int, int]]:
    """Latency mode: traffic goes on until the measured packets are delivered, with the
    latency threshold tested every 1000 steps; the traffic stops after that step. On a run
    still going, ``last_delivered`` is None until they all are: the steps are read one by
    one (a check at ``c`` is due when they are not all delivered before ``c``)."""
    yield from _until(src, t - 1)
    check = t + 1000
    while True:
        last = src.last_delivered(reset, t)
        if last is not None or not math.isfinite(getattr(src, "covered", math.inf)):
            break
        while check <= src.covered + 1:  # not all delivered by `covered`: last > covered
            if _over(src, src.packets(reset, check, reset, t), check, m.latency_thres):
                out.items.append(("line", _aborting(m)))
                return 0, max(need, check)
            check += 1000
        yield src.covered + 1
    top = src.end if last is None else last
    for c in range(check, top + 1, 1000):
        if _over(src, src.packets(reset, c, reset, t), c, m.latency_thres):
            out.items.append(("line", _aborting(m)))
            return 0, max(need, c)
    if last is None:
        out.reason = (f"the measured packets were not all delivered by step {src.end} "
                      "(the run's cap, or a deadlock)")  # fmt: skip
        return 0, need
    out.stop = max(t, last + 1)  # the step after the last measured packet's delivery
    return converged, max(need, out.stop)


def overall(src: Source, reset: int, drain_time: int) -> dict:
    """``_UpdateOverallStats`` after the drain: the measured packets' statistics, every
    flit delivered since the reset, and the rates of ``[reset, drain_time)``."""
    pk = src.packets(reset, src.end + 1, reset, drain_time)
    rates = {}
    for what in ("sent", "accepted"):
        c = src.per_node(what, reset, drain_time)
        rates[what] = {"sum": int(c.sum()), "min": int(c.min()), "max": int(c.max()),
                       "span": drain_time - reset}  # fmt: skip
    return {**pk, "flat": src.flat(reset, src.end + 1), "rates": rates, "nodes": src.nodes,
            "flits": src.flits}  # fmt: skip


def fmt(x: float) -> str:
    """A number as C++'s ``ostream <<`` prints a double by default (``%g``, 6 digits)."""
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}"
