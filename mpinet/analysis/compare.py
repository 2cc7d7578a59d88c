"""Two trace summaries side by side (``mpinet analyze A.h5 --compare B.h5``)."""

from __future__ import annotations

from typing import Any

#: keys whose values are lists or per-trace details, left out of the side-by-side rows
_NOT_COMPARED = (
    "histogram",
    "informed_per_step",
    "checks",
    "consistency",
    "per_port_total",
    "values",
    "counts",
)
#: keys that differ between any two runs and say nothing about them
_SKIP = ("attrs.start_time", "attrs.end_time", "path", "attrs.command_line", "attrs.job")


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    """Nested dict as ``{"a.b.c": scalar}``, lists and :data:`_NOT_COMPARED` keys left out."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if k in _NOT_COMPARED:
            continue
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        elif v is None or isinstance(v, (int, float, str, bool)):
            out[key] = v
    return out


def compare(a: dict, b: dict) -> dict[str, Any]:
    """Two summaries (:func:`~mpinet.analysis.summarize`) side by side.

    Parameters
    ----------
    a, b : dict
        Summaries; ``b`` is compared against ``a``.

    Returns
    -------
    dict
        ``{"a": path, "b": path, "rows": [{key, a, b, delta}, ...]}`` over the union of the
        summaries' scalar keys (dotted paths such as ``latency.p99``), in ``a``'s order.
        ``delta`` is ``b - a`` for numbers, else ``"same"`` or ``"differs"``.
    """
    fa, fb = _flatten(a), _flatten(b)
    rows = []
    for k in list(dict.fromkeys([*fa, *fb])):
        if k in _SKIP:
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
