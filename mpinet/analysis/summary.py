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

from mpinet.analysis.compare import compare
from mpinet.analysis.counted import CountedTrace
from mpinet.analysis.hist import IntHistogram, SparseHistogram, gini, hist_stats
from mpinet.analysis.network import STRETCH_NODE_LIMIT, distance_for, rebuild
from mpinet.analysis.summary_tables import (
    hops_section,
    links_section,
    packets_section,
    steps_section,
)
from mpinet.analysis.switching import switching_of
from mpinet.analysis.validate import consistency, value_limits
from mpinet.errors import TraceError
from mpinet.trace import Trace, open_trace

#: rows read per table per block by default (2**18: 48 MiB of working arrays up to degree 4)
DEFAULT_CHUNK_ROWS = 1 << 18

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
        st = steps_section(
            tr, ["transmissions", "informed", "duplicates"], chunk_rows, keep="informed"
        )
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
        out["hops_table"] = hops_section(tr, chunk_rows, degree) if "hops" in tr.tables else None
    else:
        distance, reason = (None, "not requested (--no-stretch)")
        if stretch:
            distance, reason = distance_for(topo, why)
        limits = value_limits(tr, attrs, topo)
        out.update(packets_section(tr, chunk_rows, distance, limits, sw))
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
        st = steps_section(
            tr, ["transmissions", "delivered", "in_flight", "cross_rank"], chunk_rows
        )
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
        out["links"] = (
            links_section(tr, topo, attrs, chunk_rows, limits[0], unit) if links else None
        )
        late = (out.get("flit_packets") or {}).get("in_flight_ids")
        if "hops" in tr.tables:
            out["hops_table"] = hops_section(
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
