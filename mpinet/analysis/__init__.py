"""Analysis of trace files without MPI, in bounded memory.

``summarize(path)`` reads a trace chunk by chunk and returns plain data (JSON-ready);
``compare(a, b)`` puts two summaries side by side; ``format_summary`` /
``format_compare`` render them; ``plot_summary(summary, dir)`` draws them (matplotlib).
``mpinet analyze`` is the command-line front end.
"""

from mpinet.analysis.summary import (
    DEFAULT_CHUNK_ROWS,
    compare,
    gini,
    memory_bound,
    summarize,
)
from mpinet.analysis.text import format_compare, format_summary


def plot_summary(summary: dict, outdir: str, **kw):  # noqa: ANN201 (lazy matplotlib import)
    """See :func:`mpinet.analysis.plot.plot_summary` (imports matplotlib only when called)."""
    from mpinet.analysis.plot import plot_summary as _plot

    return _plot(summary, outdir, **kw)


__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "compare",
    "format_compare",
    "format_summary",
    "gini",
    "memory_bound",
    "plot_summary",
    "summarize",
]
