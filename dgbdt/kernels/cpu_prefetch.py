"""A software prefetch for numba kernels: ``prefetch(a, i)`` asks the CPU to bring the cache
line of ``a``'s element ``i`` (flat, C order) in without waiting for it (LLVM's llvm.prefetch;
a hint: no fault, no effect on results).

The row kernels read a node's rows in ascending order but, below the root, sparsely: each row's
page bytes and gradients are a cache miss that the CPU's out-of-order window, a row's 28-feature
loop long, cannot overlap with the next rows' misses. Prefetching a few rows ahead overlaps them
(XGBoost's histogram kernel does the same).
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, idx):
    """Prefetch for reading, kept in every cache level, of element ``idx`` of a 1-D array."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        i = context.cast(builder, args[1], sig.args[1], types.intp)
        ptr = builder.gep(ary.data, [i])
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = builder.module.declare_intrinsic("llvm.prefetch", [ptr.type], fnty)
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])     # read, high locality, data
        return context.get_dummy_value()

    return types.void(arr, idx), codegen
