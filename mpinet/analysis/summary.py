"""Summarise one trace in bounded memory.

Every table is read with :meth:`mpinet.trace.Trace.iter_chunks`, ``chunk_rows`` rows at a
time and only the columns needed, so the working arrays take at most
``chunk_rows x 8 bytes x max(24, 5 x degree)`` (packets: five columns read plus derived
arrays and the exact distances; links: the load row, the neighbours and masks,
``5 x degree`` words per row), plus the histograms (:mod:`mpinet.analysis.hist`): one int64
per value of latency, hops and distance (at most ``steps + 1`` each) and one pair per
distinct link load, plus the exact-distance tables when stretch is computed (the
``shortest`` router's BFS tables are ``O(N)``; networks above :data:`STRETCH_NODE_LIMIT`
nodes without a closed-form distance skip stretch and say so). :func:`memory_bound` gives
the figure for a chunk size and degree. Nothing grows with the number of rows but, for a
flit trace, the ids of the packets still in flight (8 bytes each, at most
:data:`~.validate.IN_FLIGHT_IDS_LIMIT`; beyond, the per-port check takes its loosest ranges).

Tables and columns added by later layout versions are ignored; ``/links``, ``/hops`` and
the ``/steps`` columns other than ``transmissions`` are optional (a section is ``None``
when its table is absent), so every trace of the same layout major version summarises.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from mpinet.analysis.compare import compare
from mpinet.analysis.counted import CountedTrace
from mpinet.analysis.hist import IntHistogram, SparseHistogram, gini, hist_stats
from mpinet.analysis.network import STRETCH_NODE_LIMIT, distance_for, rebuild
from mpinet.analysis.switching import switching_of
from mpinet.analysis.validate import FlitPackets, consistency, in_range, value_limits
from mpinet.errors import CorruptTraceError, TraceError
from mpinet.trace import Trace, open_trace

#: rows read per table per block by default (2**18: 48 MiB of working arrays up to degree 4)
DEFAULT_CHUNK_ROWS = 1 << 18
#: per-step series kept in a summary (collective ``informed`` per step) up to this length
SERIES_LIMIT = 1000

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "STRETCH_NODE_LIMIT",
    "IntHistogram",
    "SparseHistogram",
    "compare",
    "gini",
    "hist_stats",
    "memory_bound",
    "summarize",
]


def memory_bound(chunk_rows: int = DEFAULT_CHUNK_ROWS, degree: int = 6) -> int:
    """Bytes of working arrays :func:`summarize` allocates per block.

    Histograms, the exact-distance tables and HDF5's chunk cache (1 MiB per open column)
    come on top; see the module docstring.
    """
    return int(chunk_rows) * 8 * max(24, 5 * int(degree))


def _open(trace: Any):
    if isinstance(trace, Trace):
        return trace, False
    return open_trace(trace), True


def _need(tr: Any, table: str, columns: list[str]) -> None:
    if table not in tr.tables:
        raise TraceError(f"trace {tr.path} has no table {table!r} (it has {tr.tables})")
    have = tr.columns(table)
    if missing := [c for c in columns if c not in have]:
        raise TraceError(f"trace {tr.path}: table {table!r} lacks column {missing[0]!r}")


def _packets(
    tr: Any, chunk_rows: int, distance: Any, limits: tuple[int | None, int], sw: dict | None
) -> dict[str, Any]:
    """Latency, hops (route length), and with ``distance`` exact distance and stretch; for a
    flit trace (``sw``) also what its checks need (:func:`~.validate.flit_packets`)."""
    cols = ["source", "dest", "inject_step", "deliver_step", "hops"]
    if sw is not None:
        cols.append("id")
    _need(tr, "packets", cols)
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


def _series_stats(acc: dict) -> dict[str, Any]:
    n = acc["n"]
    return {
        "total": acc["total"],
        "mean": acc["total"] / n if n else None,
        "max": acc["max"] if n else None,
        "max_step": acc["argmax"] if n else None,
    }


def _steps(tr: Any, columns: list[str], chunk_rows: int, keep: str | None = None) -> dict:
    """Totals, means and maxima (with the step of the maximum) of per-step columns.

    ``columns[0]`` is required; a later column absent from the trace gives ``None``.
    """
    _need(tr, "steps", columns[:1])
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
    out.update({c: _series_stats(acc[c]) if c in acc else None for c in columns})
    if keep is not None:
        out[f"{keep}_per_step"] = kept
        out[f"{keep}_per_step_truncated"] = row > SERIES_LIMIT
    return out


def _links(
    tr: Any, topo: Any, attrs: dict, chunk_rows: int, nodes: int | None, unit: str = "packets"
) -> dict[str, Any]:
    _need(tr, "links", ["load"])
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


def _hops_table(
    tr: Any, chunk_rows: int, degree: int, in_flight: np.ndarray | None = None
) -> dict[str, Any]:
    """Rows and rows per port; with ``in_flight`` (sorted ids of the packets not delivered,
    a flit trace's) also the rows per port of those packets."""
    cols = ["port"] if in_flight is None else ["port", "packet"]
    _need(tr, "hops", cols)
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


def summarize(
    trace: Any,
    *,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    stretch: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Summary of a trace (a path or an open :class:`~mpinet.trace.Trace`) as plain data.

    Parameters
    ----------
    trace : str, os.PathLike or Trace
        The trace; a path is opened and closed here.
    chunk_rows : int
        Rows read per block (see :func:`memory_bound`).
    stretch : bool
        Compute stretch against exact distances (when they fit).
    progress : callable, optional
        ``progress(rows_read, rows_total)`` after every block read.

    Raises
    ------
    TraceError
        Missing file, not a trace, a table or column this summary needs is absent.
    CorruptTraceError
        A checksum failed, or a column is truncated or holds impossible values.
    """
    if int(chunk_rows) < 1:
        raise TraceError(f"chunk_rows must be >= 1, got {chunk_rows}")
    tr, owned = _open(trace)
    try:
        seen = tr if progress is None else CountedTrace(tr, progress)
        out = _summarize(seen, int(chunk_rows), stretch)
        out["verified"] = tr.verify()  # the datasets the summary did not read, too
        return out
    finally:
        if owned:
            tr.close()


def _summarize(tr: Any, chunk_rows: int, stretch: bool) -> dict[str, Any]:
    attrs = tr.attrs
    checks = tr.checks
    collective = "collective" in attrs
    sw = None if collective else switching_of(tr, attrs)
    topo, why = rebuild(attrs, tr.path)
    degree = int(attrs.get("degree") or (topo.degree if topo else 1))
    out: dict[str, Any] = {
        "path": os.path.abspath(tr.path),
        "kind": "collective" if collective else "unicast",
        "spec": attrs.get("topology"),
        "attrs": attrs,
        "steps_run": attrs.get("steps"),
        "chunk_rows": chunk_rows,
        "memory_bound_bytes": memory_bound(chunk_rows, degree),
        # what /links/load, /steps/transmissions and cross_rank count, and the flit switching
        "load_unit": None if collective else "packets" if sw is None else "flits",
        "switching": sw,
    }
    if collective:
        st = _steps(tr, ["transmissions", "informed", "duplicates"], chunk_rows, keep="informed")
        out["collective"] = {
            "algorithm": attrs["collective"],
            "steps": attrs.get("steps", st["count"]),
            "step_rows": st["count"],
            "transmissions": st["transmissions"],
            "informed": st["informed"],
            "duplicates": st["duplicates"],
            "informed_per_step": st["informed_per_step"],
            "informed_per_step_truncated": st["informed_per_step_truncated"],
        }
        out["completion_step"] = out["collective"]["steps"]
        out["hops_table"] = _hops_table(tr, chunk_rows, degree) if "hops" in tr.tables else None
    else:
        distance, reason = (None, "not requested (--no-stretch)")
        if stretch:
            distance, reason = distance_for(topo, why)
        limits = value_limits(tr, attrs, topo)
        out.update(_packets(tr, chunk_rows, distance, limits, sw))
        if distance is None:
            out["stretch"] = {
                "packets": 0,
                "mean": None,
                "max": None,
                "fraction_shortest": None,
                "excess_hops": None,
                "skipped": reason,
            }
        out["completion_step"] = out["last_delivery_step"]
        st = _steps(tr, ["transmissions", "delivered", "in_flight", "cross_rank"], chunk_rows)
        out["steps"] = st
        trans = st["transmissions"]["total"]
        cross = st["cross_rank"]["total"] if st["cross_rank"] else None
        out["cross_rank"] = {
            "unit": out["load_unit"],
            "hops": cross,
            "transmissions": trans,
            "fraction": None if cross is None else cross / trans if trans else 0.0,
        }
        links = "links" in tr.tables
        unit = out["load_unit"]
        out["links"] = _links(tr, topo, attrs, chunk_rows, limits[0], unit) if links else None
        late = (out.get("flit_packets") or {}).get("in_flight_ids")
        if "hops" in tr.tables:
            out["hops_table"] = _hops_table(
                tr, chunk_rows, degree, late if late is not None and late.size else None
            )
        else:
            out["hops_table"] = None
        if sw is not None:  # not JSON, and no longer needed
            out["flit_packets"].pop("in_flight_ids")
    out["checks"] = checks
    out["checks_ok"] = all(bool(c.get("ok")) for c in checks)
    out["consistency"] = consistency(out)
    return out
