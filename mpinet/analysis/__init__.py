"""Analysis of trace files without MPI, in bounded memory.

``summarize(path)`` reads a trace chunk by chunk and returns plain data (JSON-ready);
``compare(a, b)`` puts two summaries side by side; ``format_summary`` /
``format_compare`` render them; :mod:`mpinet.analysis.plot`'s ``plot_summary(summary, dir)``
and ``plot_compare([a, b], dir)`` draw them (matplotlib, PNG and SVG: imported by the
commands that draw, never by this package). Modules: ``hist``
(streaming histograms, Gini), ``summary``, ``compare``, ``text``, ``plot`` and ``figures``.
``mpinet analyze`` is the command-line front end.
"""

from __future__ import annotations

from mpinet.analysis.compare import compare
from mpinet.analysis.hist import gini
from mpinet.analysis.text import format_compare, format_summary
from mpinet.lazy import package_getattr

#: ``summary``'s names, imported at their first use (PEP 562): it reads traces and so imports
#: h5py, which a command that only names another submodule does not need (``mpinet sweep``
#: without ``--out``: :mod:`mpinet.analysis.sweep`)
__getattr__ = package_getattr(
    __name__, dict.fromkeys(("DEFAULT_CHUNK_ROWS", "memory_bound", "summarize"), "summary")
)

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "compare",
    "format_compare",
    "format_summary",
    "gini",
    "memory_bound",
    "summarize",
]
