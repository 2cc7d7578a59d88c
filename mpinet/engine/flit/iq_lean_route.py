"""The lean iq path's route of a head under ``dor`` (docs/iq-router.md, "Session 19: the
lean path at high load"): :func:`dor_route`, the port :func:`~mpinet.routing.dor.dor_hop_one`
gives, with its divisions by ``K`` done as multiplications (:func:`~.iq_lists.div`). A
dependent 64-bit division costs about 14 ns here, and ``dor_hop_one`` takes two to four a
head's hop: on meshconfig's mesh at 0.4, where every flit is a head, that was a fifth of the
lean kernel's time. Inlined into :func:`~mpinet.engine.flit.iq_lean.run_block`."""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

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


@intrinsic
def fetch_row(typingctx, arr, i):
    """Hint that row ``i`` of the 2-d ``arr`` will be read soon (``llvm.prefetch``, as
    :func:`~mpinet.prefetch.prefetch` for a 1-d array; no bounds checked: it never faults)."""
    if not isinstance(arr, types.Array) or arr.ndim != 2 or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        aty, ity = signature.args
        ary = context.make_array(aty)(context, builder, args[0])
        k = context.cast(builder, args[1], ity, types.intp)
        zero = context.get_constant(types.intp, 0)
        ptr = cgutils.get_item_pointer(context, builder, aty, ary, [k, zero], wraparound=False)
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        read, keep, data = (ir.Constant(i32, v) for v in (0, 3, 1))  # all caches, data
        builder.call(fn, [builder.bitcast(ptr, i8p), read, keep, data])
        return context.get_dummy_value()

    return types.void(arr, i), codegen
