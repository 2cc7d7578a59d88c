"""Analysis of trace files without MPI, in bounded memory.

``summarize(path)`` reads a trace chunk by chunk and returns plain data (JSON-ready);
``compare(a, b)`` puts two summaries side by side; ``format_summary`` /
``format_compare`` render them; ``plot_summary(summary, dir)`` and
``plot_compare([a, b], dir)`` draw them (matplotlib, PNG and SVG). Modules: ``hist``
(streaming histograms, Gini), ``summary``, ``compare``, ``text``, ``plot`` and ``figures``.
``mpinet analyze`` is the command-line front end.
"""

from mpinet.analysis.compare import compare
from mpinet.analysis.hist import gini
from mpinet.analysis.summary import DEFAULT_CHUNK_ROWS, memory_bound, summarize
from mpinet.analysis.text import format_compare, format_summary


def plot_summary(summary: dict, outdir: str, **kw):  # noqa: ANN201 (lazy matplotlib import)
    """See :func:`mpinet.analysis.plot.plot_summary` (imports matplotlib only when called)."""
    from mpinet.analysis.plot import plot_summary as _plot

    return _plot(summary, outdir, **kw)


def plot_compare(summaries: list[dict], outdir: str, **kw):  # noqa: ANN201
    """See :func:`mpinet.analysis.plot.plot_compare` (imports matplotlib only when called)."""
    from mpinet.analysis.plot import plot_compare as _plot

    return _plot(summaries, outdir, **kw)


__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "compare",
    "format_compare",
    "format_summary",
    "gini",
    "memory_bound",
    "plot_compare",
    "plot_summary",
    "summarize",
]
