"""Summarise one trace in bounded memory, and compare two summaries.

Every table is read with :meth:`mpinet.trace.Trace.iter_chunks`, ``chunk_rows`` rows at a
time, so the working arrays take at most ``chunk_rows x 8 bytes x max(12, 5 x degree)``
(packets: five columns read plus derived arrays; links: the load row, the neighbours and
masks, ``5 x degree`` words per row), plus the
histograms: one int64 per value of latency and hops (at most ``steps + 1`` each) and one per
distinct link load, plus the exact-distance tables when stretch is computed (the
``shortest`` router's BFS tables are ``O(N)``; networks above
:data:`STRETCH_NODE_LIMIT` nodes without a closed-form distance skip stretch and say so).
:func:`memory_bound` gives the figure for a chunk size and degree.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from mpinet.errors import MpinetError, TraceError

#: rows read per table per block by default (2**18: ~24 MiB of int64 working arrays)
DEFAULT_CHUNK_ROWS = 1 << 18
#: networks up to this many nodes get exact stretch from BFS tables (as ``mpinet run``)
STRETCH_NODE_LIMIT = 4_000_000
#: per-step series kept in a summary (collective ``informed`` per step) up to this length
SERIES_LIMIT = 1000
_CLOSED_FORM_FAMILIES = ("fccn", "ccc", "hypercube")


def memory_bound(chunk_rows: int = DEFAULT_CHUNK_ROWS, degree: int = 6) -> int:
    """Bytes of working arrays :func:`summarize` allocates per block (histograms excluded)."""
    return int(chunk_rows) * 8 * max(12, 5 * int(degree))


# -- streaming histograms -------------------------------------------------------------------
class IntHistogram:
    """Exact histogram of non-negative integers, grown as larger values arrive."""

    def __init__(self) -> None:
        self.counts = np.zeros(0, dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        v = np.asarray(values, dtype=np.int64).ravel()
        if v.size == 0:
            return
        if v.min() < 0:
            raise TraceError(f"negative value {int(v.min())} where a count was expected")
        b = np.bincount(v)
        if b.size > self.counts.size:
            b[: self.counts.size] += self.counts
            self.counts = b
        else:
            self.counts[: b.size] += b

    def stats(self) -> dict[str, Any]:
        return hist_stats(np.arange(self.counts.size), self.counts)


class SparseHistogram:
    """Exact histogram of integers kept as sorted (value, count) pairs (distinct values only)."""

    def __init__(self) -> None:
        self.values = np.zeros(0, dtype=np.int64)
        self.counts = np.zeros(0, dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        v = np.asarray(values, dtype=np.int64).ravel()
        if v.size == 0:
            return
        u, c = np.unique(v, return_counts=True)
        allv = np.concatenate([self.values, u])
        allc = np.concatenate([self.counts, c.astype(np.int64)])
        self.values, inv = np.unique(allv, return_inverse=True)
        self.counts = np.bincount(inv, weights=allc, minlength=self.values.size).astype(np.int64)

    def stats(self) -> dict[str, Any]:
        out = hist_stats(self.values, self.counts)
        out["gini"] = gini(self.values, self.counts)
        return out


def _quantile(values: np.ndarray, cum: np.ndarray, n: int, q: float) -> int:
    """Nearest-rank quantile (numpy's ``method="inverted_cdf"``)."""
    k = max(1, math.ceil(q * n))
    return int(values[np.searchsorted(cum, k)])


def hist_stats(values: np.ndarray, counts: np.ndarray) -> dict[str, Any]:
    """count, total, mean, min, p50, p99, max of a histogram (``None`` when empty)."""
    n = int(counts.sum())
    if n == 0:
        return {
            "count": 0,
            "total": 0,
            "mean": None,
            "min": None,
            "p50": None,
            "p99": None,
            "max": None,
        }
    cum = np.cumsum(counts)
    nz = np.flatnonzero(counts)
    total = int(sum(int(v) * int(c) for v, c in zip(values[nz], counts[nz], strict=True)))
    return {
        "count": n,
        "total": total,
        "mean": total / n,
        "min": int(values[nz[0]]),
        "p50": _quantile(values, cum, n, 0.50),
        "p99": _quantile(values, cum, n, 0.99),
        "max": int(values[nz[-1]]),
    }


def gini(values: np.ndarray, counts: np.ndarray) -> float | None:
    """Gini coefficient of the multiset given as a histogram (0 = even, -> 1 = one link)."""
    n = int(counts.sum())
    if n == 0:
        return None
    total = 0
    weighted = 0  # sum over sorted order of rank_i * x_i, ranks from 1, exact in Python ints
    rank = 0
    for v, c in zip(values.tolist(), counts.tolist(), strict=True):
        if c == 0:
            continue
        weighted += v * (c * rank + c * (c + 1) // 2)
        total += v * c
        rank += c
    if total == 0:
        return 0.0
    return 2 * weighted / (n * total) - (n + 1) / n


# -- the summary ----------------------------------------------------------------------------
def _open(trace: Any):
    from mpinet.trace import Trace, open_trace

    if isinstance(trace, Trace):
        return trace, False
    return open_trace(trace), True


def _need(tr: Any, table: str, columns: list[str]) -> None:
    if table not in tr.tables:
        raise TraceError(f"trace {tr.path} has no table {table!r} (it has {tr.tables})")
    have = tr.columns(table)
    if missing := [c for c in columns if c not in have]:
        raise TraceError(f"trace {tr.path}: table {table!r} lacks column {missing[0]!r}")


def _topology(attrs: dict):
    from mpinet.topology import from_spec

    spec = attrs.get("topology")
    if not spec:
        return None
    try:
        return from_spec(str(spec))
    except MpinetError:
        return None


def _distance(topo: Any) -> tuple[Any, str | None]:
    """(distance function, None) or (None, reason it is skipped)."""
    from mpinet.routing import exact_distance

    if topo is None:
        return None, "the trace's topology spec cannot be rebuilt"
    if topo.family not in _CLOSED_FORM_FAMILIES and topo.num_nodes > STRETCH_NODE_LIMIT:
        return None, (
            f"{topo.spec} has {topo.num_nodes:,} nodes > {STRETCH_NODE_LIMIT:,} "
            "and no closed-form distance (BFS tables would not fit)"
        )
    try:
        return exact_distance(topo), None
    except MpinetError as exc:
        return None, f"exact distances unavailable: {exc}"


def _packets(tr: Any, chunk_rows: int, distance: Any) -> dict[str, Any]:
    cols = ["source", "dest", "inject_step", "deliver_step", "hops"]
    _need(tr, "packets", cols)
    lat, hop = IntHistogram(), IntHistogram()
    total = undelivered = 0
    last = -1
    s_sum, s_max, n_short, n_mov = 0.0, 0.0, 0, 0
    for ch in tr.iter_chunks("packets", cols, chunk_rows):
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
        if distance is not None:
            moving = ch["source"][done] != ch["dest"][done]
            if moving.any():
                d = np.asarray(distance(ch["source"][done][moving], ch["dest"][done][moving]))
                hm = h[moving]
                s = hm / d
                s_sum += float(s.sum())
                s_max = max(s_max, float(s.max()))
                n_short += int((hm == d).sum())
                n_mov += int(d.size)
    out = {
        "packets": {"total": total, "delivered": total - undelivered, "undelivered": undelivered},
        "last_delivery_step": last if last >= 0 else None,
        "latency": {"unit": "steps", **lat.stats(), "histogram": lat.counts.tolist()},
        "hops": {"unit": "hops", **hop.stats(), "histogram": hop.counts.tolist()},
    }
    if distance is not None:
        out["stretch"] = {
            "packets": n_mov,
            "mean": s_sum / n_mov if n_mov else None,
            "max": s_max if n_mov else None,
            "fraction_shortest": n_short / n_mov if n_mov else None,
            "skipped": None,
        }
    return out


def _column_series(tr: Any, table: str, columns: list[str], chunk_rows: int) -> Iterator[dict]:
    _need(tr, table, columns)
    return tr.iter_chunks(table, columns, chunk_rows)


def _series_stats(acc: dict) -> dict[str, Any]:
    n = acc["n"]
    return {
        "total": acc["total"],
        "mean": acc["total"] / n if n else None,
        "max": acc["max"] if n else None,
        "max_step": acc["argmax"] if n else None,
    }


def _steps(tr: Any, columns: list[str], chunk_rows: int, keep: str | None = None) -> dict:
    """Totals, means and maxima (with the step of the maximum) of per-step columns."""
    acc = {c: {"n": 0, "total": 0, "max": None, "argmax": None} for c in columns}
    kept: list[int] = []
    row = 0
    for ch in _column_series(tr, "steps", columns, chunk_rows):
        n = len(ch[columns[0]])
        for c in columns:
            a = ch[c]
            a_acc = acc[c]
            a_acc["n"] += n
            a_acc["total"] += int(a.sum())
            i = int(np.argmax(a))
            if a_acc["max"] is None or int(a[i]) > a_acc["max"]:
                a_acc["max"], a_acc["argmax"] = int(a[i]), row + i + 1  # steps count from 1
        if keep is not None and len(kept) < SERIES_LIMIT:
            kept.extend(ch[keep][: SERIES_LIMIT - len(kept)].tolist())
        row += n
    out: dict[str, Any] = {"count": row}
    out.update({c: _series_stats(acc[c]) for c in columns})
    if keep is not None:
        out[f"{keep}_per_step"] = kept
        out[f"{keep}_per_step_truncated"] = row > SERIES_LIMIT
    return out


def _links(tr: Any, topo: Any, attrs: dict, chunk_rows: int) -> dict[str, Any]:
    _need(tr, "links", ["load"])
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
        }

    return {
        "unit": "packets per directed link",
        "existing_links": int(overall.counts.sum()),
        "classes": {c: one(h) for c, h in hists.items()},
        "all": one(overall),
        "per_port_total": {
            (ports[j] if j < len(ports) else f"port{j}"): int(v)
            for j, v in enumerate(per_port.tolist() if per_port is not None else [])
        },
        "histogram": {"values": overall.values.tolist(), "counts": overall.counts.tolist()},
    }


def _hops_table(tr: Any, chunk_rows: int) -> dict[str, Any]:
    _need(tr, "hops", ["port"])
    counts = IntHistogram()
    rows = 0
    for ch in tr.iter_chunks("hops", ["port"], chunk_rows):
        counts.add(ch["port"])
        rows += len(ch["port"])
    return {"rows": rows, "per_port": counts.counts.tolist()}


def summarize(
    trace: Any, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, stretch: bool = True
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

    Raises
    ------
    TraceError
        Missing file, not a trace, a table or column this summary needs is absent.
    """
    if int(chunk_rows) < 1:
        raise TraceError(f"chunk_rows must be >= 1, got {chunk_rows}")
    tr, owned = _open(trace)
    try:
        return _summarize(tr, int(chunk_rows), stretch)
    finally:
        if owned:
            tr.close()


def _summarize(tr: Any, chunk_rows: int, stretch: bool) -> dict[str, Any]:
    attrs = tr.attrs
    checks = tr.checks
    collective = "collective" in attrs
    topo = _topology(attrs)
    degree = int(attrs.get("degree") or (topo.degree if topo else 1))
    out: dict[str, Any] = {
        "path": os.path.abspath(tr.path),
        "kind": "collective" if collective else "unicast",
        "spec": attrs.get("topology"),
        "attrs": attrs,
        "steps_run": attrs.get("steps"),
        "chunk_rows": chunk_rows,
        "memory_bound_bytes": memory_bound(chunk_rows, degree),
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
    else:
        distance, reason = (None, "not requested (--no-stretch)")
        if stretch:
            distance, reason = _distance(topo)
        out.update(_packets(tr, chunk_rows, distance))
        if distance is None:
            out["stretch"] = {
                "packets": 0,
                "mean": None,
                "max": None,
                "fraction_shortest": None,
                "skipped": reason,
            }
        out["completion_step"] = out["last_delivery_step"]
        st = _steps(tr, ["transmissions", "delivered", "in_flight", "cross_rank"], chunk_rows)
        out["steps"] = st
        trans = st["transmissions"]["total"]
        cross = st["cross_rank"]["total"]
        out["cross_rank"] = {
            "hops": cross,
            "transmissions": trans,
            "fraction": cross / trans if trans else 0.0,
        }
        out["links"] = _links(tr, topo, attrs, chunk_rows)
        out["hops_table"] = _hops_table(tr, chunk_rows) if "hops" in tr.tables else None
    out["checks"] = checks
    out["checks_ok"] = all(bool(c.get("ok")) for c in checks)
    out["consistency"] = _consistency(out)
    return out


def _consistency(s: dict) -> list[dict[str, Any]]:
    """Cross-checks between the trace's own tables (each ``{name, expected, measured, ok}``)."""
    if s["kind"] != "unicast":
        return []
    out = []

    def add(name: str, expected: Any, measured: Any) -> None:
        out.append(
            {"name": name, "expected": expected, "measured": measured, "ok": expected == measured}
        )

    add(
        "hops of delivered packets = link-load total",
        s["hops"]["total"],
        s["links"]["all"]["total"],
    )
    add(
        "transmissions = link-load total",
        s["steps"]["transmissions"]["total"],
        s["links"]["all"]["total"],
    )
    ht = s.get("hops_table")
    if ht is not None:
        add("/hops rows = transmissions", s["steps"]["transmissions"]["total"], ht["rows"])
        per_port = list(s["links"]["per_port_total"].values())
        pad = ht["per_port"] + [0] * (len(per_port) - len(ht["per_port"]))
        add("/hops per port = link load per port", per_port, pad)
    return out


# -- comparison -----------------------------------------------------------------------------
def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if k in ("histogram", "informed_per_step", "checks", "consistency", "per_port_total"):
            continue
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        elif v is None or isinstance(v, (int, float, str, bool)):
            out[key] = v
    return out


def compare(a: dict, b: dict) -> dict[str, Any]:
    """Two summaries side by side: rows ``{key, a, b, delta}`` over the union of their keys.

    ``delta`` is ``b - a`` for numbers, else ``"same"`` or ``"differs"``.
    """
    fa, fb = _flatten(a), _flatten(b)
    skip = ("attrs.start_time", "attrs.end_time", "path", "attrs.command_line", "attrs.job")
    rows = []
    for k in list(dict.fromkeys([*fa, *fb])):
        if k in skip:
            continue
        va, vb = fa.get(k), fb.get(k)
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)):
            if isinstance(va, bool) or isinstance(vb, bool):
                delta: Any = "same" if va == vb else "differs"
            else:
                delta = vb - va
        else:
            delta = "same" if va == vb else "differs"
        rows.append({"key": k, "a": va, "b": vb, "delta": delta})
    return {"a": a["path"], "b": b["path"], "rows": rows}
