"""Human-readable tables of :func:`~mpinet.analysis.summarize` and `compare`."""

from __future__ import annotations

from typing import Any

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


def _table(rows: list[tuple[str, str]]) -> list[str]:
    width = max(len(k) for k, _ in rows)
    return [f"{k:<{width}}  {v}" for k, v in rows]


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
    else:
        pk = s["packets"]
        rows.append(
            (
                "workload",
                f"{a.get('workload')}, router {a.get('router')}, model "
                f"{a.get('model')} ({a.get('order')})",
            )
        )
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
        st = s["stretch"]
        if st["skipped"]:
            rows.append(("stretch", f"skipped: {st['skipped']}"))
        elif st["packets"]:
            rows.append(
                (
                    "stretch",
                    f"mean {st['mean']:.4f}  max {st['max']:.3f}  shortest "
                    f"{100 * st['fraction_shortest']:.1f}% "
                    "(vs exact distance)",
                )
            )
        else:
            rows.append(("stretch", "no packet moved"))
        tr, fl = s["steps"]["transmissions"], s["steps"]["in_flight"]
        if s["steps"]["count"]:
            rows.append(
                (
                    "transmissions",
                    f"{tr['total']:,} in all, mean {tr['mean']:.1f} per step,"
                    f" max {tr['max']:,} in step {tr['max_step']}",
                )
            )
            rows.append(
                (
                    "in flight",
                    f"mean {fl['mean']:.1f} after a step, max {fl['max']:,}"
                    f" after step {fl['max_step']}",
                )
            )
        ln = s["links"]
        for cls, c in {**ln["classes"], "all links": ln["all"]}.items():
            if not c["links"]:
                continue
            rows.append(
                (
                    f"load {cls}",
                    f"max {c['max']:,}  mean {c['mean']:.2f}  gini "
                    f"{c['gini']:.3f}  ({c['links']:,} directed links)",
                )
            )
        cr = s["cross_rank"]
        rows.append(("cross-rank", f"{100 * cr['fraction']:.1f}% of {cr['transmissions']:,} hops"))
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
    out = _table(rows)
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
        width = max(len(k) for k in keys)
        out.extend(f"  {k:<{width}}  {a[k]}" for k in keys)
    return "\n".join(out) + "\n"


def format_compare(c: dict) -> str:
    """The comparison as a four-column table (key, A, B, delta B - A)."""
    rows = [("key", "A", "B", "delta (B - A)")]
    for r in c["rows"]:
        if r["key"] in ("chunk_rows", "memory_bound_bytes"):
            continue
        if r["key"].startswith("attrs.") and r["a"] == r["b"]:
            continue
        d = r["delta"]
        ds = d if isinstance(d, str) else (f"{d:+.4g}" if isinstance(d, float) else f"{d:+,}")
        rows.append((r["key"], _num(r["a"]), _num(r["b"]), ds))
    w = [max(len(row[i]) for row in rows) for i in range(4)]
    out = [f"A = {c['a']}", f"B = {c['b']}"]
    out += [f"{k:<{w[0]}}  {x:>{w[1]}}  {y:>{w[2]}}  {z:>{w[3]}}" for k, x, y, z in rows]
    return "\n".join(out) + "\n"
