"""Compiled hops: a router's next-port rule as one scalar numba function.

Why: the engine's departure calendar (:mod:`mpinet.engine.calendar`) can then
route a packet inside the compiled loop that moves it, instead of writing its
row out for a vectorized :meth:`Router.next_port` and reading it back three
times (docs/history/performance-log.md, "Routing inside the calendar"). A router offers
its rule through :meth:`Router.compiled_hop`, a
:class:`~mpinet.routing.base.CompiledHop`; its own ``next_port`` loops over
the same scalar function, so both give the same answers by construction.

One dispatcher, :func:`hop`, branches on the rule's code: numba cannot cache
a kernel that takes a compiled function as an argument (it compiles it again
in every process), so the set of rules is closed here. Adding one is a code
and a scalar function in the router's module, and a branch below; then change the
files whose kernels inline :func:`hop` (``engine/calendar_kernels.py``,
``engine/flit/chunk.py``): numba's cache is keyed on a kernel's own file, and a
cached kernel keeps the old branches.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mpinet.errors import RoutingError
from mpinet.prefetch import prefetch
from mpinet.routing import anynet_min, dor, fccn, shortest, source_routes
from mpinet.routing.base import CompiledHop, Router

#: no compiled rule: the engine calls ``next_port``
NONE = 0
#: ``shortest`` on translated tables, tie ``first``: ``prm = (N, degree, several targets)``
TRANSLATED = shortest.HOP_CODE
#: ``fccn-shortest``: ``ta`` the lowest-bit port table
FCCN_SHORTEST = fccn.HOP_CODE
#: ``anynet-min``: ``prm[0] = N``, ``ta`` the N x N port table
ANYNET_MIN = anynet_min.HOP_CODE
#: routes computed at injection (:mod:`mpinet.routing.source_routes`): the header word
#: indexes the packet's route row and cell (``row * prm[0] + cell``), ``ta`` the flat
#: (rows, prm[0]) route table, ``tb`` the rows' links
#: (:func:`~mpinet.routing.source_routes.source_rule`)
SOURCE = source_routes.HOP_CODE
#: ``dor`` (:mod:`mpinet.routing.dor`) without random ties: ``prm = (K, N, mode)``
DOR = dor.HOP_CODE

#: what the engine passes for a router without a rule (one compiled signature for all)
NO_HOP = CompiledHop(NONE, np.zeros(3, np.int64), np.zeros(1, np.uint8), np.zeros(1, np.int32))


def rule_of(router: Router) -> CompiledHop:
    """The router's compiled rule, or :data:`NO_HOP` (none, or tables of other dtypes)."""
    rule = router.compiled_hop()
    if rule is None or rule.ta.dtype != np.uint8 or rule.tb.dtype != np.int32:
        return NO_HOP
    if rule.code not in (TRANSLATED, FCCN_SHORTEST, ANYNET_MIN, SOURCE, DOR):
        raise RoutingError(
            f"router {router.name}: compiled hop code {rule.code} is not one of "
            f"{TRANSLATED}, {FCCN_SHORTEST}, {ANYNET_MIN}, {SOURCE}, {DOR} "
            "(mpinet.routing.compiled)"
        )
    return rule


@nb.njit(cache=True, nogil=True, inline="always")
def hop(code, prm, ta, tb, cur, dst, h):
    """``(port, header after the hop)`` of one packet at ``cur`` for ``dst`` carrying ``h``."""
    if code == TRANSLATED:
        return shortest.translated_hop_one(h, prm[0], prm[1], prm[2] != 0, ta, tb)
    if code == ANYNET_MIN:
        return anynet_min.table_hop_one(cur, dst, prm[0], ta), h
    if code == SOURCE:
        return source_routes.source_hop_one(h, prm[0], ta, tb)
    if code == DOR:
        return dor.dor_hop_one(cur, dst, prm[0], prm[1], prm[2]), h
    return fccn.shortest_hop_one(cur, dst, h, ta)


@nb.njit(cache=True, nogil=True, inline="always")
def touch(code, prm, ta, cur, dst):
    """Prefetch what :func:`hop` will read for a packet at ``cur`` for ``dst``: the entry of
    ``anynet-min``'s N x N table (25 MB on ms:3,2: a miss per hop); the other rules' tables
    are small and stay cached."""
    if code == ANYNET_MIN:
        prefetch(ta, cur * prm[0] + dst)
