"""Which compiled copy of the lean iq kernel a run takes (docs/iq-router.md, "Session 20:
the lean path's margin on one rank" and the sessions after it).

:func:`~.iq_lean.run_block` is compiled once per key set: its last
argument is a tuple of zeros whose *length* numba lowers as a constant, so each copy keeps
only the branches its keys take. Each bit of the length switches on a part: speculation and
output speedup (1), the prefetches (2, 4), the separable allocators (6), stages of several
cycles (12, with 6), internal speedup (24, with 18). This module holds that plain Python
(no numba), apart from the kernel, so the kernel's module holds only the kernel.

Why the kernel's helpers (``iq_lean_io``, ``iq_lean_alloc``, ``iq_lean_spec``,
``iq_lean_speedup``, ``iq_lean_exchange``) are compiled apart and called, not inlined by
numba (docs/iq-router.md, "Session 25: the lean kernel's helpers compiled apart"): numba's
passes over a function (reaching definitions, SSA) grow faster than its size, and each copy
inlined every helper again, so a copy took 33-84 s to compile; called, each helper compiles
once for every copy, and a copy takes 23-32 s. The engine's time is the same within the
window's noise (bench_iq, alternated). Only the smallest helpers (iq_lists',
``iq_lean_alloc.ahead``, ``_beats``, ``_grant``, ``iq_lean_route``'s) stay inlined.
"""

from __future__ import annotations

from mpinet.engine.flit.iq_alloc import INPUT_FIRST, ISLIP

#: the input VCs' rows and rings (bytes) from which the kernel fetches them ahead
FAR = 1 << 20


def block_for(prm, speedup: float = 1.0) -> tuple:
    """:func:`~.iq_lean.run_block`'s last argument for a run of ``prm`` (``speedup``:
    its ``internal_speedup``): a tuple whose length says which keys' branches its compiled
    copy keeps (:func:`mode`)."""
    far = prm.nnode * prm.nport * prm.nvc * (prm.bsz + 4) * 4 > FAR
    sep = prm.sak != ISLIP or prm.vak == INPUT_FIRST
    deep = prm.rd > 1 or prm.xd > 1 or prm.vad > 1 or prm.sad > 1
    spd = speedup != 1
    return mode(bool(prm.spec or prm.osp != 1), 1 if far else 0, 1 if sep else 0, deep, spd)


def mode(full: bool, fetch: int, sep: int = 0, deep: bool = False, spd: bool = False) -> tuple:
    """The tuple for :func:`~.iq_lean.run_block`: ``full`` speculation and output
    speedup's code on, ``fetch`` the prefetches off, on or by the state's size (0, 1, 2),
    ``sep`` the separable allocators' code none (iSLIP only) or inlined (0, 1; "Session
    21"), ``deep`` stages of several cycles' code on ("Session 22"; its copies carry the
    separable code too), ``spd`` internal speedup's ("Session 23"; its copy carries the deep,
    separable and speculation code and the prefetches by size: it is :data:`ALL`). numba
    compiles a copy of the kernel per tuple type and lowers ``len`` of a tuple as a constant,
    so LLVM folds the branches a run does not take (docs/iq-router.md, "Session 20"), and
    numba prunes those that test ``len(mode)`` alone before it inlines."""
    deep = deep or spd
    # internal speedup's one copy is the several ranks' (ALL): each copy takes 40-120 s to
    # compile, and CI's suite compiles every copy it meets ("Session 24": CI's time)
    full = full or spd
    fetch = 2 if spd else fetch
    return (0,) * (int(full) + 2 * fetch + 6 * max(sep, int(deep)) + 12 * int(deep) + 24 * spd)


#: run_block's mode with every key's code on, read at run time (iq_lean_ranks: one copy)
ALL = mode(True, 2, 1, True, True)
