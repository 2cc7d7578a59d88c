"""The figures of :mod:`mpinet.analysis.plot`, one function per figure, one curve per trace.

Each ``draw_*`` function fills a new matplotlib figure from one or more summaries
(:func:`~mpinet.analysis.summarize`) and returns it; the per-step series and the link-load
matrix are read from the traces in chunks (:func:`steps_series`, :func:`load_matrix`).
Titles name the run (topology, workload or collective, router, model); when several runs
are drawn, what they share goes in the title and what differs in the legend.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mpinet.analysis.network import rebuild
from mpinet.analysis.switching import short
from mpinet.trace import open_trace

try:  # the `plot` extra (mpinet.analysis.plot.pyplot() refuses without it, naming it)
    from matplotlib.colors import Normalize, SymLogNorm
except ImportError:
    Normalize = SymLogNorm = None

#: per-step series are thinned to at most this many points (block maxima)
MAX_POINTS = 4000
#: the per-link heat map is drawn when nodes x degree is at most this
HEATMAP_MAX_CELLS = 1 << 16
_RUN_FIELDS = ("topology", "workload", "collective", "router", "model", "seed", "mpi_size")


def _run_fields(s: dict) -> dict[str, str]:
    """What names a run, as ``{field: text}`` (the router is meaningless for collectives);
    a flit run adds its switching (``wormhole L=16 V=2 B=4 any``) after the model."""
    a = s["attrs"]
    out = {}
    for k in _RUN_FIELDS:
        if k not in a or (k == "router" and s["kind"] == "collective"):
            continue
        out[k] = f"{k} {a[k]}" if k in ("router", "seed", "mpi_size") else str(a[k])
        if k == "model" and s.get("switching") is not None:
            out["switching"] = short(s["switching"])
    return out


def unit(summaries: list[dict]) -> str:
    """What the runs' link loads and transmissions count: flits on the flit engine."""
    units = {s.get("load_unit") or "packets" for s in summaries}
    return units.pop() if len(units) == 1 else "packets or flits"


def title(summaries: list[dict], what: str) -> str:
    """``what`` over the run's spec line (the fields all ``summaries`` share)."""
    fields = [_run_fields(s) for s in summaries]
    common = [
        v
        for k, v in fields[0].items()
        if k not in ("seed", "mpi_size") and all(f.get(k) == v for f in fields[1:])
    ]
    return f"{what}\n{', '.join(common)}"


def labels(summaries: list[dict]) -> list[str]:
    """Legend entries: the fields in which the runs differ (else the file names)."""
    fields = [_run_fields(s) for s in summaries]
    keys = list(dict.fromkeys(k for f in fields for k in f))
    differ = [k for k in keys if len({f.get(k) for f in fields}) > 1]
    stems = [os.path.splitext(os.path.basename(s["path"]))[0] for s in summaries]
    if not differ:
        return stems
    out = [", ".join(f.get(k, "-") for k in differ) for f in fields]
    return (
        out
        if len(set(out)) == len(out)
        else [f"{o} ({st})" for o, st in zip(out, stems, strict=True)]
    )


def steps_series(
    path: str, columns: list[str], chunk_rows: int, cumulative: bool = False
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Step numbers (from 1) and per-step columns, thinned to :data:`MAX_POINTS` points.

    A block of consecutive steps becomes one point: its first step and the block's maximum
    (with ``cumulative``: the running total at the block's last step). Read in chunks.
    """
    with open_trace(path) as tr:
        n = tr.nrows("steps")
        block = max(1, -(-n // MAX_POINTS))
        xs: list[np.ndarray] = []
        ys: dict[str, list[np.ndarray]] = {c: [] for c in columns}
        carry = dict.fromkeys(columns, 0)
        start = 0
        rows = max(block, (int(chunk_rows) // block) * block)  # whole blocks per chunk
        for ch in tr.iter_chunks("steps", columns, rows):
            m = len(ch[columns[0]])
            idx = np.arange(0, m, block)
            # a block is drawn at its first step, a running total at its last
            xs.append(start + (np.minimum(idx + block, m) if cumulative else idx + 1))
            for c in columns:
                a = np.asarray(ch[c], dtype=np.int64)
                if cumulative:
                    a = carry[c] + np.cumsum(a)
                    carry[c] = int(a[-1]) if m else carry[c]
                ys[c].append(np.maximum.reduceat(a, idx) if m else a)
            start += m
    cat = {c: np.concatenate(v) if v else np.zeros(0) for c, v in ys.items()}
    return (np.concatenate(xs) if xs else np.zeros(0)), cat


def load_matrix(s: dict, chunk_rows: int) -> np.ndarray | None:
    """``/links/load`` as floats with NaN where no link exists, or ``None`` when too large."""
    with open_trace(s["path"]) as tr:
        if "links" not in tr.tables:
            return None
        n = tr.nrows("links")
        if n == 0:
            return None
        deg = int(np.prod(next(tr.iter_chunks("links", ["load"], 1))["load"].shape[1:]))
        if n * deg > HEATMAP_MAX_CELLS:
            return None
        topo, _ = rebuild(s["attrs"], s["path"])
        out = np.empty((n, deg), dtype=np.float64)
        start = 0
        for ch in tr.iter_chunks("links", ["load"], chunk_rows):
            load = ch["load"].reshape(len(ch["load"]), -1).astype(np.float64)
            k = len(load)
            if topo is not None and topo.degree == deg:
                load[topo.neighbors(np.arange(start, start + k)) < 0] = np.nan
            out[start : start + k] = load
            start += k
    return out


# -- unicast --------------------------------------------------------------------------------
def draw_route_lengths(plt: Any, summaries: list[dict]) -> Any:
    """Paper 000's D_I x N_I curves: packets per route length I, and per exact distance."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    labs = labels(summaries)
    for s, lab in zip(summaries, labs, strict=True):
        h = s["hops"]["histogram"]
        ax.plot(range(len(h)), h, marker="o", label=f"route length: {lab}")
    dists = [(s.get("distance") or {}).get("histogram") for s in summaries]
    distinct = [d for i, d in enumerate(dists) if d and d not in dists[:i]]
    for d, lab in zip(dists, labs, strict=True):
        if d and d in distinct:
            distinct.remove(d)
            name = (
                "exact distance"
                if len(set(map(tuple, filter(None, dists)))) == 1
                else (f"exact distance: {lab}")
            )
            ax.plot(range(len(d)), d, ls="--", color="black", lw=1, marker="x", label=name)
    ax.set_xlabel("route length or distance I (hops)")
    ax.set_ylabel("N_I (delivered packets)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(title(summaries, "D_I x N_I: packets per route length (paper 000, Fig. 7)"))
    return fig


def draw_latency_cdf(plt: Any, summaries: list[dict]) -> Any:
    """Fraction of delivered packets with latency <= x steps."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for s, lab in zip(summaries, labels(summaries), strict=True):
        hist = np.asarray(s["latency"]["histogram"], dtype=np.int64)
        if hist.sum():
            ax.step(np.arange(hist.size), np.cumsum(hist) / hist.sum(), where="post", label=lab)
    ax.set_xlabel("latency (steps, deliver - inject)")
    ax.set_ylabel("fraction of delivered packets")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    if len(summaries) > 1:
        ax.legend(fontsize="small")
    ax.set_title(title(summaries, "latency CDF"))
    return fig


def draw_steps(plt: Any, summaries: list[dict], chunk_rows: int) -> Any:
    """Transmissions per step (top) and packets in flight after each step (bottom)."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    thinned = False
    for s, lab in zip(summaries, labels(summaries), strict=True):
        cols = ["transmissions"] + (["in_flight"] if s["steps"].get("in_flight") else [])
        x, y = steps_series(s["path"], cols, chunk_rows)
        thinned |= bool(len(x) and x[-1] > len(x))
        top.plot(x, y["transmissions"], label=lab)
        if "in_flight" in y:
            bottom.plot(x, y["in_flight"], label=lab)
    per = " (maximum per block of steps)" if thinned else ""
    top.set_ylabel(f"transmissions\n({unit(summaries)} per step){per}")
    bottom.set_ylabel(f"in flight after the step\n(packets){per}")
    bottom.set_xlabel("step")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    if len(summaries) > 1:
        top.legend(fontsize="small")
    top.set_title(title(summaries, "transmissions and packets in flight per step"))
    return fig


def draw_link_load(plt: Any, summaries: list[dict]) -> Any:
    """Histogram of the load of the existing directed links."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for s, lab in zip(summaries, labels(summaries), strict=True):
        h = s["links"]["histogram"]
        a = s["links"]["all"]
        text = f"{lab}: " if len(summaries) > 1 else ""
        text += f"max/mean {a['max_over_mean']:.2f}, gini {a['gini']:.3f}" if a["links"] else ""
        if len(summaries) == 1:
            ax.bar(h["values"], h["counts"], width=0.9 if len(h["values"]) < 200 else 1.0)
            ax.text(0.98, 0.95, text, transform=ax.transAxes, ha="right", va="top")
        else:
            ax.step(h["values"], h["counts"], where="mid", label=text)
    skewed = any(
        (a := s["links"]["all"])["links"] and a["max"] > 20 * max(a["mean"], 1e-9) and a["max"] > 10
        for s in summaries
    )
    scale = ""
    if skewed:  # e.g. hot spots: a few links carry most packets; log axes keep both visible
        ax.set_xscale("symlog", linthresh=1)
        ax.set_yscale("log")
        scale = ", log scale"
    ax.set_xlabel(f"load ({unit(summaries)} sent over the link during the run{scale})")
    ax.set_ylabel(f"directed links{' (log scale)' if skewed else ''}")
    if len(summaries) > 1:
        ax.legend(fontsize="small")
    ax.set_title(title(summaries, "link load histogram (existing links)"))
    return fig


def draw_link_heatmap(plt: Any, s: dict, load: np.ndarray) -> Any:
    """Load of every directed link as a port x node image (blank: no link)."""
    n, deg = load.shape
    top = float(np.nanmax(load)) if np.isfinite(load).any() else 0.0
    mean = float(np.nanmean(load)) if np.isfinite(load).any() else 0.0
    skewed = top > 20 * max(mean, 1e-9) and top > 10  # e.g. hot spots: log colour scale
    norm = SymLogNorm(1.0, vmin=0, vmax=top) if skewed else Normalize(0, max(top, 1.0))
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.35 * deg))
    im = ax.imshow(
        load.T,
        aspect="auto",
        interpolation="nearest" if n <= 1000 else "antialiased",
        cmap="viridis",
        norm=norm,
        extent=(-0.5, n - 0.5, deg - 0.5, -0.5),
    )
    ports = list(s["attrs"].get("ports") or [])
    ax.set_yticks(range(deg))
    ax.set_yticklabels(ports if len(ports) == deg else [f"port {j}" for j in range(deg)])
    ax.set_xlabel("node id")
    ax.set_ylabel("output port")
    what = f"{unit([s])} per directed link" + (" (log scale)" if skewed else "")
    fig.colorbar(im, ax=ax, label=what)
    ax.set_title(title([s], "link load per node and port"))
    return fig


# -- collectives ----------------------------------------------------------------------------
def draw_collective_steps(plt: Any, s: dict, chunk_rows: int) -> Any:
    """Transmissions, newly informed (node, message) pairs and duplicates per step."""
    cols = ["transmissions", "informed", "duplicates"]
    x, y = steps_series(s["path"], cols, chunk_rows)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    small = len(x) < 60
    styles = {
        "transmissions": dict(lw=4, alpha=0.45),
        "informed": dict(ls="--", marker="o" if small else None),
        "duplicates": dict(ls=":", marker="x" if small else None),
    }
    for c in cols:
        ax.plot(x, y[c], label=c, **styles[c])
    ax.set_xlabel("step")
    ax.set_ylabel("messages per step")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(title([s], "transmissions, newly informed and duplicates per step"))
    return fig


def draw_informed(plt: Any, summaries: list[dict], chunk_rows: int) -> Any:
    """Informed (node, message) pairs so far, against the step."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for s, lab in zip(summaries, labels(summaries), strict=True):
        x, y = steps_series(s["path"], ["informed"], chunk_rows, cumulative=True)
        x, y0 = np.concatenate([[0], x]), np.concatenate([[0], y["informed"]])
        ax.step(x, y0, where="post", label=lab)
    ax.set_xlabel("step")
    ax.set_ylabel("informed (node, message) pairs\n(cumulative, excluding the sources)")
    ax.grid(alpha=0.3)
    if len(summaries) > 1:
        ax.legend(fontsize="small")
    ax.set_title(title(summaries, "informed nodes over steps"))
    return fig
