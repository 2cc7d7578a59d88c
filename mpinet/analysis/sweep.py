"""Sweep files (``mpinet sweep --out``): recognise, read, print and plot them, without MPI.

:func:`is_sweep` tells a sweep file from a trace (root attribute ``kind``);
:func:`read_sweep` returns the same dict ``mpinet sweep --json`` prints (with
the histograms under ``_hists``); :func:`format_sweep` renders the table;
:func:`mpinet.analysis.sweep_plot.plot_sweep` draws latency against offered load and
accepted against offered load, each with the channel-load bound, as PNG and SVG (apart,
since it imports matplotlib).
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

import numpy as np

from mpinet.errors import TraceError
from mpinet.values import label_rows

HISTOGRAMS = ("latency", "source_queue", "network", "hops")


def is_sweep(path: str) -> bool:
    """Whether ``path`` is an HDF5 file written by ``mpinet sweep`` (False if unreadable)."""
    import h5py  # here, not at the top: `mpinet sweep` without --out reads no file

    try:
        with h5py.File(path, "r") as f:
            kind = f.attrs.get("kind", "")
    except Exception:
        return False
    return (kind.decode() if isinstance(kind, bytes) else str(kind)) == "sweep"


def read_sweep(path: str) -> dict:
    """The sweep in ``path`` as a dict (points sorted by offered load)."""

    def text(v: Any) -> Any:
        return v.decode() if isinstance(v, bytes) else v

    import h5py  # as is_sweep's

    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise TraceError(f"cannot read sweep file {path}: {exc}") from None
    with f:
        a = {k: text(v) for k, v in f.attrs.items()}
        if a.get("kind") != "sweep":
            raise TraceError(f"{path} is not a sweep file (no root attribute kind = 'sweep')")
        major = str(a.get("layout_version", "0")).split(".")[0]
        if major != "1":
            raise TraceError(f"{path}: sweep layout {a.get('layout_version')} is not 1.x")
        res: dict[str, Any] = {
            k: a[k].item() if isinstance(a[k], np.generic) else a[k]
            for k in (
                "spec",
                "nodes",
                "ranks",
                "router",
                "model",
                "order",
                "buffer",
                "buffer_classes",
                "pattern",
                "seed",
                "zero_load_latency",
                "command_line",
                "seconds",
            )  # fmt: skip
        }
        res["port_classes"] = [text(c) for c in a["port_classes"]]
        for k in ("settings", "bound", "saturation"):
            res[k] = json.loads(a[k])
        if "switching" in a:  # a flit sweep (absent from packet sweeps and older files)
            res["switching"] = json.loads(a["switching"])
        points, hists = [], []
        for name in sorted(f["loads"]):
            g = f["loads"][name]
            points.append(json.loads(text(g.attrs["point"])))
            hists.append({h: g[h][()] for h in HISTOGRAMS})
        res["points"], res["_hists"] = points, hists
        res["path"] = os.path.abspath(path)
    return res


def _f(x: Any, fmt: str = ".4f") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _injection_words(settings: dict) -> str:
    # sweeps written before on_off sweeps existed carry no "injection": they were Bernoulli
    inj = settings.get("injection", {})
    words = "on_off injection" if inj.get("process") == "on_off" else "Bernoulli injection"
    return words + (", loads in flits" if inj.get("rate_unit") == "flits" else "")


def format_sweep(res: dict) -> str:
    """The sweep as text: what ran, the bound, one row per load, the saturation."""
    s, b, sat = res["settings"], res["bound"], res["saturation"]
    z = res["zero_load_latency"]
    sw = res.get("switching")
    buf = f"buffer {res['buffer']} per input port" if res["buffer"] else "unbounded buffers"
    if sw is not None:
        buf = (f"{sw['mode']}: {sw['flits']} flit(s) per packet, {sw['vcs']} VC(s) of "
               f"{sw['vc_buffer']} flits per link, vc_policy {sw['vc_policy']}")  # fmt: skip
    worst = max(b["per_class"].items(), key=lambda kv: kv[1]["max_load"])
    how = "exact" if b["exact"] else "estimate"
    head = [
        ("network", f"{res['spec']} ({res['nodes']:,} nodes) on {res['ranks']} rank(s)"),
        ("traffic", f"{res['pattern']}, {_injection_words(s)}, seed {res['seed']}"),
        ("router / model", f"{res['router']} / {res['model']} ({res['order']}), {buf}"),
        (
            "windows",
            f"warm-up {s['warmup']:,}, measure {s['measure']:,} steps; injection "
            f"until {s['tail']:,} after; drain cap {s['drain']:,}",
        ),  # fmt: skip
        ("bound", f"{b['ideal']:.4f} packets/node/step, limited by {b['limited_by']}"),
        (
            "channel load",
            f"max {worst[1]['max_load']:.4f} per unit load on {worst[0]} links "
            f"(channel bound {b['channel']:.4f}); {how}, {b['method']}, "
            f"{b['routes']:,} routes",
        ),  # fmt: skip
        (
            "zero-load",
            f"{z:.2f} steps (" + (sw["zero_load_form"] if sw else "mean route length") + ")",
        ),  # fmt: skip
        (
            "saturated if",
            f"accepted < {1 - s['accept_tol']:.2f} x injected, latency > "
            f"{s['latency_factor']:g} x {z:.2f} = {s['latency_factor'] * z:.1f}, "
            "an overloaded link (one-port: node) busy every step, or in flight at the cap"
            + (
                "; deadlocked if the run deadlocks (a wait-for cycle of full buffers)"
                if res["buffer"]
                else "; deadlocked if the run deadlocks (a wait-for cycle of (node, port, VC))"
                if sw
                else ""
            ),
        ),  # fmt: skip
    ]
    if sw is not None:  # the flit engine's bound: a link carries one flit (c flits) a step
        head.insert(5, ("flit bound", f"channel bound {b['channel']:.4f} = packet channel "
                        f"bound {b['packet_channel']:.4f} / L = {sw['flits']} (a link moves "
                        "flits; loads in packets/node/step, 'acc flits' in flits)"))  # fmt: skip
    if b["model_bound"] is not None:
        head.insert(5, ("model bound", f"{b['model_bound']:.4f} ({b['model']})"))
    head += [("note", n) for n in b.get("notes", [])]
    out: list[str] = []
    classes = res["port_classes"]
    cols = ["offered", "injected", "accepted", "lat mean", "p50", "p99", "queue", "network",
            "hops", *[f"util {c}"[:14] for c in classes]]  # fmt: skip
    nodes = any(pt.get("node_utilisation") is not None for pt in res["points"])
    cols += ["util node"] * nodes + ["acc flits"] * bool(sw) + ["in flight", "verdict"]
    rows = []
    for pt in res["points"]:
        lat = pt["latency"]
        verdict = _verdict(pt)
        rows.append([
            f"{pt['offered']:.4f}", f"{pt['injected']:.4f}", f"{pt['accepted']:.4f}",
            _f(lat["mean"], ".2f"), _f(lat["p50"], "g"), _f(lat["p99"], "g"),
            _f(pt["source_queue"]["mean"], ".2f"), _f(pt["network"]["mean"], ".2f"),
            _f(pt["hops"]["mean"], ".2f"),
            *[f"{pt['utilisation'][c]['max']:.3f}" for c in classes],
            *[_f(pt.get("node_utilisation"), ".3f")] * nodes,
            *[_f(pt.get("accepted_flits"), ".4f")] * bool(sw),
            f"{pt['in_flight_at_cap']:,}", verdict,
        ])  # fmt: skip
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c)
              for i, c in enumerate(cols)]  # fmt: skip
    out.append("")
    out.append("  ".join(c.rjust(w) if i < len(cols) - 1 else c
                         for i, (c, w) in enumerate(zip(cols, widths, strict=True))))  # fmt: skip
    for r in rows:
        out.append("  ".join(v.rjust(w) if i < len(r) - 1 else v
                             for i, (v, w) in enumerate(zip(r, widths, strict=True))))  # fmt: skip
    tail = [("saturation", saturation_text(res))]
    dead = [pt for pt in res["points"] if pt.get("deadlocked")]
    if dead:
        tail.append(("deadlocked", f"{len(dead)} load(s), from {dead[0]['offered']:.4f} (each "
                     "run stopped at its deadlock: its numbers are not a throughput; see the "
                     "checks)"))  # fmt: skip
    tail.append(("throughput", _throughput(sat, sw)))
    failed = [(pt["offered"], c) for pt in res["points"] for c in pt["checks"] if not c["ok"]]
    tail.append(("checks", f"{len(failed)} FAILED" if failed else "all passed at every load"))
    after_checks = len(head) + len(tail)
    cpu = f" ({res['cpu_seconds']:.1f} s CPU on the busiest rank)" if "cpu_seconds" in res else ""
    tail.append(("time", f"{res['seconds']:.1f} s{cpu}"))
    if res.get("out") or res.get("path"):
        tail.append(("file", res.get("out") or res.get("path")))
    elif res.get("out_error"):
        tail.append(("file", "NOT WRITTEN (see the error on stderr)"))
    # one alignment for the rows above and below the table
    lines = label_rows(head + tail)
    fails = [f"  FAILED at load {rate:.4f}: {c['name']}: {c['detail']}" for rate, c in failed]
    out = lines[: len(head)] + out + [""] + lines[len(head) : after_checks] + fails
    return "\n".join(out + lines[after_checks:]) + "\n"


def saturation_text(res: dict) -> str:
    """The saturation line: the bracket measured, or "not found" and what was measured.

    A sweep file written before the bracket needed both ends (``why`` absent) is read
    the same way: a bracket whose lower end was not a stable load measured is not shown.
    """
    sat, pts = res["saturation"], res["points"]
    first = next((pt for pt in pts if not pt["stable"]), None)
    below = [pt for pt in pts if pt["stable"] and first and pt["offered"] < first["offered"]]
    if sat["found"] and below:
        lo, hi = sat["bracket"]
        what = (
            "deadlocked: the network deadlocks there, it does not saturate"
            if sat["criteria"] == ["deadlocked"]
            else f"saturated by {', '.join(sat['criteria'])}"
        )
        return (
            f"load {sat['load']:.4f} ({lo:.4f} stable, {hi:.4f} {what}) = "
            f"{100 * sat['load_fraction_of_bound']:.1f}% of the bound"
        )
    if first is None:
        top = max((pt["offered"] for pt in pts), default=None)
        if top is None:
            return "not found: no load was measured"
        return (
            f"not found: none up to load {top:.4f} (every load measured was stable): "
            "saturation is above it"
        )
    crit = first["saturated_by"]
    what = "deadlocked" if crit == ["deadlocked"] else f"saturated by {', '.join(crit)}"
    return (
        f"not found: no stable load was measured below {first['offered']:.4f} ({what}), so "
        "there is no bracket: saturation is somewhere below it; measure lower loads"
    )


def _throughput(sat: dict, sw: dict | None) -> str:
    """The throughput line: the highest accepted rate of a stable load, if one was measured."""
    peak = sat.get("peak_accepted")
    tail = "; no load delivered without deadlocking" if peak is None else (
        f"; peak accepted {peak:.4f}")  # fmt: skip
    best = sat["throughput"]
    if best is None or not any_stable(sat):
        return "none sustained: no load measured was stable" + tail
    return (
        f"{best:.4f} sustained (highest accepted of a stable load) = "
        f"{100 * sat['throughput_fraction_of_bound']:.1f}% of the bound"
        + tail
        + (f"; in flits: {best * sw['flits']:.4f} sustained" if sw else "")
    )


def any_stable(sat: dict) -> bool:
    """Whether the sweep measured a stable load (files before ``highest_stable``: assume so
    where the throughput is positive)."""
    if "highest_stable" in sat:
        return sat["highest_stable"] is not None
    return bool(sat.get("throughput"))


def _verdict(pt: dict) -> str:
    """A load's verdict: stable, SATURATED: criteria, or DEADLOCKED in step t."""
    if pt["stable"]:
        return "stable"
    if pt.get("deadlocked"):
        return f"DEADLOCKED in step {pt['deadlock_step']:,}"
    return "SATURATED: " + ",".join(pt["saturated_by"])


def sweep_stem(path: str | None, spec: str, router: str) -> str:
    """The stem of a sweep's figures: its file's, else ``sweep_<spec>_<router>``."""
    if path:
        return os.path.splitext(os.path.basename(path))[0]
    return "sweep_" + re.sub(r"[^A-Za-z0-9]+", "-", f"{spec}_{router}").strip("-")


def figure_names(stem: str) -> list[str]:
    """The figures (no extension) :func:`~mpinet.analysis.sweep_plot.plot_sweep` draws."""
    return [f"{stem}_latency", f"{stem}_accepted"]
