"""The curves of a sweep file: latency and accepted load against offered load (matplotlib).

Apart from :mod:`mpinet.analysis.sweep`, which reads and prints sweep files without
matplotlib; needs the ``plot`` extra like every figure (:func:`mpinet.analysis.plot.pyplot`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.analysis.plot import pyplot, write_figures
from mpinet.analysis.sweep import saturation_text, sweep_stem


def _stem(res: dict) -> str:
    return sweep_stem(res.get("out") or res.get("path"), res["spec"], res["router"])


def plot_sweep(res: dict, outdir: Any, stem: str | None = None) -> list[str]:
    """Draw ``<stem>_latency`` and ``<stem>_accepted`` (PNG and SVG) into ``outdir``
    (a directory name, or the figures a command reserved: ``mpinet.outputs.figures``)."""
    plt = pyplot()
    stem = stem or _stem(res)
    pts = res["points"]
    x = np.array([p["offered"] for p in pts])
    ok = np.array([p["stable"] for p in pts], dtype=bool)
    b, sat, z = res["bound"], res["saturation"], res["zero_load_latency"]
    title = (f"{res['spec']}, {res['router']}, {res['model']}, {res['pattern']} traffic"
             + (f", buffer {res['buffer']}" if res["buffer"] else ""))  # fmt: skip
    if res.get("switching"):
        sw = res["switching"]
        title += (f", {sw['mode']} L={sw['flits']} V={sw['vcs']} B={sw['vc_buffer']} "
                  f"{sw['vc_policy']}")  # fmt: skip

    def marks(ax: Any) -> None:
        ax.axvline(b["ideal"], color="k", ls="--", lw=1,
                   label=f"bound {b['ideal']:.3f} ({b['limited_by']})")  # fmt: skip
        found = saturation_text(res)
        if not found.startswith("not found"):
            ax.axvline(sat["load"], color="tab:red", ls=":", lw=1.2,
                       label=f"saturation {sat['load']:.3f} "
                             f"({100 * sat['load_fraction_of_bound']:.0f}% of bound)")  # fmt: skip
        else:  # no bracket measured: say so in the legend, draw no line
            first = [p["offered"] for p in pts if not p["stable"]]
            why = (f"no stable load below {min(first):.3f}" if first else
                   f"stable up to {float(x.max()):.3f}" if x.size else "no load")  # fmt: skip
            ax.plot([], [], " ", label=f"saturation not found ({why})")
        ax.set_xlabel("offered load (packets per node per step)")
        ax.set_xlim(0, max(float(x.max()) if x.size else 1.0, b["ideal"]) * 1.05)
        ax.grid(alpha=0.3)

    def latency() -> Any:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        series = [("latency", "mean latency", "tab:blue", "-"),
                  ("network", "network time", "tab:green", "--"),
                  ("source_queue", "source queueing", "tab:orange", ":")]  # fmt: skip
        queued = any(p["source_queue"]["mean"] > 0 for p in pts)
        for key, label, color, ls in series:
            y = np.array([p[key]["mean"] for p in pts], dtype=float)
            if key != "latency" and not queued:  # no source queueing: network = total
                continue
            y = np.where(y > 0, y, np.nan)  # log axis
            ax.plot(x, y, ls, color=color, label=label)
            ax.plot(x[ok], y[ok], "o", color=color, ms=4)
            ax.plot(x[~ok], y[~ok], "o", mfc="none", color=color, ms=5)
        p99 = np.array([p["latency"]["p99"] for p in pts], dtype=float)
        ax.plot(x, p99, "-", color="tab:blue", alpha=0.35, lw=1, label="p99 latency")
        ax.axhline(z, color="0.5", lw=0.8, label=f"zero-load {z:.2f}")
        ax.axhline(res["settings"]["latency_factor"] * z, color="0.5", lw=0.8, ls="-.",
                   label=f"{res['settings']['latency_factor']:g} x zero-load")  # fmt: skip
        ax.set_yscale("log")
        ax.set_ylabel("steps (window packets; open marks: saturated)")
        marks(ax)
        ax.set_title(f"Latency vs offered load\n{title}", fontsize=10)
        ax.legend(fontsize=8, loc="upper left")
        return fig

    def accepted() -> Any:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        acc = np.array([p["accepted"] for p in pts])
        top = max(float(x.max()) if x.size else 1.0, b["ideal"]) * 1.05
        ax.plot([0, top], [0, top], color="0.7", lw=0.8, label="accepted = offered")
        ax.plot(x, acc, "-", color="tab:blue", label="accepted")
        ax.plot(x[ok], acc[ok], "o", color="tab:blue", ms=4)
        ax.plot(x[~ok], acc[~ok], "o", mfc="none", color="tab:blue", ms=5)
        ax.axhline(b["ideal"], color="k", lw=0.8, ls="--")
        ax.set_ylabel("accepted (packets per node per step)")
        ax.set_ylim(0, top)
        marks(ax)
        ax.set_title(f"Accepted vs offered load\n{title}", fontsize=10)
        ax.legend(fontsize=8, loc="upper left")
        return fig

    return write_figures(
        plt, outdir, [(f"{stem}_latency", latency), (f"{stem}_accepted", accepted)]
    )
