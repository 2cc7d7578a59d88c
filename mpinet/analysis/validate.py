"""Checks of a trace's values and tables against each other, for :mod:`.summary`.

Damaged values are refused with one line naming the dataset and the row
(:class:`~mpinet.errors.CorruptTraceError`) before they can surface as an ``IndexError`` in a
table lookup or a histogram too big to allocate; :func:`consistency` compares the tables'
totals (``mpinet analyze`` exits 1 when one disagrees).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.errors import CorruptTraceError


def in_range(tr: Any, name: str, a: np.ndarray, lo: int, hi: int | None, start: int) -> None:
    """Values of column ``name`` outside ``[lo, hi]`` mean damage: say where, one line.

    (Damaged values would otherwise surface as an IndexError in a table lookup, or as a
    histogram too big to allocate.)
    """
    if a.size == 0:
        return
    bad = a < lo if hi is None else (a < lo) | (a > hi)
    if bad.any():
        i = int(np.argmax(bad.reshape(len(a), -1).any(axis=1)))
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi:,}]"
        raise CorruptTraceError(
            f"trace {tr.path}: dataset {name} row {start + i:,} holds "
            f"{a.reshape(len(a), -1)[i].tolist()}, outside the valid range {rng}; "
            "the trace is damaged"
        )


def value_limits(tr: Any, attrs: dict, topo: Any) -> tuple[int | None, int]:
    """(nodes or None, the largest step number a column may hold)."""
    nodes = attrs.get("nodes") or (topo.num_nodes if topo is not None else None)
    steps = attrs.get("steps")
    if not isinstance(steps, int) or steps < 0:
        steps = tr.nrows("steps") if "steps" in tr.tables else 0
    return (int(nodes) if isinstance(nodes, int) and nodes > 0 else None), int(steps)


def consistency(s: dict) -> list[dict[str, Any]]:
    """Cross-checks between the trace's own tables (each ``{name, expected, measured, ok}``)."""
    if s["kind"] != "unicast":  # a collective: its /hops rows, one per transmission
        ht = s.get("hops_table")
        total = s["collective"]["transmissions"]["total"]
        return [] if ht is None else [_check("/hops rows = transmissions", total, ht["rows"])]
    out = []

    def add(name: str, expected: Any, measured: Any) -> None:
        out.append(
            {"name": name, "expected": expected, "measured": measured, "ok": expected == measured}
        )

    links = s["links"]
    if links is not None:
        # every packet's hops, delivered or not: a run stopped at max_steps or by a deadlock
        # has packets in flight whose hops are on the links too
        add("hops of all packets = link-load total", s["packets"]["hops"], links["all"]["total"])
        add(
            "transmissions = link-load total",
            s["steps"]["transmissions"]["total"],
            links["all"]["total"],
        )
    ht = s.get("hops_table")
    if ht is not None:
        add("/hops rows = transmissions", s["steps"]["transmissions"]["total"], ht["rows"])
    if ht is not None and links is not None:
        per_port = list(links["per_port_total"].values())
        pad = ht["per_port"] + [0] * (len(per_port) - len(ht["per_port"]))
        add("/hops per port = link load per port", per_port, pad)
    return out


def _check(name: str, expected: Any, measured: Any) -> dict[str, Any]:
    return {"name": name, "expected": expected, "measured": measured, "ok": expected == measured}
