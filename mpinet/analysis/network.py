"""The run's network, rebuilt for a trace's stretch (:mod:`.summary`) and heat map.

A file network must be the very file the run read: its sha256 (``network_sha256``) is
compared wherever the file is looked for (:func:`rebuild`).
"""

from __future__ import annotations

import os
from typing import Any

from mpinet.errors import MpinetError
from mpinet.netfile import FORMATS, load_topology
from mpinet.routing import exact_distance

#: networks up to this many nodes get exact stretch from BFS tables (as ``mpinet run``)
STRETCH_NODE_LIMIT = 4_000_000
_CLOSED_FORM_FAMILIES = ("fccn", "ccc", "hypercube")


def rebuild(attrs: dict, trace_path: str = "") -> tuple[Any, str | None]:
    """The run's network, rebuilt, or (None, why it cannot be: stretch is then skipped).

    A file network is the file whose sha256 the trace stores: first at the absolute path
    the run read (``network_path``, layout 1.2), then at the spec's path as given (relative
    to the current directory, as before), then relative to the trace's directory.
    """
    spec = attrs.get("topology")
    if not spec:
        return None, "the trace names no topology"
    digest = attrs.get("network_sha256")
    if not digest:
        try:
            return load_topology(str(spec)), None
        except MpinetError as exc:
            return None, f"the trace's topology {spec} cannot be rebuilt ({exc})"
    seen = []
    for cand, path in _network_specs(str(spec), attrs, trace_path):
        if path and not os.path.isfile(path):
            seen.append(f"no file {path}")
            continue
        try:
            topo = load_topology(cand)
        except MpinetError as exc:
            text = " ".join(str(exc).split())
            seen.append(f"{path or cand} unreadable ({text[:120]})")
            continue
        if getattr(topo, "file_info", {}).get("sha256") == str(digest):
            return topo, None
        seen.append(f"{path or cand} has changed (another sha256)")
    return None, f"the network file is missing or changed since the run: {'; '.join(seen)}"


def _network_specs(spec: str, attrs: dict, trace_path: str) -> list[tuple[str, str]]:
    """Where a file network may be now: ``(file:FORMAT:PATH, PATH)``, most exact first."""
    fmt, path = None, ""
    if spec.lower().startswith("file:"):  # file:PATH or file:FORMAT:PATH
        head, sep, tail = spec[5:].partition(":")
        fmt, path = (head.lower(), tail) if sep and head.lower() in FORMATS else (None, spec[5:])
    fmt = attrs.get("network_format") or fmt
    pre = f"file:{fmt}:" if fmt in FORMATS else "file:"
    out = []
    if isinstance(attrs.get("network_path"), str) and attrs["network_path"]:
        out.append(attrs["network_path"])
    if path:
        out.append(os.path.abspath(path))
        if not os.path.isabs(path) and trace_path:
            out.append(os.path.join(os.path.dirname(os.path.abspath(trace_path)), path))
    if not out:
        return [(spec, "")]
    return [(pre + p, p) for p in dict.fromkeys(out)]


def distance_for(topo: Any, why: str | None = None) -> tuple[Any, str | None]:
    """(distance function, None) or (None, reason it is skipped)."""
    if topo is None:
        return None, why or "the trace's topology cannot be rebuilt"
    if topo.family not in _CLOSED_FORM_FAMILIES and topo.num_nodes > STRETCH_NODE_LIMIT:
        return None, (
            f"{topo.spec} has {topo.num_nodes:,} nodes > {STRETCH_NODE_LIMIT:,} "
            "and no closed-form distance (BFS tables would not fit)"
        )
    try:
        return exact_distance(topo), None
    except MpinetError as exc:
        return None, f"exact distances unavailable: {exc}"
