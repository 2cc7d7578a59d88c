"""Global results of a run: statistics and end-of-run invariants.

Everything here is a reduction over the ranks, so every rank returns the same
numbers, and none depends on the number of ranks. Packet records are first
moved to the rank that owns their id (a block partition of the id space), so
the exactly-once check is exact and the trace's packet rows come out sorted
by id whatever the partition of the nodes was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mpinet.engine.comm import max_op, sum_op
from mpinet.engine.exchange import exchange_rows
from mpinet.engine.partition import block_bounds
from mpinet.engine.run import RunRecord
from mpinet.topology.base import Topology


def owner_rank(ids: np.ndarray, space: int, size: int) -> np.ndarray:
    bounds = block_bounds(max(space, 1), size)
    return np.searchsorted(bounds, ids, side="right") - 1


def _hist(values: np.ndarray, comm: Any) -> np.ndarray:
    """Global histogram of non-negative integers."""
    top = comm.allreduce(int(values.max()) + 1 if values.size else 0, op=max_op())
    local = np.bincount(values, minlength=top).astype(np.int64)
    out = np.zeros(top, dtype=np.int64)
    if top:
        comm.Allreduce(local, out, op=sum_op())
    return out


def _quantile(hist: np.ndarray, q: float) -> float:
    total = hist.sum()
    if total == 0:
        return float("nan")
    return float(np.searchsorted(np.cumsum(hist), q * total, side="left"))


def _dist_stats(hist: np.ndarray) -> dict:
    total = int(hist.sum())
    if total == 0:
        return {"count": 0}
    vals = np.arange(hist.size)
    return {
        "count": total,
        "mean": float(np.dot(vals, hist) / total),
        "p50": _quantile(hist, 0.5),
        "p99": _quantile(hist, 0.99),
        "max": int(np.flatnonzero(hist)[-1]),
    }


def gather_packets(rec: RunRecord, pid_space: int, comm: Any) -> tuple[np.ndarray, np.ndarray]:
    """Packet records and injected ids moved to their id-owner rank, sorted by id."""
    size = comm.Get_size()
    pk = exchange_rows(comm, rec.packets, owner_rank(rec.packets[:, 0], pid_space, size))
    ids = exchange_rows(
        comm, rec.injected_ids[:, None], owner_rank(rec.injected_ids, pid_space, size)
    )
    return pk[np.argsort(pk[:, 0], kind="stable")], np.sort(ids[:, 0])


def gather_hops(rec: RunRecord, pid_space: int, comm: Any) -> np.ndarray:
    """Hop rows moved to the owner of their packet id, sorted by (packet, step)."""
    rows = rec.hop_rows
    moved = exchange_rows(comm, rows, owner_rank(rows[:, 1], pid_space, comm.Get_size()))
    return moved[np.lexsort((moved[:, 0], moved[:, 1]))]


def summarize(
    rec: RunRecord,
    topo: Topology,
    packets: np.ndarray,
    injected: np.ndarray,
    comm: Any,
    distance: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    link_exists: np.ndarray | None = None,
) -> dict:
    """Global statistics and checks of a run (identical on every rank).

    Parameters
    ----------
    rec : this rank's record
    packets, injected : this rank's share from :func:`gather_packets`
    distance : exact distance of (sources, dests) arrays, for stretch
    link_exists : (hi - lo, degree) bool, the ports that exist on this rank's nodes
    """
    ok_rows = packets[:, 4] >= 0
    done = packets[ok_rows]
    lat = done[:, 4] - done[:, 3]
    hops = done[:, 5]
    n_inj = comm.allreduce(int(injected.size), op=sum_op())
    n_del = comm.allreduce(int(done.shape[0]), op=sum_op())
    n_drop = comm.allreduce(int((~ok_rows).sum()), op=sum_op())
    # of those: dropped by a fault (with a reason), the rest still in flight at the end
    n_fault = comm.allreduce(int(rec.drops.shape[0]) if rec.drops is not None else 0, op=sum_op())
    n_left = n_drop - n_fault
    ids = packets[:, 0]
    same = ids.size == injected.size and bool(np.array_equal(ids, injected))
    dup = int(ids.size - np.unique(ids).size)
    exactly_once = comm.allreduce(int(not same), op=sum_op()) == 0
    completion = comm.allreduce(int(done[:, 4].max()) if done.size else 0, op=max_op())
    stats: dict[str, Any] = {
        "injected": n_inj,
        "delivered": n_del,
        "dropped": n_fault,
        "undelivered": n_left,
        "steps": int(rec.steps),
        "completion_step": completion,
        "latency": _dist_stats(_hist(lat, comm)),
        "hops": _dist_stats(_hist(hops, comm)),
    }
    if distance is not None:
        moving = done[done[:, 1] != done[:, 2]]
        d = distance(moving[:, 1], moving[:, 2]) if moving.size else np.empty(0, np.int64)
        s_sum = comm.allreduce(float((moving[:, 5] / d).sum()) if d.size else 0.0, op=sum_op())
        s_max = comm.allreduce(float((moving[:, 5] / d).max()) if d.size else 0.0, op=max_op())
        n_short = comm.allreduce(int((moving[:, 5] == d).sum()), op=sum_op())
        n_mov = comm.allreduce(int(d.size), op=sum_op())
        stats["stretch"] = {
            "mean": s_sum / n_mov if n_mov else float("nan"),
            "max": s_max,
            "fraction_shortest": n_short / n_mov if n_mov else float("nan"),
        }
    stats["link_load"] = _link_load(rec, topo, comm, link_exists)
    trans = int(rec.counters[:, 0].sum())
    cross = int(rec.counters[:, 3].sum())
    stats["transmissions"] = trans
    stats["cross_rank_fraction"] = cross / trans if trans else 0.0
    checks = [
        {
            "name": "delivered exactly once or dropped",
            "expected": n_inj,
            "measured": n_del + n_drop,
            "ok": bool(exactly_once and n_del + n_drop == n_inj),
            "detail": "" if exactly_once else f"{dup} duplicate ids on some rank; id sets differ",
        },
        {
            "name": "every packet delivered (or dropped by a fault, with its reason)",
            "expected": 0,
            "measured": n_left,
            "ok": n_left == 0,
            "detail": ""
            if not n_left
            else (
                rec.deadlock["message"]
                if rec.deadlock
                else f"{n_left:,} still in flight at max_steps (livelock or too few steps)"
            ),
        },
        _conservation(rec.counters, n_inj, n_del),
        {
            "name": "every hop used an existing link",
            "expected": "yes",
            "measured": "yes",
            "ok": True,
            "detail": "checked at every hop",
        },
        {
            "name": "model held at every step",
            "expected": "yes",
            "measured": "yes",
            "ok": True,
            "detail": "checked at every step",
        },
    ]
    stats["checks"] = checks
    stats["ok"] = all(c["ok"] for c in checks)
    return stats


def _conservation(counters: np.ndarray, n_inj: int, n_del: int) -> dict:
    """Per step: packets in flight + delivered so far never exceed those injected."""
    if counters.size == 0:
        ok = True
    else:
        ok = bool((np.cumsum(counters[:, 1]) + counters[:, 2] <= n_inj).all())
    return {
        "name": "conservation at every step",
        "expected": n_inj,
        "measured": n_del,
        "ok": ok,
        "detail": "in_flight + delivered_so_far <= injected at every step",
    }


def _link_load(rec: RunRecord, topo: Topology, comm: Any, exists: np.ndarray | None) -> dict:
    """Max and mean packets per directed link over the run, per port class."""
    load = rec.link_load
    if exists is None:
        exists = np.ones_like(load, dtype=bool)
    out = {}
    for cls in dict.fromkeys(topo.port_classes):
        cols = [p for p, c in enumerate(topo.port_classes) if c == cls]
        sub, ex = load[:, cols], exists[:, cols]
        total = comm.allreduce(int(sub[ex].sum()), op=sum_op())
        links = comm.allreduce(int(ex.sum()), op=sum_op())
        mx = comm.allreduce(int(sub[ex].max()) if ex.any() else 0, op=max_op())
        out[cls] = {"links": links, "max": mx, "mean": total / links if links else 0.0}
    return out
