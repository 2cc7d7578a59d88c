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
    """Hint that ``arr[idx]`` (1-d) will be read soon; compiled code only."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aty, ity = signature.args
        ary = context.make_array(aty)(context, builder, args[0])
        i = context.cast(builder, args[1], ity, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aty, ary, [i], wraparound=False)
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        read, keep, data = (ir.Constant(i32, v) for v in (0, 3, 1))  # all caches, data
        builder.call(fn, [builder.bitcast(ptr, i8p), read, keep, data])
        return context.get_dummy_value()

    return sig, codegen
