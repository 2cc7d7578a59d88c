"""A trace whose block reads are reported, for progress output (``mpinet analyze``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

#: the tables :func:`mpinet.analysis.summary.summarize` reads block by block
READ_TABLES = ("packets", "steps", "links", "hops")


class CountedTrace:
    """Wraps a :class:`~mpinet.trace.Trace`; ``progress(rows_read, rows_total)`` after
    every block of :meth:`iter_chunks`. Everything else is the trace's own."""

    def __init__(self, trace: Any, progress: Callable[[int, int], None]) -> None:
        self._trace, self._progress, self._done = trace, progress, 0
        self._total = sum(trace.nrows(t) for t in trace.tables if t in READ_TABLES)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._trace, name)

    def iter_chunks(self, table: str, *args: Any, **kwargs: Any) -> Iterator[dict[str, np.ndarray]]:
        """:meth:`~mpinet.trace.Trace.iter_chunks`, reporting each block's rows."""
        for block in self._trace.iter_chunks(table, *args, **kwargs):
            yield block
            self._done += len(next(iter(block.values()), ()))
            self._progress(self._done, max(self._total, self._done))
