"""numba's on-disk cache, made safe across upgrades of mpinet.

numba keeps a kernel's compiled code beside its module with an index (``*.nbi``) that
pickles the kernel's signatures. A signature names its argument types, and a named-tuple
bundle pickles by its class's module path: after an upgrade that moves such a class (say
from ``engine/flit/chunk.py`` to ``injection_blocks.py``), numba's loader raises
``AttributeError`` while unpickling the old index instead of treating it as stale, and
every run dies before its first step until the user finds and deletes the cache. Here an
index that cannot be unpickled counts as an obsolete one (numba's own word for an index of
another numba version): the kernel compiles again and its index is rewritten.

numba also stamps a kernel's cache with its own source file only, while mpinet's kernels
inline kernels of other files (``chunk.run_steps`` inlines ``port_choice``, ``layout``,
``step_end`` ...): after an edit or an upgrade that changes only a callee's file, the
caller's cache still held the old callee, and runs computed with old code. Here every
kernel of mpinet is stamped with its file's stamp and the stamps (modification time, size)
of all of mpinet's files that use numba: a change to any of them compiles every kernel
again once, on first use.

numba builds a kernel's cache at its decoration (its locator, a probe file written and
deleted in ``__pycache__``, its stamps): 0.1 ms a kernel, some 25 ms for the ~200 kernels a
``mpinet booksim`` run imports and mostly never calls. mpinet's kernels build theirs at
their first call instead (:class:`_LazyCache`): loads and saves are numba's, later.

:func:`guard` wraps numba's index loader and source stamp once per process; the modules that compile
kernels import this one (:mod:`mpinet.perm`, :mod:`mpinet.rng`, :mod:`mpinet.engine.jit`,
the flit engine's package), so it is in place before any kernel loads. So is
:func:`mpinet.numba_load.install`: a cached kernel's bitcode parsed only when needed.
"""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path
from typing import Any

from numba.core import caching, dispatcher

from mpinet import numba_load

#: what unpickling an index written by other code can raise
_UNREADABLE = (AttributeError, ImportError, pickle.UnpicklingError, EOFError, TypeError,
               ValueError)  # fmt: skip


#: the package's directory: kernels whose source lies under it get the package stamp
_PACKAGE = Path(__file__).resolve().parent
_stamp: tuple | None = None
#: a file that imports numba at its top (its kernels, or the helpers they inline)
_USES_NUMBA = re.compile(r"^(from|import) numba\b", re.MULTILINE)


def package_stamp() -> tuple:
    """(path, mtime_ns, size) of every mpinet file that uses numba, computed once a process."""
    global _stamp
    if _stamp is None:
        rows = []
        for path in sorted(_PACKAGE.rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
                # the substring first: the line search is most of this stamp's CPU
                if "numba" not in text or not _USES_NUMBA.search(text):
                    continue
                st = path.stat()
            except OSError:
                continue
            rows.append((str(path.relative_to(_PACKAGE)), st.st_mtime_ns, st.st_size))
        _stamp = tuple(rows)
    return _stamp


def _wrap(cls: Any, name: str, make: Any) -> bool:
    """Replace ``cls.name`` by ``make(original)``, once a process (the wrapper is marked);
    False, nothing changed, where this numba has no such method."""
    own = getattr(cls, name, None)
    if own is None:
        return False
    if getattr(own, "_mpinet_guard", False):
        return True
    wrapper = make(own)
    wrapper._mpinet_guard = True
    setattr(cls, name, wrapper)
    return True


def _stamp_package() -> bool:
    """Stamp mpinet's kernels with :func:`package_stamp` beside numba's own stamp."""

    def make(own: Any) -> Any:
        def get_source_stamp(self: Any) -> Any:
            stamp = own(self)
            py_file = getattr(self, "_py_file", None)
            if py_file is None or not os.path.realpath(py_file).startswith(str(_PACKAGE) + os.sep):
                return stamp
            return (stamp, package_stamp())

        return get_source_stamp

    mixin = getattr(caching, "_SourceFileBackedLocatorMixin", None)
    return _wrap(mixin, "get_source_stamp", make)


def guard() -> bool:
    """Make an unreadable cache index read as an obsolete one; True once in place.

    False (and nothing changed) when this numba has no such loader: its own behaviour stands.
    """

    def make(load: Any) -> Any:
        def _load_index(self: Any) -> dict:
            try:
                return load(self)
            except _UNREADABLE:
                return {}  # as numba treats an index of another version: compile again

        return _load_index

    return _wrap(getattr(caching, "IndexDataCacheFile", None), "_load_index", make)


class _LazyCache:
    """numba's :class:`~numba.core.caching.FunctionCache` of one kernel, built at its first
    use (a load from the cache or a compilation) instead of at its decoration."""

    __slots__ = ("_py_func", "_real")

    def __init__(self, py_func: Any) -> None:
        self._py_func, self._real = py_func, None

    def __getattr__(self, name: str) -> Any:
        real = self._real
        if real is None:  # a race builds two equal caches; one is kept
            real = self._real = caching.FunctionCache(self._py_func)
        return getattr(real, name)


def _lazy_caching() -> bool:
    """Build the cache of mpinet's kernels at their first use (see :class:`_LazyCache`)."""

    def make(own: Any) -> Any:
        def enable_caching(self: Any) -> None:
            code = getattr(self.py_func, "__code__", None)
            where = os.path.abspath(code.co_filename) if code is not None else ""
            if where.startswith(str(_PACKAGE) + os.sep):
                self._cache = _LazyCache(self.py_func)
            else:  # a kernel of another package: numba's way
                own(self)

        return enable_caching

    return _wrap(dispatcher.Dispatcher, "enable_caching", make)


guard()
_stamp_package()
_lazy_caching()
numba_load.install()
