"""Exact sums and counts on a GPU: the device twins of dgbdt.kernels.cpu_sum (cuda/data.cu)."""
from __future__ import annotations

import math

import numpy as np

from .launch import BLOCK, _grid, _i64, kernel, sm_count


def count_rows(mask):
    """int64 [R]: the nonzero count of each row of a device bool/uint8 [R, C] mask (cupy's
    axis reductions run one block per output; see cuda/data.cu). 1-D masks count as one row."""
    import cupy as cp
    m = cp.ascontiguousarray(mask)
    if m.dtype not in (cp.bool_, cp.uint8):
        m = m != 0
    m = m.reshape(1, -1) if m.ndim == 1 else m
    R, C = m.shape
    if R > 65535:       # many outputs: CuPy's reduction is parallel enough there
        return m.sum(axis=1, dtype=cp.int64)
    with m.device:
        out = cp.zeros(R, dtype=cp.uint64)
        if R and C:
            gx = max(1, min(math.ceil(C / (BLOCK * 8)), 65535, max(1, 4096 // R)))
            kernel("data", "count_rows")((gx, R), (BLOCK,), (m, _i64(C), out))
    return out.view(cp.int64)


def exact_sum_bins(x):
    """(hi, lo, bad) of dgbdt.kernels.fixedpoint.ExactSum.of for a device float64 vector: per-exponent
    int64 sums of the mantissas' high and low 26 bits (host numpy arrays, one copy back) and
    whether some value was not finite."""
    import cupy as cp

    from .cpu_sum import N_EXP as EXP_BINS     # the host kernel's bins (cuda/data.cu: same)
    n = int(x.shape[0])
    with x.device:
        out = cp.zeros(2 * EXP_BINS + 1, dtype=cp.uint64)
        if n:
            n_sm = sm_count(x.device.id)
            kernel("data", "exact_sum_bins")((max(1, min(_grid(n), n_sm * 8)),), (BLOCK,),
                                             (x, _i64(n), out))
    got = cp.asnumpy(out).view(np.int64)
    return got[:EXP_BINS], got[EXP_BINS:2 * EXP_BINS], bool(got[-1])
