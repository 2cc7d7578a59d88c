"""The iq routers' event lists (numba): per router and pipeline stage, the input VCs with an
item in that stage (waiting or in flight), as bit sets of ``nw = ceil(nport * nvc / 64)``
words per router (``m_rt``, ``m_va``, ``m_sa`` of :mod:`~mpinet.engine.flit.iq_state`).

A stage visits only the VCs whose bit is set, in increasing order (the order of a scan of
every VC, so the allocators' requests, the crossbar queue and the first routing error are
those of a full scan); a router with no bit set and nothing in its crossbar costs nothing
in an internal step. A bit is set whenever a VC's item enters the stage (``*_t = -1``) and
cleared when it leaves (``*_t = -2``); the stages still test each item's own state, so a
set bit is a candidate, never a decision.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

__all__ = ["words", "mark", "unmark", "low"]


def words(nport: int, nvc: int) -> int:
    """Words of one router's bit set over its ``nport * nvc`` input VCs."""
    return (nport * nvc + 63) // 64


@njit(cache=True, inline="always")
def mark(m, n, nw, j):
    """Input VC ``j`` of router ``n`` joins the set ``m``."""
    m[n * nw + (j >> 6)] |= np.uint64(1) << np.uint64(j & 63)


@njit(cache=True, inline="always")
def unmark(m, n, nw, j):
    """Input VC ``j`` of router ``n`` leaves the set ``m``."""
    m[n * nw + (j >> 6)] &= ~(np.uint64(1) << np.uint64(j & 63))


@njit(cache=True, inline="always")
def low(word):
    """The index of the lowest set bit of ``word`` (not 0)."""
    return np.int64(trailing_zeros(word))
