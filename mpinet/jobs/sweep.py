"""Load-latency sweeps: one unicast job at a series of offered loads, BookSim-style.

Each load ``lam`` (packets per node per step, Bernoulli; BookSim's ``on_off`` bursts with
``workload.injection = "on_off"``, and loads in flits per node per step, run at lam / L
packets, with ``workload.rate_uses_flits = 1``) is one engine run with
three phases: warm-up steps ``[0, W)``, the measurement window ``[W, W + M)``
and the drain. Injection continues ``tail`` steps after the window, so the
packets measured near its end still meet a loaded network, then stops; the
run ends when every packet is delivered or at the drain cap, step
``W + M + drain``, where packets still in flight are reported as such.

Per load (all reduced over the ranks, identical for any rank count):

* **offered** ``lam``; **injected**: packets generated in the window / (N M);
* **accepted**: packets delivered during the window (whenever injected) /
  (N M), BookSim's accepted rate; below saturation it equals the injected rate;
* latency of the packets *injected in the window* only: total (deliver -
  inject), source queueing (admit - inject, the wait for an injection-buffer
  slot) and network time (deliver - admit), mean / p50 / p99, and hops;
* link utilisation per port class: packets per link per step / capacity over
  the window (the engine's ``load_window``), max and mean over links.

A load is **deadlocked** when its run deadlocked (finite buffers: a wait-for
cycle of full buffers, found by the engine while packets are still injected,
:mod:`mpinet.engine.deadlock`; the run stops there, so its window statistics
mean nothing). Otherwise it is **saturated** when any of: accepted < (1 -
``accept_tol``) x injected (throughput), mean latency > ``latency_factor`` x
the zero-load latency (the mean route length, from the channel-load
computation), a link (under one-port and k-port a node) offered at least its
capacity and busy at capacity in every step of the window (busy), or window
packets still in flight at the drain cap (drain). Both are unstable: ``auto``
runs a coarse grid upwards until the first unstable load, bisects between the
last stable and the first unstable load, and runs the top of the grid (past
saturation: the accepted curve's plateau). Loads are compared with the
channel-load bound of the pattern and router (:mod:`mpinet.routing.channel_load`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import numpy as np

from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.errors import JobError, WorkloadError
from mpinet.jobs.run_plan import Plan
from mpinet.jobs.sweep_plan import check_drain, plan_sweep, rate_unit
from mpinet.jobs.sweep_point import run_point, switching, traffic, zero_load
from mpinet.jobs.sweep_settings import Rates, Settings
from mpinet.routing.channel_load import (
    ChannelLoad,
    pairs_load,
    saturation_bounds,
    uniform_load,
)
from mpinet.workloads.booksim_traffic import OnOff
from mpinet.workloads.unicast import PATTERNS

#: packets per node sampled for the channel load of a random non-uniform pattern
PATTERN_SAMPLES = 32


def check_plan(
    p: Plan,
    rates: Rates | None = None,
    s: Settings | None = None,
    ranks: int = 1,
    ranks_here: int | None = None,
) -> Any:
    """A sweep needs a unicast pattern (its injection keys are the sweep's); with the
    loads and windows, its work and its largest load's memory are checked too
    (:func:`mpinet.jobs.sweep_plan.plan_sweep`: one line and a way out beyond the
    machine or beyond :data:`~mpinet.jobs.sweep_plan.MAX_WORK`). Returns that estimate,
    or None without loads."""
    kind = p.job.workload["kind"]
    if kind not in PATTERNS:
        raise JobError(
            f"mpinet sweep needs a unicast pattern ({', '.join(PATTERNS)}), not workload {kind!r}"
        )
    if rates is not None and rates.hi > 0:  # auto alone: the loads come from the bound
        check_injection_keys(p.job, rates.values or [rates.lo, rates.hi], rate_unit(p))
    if rates is None or s is None:
        return None
    s.check()
    check_drain(p, s)
    return plan_sweep(p, rates, s, ranks, ranks_here)


def injection(job: Any) -> str:
    """The process each load injects with: ``on_off`` when the job asks for it (its burst
    keys and start states kept, the rate the load's), else ``bernoulli``."""
    return "on_off" if job.workload.get("injection") == "on_off" else "bernoulli"


def check_injection_keys(job: Any, loads: list[float] | None = None, unit: int = 1) -> None:
    """Refuse on_off bursts that are not a Markov chain at a load of the sweep.

    A sweep injects at each load of ``--rates``; with ``injection = "on_off"`` the burst
    key left negative is derived from the load (BookSim's formulas), so it is checked at
    ``loads`` (the sweep's, in its unit; the derived keys are monotone in the load, so the
    lowest and highest suffice), before any work.

    Raises
    ------
    JobError
        ``mpinet sweep: at load 0.9 workload.burst_r1 derived as ... is not a probability``.
    """
    w = job.workload
    if injection(job) != "on_off" or not loads:
        return
    burst = [float(w[k]) for k in ("burst_alpha", "burst_beta", "burst_r1")]
    for load in (min(loads), max(loads)):
        try:
            OnOff(min(1.0, load / unit), *burst)
        except WorkloadError as exc:
            raise JobError(f"{job.source}: mpinet sweep at load {load:g}: {exc}") from None


def channel_bound(p: Plan, comm: Any) -> tuple[ChannelLoad, dict]:
    """The pattern's link loads under the plan's router, and the saturation bounds.

    On the flit engine a link carries ``c`` flits per step, ``c / L`` packets: every bound
    but the injection limit (packets per node per step) is the packet bound / L;
    ``packet_channel`` keeps the packet engine's channel bound.
    """
    comm = resolve(comm)
    topo, pattern = p.topo, p.job.workload["kind"]
    if pattern == "uniform":

        def reduce(a: np.ndarray) -> np.ndarray:
            out = np.empty_like(a)
            comm.Allreduce(a, out, op=sum_op())
            return out

        cl = uniform_load(
            topo, p.router, seed=p.job.seed, share=(comm.Get_rank(), comm.Get_size()),
            reduce=reduce,
        )  # fmt: skip
    else:  # the workload's own destinations: exact when they do not depend on the draw
        per = 1 if pattern in ("permutation", "hotspot", "all-to-identity") else PATTERN_SAMPLES
        pid, src, dst = traffic(p, injection="once", packets=per).injections(0, topo.num_nodes, 0)
        cl = pairs_load(topo, p.router, src, dst, per, seed=p.job.seed, exact=per == 1)
        if per > 1:
            cl.notes.append(f"{per} sampled destinations per node")
    exists = topo.neighbors(np.arange(topo.num_nodes)) >= 0
    caps = p.model.port_capacities(topo)
    b = saturation_bounds(
        cl.load, caps, topo.port_classes, kind=p.model.kind, k=p.model.k, exists=exists
    )
    if p.model.flit:  # packets per step of a link that moves c flits: c / L
        packet_channel = b["channel"]
        b = saturation_bounds(cl.load, caps / p.model.flits, topo.port_classes,
                              kind=p.model.kind, k=p.model.k, exists=exists)  # fmt: skip
        b["packet_channel"] = packet_channel
    return cl, b


def verdict(point: dict, zero_load: float, s: Settings, nodes: int) -> list[str]:
    """The criteria a point fails (empty: stable): ``["deadlocked"]`` alone when its run
    deadlocked (its other numbers are those of a stopped run), else the saturation ones.

    Throughput: accepted < (1 - accept_tol) x injected - 3 sigma, where sigma is the
    noise a window's two ends add: sqrt(2 x packets in flight) / (N M), with packets in
    flight = injected x N x mean latency (Little's law). It matters only for tiny
    windows (8 nodes x 50 steps: 0.016; ms:3,2 x 2,000 steps: 0.0001).
    """
    why: list[str] = []
    lat = point["latency"]["mean"]
    nm = nodes * s.measure
    flight = point["injected"] * nodes * (lat if math.isfinite(lat) else 0.0)
    sigma = math.sqrt(2.0 * flight) / nm
    point["accept_noise"] = 3 * sigma
    if point["deadlock"]:
        return ["deadlocked"]
    if point["accepted"] < (1.0 - s.accept_tol) * point["injected"] - 3 * sigma:
        why.append("throughput")
    if not math.isfinite(lat) or lat > s.latency_factor * zero_load:
        why.append("latency")
    if point.get("busy_overloaded"):  # see sweep_point._busy_overloaded
        why.append("busy")
    if point["in_flight_at_cap"]:
        why.append("drain")
    return why


def sweep(
    p: Plan,
    rates: Rates,
    s: Settings,
    comm: Any,
    *,
    on_point: Callable[[dict], None] | None = None,
) -> dict:
    """Run the sweep; every rank returns the same result (points sorted by load).

    ``on_point(point)`` is called on every rank after each load (progress output).
    """
    comm = resolve(comm)
    t0, cpu0 = time.perf_counter(), time.process_time()
    s.check()
    cl, bound = channel_bound(p, comm)
    zero, zero_form = zero_load(p, cl.mean_hops)
    tail = s.tail if s.tail is not None else int(math.ceil(10 * zero))
    tail = min(tail, s.drain)
    points: list[dict] = []
    hists: list[dict] = []

    unit = rate_unit(p)

    def measure(rate: float) -> bool:
        pt, h = run_point(p, rate / unit, s, tail, comm, channel=cl.load)
        if unit > 1:  # the load as given, in flits per node per step
            pt["offered_flits"] = rate
        pt["saturated_by"] = verdict(pt, zero, s, p.topo.num_nodes)
        pt["stable"] = not pt["saturated_by"]
        pt["verdict"] = ("stable" if pt["stable"] else
                         "deadlocked" if pt["deadlocked"] else "saturated")  # fmt: skip
        pt["run_order"] = len(points)
        points.append(pt)
        hists.append(h)
        if on_point is not None:
            on_point(pt)
        return pt["stable"]

    if rates.kind == "auto" and rates.hi == 0.0:  # from the bound, in the sweep's unit
        hi = round(min(1.0, 1.2 * bound["ideal"] * unit), 4)
        rates = Rates("auto", [], round(min(0.05 * bound["ideal"] * unit, hi / 2), 4), hi)
        check_injection_keys(p.job, [rates.lo, rates.hi], unit)
    if rates.kind == "auto":
        grid = [float(x) for x in np.linspace(rates.lo, rates.hi, s.coarse)]
        lo, hi = 0.0, None
        for r in grid:
            if not measure(r):
                hi = r
                break
            lo = r
        for _ in range(s.bisect if hi is not None else 0):
            mid = round((lo + hi) / 2, 12)
            if measure(mid):
                lo = mid
            else:
                hi = mid
        if grid[-1] / unit not in [pt["offered"] for pt in points]:
            measure(grid[-1])  # one load past saturation: the accepted curve's plateau
    else:
        for r in rates.values:
            measure(r)
    order = sorted(range(len(points)), key=lambda i: points[i]["offered"])
    points = [points[i] for i in order]
    hists = [hists[i] for i in order]
    settings = asdict(s) | {"tail": tail, "rates": asdict(rates)}
    settings["injection"] = _injection_settings(p.job, unit)
    flit = switching(p)
    if flit is not None:  # only here: a packet sweep's output stays what it was
        flit |= {"mean_hops": cl.mean_hops, "zero_load_form": zero_form}
    out = {
        "spec": p.topo.spec,
        "nodes": p.topo.num_nodes,
        "ranks": comm.Get_size(),
        "router": p.router.name,
        "model": p.model.name,
        "order": p.job.model["order"],
        "buffer": p.model.buffer,
        "buffer_classes": p.model.classes,
        "pattern": p.job.workload["kind"],
        "seed": p.job.seed,
        "port_classes": list(dict.fromkeys(p.topo.port_classes)),
        "settings": settings,
        "zero_load_latency": zero,
        "bound": _bound_dict(cl, bound, p.model.name),
        "points": points,
        "saturation": saturation(points, bound["ideal"]),
        "seconds": round(time.perf_counter() - t0, 3),
        "cpu_seconds": round(comm.allreduce(time.process_time() - cpu0, op=max_op()), 3),
        "_hists": hists,
    }
    if flit is not None:
        out["switching"] = flit
        out["order"] = "oldest-first"  # the flit engine's arbitration, always
    return out


def _injection_settings(job: Any, unit: int) -> dict:
    """How each load injected: the process, its burst keys (on_off) and the loads' unit."""
    w = job.workload
    out: dict[str, Any] = {"process": injection(job),
                           "rate_unit": "flits" if unit > 1 else "packets"}  # fmt: skip
    if out["process"] == "on_off":
        out |= {k: w[k] for k in ("burst_alpha", "burst_beta", "burst_r1", "burst_initial")}
    return out


def _bound_dict(cl: ChannelLoad, b: dict, model: str) -> dict:
    extra = {"packet_channel": b["packet_channel"]} if "packet_channel" in b else {}
    return extra | {
        "ideal": b["ideal"],
        "limited_by": b["limited_by"],
        "channel": b["channel"],
        "model_bound": b["model"],
        "model": model,
        "per_class": b["per_class"],
        "method": cl.method,
        "exact": cl.exact,
        "routes": cl.routes,
        "notes": cl.notes,
    }


def saturation(points: list[dict], ideal: float) -> dict:
    """The saturation bracket the sweep measured, and the throughput, or why there is none.

    ``found`` only when both ends of a bracket were measured: the lowest unstable load
    and a stable load below it; ``load`` is their midpoint. Otherwise ``load``,
    ``bracket`` and ``load_fraction_of_bound`` are None and ``why`` says what was
    measured: every load stable (saturation above the highest), or no stable load below
    the lowest unstable one (saturation somewhere below it). ``highest_stable`` and
    ``lowest_unstable`` are the loads measured either way (None: none such).

    ``throughput`` is the highest accepted rate among stable loads (sustained; None
    without a stable load); ``peak_accepted`` the highest at any stable or saturated
    load (past saturation, unbounded queues can still deliver short routes faster than
    the bottleneck drains long ones); ``deadlocked`` the loads whose run deadlocked.
    ``criteria`` are the lowest unstable load's (``["deadlocked"]``: the network
    deadlocks there, it does not saturate).
    """
    first = next((pt for pt in points if not pt["stable"]), None)
    stable = [pt for pt in points if pt["stable"]]
    best = max((pt["accepted"] for pt in stable), default=None)
    dead = [pt["offered"] for pt in points if pt.get("deadlocked")]

    def frac(x: float | None) -> float | None:
        return None if x is None or ideal <= 0 else x / ideal

    top = max((pt["offered"] for pt in stable), default=None)
    out: dict[str, Any] = {
        "found": False,
        "load": None,
        "bracket": None,
        "load_fraction_of_bound": None,
        "criteria": [] if first is None else first["saturated_by"],
        "highest_stable": top,
        "lowest_unstable": None if first is None else first["offered"],
        "throughput": best,
        "throughput_fraction_of_bound": frac(best),
        "peak_accepted": max(
            (pt["accepted"] for pt in points if not pt.get("deadlocked")), default=None
        ),
        "deadlocked": dead,
    }
    if first is None:
        out["why"] = (
            "no load was measured" if top is None else
            f"none up to load {top:.4f} (every load measured was stable): saturation is above it"
        )  # fmt: skip
        return out
    below = [pt["offered"] for pt in stable if pt["offered"] < first["offered"]]
    if not below:
        crit = first["saturated_by"]
        what = "deadlocked" if crit == ["deadlocked"] else f"saturated by {', '.join(crit)}"
        out["why"] = (  # the words of the text's line (mpinet.analysis.sweep.saturation_text)
            f"no stable load was measured below {first['offered']:.4f} ({what}), so there is "
            "no bracket: saturation is somewhere below it; measure lower loads"
        )
        return out
    lo = max(below)
    mid = (lo + first["offered"]) / 2
    out.update(found=True, load=mid, bracket=[lo, first["offered"]],
               load_fraction_of_bound=frac(mid), why=None)  # fmt: skip
    return out
