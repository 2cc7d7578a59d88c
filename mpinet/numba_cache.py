"""numba's on-disk cache, made safe across upgrades of mpinet.

numba keeps a kernel's compiled code beside its module with an index (``*.nbi``) that
pickles the kernel's signatures. A signature names its argument types, and a named-tuple
bundle pickles by its class's module path: after an upgrade that moves such a class (say
from ``engine/flit/chunk.py`` to ``injection_blocks.py``), numba's loader raises
``AttributeError`` while unpickling the old index instead of treating it as stale, and
every run dies before its first step until the user finds and deletes the cache. Here an
index that cannot be unpickled counts as an obsolete one (numba's own word for an index of
another numba version): the kernel compiles again and its index is rewritten.

:func:`guard` wraps numba's index loader once per process; the modules that compile
kernels import this one (:mod:`mpinet.perm`, :mod:`mpinet.rng`, :mod:`mpinet.engine.jit`,
the flit engine's package), so it is in place before any kernel loads.
"""

from __future__ import annotations

import pickle
from typing import Any

from numba.core import caching

#: what unpickling an index written by other code can raise
_UNREADABLE = (AttributeError, ImportError, pickle.UnpicklingError, EOFError, TypeError,
               ValueError)  # fmt: skip


def guard() -> bool:
    """Make an unreadable cache index read as an obsolete one; True once in place.

    False (and nothing changed) when this numba has no such loader: its own behaviour stands.
    """
    cls = getattr(caching, "IndexDataCacheFile", None)
    load = getattr(cls, "_load_index", None)
    if load is None:
        return False
    if getattr(load, "_mpinet_guard", False):
        return True

    def _load_index(self: Any) -> dict:
        try:
            return load(self)
        except _UNREADABLE:
            return {}  # as numba treats an index of another version: compile again

    _load_index._mpinet_guard = True  # type: ignore[attr-defined]
    cls._load_index = _load_index
    return True


guard()
