"""A compiled kernel called without numba's dispatch: :class:`Direct`.

Why apart: both the one-rank steps (:mod:`~mpinet.engine.flit.chunk`) and the several-rank
blocks (:mod:`~mpinet.engine.flit.ranks`, which imports ``chunk``) call their kernels so.
"""

from __future__ import annotations

from typing import Any


class Direct:
    """A compiled kernel called through the entry point of the signature its first call
    resolved: numba's dispatcher types every array of every bundle on each call (about 30
    microseconds for a step's bundles, measured), the entry point only unboxes them (about 6).
    Every later call must pass arguments of the first call's types (the engine's bundles
    keep their dtypes and layouts when they grow)."""

    __slots__ = ("fn", "entry")

    def __init__(self, fn: Any) -> None:
        self.fn, self.entry = fn, None

    def __call__(self, *args: Any) -> Any:
        if self.entry is not None:
            return self.entry(*args)
        out = self.fn(*args)
        if not hasattr(self.fn, "overloads"):  # not a dispatcher (a test's wrapper): as it is
            return out
        sig = tuple(self.fn.typeof_pyval(a) for a in args)
        cres = self.fn.overloads.get(sig)
        if cres is not None:
            self.entry = cres.entry_point
        return out
