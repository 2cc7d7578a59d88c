"""One load of a sweep: the engine run, its checks, and the window's statistics.

Everything is reduced over the ranks (identical for any rank count); the
windows and the definitions are those of :mod:`mpinet.jobs.sweep`.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.engine.exchange import exchange_rows
from mpinet.engine.partition import block_bounds
from mpinet.jobs.run_plan import Plan
from mpinet.jobs.sweep_settings import Settings
from mpinet.jobs.switching import make_engine
from mpinet.workloads.registry import make_workload


def traffic(p: Plan, **keys: Any) -> Any:
    """The job's pattern with other injection keys (a new workload, same topology)."""
    w = dict(p.job.workload, **keys)
    kind = make_workload(w["kind"], w, topo=p.topo, seed=p.job.seed)
    kind.build(p.model, p.router)
    return kind.traffic


def switching(p: Plan) -> dict | None:
    """The switching keys of a flit sweep (docs/switching.md); None on the packet engine."""
    m = p.model
    if not m.flit:
        return None
    return {"mode": m.switching, "flits": m.flits, "vcs": m.vcs, "vc_buffer": m.vc_buffer,
            "vc_policy": m.vc_policy}  # fmt: skip


def zero_load(p: Plan, hops: float) -> tuple[float, str]:
    """The zero-load latency the latency criterion uses, and its closed form in words.

    Packet engine: ``H``, the mean route length. Flit engine (docs/switching.md, one
    packet alone, ``c`` the slowest port's capacity in flits per step): ``H + ceil(L / c)
    - 1`` under wormhole and cut-through, ``H x ceil(L / c)`` under store-and-forward;
    wormhole with one-flit VCs ``H + 2 (L - 1)`` (a freed slot is credited a step later;
    exact for ``H >= 2``, one step per flit over for one-hop routes).
    """
    m = p.model
    if not m.flit:
        return hops, "mean route length"
    c = int(min(p.model.port_capacities(p.topo)))
    per = -(-m.flits // c)
    if m.switching == "store-and-forward":
        return hops * per, f"H x ceil(L / c) = {hops:.2f} x {per}, store-and-forward"
    if m.switching == "wormhole" and m.vc_buffer == 1 and m.flits > 1:
        return hops + 2 * (m.flits - 1), (
            f"H + 2 (L - 1) = {hops:.2f} + {2 * (m.flits - 1)}, wormhole with 1-flit VCs"
        )
    return hops + per - 1, f"H + ceil(L / c) - 1 = {hops:.2f} + {per - 1}, {m.switching}"


def _hist(values: np.ndarray, comm: Any) -> np.ndarray:
    """Global histogram of non-negative integers."""
    top = comm.allreduce(int(values.max()) + 1 if values.size else 0, op=max_op())
    out = np.zeros(top, dtype=np.int64)
    if top:
        comm.Allreduce(np.bincount(values, minlength=top).astype(np.int64), out, op=sum_op())
    return out


def dist_stats(h: np.ndarray) -> dict:
    """Mean, p50, p99 and max of a histogram (index = value); NaN when empty."""
    total = int(h.sum())
    if total == 0:
        return {"mean": math.nan, "p50": math.nan, "p99": math.nan, "max": math.nan}
    c = np.cumsum(h)
    q = [int(np.searchsorted(c, f * total, side="left")) for f in (0.5, 0.99)]
    mean = float(np.dot(np.arange(h.size), h) / total)
    return {"mean": mean, "p50": q[0], "p99": q[1], "max": int(np.flatnonzero(h)[-1])}


def run_point(
    p: Plan, rate: float, s: Settings, tail: int, comm: Any, channel: np.ndarray | None = None
) -> tuple[dict, dict]:
    """One load: the engine run, its checks, and the window's statistics and histograms.

    ``channel`` (N, degree): each link's load per unit load (the channel-load
    computation), to find the overloaded links that stayed busy (``busy``).

    A plan with switching keys runs on the flit engine (:func:`make_engine`, with the
    plan's VC policy): latency is head injection to tail delivery, link loads and
    utilisation count flits, and the point adds ``injected_flits`` and ``accepted_flits``
    (the flits of the packets generated, and of the packets delivered, in the window,
    per node per step; every packet has L flits).
    """
    comm = resolve(comm)
    topo, w, m = p.topo, s.warmup, s.measure
    cpu0, wall0 = time.process_time(), time.perf_counter()
    # the job's on_off bursts, or Bernoulli; ``rate`` is already in packets per node per step
    inj = "on_off" if p.job.workload.get("injection") == "on_off" else "bernoulli"
    work = traffic(p, injection=inj, rate=float(rate), rate_uses_flits=0, steps=w + m + tail)
    eng = make_engine(p, comm, seed=p.job.seed, max_steps=w + m + s.drain,
                      order=p.job.model["order"], load_window=(w, w + m),
                      queues=p.job.model["queues"])  # fmt: skip
    rec = eng.run(work)
    # every packet is in exactly one rank's rows (checked below), so the statistics
    # reduce the local rows without moving them
    pk = rec.packets
    inj, dlv, adm = pk[:, 3], pk[:, 4], pk[:, 6]
    win = (inj >= w) & (inj < w + m)
    done = win & (dlv >= 0)
    sums = np.array([win.sum(), done.sum(), ((dlv >= w) & (dlv < w + m)).sum(), (dlv < 0).sum()])
    tot = np.empty_like(sums)
    comm.Allreduce(sums, tot, op=sum_op())
    n_win, n_done, n_acc, left = (int(x) for x in tot)
    hists = {
        "latency": _hist(dlv[done] - inj[done], comm),
        "source_queue": _hist(adm[done] - inj[done], comm),
        "network": _hist(dlv[done] - adm[done], comm),
        "hops": _hist(pk[done, 5], comm),
    }
    checks = run_checks(rec, work.pid_space, left, comm)
    nm = topo.num_nodes * m
    point = {
        "offered": float(rate),
        "injected": n_win / nm,
        "accepted": n_acc / nm,
        "window_packets": n_win,
        "in_flight_at_cap": n_win - n_done,
        "in_flight_at_cap_all": left,
        "steps": int(rec.steps),
        **{k: dist_stats(h) for k, h in hists.items()},
        "utilisation": _utilisation(p, rec, m, comm),
        "node_utilisation": _node_utilisation(p, rec, m, comm),
        "busy_overloaded": _busy_overloaded(p, rec, m, rate, channel, comm, s.accept_tol),
        **_flit_rates(p, n_win, n_acc, nm),
        "deadlock": None if rec.deadlock is None else rec.deadlock["message"],
        "deadlocked": rec.deadlock is not None,
        # the step the run stopped and the step its wait-for cycle closed
        "deadlock_step": None if rec.deadlock is None else rec.deadlock["step"],
        "deadlock_closed": None if rec.deadlock is None else rec.deadlock.get("closed"),
        "checks": checks,
        "checks_ok": all(c["ok"] for c in checks),
        "engine_seconds": round(comm.allreduce(rec.seconds, op=max_op()), 3),
        "seconds": round(comm.allreduce(time.perf_counter() - wall0, op=max_op()), 3),
        # CPU time of the busiest rank: the cost when the machine is shared
        "cpu_seconds": round(comm.allreduce(time.process_time() - cpu0, op=max_op()), 3),
    }
    return point, hists


def _flit_rates(p: Plan, n_win: int, n_acc: int, nm: int) -> dict:
    """Flit sweeps: the window's injected and accepted rates in flits per node per step."""
    if not p.model.flit:
        return {}
    return {"injected_flits": n_win * p.model.flits / nm,
            "accepted_flits": n_acc * p.model.flits / nm}  # fmt: skip


def run_checks(rec: Any, pid_space: int, left: int, comm: Any) -> list[dict]:
    """The engine's end-of-run checks (as :func:`mpinet.engine.report.summarize` names them).

    Exactly once: the ids of the delivered and still travelling packets, moved to the
    rank owning their id range, equal the injected ids (sorted; O(n log n), where
    ``summarize``'s ``np.unique`` costs seconds per million packets on numpy 2.4).
    Conservation: in flight + delivered so far never exceed the injected packets.
    Links and model: the engine checks them at every step and stops on a violation.
    """
    size = comm.Get_size()
    bounds = block_bounds(max(pid_space, 1), size)

    def moved(ids: np.ndarray) -> np.ndarray:
        own = np.searchsorted(bounds, ids, side="right") - 1
        # ids arrive nearly sorted (by injection step): the stable sort is the fast one
        return np.sort(exchange_rows(comm, ids[:, None], own)[:, 0], kind="stable")

    have, want = moved(rec.packets[:, 0]), moved(rec.injected_ids)
    same = have.size == want.size and bool(np.array_equal(have, want))
    exactly = comm.allreduce(int(not same), op=sum_op()) == 0
    n_inj = comm.allreduce(int(want.size), op=sum_op())
    c = rec.counters
    conserve = bool((np.cumsum(c[:, 1]) + c[:, 2] <= n_inj).all()) if c.size else True
    checks = [
        _check("delivered exactly once or in flight", n_inj, n_inj if exactly else "differs",
               exactly, "" if exactly else "packet ids differ from the injected ids"),
        _check("conservation at every step", n_inj, n_inj, conserve,
               "in_flight + delivered_so_far <= injected at every step"),
        _check("every hop used an existing link", "yes", "yes", True, "checked at every hop"),
        _check("model held at every step", "yes", "yes", True, "checked at every step"),
    ]  # fmt: skip
    if rec.deadlock is not None:
        checks.append(_check("no deadlock", 0, left, False, rec.deadlock["message"]))
    else:
        checks.append(_check("in flight at the drain cap", "reported", left, True,
                             "still travelling at the cap: reported, not lost"))  # fmt: skip
    return checks


def _check(name: str, expected: Any, measured: Any, ok: bool, detail: str) -> dict:
    return {"name": name, "expected": expected, "measured": measured, "ok": ok, "detail": detail}


def _utilisation(p: Plan, rec: Any, m: int, comm: Any) -> dict:
    """Per port class: max and mean packets per link per step / capacity, in the window.

    Sums stay integers until the end, so the mean is the same for any rank count.
    """
    topo = p.topo
    exists = topo.neighbors(np.arange(rec.lo, rec.hi, dtype=np.int64)) >= 0
    caps = dict(zip(topo.port_classes, p.model.port_capacities(topo).tolist(), strict=True))
    out = {}
    for cls in dict.fromkeys(topo.port_classes):
        cols = [q for q, c in enumerate(topo.port_classes) if c == cls]
        load, ex = rec.link_load[:, cols], exists[:, cols]
        mine = np.array([load[ex].sum(), ex.sum()], dtype=np.int64)
        tot = np.empty_like(mine)
        comm.Allreduce(mine, tot, op=sum_op())
        mx = comm.allreduce(int(load[ex].max()) if ex.any() else 0, op=max_op())
        per = m * caps[cls]
        out[cls] = {"max": mx / per, "mean": int(tot[0]) / int(tot[1]) / per if tot[1] else 0.0}
    return out


def _node_utilisation(p: Plan, rec: Any, m: int, comm: Any) -> float | None:
    """one-port / k-port: the busiest node's sends per step / what it may send (its K
    fastest ports); None under all-port and sdc, where links are the limit."""
    if p.model.kind not in ("one-port", "k-port"):
        return None
    k = 1 if p.model.kind == "one-port" else p.model.k
    caps = np.sort(p.model.port_capacities(p.topo))[::-1]
    sent = rec.link_load.sum(axis=1)
    mx = comm.allreduce(int(sent.max()) if sent.size else 0, op=max_op())
    return mx / (m * int(caps[:k].sum()))


def _busy_overloaded(
    p: Plan,
    rec: Any,
    m: int,
    rate: float,
    channel: np.ndarray | None,
    comm: Any,
    tol: float = 0.05,
) -> int:
    """Links (under one-port / k-port, nodes) offered at least their capacity (``rate`` x
    their channel load) that sent at capacity in every step of the window.

    Such a link's queue grows for good, even when it carries too few packets to move the
    window's means (FCCN's hot links). Below the bound none is offered its capacity, so
    a near-critical link that happens to stay busy (among thousands) never counts. On the
    flit engine loads and capacities are in flits (a packet is L of them), and a link
    counts when it sent at least (1 - ``tol``) of its capacity over the window: a worm
    waiting for credits leaves an overloaded link idle in a few steps (hypercube:8,
    anynet-min, L = 16, V = 2, B = 4 at 1.1 x the bound: 99.9 % busy, while the latency
    and throughput criteria stayed below their thresholds for 3,000 steps).
    """
    if channel is None:
        return 0
    caps = p.model.port_capacities(p.topo).astype(np.float64)
    if p.model.flit:  # rate x channel is packets; links move flits
        channel = channel * p.model.flits
    mine = channel[rec.lo : rec.hi]
    full = 1.0 - tol if p.model.flit else 1.0
    if p.model.kind in ("one-port", "k-port"):
        k = 1 if p.model.kind == "one-port" else p.model.k
        send = float(np.sort(caps)[::-1][:k].sum())
        over = rate * mine.sum(axis=1) >= send
        busy = rec.link_load.sum(axis=1) >= m * send * full
    else:
        over = rate * mine >= caps[None, :]
        busy = rec.link_load >= m * caps[None, :] * full
    return comm.allreduce(int((over & busy).sum()), op=sum_op())
