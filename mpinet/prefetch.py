"""A software prefetch for compiled loops whose loads depend on loads (LLVM's ``llvm.prefetch``).

Why: the flit engine's kernels walk the active buffers and links of a step and, from each, a
segment record, a neighbour's buffer or a routing table entry scattered over megabytes; a
step of a few thousand requests then waits on one cache miss after another. Asking for the
line a few iterations ahead overlaps those misses (docs/performance.md, "The flit engine":
the steps' kernels 14 % faster on the issue's run). A prefetch changes no result and never
faults, so an index outside the array (a link to another rank, an empty buffer's -1) is
harmless: no bounds are checked.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, idx):
    """Hint that ``arr[idx]`` will be read soon (a 2-d ``arr``: its row ``idx``); compiled
    code only."""
    if not isinstance(arr, types.Array) or arr.ndim > 2 or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        return _emit(context, builder, signature.args, args)

    return sig, codegen


def _emit(context, builder, tys, args):  # noqa: ANN001, ANN202 (numba's codegen)
    """The ``llvm.prefetch`` of ``arr[idx]`` (``tys``/``args``: the array's and the index's)."""
    aty, ity = tys
    ary = context.make_array(aty)(context, builder, args[0])
    i = context.cast(builder, args[1], ity, types.intp)
    zero = context.get_constant(types.intp, 0)  # a 2-d array's row: its first item
    at = [i] + [zero] * (aty.ndim - 1)
    ptr = cgutils.get_item_pointer(context, builder, aty, ary, at, wraparound=False)
    i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
    read, keep, data = (ir.Constant(i32, v) for v in (0, 3, 1))  # all caches, data
    builder.call(fn, [builder.bitcast(ptr, i8p), read, keep, data])
    return context.get_dummy_value()


@intrinsic
def ahead(typingctx, far, arr, idx):
    """:func:`prefetch` where ``far`` is not None; where it is None, no code at all.

    ``far``'s numba *type* decides, so a kernel compiles twice, once per kind: the flit
    engine's steps pass :attr:`~mpinet.engine.flit.layout.Params.far`, None for a rank's state
    that stays in a core's caches. Why not a branch on a value: in the one-rank steps (one
    compiled function, every port model's code inlined) the prefetches' mere presence, taken
    or not, cost hypercube:8's light-load steps 5-10 % (docs/performance.md, "hypercube:8 at
    light load in session 9")."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer):
        return None
    sig = types.void(far, arr, idx)
    if isinstance(far, (types.NoneType, types.Omitted)):
        return sig, lambda context, builder, signature, args: context.get_dummy_value()

    def codegen(context, builder, signature, args):
        return _emit(context, builder, signature.args[1:], args[1:])

    return sig, codegen
