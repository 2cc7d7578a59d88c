"""The tables of a trace, each read in blocks of ``chunk_rows`` rows into its section of
:func:`mpinet.analysis.summary.summarize` (the memory bound is in that module's docstring):
``/packets`` (:func:`packets_section`), ``/steps`` (:func:`steps_section`), ``/links``
(:func:`links_section`) and ``/hops`` (:func:`hops_section`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.analysis.hist import IntHistogram, SparseHistogram
from mpinet.analysis.validate import FlitPackets, in_range
from mpinet.errors import CorruptTraceError, TraceError

#: per-step series kept in a summary (collective ``informed`` per step) up to this length
SERIES_LIMIT = 1000


def need(tr: Any, table: str, columns: list[str]) -> None:
    """Refuse a trace whose ``table`` or one of its ``columns`` is absent."""
    if table not in tr.tables:
        raise TraceError(f"trace {tr.path} has no table {table!r} (it has {tr.tables})")
    have = tr.columns(table)
    if missing := [c for c in columns if c not in have]:
        raise TraceError(f"trace {tr.path}: table {table!r} lacks column {missing[0]!r}")


def packets_section(
    tr: Any, chunk_rows: int, distance: Any, limits: tuple[int | None, int], sw: dict | None
) -> dict[str, Any]:
    """Latency, hops (route length), and with ``distance`` exact distance and stretch; for a
    flit trace (``sw``) also what its checks need (:func:`~.validate.flit_packets`)."""
    cols = ["source", "dest", "inject_step", "deliver_step", "hops"]
    if sw is not None:
        cols.append("id")
    need(tr, "packets", cols)
    lat, hop, dist = IntHistogram(), IntHistogram(), IntHistogram()
    total = undelivered = all_hops = 0
    flit = None if sw is None else FlitPackets(sw)
    last = -1
    s_sum, s_max, n_short, n_mov = 0.0, 0.0, 0, 0
    nodes, steps = limits
    for ch in tr.iter_chunks("packets", cols, chunk_rows):
        for c, lo, hi in (
            ("source", 0, None if nodes is None else nodes - 1),
            ("dest", 0, None if nodes is None else nodes - 1),
            ("inject_step", 0, steps),
            ("deliver_step", -1, steps),
            ("hops", 0, steps),  # at most one hop per step
        ):
            in_range(tr, f"/packets/{c}", ch[c], lo, hi, total)
        late = (ch["deliver_step"] >= 0) & (ch["deliver_step"] < ch["inject_step"])
        in_range(tr, "/packets/deliver_step", np.where(late, -2, 0), -1, None, total)
        all_hops += int(ch["hops"].sum(dtype=np.int64))
        if flit is not None:
            flit.add(ch)
        done = ch["deliver_step"] >= 0
        total += int(done.size)
        undelivered += int(done.size - done.sum())
        if not done.any():
            continue
        d_step = ch["deliver_step"][done]
        last = max(last, int(d_step.max()))
        lat.add(d_step - ch["inject_step"][done])
        h = ch["hops"][done]
        hop.add(h)
        if distance is None:
            continue
        src, dst = ch["source"][done], ch["dest"][done]
        moving = src != dst
        d = np.zeros(h.size, dtype=np.int64)
        if moving.any():
            d[moving] = np.asarray(distance(src[moving], dst[moving]), dtype=np.int64)
            s = h[moving] / d[moving]
            s_sum += float(s.sum())
            s_max = max(s_max, float(s.max()))
            n_short += int((h[moving] == d[moving]).sum())
            n_mov += int(moving.sum())
        dist.add(d)
    out = {
        "packets": {
            "total": total,
            "delivered": total - undelivered,
            "undelivered": undelivered,
            "hops": all_hops,  # of every packet, delivered or not: the links' total
        },
        "last_delivery_step": last if last >= 0 else None,
        "latency": {"unit": "steps", **lat.stats(), "histogram": lat.counts.tolist()},
        "hops": {"unit": "hops", **hop.stats(), "histogram": hop.counts.tolist()},
        "distance": None,
    }
    if flit is not None:
        out["flit_packets"] = flit.result()
    if distance is not None:
        out["distance"] = {"unit": "hops", **dist.stats(), "histogram": dist.counts.tolist()}
        out["stretch"] = {
            "packets": n_mov,
            "mean": s_sum / n_mov if n_mov else None,
            "max": s_max if n_mov else None,
            "fraction_shortest": n_short / n_mov if n_mov else None,
            "excess_hops": hop.stats()["total"] - dist.stats()["total"],
            "skipped": None,
        }
    return out


def series_stats(acc: dict) -> dict[str, Any]:
    """Total, mean, maximum and the step of the maximum of one accumulated column."""
    n = acc["n"]
    return {
        "total": acc["total"],
        "mean": acc["total"] / n if n else None,
        "max": acc["max"] if n else None,
        "max_step": acc["argmax"] if n else None,
    }


def steps_section(tr: Any, columns: list[str], chunk_rows: int, keep: str | None = None) -> dict:
    """Totals, means and maxima (with the step of the maximum) of per-step columns.

    ``columns[0]`` is required; a later column absent from the trace gives ``None``.
    """
    need(tr, "steps", columns[:1])
    have = tr.columns("steps")
    present = [c for c in columns if c in have]
    acc = {c: {"n": 0, "total": 0, "max": None, "argmax": None} for c in present}
    kept: list[int] = []
    row = 0
    for ch in tr.iter_chunks("steps", present, chunk_rows):
        n = len(ch[columns[0]])
        for c in present:
            a = ch[c]
            a_acc = acc[c]
            a_acc["n"] += n
            a_acc["total"] += int(a.sum())
            i = int(np.argmax(a))
            if a_acc["max"] is None or int(a[i]) > a_acc["max"]:
                a_acc["max"], a_acc["argmax"] = int(a[i]), row + i + 1  # steps count from 1
        if keep in present and len(kept) < SERIES_LIMIT:
            kept.extend(ch[keep][: SERIES_LIMIT - len(kept)].tolist())
        row += n
    out: dict[str, Any] = {"count": row}
    out.update({c: series_stats(acc[c]) if c in acc else None for c in columns})
    if keep is not None:
        out[f"{keep}_per_step"] = kept
        out[f"{keep}_per_step_truncated"] = row > SERIES_LIMIT
    return out


def links_section(
    tr: Any, topo: Any, attrs: dict, chunk_rows: int, nodes: int | None, unit: str = "packets"
) -> dict[str, Any]:
    """Link loads (``/links/load``) by port class and in all, of the ports that lead somewhere."""
    need(tr, "links", ["load"])
    rows = tr.nrows("links")
    if nodes is not None and rows != nodes:
        raise CorruptTraceError(
            f"trace {tr.path}: dataset /links/load has {rows:,} rows for {nodes:,} nodes; "
            "the trace is damaged"
        )
    classes = list(attrs.get("port_classes") or (topo.port_classes if topo else []))
    ports = list(attrs.get("ports") or (topo.ports if topo else []))
    hists: dict[str, SparseHistogram] = {}
    per_port = None
    overall = SparseHistogram()
    start = 0
    for ch in tr.iter_chunks("links", ["load"], chunk_rows):
        load = np.asarray(ch["load"], dtype=np.int64)
        if load.ndim != 2:
            raise TraceError(f"trace {tr.path}: /links/load must be 2-D, got shape {load.shape}")
        in_range(tr, "/links/load", load, 0, None, start)
        n, deg = load.shape
        if per_port is None:
            per_port = np.zeros(deg, dtype=np.int64)
            if len(classes) != deg:
                classes = [f"port{j}" for j in range(deg)]
        if topo is not None and topo.degree == deg:
            exists = topo.neighbors(np.arange(start, start + n)) >= 0
        else:
            exists = np.ones_like(load, dtype=bool)
        per_port += np.where(exists, load, 0).sum(axis=0)
        overall.add(load[exists])
        for cls in dict.fromkeys(classes):
            cols = [j for j, c in enumerate(classes) if c == cls]
            hists.setdefault(cls, SparseHistogram()).add(load[:, cols][exists[:, cols]])
        start += n

    def one(h: SparseHistogram) -> dict[str, Any]:
        s = h.stats()
        return {
            "links": s["count"],
            "total": s["total"],
            "max": s["max"],
            "mean": s["mean"],
            "p50": s["p50"],
            "p99": s["p99"],
            "gini": s["gini"],
            "max_over_mean": s["max"] / s["mean"] if s["mean"] else None,
        }

    by_class = {c: one(h) for c, h in hists.items()}
    means = [c["mean"] for c in by_class.values() if c["mean"]]
    return {
        "unit": f"{unit} per directed link",
        "existing_links": int(overall.counts.sum()),
        "classes": by_class,
        # paper 004 Cor. 3.3: on a balanced MS(l, n), l = Theta(n), the expected loads of
        # the port classes agree within a constant factor; this is that factor, measured
        "class_mean_ratio": max(means) / min(means) if len(means) > 1 else None,
        "all": one(overall),
        "per_port_total": {
            (ports[j] if j < len(ports) else f"port{j}"): int(v)
            for j, v in enumerate(per_port.tolist() if per_port is not None else [])
        },
        "histogram": {"values": overall.values.tolist(), "counts": overall.counts.tolist()},
    }


def hops_section(
    tr: Any, chunk_rows: int, degree: int, in_flight: np.ndarray | None = None
) -> dict[str, Any]:
    """Rows and rows per port; with ``in_flight`` (sorted ids of the packets not delivered,
    a flit trace's) also the rows per port of those packets."""
    cols = ["port"] if in_flight is None else ["port", "packet"]
    need(tr, "hops", cols)
    counts, late = IntHistogram(), IntHistogram()
    rows = 0
    for ch in tr.iter_chunks("hops", cols, chunk_rows):
        in_range(tr, "/hops/port", ch["port"], 0, degree - 1, rows)
        counts.add(ch["port"])
        if in_flight is not None and in_flight.size:
            i = np.searchsorted(in_flight, ch["packet"]).clip(max=in_flight.size - 1)
            late.add(ch["port"][in_flight[i] == ch["packet"]])
        rows += len(ch["port"])
    out: dict[str, Any] = {"rows": rows, "per_port": counts.counts.tolist()}
    if in_flight is not None:
        out["per_port_in_flight"] = late.counts.tolist()
    return out
