"""Seconds spent compiling the engine's kernels, apart from the seconds they run.

numba compiles a kernel at its first call with a new signature, unless its on-disk cache
holds it (``cache=True``); the first run of an installation (or after an edit of a
kernel's source) therefore spends tens of seconds inside the engine's timer compiling.
:class:`CompileClock` listens to numba's ``numba:compile`` events, which fire on cache
misses only (a cache load is not a compilation), and adds up the outermost ones: a
kernel that compiles the functions it calls is counted once.

:func:`mark_engine_start` (called once the engine is built, just before it runs) splits
what compiles while the engine's timer runs (:attr:`CompileClock.in_engine`) from what
compiled while the network, router and engine were built. No MPI and no file I/O: each
rank measures its own compilation.
"""

from __future__ import annotations

import time
from typing import Any

from numba.core import event

from mpinet import numba_load

#: the clocks listening now (:func:`mark_engine_start` marks them all)
_ACTIVE: list[CompileClock] = []


def mark_engine_start() -> None:
    """Tell the listening clocks that the engine's timer starts now."""
    for clock in _ACTIVE:
        clock.mark = time.perf_counter()


class CompileClock(event.Listener):
    """Context manager: ``seconds`` and ``kernels`` compiled while it was active.

    Examples
    --------
    >>> with CompileClock() as clock:  # doctest: +SKIP
    ...     engine.run(traffic)
    >>> clock.seconds, clock.kernels  # doctest: +SKIP
    (31.2, ['mpinet.engine.calendar_kernels.place', ...])
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self.kernels: list[str] = []
        #: (start, end) of each outermost compilation, perf_counter seconds
        self.spans: list[tuple[float, float]] = []
        #: when the engine's timer started (:func:`mark_engine_start`); None: not yet
        self.mark: float | None = None
        #: (start, end) of each kernel loaded from numba's cache outside a compilation
        self.load_spans: list[tuple[float, float]] = []
        self._depth = 0
        self._start = 0.0

    def _on_load(self, start: float, end: float) -> None:
        if self._depth == 0:  # a compilation's own loads are its time
            self.load_spans.append((start, end))

    def on_start(self, ev: Any) -> None:
        if self._depth == 0:
            self._start = time.perf_counter()
            fn = getattr(ev.data.get("dispatcher"), "py_func", None) if ev.data else None
            if fn is not None:
                self.kernels.append(f"{fn.__module__}.{fn.__qualname__}")
        self._depth += 1

    def on_end(self, ev: Any) -> None:
        self._depth -= 1
        if self._depth == 0:
            end = time.perf_counter()
            self.seconds += end - self._start
            self.spans.append((self._start, end))

    @property
    def in_engine(self) -> float:
        """Seconds compiled since :attr:`mark` (all of :attr:`seconds` without a mark)."""
        if self.mark is None:
            return self.seconds
        return sum(end - max(start, self.mark) for start, end in self.spans if end > self.mark)

    @property
    def loads_in_engine(self) -> float:
        """Seconds of loading kernels from numba's cache since :attr:`mark` (all without a
        mark): engine time (the engine's start-up), reported apart from the steps'."""
        mark = -float("inf") if self.mark is None else self.mark
        return sum(end - max(start, mark) for start, end in self.load_spans if end > mark)

    def __enter__(self) -> CompileClock:
        event.register("numba:compile", self)
        numba_load.LOAD_LISTENERS.append(self._on_load)
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        event.unregister("numba:compile", self)
        numba_load.LOAD_LISTENERS.remove(self._on_load)
        _ACTIVE.remove(self)
