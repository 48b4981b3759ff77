"""The device sketch's two passes over every value as CUDA kernels (cuda/sketch.cu); their
specification is the array code of dgbdt.data.sketch_device, which gives the same arrays."""
from __future__ import annotations

import numpy as np

from .launch import BLOCK, kernel, sm_count

KEYS_BLOCK = (32, 8)


def sketch_keys(blocks, f0: int, g: int):
    """(comp, cnt, infs) for features f0 .. f0 + g of the rows of ``blocks`` (device float32
    arrays [n_b, F], any strides; their rows one after another, N rows in all): comp uint32
    [g * N] with comp[f * N + r] = key(row r's value of feature f0 + f) (the sketch's sort
    keys, NaN last; each feature's run is sorted on its own), and int64 [g] counts of each feature's non-NaN values and
    infinities. One launch a block, each writing its rows' slice of every feature's run."""
    import cupy as cp
    total = sum(int(X.shape[0]) for X in blocks)
    comp = cp.empty(g * total, dtype=cp.uint32)
    counts = cp.zeros(2 * g, dtype=cp.uint64)
    row0 = 0
    for X in blocks:
        n = int(X.shape[0])
        s0, s1 = (int(s) // X.itemsize for s in X.strides)
        if n and g:
            grid = ((n + 31) // 32, (g + 31) // 32)
            kernel("sketch", "sketch_keys")(grid, KEYS_BLOCK, (X, np.int64(n), np.int32(g),
                                                             np.int64(s0), np.int64(s1),
                                                             np.int32(f0), comp, counts,
                                                             np.int64(total), np.int64(row0)))
        row0 += n
    counts = counts.view(cp.int64)
    return comp, counts[:g], counts[g:]


def _grid_x(comp, n: int, g: int) -> int:
    n_sm = sm_count(comp.device.id)
    return max(1, min((n + BLOCK - 1) // BLOCK, max(1, n_sm * 8 // max(g, 1))))


def sketch_bit_hist(comp, n: int, g: int, cnt):
    """int64 [g, 33]: per feature of the sorted comp [g * n] (see sketch_keys) with non-NaN
    counts cnt, how many of its positions j in 1 .. n - 1 have each bit length of
    key[j] ^ key[j - 1] (0 from the feature's first NaN on)."""
    import cupy as cp
    hist = cp.zeros(g * 33, dtype=cp.uint64)
    if n > 1 and g:
        kernel("sketch", "sketch_bit_hist")((_grid_x(comp, n, g), g), (BLOCK,),
                                            (comp, np.int64(n), cnt, hist))
    return hist.view(cp.int64).reshape(g, 33)


BUCKET_ITEMS = 16        # positions a thread takes in the bucket kernels (cuda/sketch.cu)


def sketch_buckets(comp, n: int, g: int, cnt, shift):
    """(m, out) for the sorted comp [g * n] (see sketch_keys), with cnt [g] non-NaN counts and
    shift [g] each feature's shift: out int64 [5, m] holds, for each of the m buckets in
    feature-major order, its key >> shift, the float32 bits of its first and last key, and its
    first and last flat position f * n + j. A bucket starts at position 0 of a feature with a
    non-NaN value and at every j where the bit length of key[j] ^ key[j - 1] exceeds the
    feature's shift (the array code of dgbdt.data.sketch_device). The host reads m (one small
    copy) to size ``out``."""
    import cupy as cp
    total = n * g
    per_block = BLOCK * BUCKET_ITEMS
    nb = max(1, (total + per_block - 1) // per_block)
    offsets = cp.zeros(nb + 1, dtype=cp.uint64)
    args = (comp, np.int64(n), np.int32(g), cnt, shift)
    if total:
        kernel("sketch", "sketch_bucket_counts")((nb,), (BLOCK,), (*args, offsets))
        kernel("sketch", "sketch_bucket_offsets")((1,), (1024,), (offsets, np.int64(nb)))
    m = int(offsets[nb:].get()[0])
    out = cp.empty((5, m), dtype=cp.int64)
    if m:
        kernel("sketch", "sketch_buckets")((nb,), (BLOCK,), (*args, offsets, np.int64(m), out))
    return m, out


def sketch_shifts(comp, n: int, g: int, cnt, max_keys: int):
    """int64 [g]: each feature's smallest shift s with at most max_keys buckets of keys >> s,
    from sketch_bit_hist (the bucket count at shift s is 1 + the positions whose bit length
    exceeds s). Stays on the device."""
    import cupy as cp
    hist = sketch_bit_hist(comp, n, g, cnt)
    shift = cp.zeros(g, dtype=cp.int64)
    if g:
        kernel("sketch", "sketch_shifts")(((g + BLOCK - 1) // BLOCK,), (BLOCK,),
                                          (hist, np.int32(g), np.int64(max_keys), shift))
    return shift
