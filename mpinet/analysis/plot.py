"""Figures of trace summaries (matplotlib, each as PNG and SVG).

Needs matplotlib (``pip install "mpinet[plot]"``); without it :class:`PlotError`. Per-step
series are read from the traces in chunks and thinned to at most
:data:`~mpinet.analysis.figures.MAX_POINTS` points (block maxima), and the per-link heat map
is drawn only up to :data:`~mpinet.analysis.figures.HEATMAP_MAX_CELLS` links, so plotting is
bounded in memory like :func:`~mpinet.analysis.summarize`.

One trace (:func:`plot_summary`, file names ``<trace stem>_<figure>.{png,svg}``):

* unicast: ``route_lengths`` (paper 000's D_I x N_I curve: delivered packets per route
  length, and per exact distance when known), ``latency_cdf``, ``steps`` (transmissions
  and packets in flight per step), ``link_load`` (histogram over existing links) and,
  for small networks, ``link_heatmap`` (load of every directed link, node x port);
* collective: ``steps`` (transmissions, newly informed pairs, duplicates per step) and
  ``informed`` (informed (node, message) pairs so far against the step).

Several traces (:func:`plot_compare`, ``<stem A>_vs_<stem B>_<figure>``): the same figures
with one curve per trace (``route_lengths``, ``latency_cdf``, ``steps``, ``link_load``;
``informed`` for collectives), e.g. two routers on the same traffic.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from mpinet.analysis import figures as fg
from mpinet.analysis.figures import HEATMAP_MAX_CELLS, MAX_POINTS
from mpinet.errors import MpinetError, TraceError
from mpinet.outputs.figures import FigureSet, plan_figures

try:  # the `plot` extra; without it pyplot() refuses, naming it, before any work
    import matplotlib
    import matplotlib.pyplot as plt
except ImportError:
    matplotlib = plt = None

__all__ = ["HEATMAP_MAX_CELLS", "MAX_POINTS", "PlotError", "plot_compare", "plot_summary"]


class PlotError(MpinetError):
    """matplotlib is missing, or the output directory cannot be used."""


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or :class:`PlotError` naming the extra."""
    if plt is None:
        raise PlotError(
            'plotting needs matplotlib: pip install "mpinet[plot]" (or pip install matplotlib)'
        )
    matplotlib.use("Agg")  # here, not at import: only a command that draws picks the backend
    return plt


#: every figure one trace may give (the set a command reserves before it reads the trace)
SUMMARY_FIGURES = ("route_lengths", "latency_cdf", "steps", "link_load", "link_heatmap",
                   "informed")  # fmt: skip
COMPARE_FIGURES = ("route_lengths", "latency_cdf", "steps", "link_load", "informed")


def trace_stem(path: str) -> str:
    """The file-name stem the figures of the trace at ``path`` carry."""
    return os.path.splitext(os.path.basename(path))[0]


def figure_names(paths: list[str]) -> list[str]:
    """Every figure name (no extension) ``mpinet analyze --plot`` may write for ``paths``:
    each trace's own figures and, for two or more, the comparison's."""
    names = [f"{trace_stem(p)}_{f}" for p in paths for f in SUMMARY_FIGURES]
    if len(paths) > 1:
        stem = "_vs_".join(trace_stem(p) for p in paths)
        names += [f"{stem}_{f}" for f in COMPARE_FIGURES]
    return list(dict.fromkeys(names))


def _stem(s: dict) -> str:
    return trace_stem(s["path"])


def _figures(outdir: Any, names: list[str]) -> Any:
    """``outdir`` as a :class:`~mpinet.outputs.figures.FigureSet` (a reserved set is kept);
    a directory name is planned and reserved here with ``force`` (the API's old behaviour:
    figures mpinet drew are replaced, any other file is refused)."""
    if isinstance(outdir, FigureSet):
        return outdir
    return FigureSet(outdir, plan_figures(outdir, names, force=True), force=True)


def write_figures(plt: Any, outdir: Any, jobs: list[tuple[str, Callable[[], Any]]]) -> list[str]:
    """Draw and save each ``(name, draw)`` as ``name.png`` and ``name.svg``; return paths.

    ``outdir``: a reserved :class:`~mpinet.outputs.figures.FigureSet` or a directory name.
    """
    figs = _figures(outdir, [name for name, _ in jobs])
    paths: list[str] = []
    try:
        for name, draw in jobs:
            fig = draw()
            try:
                paths += figs.save(fig, name)
            finally:
                plt.close(fig)
    except KeyError as exc:
        raise TraceError(f"summary lacks {exc} needed for the plots") from None
    finally:
        if not isinstance(outdir, FigureSet):
            figs.discard()
    return paths


def plot_summary(s: dict, outdir: Any, *, chunk_rows: int = 1 << 18) -> list[str]:
    """Write the figures of one trace's summary into ``outdir`` (created).

    Parameters
    ----------
    s : dict
        A summary from :func:`~mpinet.analysis.summarize` (its ``path`` is read again for
        the per-step series and the heat map, in chunks of ``chunk_rows`` rows).
    outdir : str or FigureSet
        Output directory, or the figures the command reserved
        (:mod:`mpinet.outputs.figures`).
    chunk_rows : int
        Rows read per block.

    Returns
    -------
    list of str
        The files written (each figure as ``.png`` and ``.svg``), in the order of the module
        docstring.

    Raises
    ------
    PlotError
        matplotlib is missing.
    OutputError
        ``outdir`` cannot be created, a figure cannot replace what is there, or a write
        failed (a full disk).
    """
    plt = pyplot()
    stem = _stem(s)
    if s["kind"] == "collective":
        jobs = [
            (f"{stem}_steps", lambda: fg.draw_collective_steps(plt, s, chunk_rows)),
            (f"{stem}_informed", lambda: fg.draw_informed(plt, [s], chunk_rows)),
        ]
        return write_figures(plt, outdir, jobs)
    jobs = [
        (f"{stem}_route_lengths", lambda: fg.draw_route_lengths(plt, [s])),
        (f"{stem}_latency_cdf", lambda: fg.draw_latency_cdf(plt, [s])),
        (f"{stem}_steps", lambda: fg.draw_steps(plt, [s], chunk_rows)),
    ]
    if s.get("links") is not None:
        jobs.append((f"{stem}_link_load", lambda: fg.draw_link_load(plt, [s])))
        load = fg.load_matrix(s, chunk_rows)
        if load is not None:
            jobs.append((f"{stem}_link_heatmap", lambda: fg.draw_link_heatmap(plt, s, load)))
    return write_figures(plt, outdir, jobs)


def plot_compare(summaries: list[dict], outdir: Any, *, chunk_rows: int = 1 << 18) -> list[str]:
    """Write figures with one curve per trace (e.g. two routers on the same traffic).

    Parameters
    ----------
    summaries : list of dict
        Two or more summaries of the same kind (all unicast or all collective).
    outdir : str or FigureSet
        Output directory (or reserved figures); the files are named
        ``<stem A>_vs_<stem B>_<figure>``.
    chunk_rows : int
        Rows read per block.

    Returns
    -------
    list of str
        The files written.

    Raises
    ------
    PlotError
        matplotlib is missing, ``outdir`` is unusable, or the traces mix unicast and
        collective runs (their figures have nothing in common).
    """
    plt = pyplot()
    kinds = {s["kind"] for s in summaries}
    if len(kinds) > 1:
        raise PlotError(
            "cannot draw a unicast and a collective trace in one figure; "
            "plot them separately (mpinet analyze TRACE.h5 --plot DIR)"
        )
    stem = "_vs_".join(_stem(s) for s in summaries)
    if kinds == {"collective"}:
        return write_figures(
            plt,
            outdir,
            [(f"{stem}_informed", lambda: fg.draw_informed(plt, summaries, chunk_rows))],
        )
    jobs = [
        (f"{stem}_route_lengths", lambda: fg.draw_route_lengths(plt, summaries)),
        (f"{stem}_latency_cdf", lambda: fg.draw_latency_cdf(plt, summaries)),
        (f"{stem}_steps", lambda: fg.draw_steps(plt, summaries, chunk_rows)),
    ]
    if all(s.get("links") is not None for s in summaries):
        jobs.append((f"{stem}_link_load", lambda: fg.draw_link_load(plt, summaries)))
    return write_figures(plt, outdir, jobs)
