"""A compiled kernel called without numba's dispatch: :class:`Direct`.

Why apart: both the one-rank steps (:mod:`~mpinet.engine.flit.chunk`) and the several-rank
blocks (:mod:`~mpinet.engine.flit.ranks`, which imports ``chunk``) call their kernels so.

Why not numba's dispatch: numba types every array of every bundle on each call (about 30
microseconds for a step's bundles), and its first call in a process builds the bundles'
types through its generic ``typeof`` (a registry lookup by class for each named tuple, the
tuple types built and hashed member by member: 5-6 ms of a fresh hypercube:8 run's 25 ms,
twice over when the entry point was then looked up by the types again). Here the arguments
are reduced to a key of plain Python values (:func:`fingerprint`: dtype, dimensions, layout
and writability of each array, the class of each bundle, the prototype of a C function) and
the entry point is kept per kernel and key for the process: a later run's first call, and
every call after it, type nothing. On a key not seen yet the types are numba's own
(:func:`arg_type`: numba's ``typeof`` of each leaf, a tuple's type built from its members as
numba's ``typeof`` builds it) and the entry point comes from ``Dispatcher.compile``
(numba's cache, or a compilation).

A fresh process still paid, at the first call, numba's load of the kernel from its cache
(3-4 ms for ``chunk.run_steps``) and the typing of its arguments (1-2 ms): together as much
as a small run's steps (docs/performance.md, "A fresh run's fixed cost", seventh pass). So
each key met is kept on disk with its types, beside numba's cache of the kernel
(:func:`remember`, :func:`memo`: the newest :data:`KEEP`, valid while numba's stamp of the
kernel's sources is), and :func:`preload` loads the newest one's kernel from numba's cache
in a thread while the job is still being set up: the first call then finds its entry point
by key, typing nothing, and waits for the thread if it is still loading (that wait is the
caller's time: the engine's).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import threading
from typing import Any

import numba
import numpy as np
from numba.core import serialize, types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.typing.typeof import Purpose, typeof

#: the entry point of each (kernel, :func:`fingerprint`) met in this process
_ENTRIES: dict = {}
#: numba's type of each leaf key met (:func:`arg_type`)
_LEAVES: dict = {}
#: the keys kept on disk per kernel (:func:`remember`), newest first
KEEP = 8
#: the thread of :func:`preload` while it runs (a first call with a new key waits for it)
_THREAD: list = []


def _leaf_key(a: Any) -> Any:
    """The key of a non-tuple argument that fixes its numba type; None: not one handled."""
    cls = type(a)
    if a is None:  # Params.far where the kernels do not prefetch: a type of its own
        return (cls,)
    if cls is np.ndarray:
        f = a.flags
        return (a.dtype, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable)
    if cls is bool or cls is float or isinstance(a, np.generic):
        return cls
    if cls is int:  # numba's typeof: intp below 2**31, int64 below 2**63, else uint64
        n = a.bit_length() if a >= 0 else (-a - 1).bit_length()
        return (int, 0 if n < 32 else 1 if n < 64 else 2 if a >= 0 else 3)
    if isinstance(a, ctypes._CFuncPtr) and a.argtypes is not None:
        # a C function (the MPI calls of the blocks on several ranks: mpi_native): numba
        # types it by its prototype, never by its address
        return ("ctypes", a.restype, tuple(a.argtypes), a._flags_)
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
        if self.prime(*args):
            return self.entry(*args)
        # an argument of another kind: numba's dispatch, then its types
        out = self.fn(*args)
        cres = self.fn.overloads.get(tuple(self.fn.typeof_pyval(a) for a in args))
        if cres is not None:
            self.entry = cres.entry_point
        return out

    def prime(self, *args: Any, compile: bool = True) -> bool:
        """Find the entry point of ``args``' types without calling it (its key, numba's
        cache or a compilation), as the first call would: the engine does it while a run
        is set up, with the arguments of its first call (docs/performance.md, "hypercube:8
        at light load in session 11"). False: not a dispatcher, an argument of a kind
        :func:`fingerprint` does not key (the first call goes through numba's dispatch),
        or, ``compile`` False, a kernel numba's cache does not hold (the first call
        compiles it, where the engine's compile clock counts it)."""
        if self.entry is not None:
            return True
        if not hasattr(self.fn, "overloads"):
            return False
        key = fingerprint(args)
        if key is None:
            return False
        entry = _ENTRIES.get((self.fn, key))
        if entry is None and _THREAD:  # the preload may be loading it: wait (the caller's time)
            _THREAD[0].join()
            entry = _ENTRIES.get((self.fn, key))
        if entry is None:
            sig = tuple(arg_type(a) for a in args)
            entry = self.fn.compile(sig) if compile else load_cached(self.fn, sig)
            if entry is None:
                return False
            _ENTRIES[(self.fn, key)] = entry
            remember(self.fn, key, sig)
        self.entry = entry
        return True


def _memo_file(fn: Any) -> tuple[str, Any] | None:
    """The path of ``fn``'s kept keys and the stamp they are valid under (numba's version and
    its stamp of the kernel's sources, mpinet's files included: numba_cache); None for a
    kernel without numba's on-disk cache."""
    cache = getattr(fn, "_cache", None)
    impl, index = getattr(cache, "_impl", None), getattr(cache, "_cache_file", None)
    if impl is None or index is None:
        return None
    path = os.path.join(cache._cache_path, f"{impl.filename_base}.mpinet-keys")
    return path, (numba.__version__, index._source_stamp)


def memo(fn: Any) -> list:
    """``fn``'s kept ``(key, types)``, newest first; empty when none are valid (another
    stamp, a file unreadable by this code)."""
    where = _memo_file(fn)
    if where is None:
        return []
    try:
        with open(where[0], "rb") as f:
            stamp, rows = pickle.load(f)
    except (OSError, EOFError, AttributeError, ImportError, TypeError, ValueError,
            pickle.UnpicklingError):  # fmt: skip
        return []
    return list(rows) if stamp == where[1] else []


def remember(fn: Any, key: Any, sig: tuple) -> None:
    """Keep ``key`` and its types first in ``fn``'s file (atomically replaced; a file that
    cannot be written is no error: the next process types the arguments again)."""
    where = _memo_file(fn)
    if where is None:
        return
    rows = [(key, sig)] + [r for r in memo(fn) if r[0] != key]
    tmp = f"{where[0]}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "wb") as f:
            # numba's pickler, as its cache index's: a C function's type holds its prototype
            # class, which pickle cannot name
            f.write(serialize.dumps((where[1], rows[:KEEP])))
        os.replace(tmp, where[0])
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def load_cached(fn: Any, sig: tuple) -> Any:
    """``fn``'s entry point for the types ``sig`` from numba's cache, as ``Dispatcher.compile``
    loads it, never compiling; None when the cache does not hold it."""
    with global_compiler_lock:
        cres = fn.overloads.get(sig)
        if cres is None:
            cres = fn._cache.load_overload(sig, fn.targetctx)
            if cres is None:
                return None
            fn._cache_hits[sig] += 1
            if not cres.objectmode:
                fn.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
            fn.add_overload(cres)
        return cres.entry_point


def _load(fns: tuple) -> None:
    for fn in fns:
        try:
            rows = memo(fn)
            if rows and (fn, rows[0][0]) not in _ENTRIES:
                entry = load_cached(fn, rows[0][1])
                if entry is not None:
                    _ENTRIES.setdefault((fn, rows[0][0]), entry)
        except Exception:  # noqa: BLE001 - an optimisation: the first call loads it itself
            pass


def preload(fns: tuple) -> None:
    """Load, in a thread, the entry point of each kernel of ``fns`` for its newest kept key
    (:func:`memo`) from numba's cache: what a fresh process's first call would load. At
    most one thread at a time; kernels without a kept key are left to their first call."""
    if _THREAD and _THREAD[0].is_alive():
        return
    _THREAD.clear()
    th = threading.Thread(target=_load, args=(fns,), name="mpinet-preload")
    _THREAD.append(th)
    th.start()
