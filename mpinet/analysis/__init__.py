"""Analysis of trace files without MPI, in bounded memory.

``summarize(path)`` reads a trace chunk by chunk and returns plain data (JSON-ready);
``compare(a, b)`` puts two summaries side by side; ``format_summary`` /
``format_compare`` render them; :mod:`mpinet.analysis.plot`'s ``plot_summary(summary, dir)``
and ``plot_compare([a, b], dir)`` draw them (matplotlib, PNG and SVG: imported by the
commands that draw, never by this package). Modules: ``hist``
(streaming histograms, Gini), ``summary``, ``compare``, ``text``, ``plot`` and ``figures``.
``mpinet analyze`` is the command-line front end.
"""

from mpinet.analysis.compare import compare
from mpinet.analysis.hist import gini
from mpinet.analysis.summary import DEFAULT_CHUNK_ROWS, memory_bound, summarize
from mpinet.analysis.text import format_compare, format_summary

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "compare",
    "format_compare",
    "format_summary",
    "gini",
    "memory_bound",
    "summarize",
]
