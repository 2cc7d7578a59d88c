"""Human-readable tables of :func:`~mpinet.analysis.summarize` and `compare`."""

from __future__ import annotations

from typing import Any

from mpinet.analysis.switching import describe
from mpinet.values import label_rows

#: root attributes shown first, in this order (the rest follow under "attributes")
_RUN_KEYS = (
    "topology",
    "nodes",
    "degree",
    "workload",
    "router",
    "model",
    "order",
    "seed",
    "mpi_size",
    "steps",
    "trace_level",
)


def _num(v: Any, digits: int = 4) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}" if not v.is_integer() else f"{v:g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _dist(d: dict, unit: str) -> str:
    if not d["count"]:
        return "no delivered packets"
    return (
        f"mean {d['mean']:.3f}  p50 {d['p50']}  p99 {d['p99']}  max {d['max']} {unit}"
        f"  ({d['count']:,} packets)"
    )


def _stretch(st: dict) -> str:
    if st["skipped"]:
        return f"skipped: {st['skipped']}"
    if not st["packets"]:
        return "no packet moved"
    return (
        f"mean {st['mean']:.4f}  max {st['max']:.3f}  shortest "
        f"{100 * st['fraction_shortest']:.1f}%  excess {st['excess_hops']:,} hops"
        " (vs exact distance)"
    )


def _steps_rows(st: dict, unit: str = "packets") -> list[tuple[str, str]]:
    if not st["count"]:
        return []
    tr, fl = st["transmissions"], st["in_flight"]
    what = " flits" if unit == "flits" else ""
    rows = [
        (
            "transmissions",
            f"{tr['total']:,}{what} in all, mean {tr['mean']:.1f} per step,"
            f" max {tr['max']:,} in step {tr['max_step']}",
        )
    ]
    if fl is not None:
        rows.append(
            (
                "in flight",
                f"mean {fl['mean']:.1f} after a step, max {fl['max']:,}"
                f" after step {fl['max_step']}",
            )
        )
    return rows


def _load_rows(ln: dict, spec: str) -> list[tuple[str, str]]:
    rows = []
    unit = "flits, " if ln.get("unit", "").startswith("flits") else ""
    for cls, c in {**ln["classes"], "all links": ln["all"]}.items():
        if not c["links"]:
            continue
        rows.append(
            (
                f"load {cls}",
                f"max {c['max']:,}  mean {c['mean']:.2f}  max/mean {_num(c['max_over_mean'], 2)}"
                f"  gini {c['gini']:.3f}  ({unit}{c['links']:,} directed links)",
            )
        )
    if ln["class_mean_ratio"] is not None:
        means = ", ".join(
            f"{k} {c['mean']:.2f}" for k, c in ln["classes"].items() if c["mean"] is not None
        )
        note = ""
        if spec.startswith("ms:"):
            note = "  (paper 004 Cor. 3.3)"
        rows.append(
            (
                "load balance",
                f"class means within x{ln['class_mean_ratio']:.3f} ({means}){note}",
            )
        )
    return rows


def format_summary(s: dict, *, all_attrs: bool = True) -> str:
    """The summary as aligned ``key  value`` lines."""
    a = s["attrs"]
    rows: list[tuple[str, str]] = [("trace", s["path"])]
    rows.append(
        (
            "network",
            f"{a.get('topology')} ({_num(a.get('nodes'))} nodes, degree "
            f"{a.get('degree')}) on {a.get('mpi_size')} rank(s)",
        )
    )
    if s["kind"] == "collective":
        c = s["collective"]
        rows.append(("collective", f"{c['algorithm']} ({a.get('model')})"))
        rows.append(("steps", f"{_num(c['steps'])} ({c['step_rows']:,} rows in /steps)"))
        t, i, d = c["transmissions"], c["informed"], c["duplicates"]
        rows.append(
            ("transmissions", f"{t['total']:,}  (max {t['max']:,} in step {t['max_step']})")
        )
        rows.append(("informed", f"{i['total']:,}  (max {i['max']:,} in step {i['max_step']})"))
        per = " ".join(str(x) for x in c["informed_per_step"][:20])
        more = (
            " ..." if len(c["informed_per_step"]) > 20 or c["informed_per_step_truncated"] else ""
        )
        rows.append(("informed per step", per + more))
        rows.append(("duplicates", f"{d['total']:,}  (max {d['max']:,} in step {d['max_step']})"))
        if s.get("hops_table") is not None:
            rows.append(("/hops table", f"{s['hops_table']['rows']:,} rows (one per transmission)"))
    else:
        pk, sw = s["packets"], s.get("switching")
        order = a.get("order") if sw is None else "oldest-first"  # the flit engine's, always
        rows.append(
            (
                "workload",
                f"{a.get('workload')}, router {a.get('router')}, model {a.get('model')} ({order})",
            )
        )
        if sw is not None:  # a packet trace's output stays what it was
            rows.append(("switching", describe(sw)))
            units = "flits: link loads, transmissions, cross-rank; heads: hops, /hops rows"
            rows.append(("counted in", units))
        rows.append(
            (
                "packets",
                f"{pk['delivered']:,} of {pk['total']:,} delivered"
                f" ({pk['undelivered']:,} still in flight)",
            )
        )
        rows.append(
            (
                "steps",
                f"{_num(s['steps_run'])} run, last delivery in step {_num(s['completion_step'])}",
            )
        )
        rows.append(("latency", _dist(s["latency"], "steps")))
        rows.append(("hops", _dist(s["hops"], "hops")))
        if s.get("distance"):
            rows.append(("exact distance", _dist(s["distance"], "hops")))
        rows.append(("stretch", _stretch(s["stretch"])))
        rows.extend(_steps_rows(s["steps"], s.get("load_unit") or "packets"))
        if s["links"] is not None:
            rows.extend(_load_rows(s["links"], str(a.get("topology") or "")))
        cr = s["cross_rank"]
        if cr["fraction"] is not None:
            rows.append(
                (
                    "cross-rank",
                    f"{100 * cr['fraction']:.1f}% of {cr['transmissions']:,} "
                    + ("flits sent" if sw is not None else "hops"),
                )
            )
        if s["hops_table"] is not None:
            rows.append(("/hops table", f"{s['hops_table']['rows']:,} rows"))
    bad = [c for c in s["checks"] if not c.get("ok")]
    rows.append(
        (
            "checks",
            f"all {len(s['checks'])} passed"
            if not bad and s["checks"]
            else "none stored"
            if not s["checks"]
            else f"{len(bad)} FAILED",
        )
    )
    bad_cons = [c for c in s["consistency"] if not c["ok"]]
    if s["consistency"]:
        rows.append(
            ("consistency", "tables agree" if not bad_cons else f"{len(bad_cons)} disagreement(s)")
        )
    out = label_rows(rows)
    for c in s["checks"]:
        mark = "ok  " if c.get("ok") else "FAIL"
        extra = f" ({c['detail']})" if c.get("detail") else ""
        out.append(
            f"  {mark} {c.get('name')}: expected {c.get('expected')}, measured "
            f"{c.get('measured')}{extra}"
        )
    for c in bad_cons:
        out.append(f"  FAIL {c['name']}: {c['expected']} vs {c['measured']}")
    if all_attrs:
        out.append("attributes:")
        keys = [k for k in _RUN_KEYS if k in a] + [k for k in a if k not in _RUN_KEYS]
        out.extend(label_rows([(k, a[k]) for k in keys], indent="  "))
    return "\n".join(out) + "\n"


def format_compare(c: dict) -> str:
    """The comparison as a four-column table (key, A, B, delta B - A)."""
    rows = [("key", "A", "B", "delta (B - A)")]
    for r in c["rows"]:
        if r["key"] in ("chunk_rows", "memory_bound_bytes"):
            continue
        if (r["key"].startswith("attrs.") or r["key"].endswith(".unit")) and r["a"] == r["b"]:
            continue
        d = r["delta"]
        ds = d if isinstance(d, str) else (f"{d:+.4g}" if isinstance(d, float) else f"{d:+,}")
        rows.append((r["key"], _num(r["a"]), _num(r["b"]), ds))
    w = [max(len(row[i]) for row in rows) for i in range(4)]
    out = [f"A = {c['a']}", f"B = {c['b']}"]
    out += [f"{k:<{w[0]}}  {x:>{w[1]}}  {y:>{w[2]}}  {z:>{w[3]}}" for k, x, y, z in rows]
    return "\n".join(out) + "\n"
