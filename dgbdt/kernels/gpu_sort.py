"""Prefix sums and an argsort on the GPU that never compile at run time (cuda/sort.cu).

CuPy's ``cumsum`` and ``argsort`` compile their kernels with NVRTC at first use (0.1 s each),
which a fresh GPU's first fit with an auc eval set paid (dgbdt.metrics.sorted_scores). These
are prebuilt:

* ``exclusive_sums(a)``: ``out[i] = a[0] + ... + a[i - 1]`` for ``i`` in ``0..n`` (``n + 1``
  values, the last the total) of an int64 vector, exact (integers; wrapping as numpy's int64
  sums do): tile totals, their scan in one block, then each tile's scan from its offset.
* ``argsort_f64(score)``: the order that sorts a float64 vector ascending, stable (equal scores
  keep their order; NaN last, as numpy's), by an LSD radix sort of the scores' bits made
  order-preserving: eight passes of 8-bit digits, each counting the digits of 4096-key tiles,
  scanning those counts digit-major (``exclusive_sums``'s kernels) and scattering each tile's
  keys in order.
"""
from __future__ import annotations

import numpy as np

from .launch import BLOCK, _grid, _i32, _i64, kernel

SCAN_TILE = 4096     # cuda/sort.cu's tiles
RADIX_TILE = 4096
RADIX_THREADS = 256


#: at most this many values are scanned by one block (one launch, not three: a radix pass's
#: digit counts of up to a million keys; the host's launches were most of a GPU round's auc)
ONE_BLOCK = 1 << 16


def _scan_into(a, n: int, out) -> None:
    """out[0..n) = exclusive sums of the uint64 device vector a[0..n), out[n] = the total
    (out may be a)."""
    import cupy as cp
    if n <= ONE_BLOCK:
        if out.data.ptr != a.data.ptr:
            out.data.copy_from_device_async(a.data, 8 * n)
        kernel("sort", "scan_totals")((1,), (1024,), (out, _i64(n), out[n:]))
        return
    nb = (n + SCAN_TILE - 1) // SCAN_TILE
    sums = cp.empty(nb, dtype=cp.uint64)
    kernel("sort", "tile_totals")((nb,), (RADIX_THREADS,), (a, _i64(n), sums))
    kernel("sort", "scan_totals")((1,), (1024,), (sums, _i64(nb), out[n:]))
    kernel("sort", "tile_scan")((nb,), (RADIX_THREADS,), (a, _i64(n), sums, out))


def exclusive_sums(a):
    """int64 [n + 1]: 0, a[0], a[0] + a[1], ..., the total, of a 1-D int64 device vector."""
    import cupy as cp
    if a.dtype != np.int64 or a.ndim != 1:
        raise TypeError(f"exclusive_sums takes a 1-D int64 vector, not {a.dtype} {a.shape}")
    a = cp.ascontiguousarray(a)
    n = int(a.shape[0])
    out = cp.empty(n + 1, dtype=cp.int64)
    if n == 0:
        out.data.memset_async(0, out.nbytes)
        return out
    _scan_into(a.view(cp.uint64), n, out.view(cp.uint64))
    return out


def argsort_f64(score):
    """int64 [n]: the stable ascending order of a C-contiguous 1-D float64 device vector."""
    import cupy as cp
    if score.dtype != np.float64 or score.ndim != 1 or not score.flags.c_contiguous:
        raise TypeError("argsort_f64 takes a C-contiguous 1-D float64 vector")
    n = int(score.shape[0])
    keys, vals = cp.empty(n, dtype=cp.uint64), cp.empty(n, dtype=cp.int64)
    if n == 0:
        return vals
    kernel("sort", "f64_sort_keys")((_grid(n, cap=4096),), (BLOCK,),
                                    (score.view(cp.uint64), _i64(n), keys, vals))
    keys2, vals2 = cp.empty_like(keys), cp.empty_like(vals)
    nb = (n + RADIX_TILE - 1) // RADIX_TILE
    counts = cp.empty(256 * nb + 1, dtype=cp.uint64)
    for shift in range(0, 64, 8):
        kernel("sort", "radix_counts")((nb,), (RADIX_THREADS,),
                                       (keys, _i64(n), _i32(shift), counts))
        _scan_into(counts, 256 * nb, counts)
        kernel("sort", "radix_scatter")((nb,), (RADIX_THREADS,),
                                        (keys, vals, _i64(n), _i32(shift), counts, keys2, vals2))
        keys, keys2, vals, vals2 = keys2, keys, vals2, vals
    return vals


__all__ = ["argsort_f64", "exclusive_sums"]
