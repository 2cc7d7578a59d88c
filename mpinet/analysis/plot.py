"""Plots of a trace summary (matplotlib, PNG and SVG): latency CDF, per-step series, link load.

Needs matplotlib (``pip install "mpinet[plot]"``). Per-step series are read from the trace
in chunks and thinned to at most :data:`MAX_POINTS` points (block maxima), so plotting is
bounded in memory like :func:`~mpinet.analysis.summarize`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mpinet.errors import MpinetError, TraceError

MAX_POINTS = 4000


class PlotError(MpinetError):
    """matplotlib is missing, or the output directory cannot be used."""


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlotError(
            'plotting needs matplotlib: pip install "mpinet[plot]" (or pip install matplotlib)'
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _title(s: dict, what: str) -> str:
    a = s["attrs"]
    run = f"{a.get('topology')}, {a.get('workload')}, {a.get('router')}, {a.get('model')}"
    return f"{what}\n{run}"


def _steps_series(path: str, columns: list[str], chunk_rows: int) -> tuple[np.ndarray, dict]:
    """Step numbers and per-step columns, thinned to MAX_POINTS points by block maxima."""
    from mpinet.trace import open_trace

    with open_trace(path) as tr:
        n = tr.nrows("steps")
        block = max(1, -(-n // MAX_POINTS))
        xs: list[np.ndarray] = []
        ys: dict[str, list[np.ndarray]] = {c: [] for c in columns}
        start = 0
        rows = max(block, (int(chunk_rows) // block) * block)  # whole blocks per chunk
        for ch in tr.iter_chunks("steps", columns, rows):
            m = len(ch[columns[0]])
            idx = np.arange(0, m, block)
            xs.append(start + idx + 1)
            for c in columns:
                ys[c].append(np.maximum.reduceat(ch[c], idx) if m else ch[c])
            start += m
    cat = {c: np.concatenate(v) if v else np.zeros(0) for c, v in ys.items()}
    return (np.concatenate(xs) if xs else np.zeros(0)), cat


def _save(fig: Any, outdir: str, name: str) -> list[str]:
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(outdir, f"{name}.{ext}")
        fig.savefig(p, dpi=120 if ext == "png" else None, bbox_inches="tight")
        paths.append(p)
    return paths


def plot_summary(s: dict, outdir: str, *, chunk_rows: int = 1 << 18) -> list[str]:
    """Write the plots of summary ``s`` into ``outdir`` (created); return the file paths.

    Unicast: ``latency_cdf``, ``steps`` (transmissions and in flight per step),
    ``link_load`` (histogram over existing links). Collective: ``steps`` (transmissions,
    informed, duplicates per step). Each as ``.png`` and ``.svg``.
    """
    plt = _pyplot()
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as exc:
        raise PlotError(f"cannot create plot directory {outdir}: {exc}") from None
    if not os.path.isdir(outdir):
        raise PlotError(f"plot directory {outdir} is not a directory")
    made: list[str] = []
    stem = os.path.splitext(os.path.basename(s["path"]))[0]
    try:
        if s["kind"] == "collective":
            cols = ["transmissions", "informed", "duplicates"]
            x, y = _steps_series(s["path"], cols, chunk_rows)
            fig, ax = plt.subplots(figsize=(7, 4))
            for c in cols:
                ax.plot(x, y[c], marker="o" if len(x) < 60 else None, label=c)
            ax.set_xlabel("step")
            ax.set_ylabel("messages or nodes per step")
            ax.set_title(_title(s, f"{s['collective']['algorithm']} per step"))
            ax.legend()
            made += _save(fig, outdir, f"{stem}_steps")
            plt.close(fig)
            return made

        hist = np.asarray(s["latency"]["histogram"], dtype=np.int64)
        fig, ax = plt.subplots(figsize=(7, 4))
        if hist.sum():
            cdf = np.cumsum(hist) / hist.sum()
            ax.step(np.arange(hist.size), cdf, where="post")
        ax.set_xlabel("latency (steps, deliver - inject)")
        ax.set_ylabel("fraction of delivered packets")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.set_title(_title(s, "latency CDF"))
        made += _save(fig, outdir, f"{stem}_latency_cdf")
        plt.close(fig)

        x, y = _steps_series(s["path"], ["transmissions", "in_flight"], chunk_rows)
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot(x, y["transmissions"], label="transmissions in the step")
        ax.plot(x, y["in_flight"], label="in flight after the step")
        ax.set_xlabel("step")
        ax.set_ylabel("packets")
        if len(x) and x[-1] > len(x):
            ax.set_ylabel("packets (maximum per block of steps)")
        ax.legend()
        ax.grid(alpha=0.3)
        ax.set_title(_title(s, "transmissions and packets in flight per step"))
        made += _save(fig, outdir, f"{stem}_steps")
        plt.close(fig)

        h = s["links"]["histogram"]
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.bar(h["values"], h["counts"], width=0.9 if len(h["values"]) < 200 else 1.0)
        ax.set_xlabel("load (packets sent over the link during the run)")
        ax.set_ylabel("directed links")
        ax.set_title(_title(s, "link load histogram (existing links)"))
        made += _save(fig, outdir, f"{stem}_link_load")
        plt.close(fig)
    except OSError as exc:
        raise PlotError(f"cannot write plots into {outdir}: {exc}") from None
    except KeyError as exc:
        raise TraceError(f"summary lacks {exc} needed for the plots") from None
    return made
