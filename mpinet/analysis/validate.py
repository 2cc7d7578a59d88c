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


#: ids of packets in flight kept for the per-port check of a flit trace (8 bytes each);
#: beyond it the check uses the bounds that need no ids
IN_FLIGHT_IDS_LIMIT = 1 << 22


class FlitPackets:
    """What a flit trace's checks need from ``/packets``, gathered block by block.

    The flit engine's rules (docs/switching.md, ``mpinet/engine/flit/kernels.py``): a
    packet's ``hops`` are its head's; every hop of a delivered packet carried all its L
    flits, a packet still in flight crossed each of its head's links with 1 to L flits.
    A link moves at most ``c`` flits per step (``capacities``), a head at most one link,
    so a delivered packet of ``h >= 1`` hops took at least ``h + ceil(L / c) - 1`` steps
    (its tail ``ceil(L / c) - 1`` steps behind the head on the last link) under wormhole
    and cut-through, and ``h x ceil(L / c)`` under store-and-forward (each node receives
    the whole packet before it sends the head on), ``c`` being the largest capacity.
    """

    def __init__(self, sw: dict) -> None:
        self.sw = sw
        self.flits = int(sw["flits"])
        caps = sw.get("capacities")
        self.per_link = None if not caps else -(-self.flits // max(caps))  # ceil(L / c)
        self.hops_delivered = 0
        self.too_fast = 0
        self.first_too_fast: int | None = None
        self.ids: list[np.ndarray] | None = []
        self.n_ids = 0

    def least(self, h: np.ndarray) -> np.ndarray:
        """The least latency of delivered packets of ``h`` hops (0 for ``h = 0``)."""
        k = self.per_link
        if self.sw["mode"] == "store-and-forward":
            return h * k
        return np.where(h > 0, h + k - 1, 0)

    def add(self, ch: dict[str, np.ndarray]) -> None:
        done = ch["deliver_step"] >= 0
        self.hops_delivered += int(ch["hops"][done].sum(dtype=np.int64))
        if self.per_link is not None and done.any():
            lat = ch["deliver_step"][done] - ch["inject_step"][done]
            fast = lat < self.least(ch["hops"][done])
            if fast.any():
                self.too_fast += int(fast.sum())
                if self.first_too_fast is None:
                    self.first_too_fast = int(ch["id"][done][fast][0])
        late = ch["id"][~done]
        if self.ids is not None and late.size:
            self.n_ids += late.size
            if self.n_ids > IN_FLIGHT_IDS_LIMIT:
                self.ids = None
            else:
                self.ids.append(late.astype(np.int64))

    def result(self) -> dict[str, Any]:
        ids = None
        if self.ids is not None:
            ids = np.sort(np.concatenate([np.zeros(0, np.int64), *self.ids]))
        return {
            "hops_delivered": self.hops_delivered,
            "latency_checked": self.per_link is not None,
            "faster_than_switching": self.too_fast,
            "first_faster_packet": self.first_too_fast,
            "in_flight_ids": ids,
        }


def consistency(s: dict) -> list[dict[str, Any]]:
    """Cross-checks between the trace's own tables (each ``{name, expected, measured, ok}``)."""
    if s.get("switching") is not None:
        return flit_consistency(s)
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


def flit_consistency(s: dict) -> list[dict[str, Any]]:
    """The counterparts of :func:`consistency`'s checks for a trace of the flit engine
    (rules: :class:`FlitPackets`): links and steps count flits, hops and hop rows heads.

    With every packet delivered the link checks are equalities; with packets in flight
    they are the ranges those packets allow (each of their head's hops: 1 to L flits).
    """
    sw, fp = s["switching"], s["flit_packets"]
    flits, all_hops = int(sw["flits"]), s["packets"]["hops"]
    done_hops = fp["hops_delivered"]
    late_hops = all_hops - done_hops  # head hops of the packets still in flight
    out = []
    links, ht = s["links"], s.get("hops_table")
    if links is not None:
        total = links["all"]["total"]
        if not late_hops:
            name = "link-load total = flits x hops of all packets"
            out.append(_check(name, flits * all_hops, total))
        else:
            name = "link-load total = flits x hops (in flight: 1 to flits per hop)"
            out.append(_within(name, [flits * done_hops + late_hops, flits * all_hops], total))
        trans = s["steps"]["transmissions"]["total"]
        out.append(_check("flits sent per step = link-load total", trans, total))
    if ht is not None:
        name = "/hops rows = hops of all packets (one per head hop)"
        out.append(_check(name, all_hops, ht["rows"]))
    if ht is not None and links is not None:
        load = list(links["per_port_total"].values())
        heads = _pad(ht["per_port"], len(load))
        if not late_hops:
            name = "link load per port = flits x /hops per port"
            out.append(_check(name, [flits * h for h in heads], load))
        else:
            late = ht.get("per_port_in_flight")
            late = heads if late is None else _pad(late, len(load))  # unknown: the loosest
            ranges = [[flits * (h - x) + x, flits * h] for h, x in zip(heads, late, strict=False)]
            name = "link load per port = flits x /hops per port (in flight: 1 to flits per hop)"
            out.append(_within(name, ranges, load))
    if fp["latency_checked"]:
        saf = sw["mode"] == "store-and-forward"
        least = "hops x ceil(L/c)" if saf else "hops + ceil(L/c) - 1"
        name = f"no delivered packet faster than {sw['mode']} allows (latency >= {least})"
        c = _check(name, 0, fp["faster_than_switching"])
        if fp["first_faster_packet"] is not None:
            c["detail"] = f"e.g. packet {fp['first_faster_packet']}"
        out.append(c)
    return out


def _pad(counts: list[int], n: int) -> list[int]:
    return counts + [0] * (n - len(counts)) if len(counts) <= n else counts


def _within(name: str, expected: list, measured: Any) -> dict[str, Any]:
    """A range check: ``expected`` is ``[lo, hi]`` or, per port, a list of them."""
    if expected and isinstance(expected[0], list):
        ok = len(expected) == len(measured) and all(
            lo <= m <= hi for (lo, hi), m in zip(expected, measured, strict=True)
        )
    else:
        ok = expected[0] <= measured <= expected[1]
    return {"name": name, "expected": expected, "measured": measured, "ok": ok}
