"""A compiled kernel called without numba's dispatch: :class:`Direct`.

Why apart: both the one-rank steps (:mod:`~mpinet.engine.flit.chunk`) and the several-rank
blocks (:mod:`~mpinet.engine.flit.ranks`, which imports ``chunk``) call their kernels so.

Why not numba's dispatch: numba types every array of every bundle on each call (about 30
microseconds for a step's bundles), and its first call in a process builds the bundles'
types through its generic ``typeof`` (a registry lookup by class for each named tuple, the
tuple types built and hashed member by member: 5-6 ms of a fresh hypercube:8 run's 25 ms,
twice over when the entry point was then looked up by the types again). Here the arguments
are reduced to a key of plain Python values (:func:`fingerprint`: dtype, dimensions, layout
and writability of each array, the class of each bundle) and the entry point is kept per
kernel and key for the process: a later run's first call, and every call after it, type
nothing. On a key not seen yet the types are numba's own (:func:`arg_type`: numba's
``typeof`` of each leaf, a tuple's type built from its members as numba's ``typeof`` builds
it) and the entry point comes from ``Dispatcher.compile`` (numba's cache, or a compilation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.core import types
from numba.core.typing.typeof import Purpose, typeof

#: the entry point of each (kernel, :func:`fingerprint`) met in this process
_ENTRIES: dict = {}
#: numba's type of each leaf key met (:func:`arg_type`)
_LEAVES: dict = {}


def _leaf_key(a: Any) -> Any:
    """The key of a non-tuple argument that fixes its numba type; None: not one handled."""
    cls = type(a)
    if cls is np.ndarray:
        f = a.flags
        return (a.dtype, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable)
    if cls is bool or cls is float or isinstance(a, np.generic):
        return cls
    if cls is int:  # numba's typeof: intp below 2**31, int64 below 2**63, else uint64
        n = a.bit_length() if a >= 0 else (-a - 1).bit_length()
        return (int, 0 if n < 32 else 1 if n < 64 else 2 if a >= 0 else 3)
    return None


def fingerprint(args: tuple) -> Any:
    """A hashable key of ``args`` that determines their numba types (tuples and named tuples
    member by member); None when an argument is of a kind not handled here."""
    out = []
    for a in args:
        if isinstance(a, tuple):
            k = fingerprint(a)
            if k is None:
                return None
            out.append((type(a), k))
        else:
            k = _leaf_key(a)
            if k is None:
                return None
            out.append(k)
    return tuple(out)


def arg_type(a: Any) -> Any:
    """numba's type of the argument ``a`` (as its dispatcher types it), built from leaves
    typed once a process: a tuple's type from its members' as numba's ``typeof`` does it."""
    if isinstance(a, tuple):
        return types.BaseTuple.from_types([arg_type(x) for x in a], type(a))
    key = _leaf_key(a)
    ty = _LEAVES.get(key)
    if ty is None:
        ty = typeof(a, Purpose.argument)
        _LEAVES[key] = ty
    return ty


class Direct:
    """A compiled kernel called through the entry point of its arguments' types, without
    numba's dispatch (the module docstring). Every later call of one :class:`Direct` must
    pass arguments of the first call's types (the engine's bundles keep their dtypes and
    layouts when they grow): the entry point unboxes them as those types unchecked."""

    __slots__ = ("fn", "entry")

    def __init__(self, fn: Any) -> None:
        self.fn, self.entry = fn, None

    def __call__(self, *args: Any) -> Any:
        if self.entry is not None:
            return self.entry(*args)
        if not hasattr(self.fn, "overloads"):  # not a dispatcher (a test's wrapper): as it is
            return self.fn(*args)
        key = fingerprint(args)
        if key is None:  # an argument of another kind: numba's dispatch, then its types
            out = self.fn(*args)
            cres = self.fn.overloads.get(tuple(self.fn.typeof_pyval(a) for a in args))
            if cres is not None:
                self.entry = cres.entry_point
            return out
        entry = _ENTRIES.get((self.fn, key))
        if entry is None:
            entry = self.fn.compile(tuple(arg_type(a) for a in args))
            _ENTRIES[(self.fn, key)] = entry
        self.entry = entry
        return entry(*args)
