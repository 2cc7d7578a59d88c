"""The plan of ``mpinet sweep``: loads, steps, work and the largest load's memory, before work.

A sweep is one engine run per load, each of ``warmup + measure + drain`` steps at most,
injecting ``load x N`` packets a step for ``warmup + measure + tail`` steps. From the
job, the loads and the windows alone:

* **loads**: a range ``a:b:n`` or a list holds at most
  :data:`~mpinet.jobs.sweep_settings.MAX_LOADS`; ``auto`` runs ``coarse + bisect + 1`` at most;
* **work** per rank: for each load, its packets x the mean route length / ranks, plus
  :data:`STEP_WORK` per step (an idle step of the engine costs about as much as 450
  packet-hops: 45 us against 0.1 us, measured on star:4 and ms:3,2); refused over
  :data:`MAX_WORK` (a day or more at the engine's 7-15 M hops a second per rank);
* **memory**: the run's estimate (:func:`mpinet.jobs.resources.estimate_run`) of the
  highest load, Bernoulli over the injection steps, with the sweep's own records
  (:data:`RECORD_BYTES` a packet: it keeps the rows and checks the ids, it does not
  gather and sort them as ``run`` does). Measured on ms:3,2 (one rank): load 0.8,
  12.3 M packets, 2,618 MiB peak against 2,596 MiB estimated; load 0.3, 835 MiB against
  1,049 MiB.

``auto`` alone searches up to 1.2 x the channel-load bound, which is not known before
the sweep computes it; the plan takes ``1.2 x degree / mean route length`` instead (the
bound of a network whose links are evenly loaded, above every real one), at most 1.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from mpinet.errors import JobError, ResourceError
from mpinet.jobs import resources as rs
from mpinet.jobs.sweep_settings import MAX_BISECT, MAX_LOADS, Rates, Settings

if TYPE_CHECKING:
    from mpinet.jobs.run_plan import Plan

#: packet-hops per rank a sweep may cost (a step counts as STEP_WORK)
MAX_WORK = 1e12
#: an engine step, in packet-hops of work
STEP_WORK = 500
#: bytes per packet kept after a load's run: its row (7 int64) and the ids moved, sorted
#: and compared by the exactly-once check
RECORD_BYTES = 56 + 32


def loads(rates: Rates, s: Settings, hi: float) -> list[float]:
    """The loads the sweep may run (``auto``: the grid, then ``bisect + 1`` at ``hi``)."""
    if rates.kind != "auto":
        return list(rates.values)
    lo = rates.lo if rates.hi > 0 else min(0.05 * hi / 1.2, hi / 2)
    n = s.coarse
    grid = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    return grid + [hi] * (s.bisect + 1)


def rate_unit(p: Plan) -> int:
    """Flits per unit of the sweep's loads: ``model.flits`` with ``workload.rate_uses_flits
    = 1`` (BookSim's ``injection_rate_uses_flits``: loads in flits per node per step, each
    run at load / L packets), else 1 (packets per node per step)."""
    if p.job.workload.get("rate_uses_flits") and p.model.flit:
        return int(p.model.flits)
    return 1


def highest_load(p: Plan, rates: Rates) -> float:
    """The highest load the sweep may offer (``auto`` alone: the even-load bound x 1.2)."""
    if rates.hi > 0:
        return float(rates.hi)
    flits = p.model.flits if p.model.flit else 1  # a link moves one flit per step
    return min(1.0, 1.2 * p.topo.degree / rs.mean_hops(p.topo) / flits)


def injection_steps(p: Plan, s: Settings) -> int:
    """Steps a load injects: warm-up, window and tail (default 10 x the mean route)."""
    lat = rs.mean_hops(p.topo) + (p.model.flits - 1 if p.model.flit else 0)  # H + L - 1
    tail = s.tail if s.tail is not None else math.ceil(10 * lat)
    return s.warmup + s.measure + min(tail, s.drain)


def estimate_load(p: Plan, rate: float, steps: int, size: int) -> rs.Estimate:
    """Memory per rank of one load: the run's estimate, with the sweep's own records."""
    w = dict(p.job.workload, injection="bernoulli", rate=float(rate), steps=int(steps),
             rate_uses_flits=0)  # fmt: skip
    job = dataclasses.replace(p.job, workload=w)
    est = rs.estimate_run(job, p.topo, size, router=p.router, trace_path=None)
    if "packet records" in est.parts:  # the run gathers and sorts them; a load does not
        records = est.parts["packet records"] // rs.RECORD_BYTES
        est.parts["packet records"] = int(records * RECORD_BYTES)
    est.what = f"sweep on {rs.describe(p.topo)} at load {rate:g}"
    return est


def plan_sweep(
    p: Plan, rates: Rates, s: Settings, size: int, ranks_here: int | None = None
) -> rs.Estimate:
    """Refuse, in one line with the way out, a sweep beyond the work cap or the machine.

    Returns the estimate of the largest load, its ``work`` the whole sweep's.
    """
    hi = highest_load(p, rates)
    unit = rate_unit(p) if rates.hi > 0 else 1  # auto alone: highest_load is in packets
    run = [r / unit for r in loads(rates, s, hi)]
    hi /= unit
    if len(run) > MAX_LOADS + MAX_BISECT + 1:
        raise ResourceError(f"sweep of {len(run):,} loads, over {MAX_LOADS:,}")
    inject = injection_steps(p, s)
    steps = s.warmup + s.measure + s.drain
    n, hops = p.topo.num_nodes, rs.mean_hops(p.topo)
    flits = p.model.flits if p.model.flit else 1  # the flit engine's work: flit-hops
    unit = "flit-hops" if p.model.flit else "packet-hops"
    work = sum(rate * n * inject * hops * flits / size + STEP_WORK * steps for rate in run)
    if work > MAX_WORK:
        raise ResourceError(
            f"sweep on {rs.describe(p.topo)} would cost about {work:.1e} {unit} per rank "
            f"({len(run):,} loads up to {hi:g}, each up to {steps:,} steps; an engine step "
            f"counts as {STEP_WORK}), over the limit of {MAX_WORK:.0e}; "
            "way out: fewer loads (--rates, --coarse, --bisect), shorter windows (--warmup, "
            "--measure, --drain), more ranks, or a smaller network"
        )
    est = rs.check(
        lambda r: estimate_load(p, hi, inject, r),
        size,
        ranks_here,
        smaller="lower loads (--rates a:b with a smaller b) or shorter windows (--warmup, "
        "--measure), or a smaller network",
    )
    est.work, est.work_unit = work, f"{unit} per rank (the whole sweep)"
    return est


def check_drain(p: Plan, s: Settings) -> None:
    """Refuse a drain cap that no packet injected in the window's last step can meet.

    A packet of L flits needs ``ceil(L / c)`` steps at least (one link of the fastest
    capacity ``c``; docs/switching.md); injected at step ``W + M - 1`` it arrives at
    ``W + M - 1 + ceil(L / c)`` at the earliest, after the cap ``W + M + drain`` when
    ``drain + 1 < ceil(L / c)``: every load would count it in flight and be "saturated"
    by drain, whatever the network does.
    """
    flits = p.model.flits if p.model.flit else 1
    cap = int(p.model.port_capacities(p.topo).max())
    need = -(-flits // cap)
    if s.drain + 1 < need:
        raise JobError(
            f"sweep drain (--drain) = {s.drain:,} is too short for packets of {flits:,} flits: "
            f"one needs at least ceil(L / c) = {need:,} steps (c = {cap} flit(s) per step on "
            "the fastest link), so the window's last packets could never arrive before the "
            f"cap and every load would be saturated by drain; raise --drain to at least "
            f"{need - 1:,}"
        )
