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

from importlib import import_module
from typing import Any

from mpinet.analysis.compare import compare
from mpinet.analysis.hist import gini
from mpinet.analysis.text import format_compare, format_summary

#: ``summary``'s names, imported at their first use (PEP 562): it reads traces and so imports
#: h5py, which a command that only names another submodule does not need (``mpinet sweep``
#: without ``--out``: :mod:`mpinet.analysis.sweep`)
_SUMMARY = ("DEFAULT_CHUNK_ROWS", "memory_bound", "summarize")


def __getattr__(name: str) -> Any:
    if name not in _SUMMARY:
        raise AttributeError(f"module 'mpinet.analysis' has no attribute {name!r}")
    value = getattr(import_module("mpinet.analysis.summary"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "compare",
    "format_compare",
    "format_summary",
    "gini",
    "memory_bound",
    "summarize",
]
