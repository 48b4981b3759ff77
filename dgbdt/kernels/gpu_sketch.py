"""The device sketch's two passes over every value as CUDA kernels (cuda/sketch.cu); their
specification is the array code of dgbdt.data.sketch_device, which gives the same arrays."""
from __future__ import annotations

import numpy as np

from .gpu import BLOCK, kernel

KEYS_BLOCK = (32, 8)


def sketch_keys(X, f0: int, g: int):
    """(comp, nans, infs) for features f0 .. f0 + g of the device float32 X [n, F] (any
    strides): comp uint64 [g * n] with comp[f * n + r] = f << 32 | key(X[r, f0 + f]) (the
    sketch's sort keys, NaN last), and int64 [g] counts of each feature's NaNs and infinities."""
    import cupy as cp
    n = int(X.shape[0])
    s0, s1 = (int(s) // X.itemsize for s in X.strides)
    comp = cp.empty(g * n, dtype=cp.uint64)
    counts = cp.zeros(2 * g, dtype=cp.uint64)
    if n and g:
        grid = ((n + 31) // 32, (g + 31) // 32)
        kernel("sketch", "sketch_keys")(grid, KEYS_BLOCK, (X, np.int64(n), np.int32(g),
                                                         np.int64(s0), np.int64(s1),
                                                         np.int32(f0), comp, counts))
    counts = counts.view(cp.int64).reshape(g, 2)
    return comp, counts[:, 0], counts[:, 1]


def sketch_bit_lengths(comp, n: int, g: int, cnt):
    """(bl, hist) of the sorted comp [g * n] (see sketch_keys) and the non-NaN counts cnt
    int64 [g]: uint8 bl [g, n - 1] with the bit length of each key xor its predecessor (0 from
    a feature's first NaN on) and int64 hist [g, 33], each row's counts of bit lengths."""
    import cupy as cp
    bl = cp.empty((g, max(n - 1, 0)), dtype=cp.uint8)
    hist = cp.zeros(g * 33, dtype=cp.uint64)
    if n > 1 and g:
        n_sm = comp.device.attributes["MultiProcessorCount"]
        gx = max(1, min((n + BLOCK - 1) // BLOCK, max(1, n_sm * 8 // g)))
        kernel("sketch", "sketch_bit_lengths")((gx, g), (BLOCK,),
                                               (comp, np.int64(n), cp.ascontiguousarray(cnt),
                                                bl, hist))
    return bl, hist.view(cp.int64).reshape(g, 33)
