"""Fixed-point sums: the reason dgbdt's models do not depend on row order or partitioning.

Floating-point addition is not associative, so a sum of the same numbers in another order (rows
permuted, split into other partitions, merged by another reduction tree, accumulated by racing
GPU atomics) may differ in its last bits, and a tree split can flip. dgbdt instead rounds every
summand once to an integer multiple of 2**-k,

    q_i = rint(x_i * 2**k),      k chosen so that  n * max|x| * 2**k < 2**62,

and adds the int64 q_i, which is exact in any order and cannot overflow. The scale depends only on
max|x| and the row count n, both exact and order-free reductions. The relative precision of a
summand is about 2**-62 * n * max|x| / |x_i|: for a million rows 2**-42 of the largest value,
far below float32 gradient noise.
"""
from __future__ import annotations

import math

import numpy as np

_HEADROOM_BITS = 62


def scale_for(max_abs: float, n: int) -> float:
    """The power of two 2**k with n * max_abs * 2**k < 2**62 (1.0 when everything is zero)."""
    if not math.isfinite(max_abs):
        raise ValueError(f"cannot sum non-finite values (max |x| = {max_abs})")
    if max_abs <= 0.0 or n <= 0:
        return 1.0
    # frexp: n * max_abs = m * 2**e with m in [0.5, 1), so n * max_abs < 2**e
    _, e = math.frexp(float(n) * float(max_abs))
    return math.ldexp(1.0, _HEADROOM_BITS - e)


def to_fixed(x: np.ndarray, scale: float) -> np.ndarray:
    """rint(x * scale) as int64 (exact for the power-of-two scale, rounding once)."""
    return np.rint(np.asarray(x, dtype=np.float64) * scale).astype(np.int64)


def exact_sum(x: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """Order-independent float sum of x via one fixed-point rounding per element.

    Permuting x (along axis) gives a bit-identical result, unlike np.sum.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return np.zeros(x.shape[1:] if axis == 0 else (), dtype=np.float64) if axis is not None \
            else 0.0
    n = x.shape[axis] if axis is not None else x.size
    scale = scale_for(float(np.max(np.abs(x))), n)
    total = to_fixed(x, scale).sum(axis=axis)
    return total / scale
