"""The lean iq path's route of a head under ``dor`` (docs/iq-router.md, "Session 19: the
lean path at high load"): :func:`dor_route`, the port :func:`~mpinet.routing.dor.dor_hop_one`
gives, with its divisions by ``K`` done as multiplications (:func:`~.iq_lists.div`). A
dependent 64-bit division costs about 14 ns here, and ``dor_hop_one`` takes two to four a
head's hop: on meshconfig's mesh at 0.4, where every flit is a head, that was a fifth of the
lean kernel's time. Inlined into :func:`~mpinet.engine.flit.iq_lean.run_block`."""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.routing import dor


@njit(cache=True, inline="always")
def dor_port(cur, dst, k, nd, mode, m, lim):
    """:func:`~mpinet.routing.dor.dor_hop_one` (``dst != cur``), its ``% k`` and ``// k`` by
    :func:`~.iq_lists.div` with ``(m, lim) = magic(k)``: the same port, or ``-1 - 2 i`` on a
    random tie in dimension ``i``."""
    i = 0
    cq = il.div(cur, k, m, lim)
    dq = il.div(dst, k, m, lim)
    a, b = cur - cq * k, dst - dq * k
    while a == b and i < nd - 1:
        cur, dst = cq, dq
        i += 1
        cq = il.div(cur, k, m, lim)
        dq = il.div(dst, k, m, lim)
        a, b = cur - cq * k, dst - dq * k
    if mode == dor.MESH:
        return 2 * i if a < b else 2 * i + 1
    d2 = k - 2 * il.wrap(b - a + k, k)  # (b - a + k in 1 .. 2 k - 1)
    if d2 > 0 or (d2 == 0 and mode == dor.PLUS):
        return 2 * i
    if d2 == 0 and mode == dor.RANDOM:
        return -1 - 2 * i
    return 2 * i + 1


@njit(cache=True, inline="always")
def dor_route(n, lo, dst, k, nd, mode, m, lim, deg, nv, vcs, nbt, sport):
    """The state output port of a head at router ``n`` (``lo + n`` in the network) for
    ``dst`` under ``dor`` and the ``any`` VC policy, as
    :func:`~mpinet.engine.flit.iq_moves.route_head` gives it (its VC range then ``0 ..
    vcs``, or ``0 .. nv`` at its destination, port ``deg``); -1 where that function must
    answer (a random tie, a port with no link: its error)."""
    if n + lo == dst:
        return deg
    port = dor_port(n + lo, dst, k, nd, mode, m, lim)
    if port < 0 or port >= deg:
        return -1
    sp = sport[n * deg + port]
    return sp if nbt[n * deg + sp] >= 0 else -1
