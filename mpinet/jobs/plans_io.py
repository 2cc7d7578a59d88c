"""Plans of the commands that read or write files: ``analyze`` and ``export``.

Like the others (:mod:`mpinet.jobs.plans`), from their inputs alone and before any work:
``analyze`` from the traces' root attributes (the exact histograms grow with the steps,
stretch needs exact-distance tables), ``export`` from the network and the format (the
bytes it will write, the memory of one chunk, the time).
"""

from __future__ import annotations

from mpinet.analysis import memory_bound
from mpinet.analysis.network import rebuild
from mpinet.analysis.summary import STRETCH_NODE_LIMIT
from mpinet.errors import MpinetError, ResourceError
from mpinet.jobs.resources import (
    Estimate,
    available_memory,
    base,
    check,
    describe,
    size_text,
    stretch_tables,
)
from mpinet.topology import export
from mpinet.topology.base import Topology
from mpinet.trace import open_trace

# -- analyze ----------------------------------------------------------------------------
#: bytes per value of an exact histogram (latency, hops, distance: ``steps + 1`` values
#: each): its int64 count, ``bincount``'s copy as it grows, its entry in the summary's list
HIST_VALUE_BYTES = 8 + 8 + 36
#: HDF5's chunk cache, 1 MiB per open column
H5_CACHE = 16 << 20


def estimate_analyze(
    traces: list[dict], chunk_rows: int, stretch: bool, paths: list[str] | None = None
) -> Estimate:
    """Memory of ``mpinet analyze`` from the traces' root attributes alone.

    Parameters
    ----------
    traces : list of dict
        The root attributes of each trace read (two with ``--compare``).
    chunk_rows : int
        Rows read per block.
    stretch : bool
        Count the exact-distance tables stretch needs (where it is computed at all).
    paths : list of str, optional
        The traces' paths: a file network is looked for as ``analyze`` does
        (:func:`mpinet.analysis.network.rebuild`: the absolute path the run read first).
    """
    est = Estimate("analyze " + " and ".join(str(a.get("topology")) for a in traces))
    work = 0
    for i, attrs in enumerate(traces):
        try:
            topo, _why = rebuild(attrs, paths[i] if paths else "")
        except MpinetError:
            topo = None  # summarize skips stretch and says why
        degree = int(attrs.get("degree") or (topo.degree if topo is not None else 1))
        steps = attrs.get("steps")
        steps = steps if isinstance(steps, int) and steps >= 0 else 0
        est.parts["working arrays"] = max(
            est.parts.get("working arrays", 0), memory_bound(chunk_rows, degree)
        )
        est.add("histograms", 3 * HIST_VALUE_BYTES * (steps + 1))
        if stretch and topo is not None and "collective" not in attrs:
            est.add("exact distances (stretch)", stretch_tables(topo, None, STRETCH_NODE_LIMIT))
        work += int(attrs.get("packets") or 0)
    est.add("HDF5 chunk cache", H5_CACHE)
    est.work, est.work_unit = float(work), "packets read"
    return base(est)


def plan_analyze(
    paths: list[str | None], chunk_rows: int, stretch: bool
) -> tuple[bool, str | None]:
    """Check ``mpinet analyze`` before a row is read; degrade before refusing.

    When the exact-distance tables for stretch are what does not fit, stretch is
    skipped with the reason (as ``--no-stretch`` would); when the rest does not fit
    either (the exact histograms grow with the trace's steps), the analysis is refused
    in one line.

    Returns
    -------
    stretch : bool
        Whether stretch may be computed.
    skipped : str or None
        Why stretch is skipped, when the plan turned it off.
    """
    traces, read = [], []
    for path in paths:
        if path is not None:
            with open_trace(path) as tr:
                traces.append(tr.attrs)
            read.append(path)
    ways = "a smaller --chunk-rows, --no-stretch, or a trace of fewer steps"
    try:
        check(lambda r: estimate_analyze(traces, chunk_rows, stretch, read), 1, 1, smaller=ways)
        return stretch, None
    except ResourceError:
        if not stretch:
            raise
        need = estimate_analyze(traces, chunk_rows, True, read).parts.get(
            "exact distances (stretch)"
        )
        if not need:
            raise
        check(lambda r: estimate_analyze(traces, chunk_rows, False, read), 1, 1, smaller=ways)
        return False, (
            f"its exact-distance tables ({size_text(need)}) would not fit in the "
            f"{size_text(available_memory())} available"
        )


# -- export -----------------------------------------------------------------------------
def estimate_export(topo: Topology, fmt: str) -> Estimate:
    """Memory of ``mpinet export`` on rank 0 (one chunk's text) and its work (bytes)."""
    est = Estimate(f"export of {describe(topo)} as {fmt}")
    est.add("chunk of text", export.estimate_memory(topo, fmt))
    est.work, est.work_unit = float(export.estimate_bytes(topo, fmt)), "bytes written"
    return base(est)


def plan_export(topo: Topology, fmt: str, size: int = 1, ranks_here: int | None = None) -> Estimate:
    """Check ``mpinet export``: its size (:func:`mpinet.topology.export.check_size`, 2 GiB),
    then one chunk's memory on rank 0 next to the other ranks here."""
    export.check_size(topo, fmt)
    return check(lambda r: estimate_export(topo, fmt), size, ranks_here, serial=True)


def seconds(est: Estimate) -> float:
    """The time an export should take, from its estimate (bytes written)."""
    return est.work * export.SECONDS_PER_BYTE


__all__ = ["estimate_analyze", "estimate_export", "plan_analyze", "plan_export", "seconds"]
