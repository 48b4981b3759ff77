"""Input checks on the device (cuda/checks.cu): the first infinite value of a matrix and the
witnesses of a label vector, each one kernel and one small copy back (no CuPy reduction, which
NVRTC would compile at a fresh install's first fit)."""
from __future__ import annotations

import numpy as np

from .launch import BLOCK, _grid, _i64, kernel

_KERNELS = {np.dtype(np.float32): "first_inf_f32", np.dtype(np.float64): "first_inf_f64"}


def _blocks(x) -> int:
    return max(1, min(_grid(x.size), x.device.attributes["MultiProcessorCount"] * 8))


def first_inf_index(x) -> int | None:
    """The smallest flat index of an infinite value of the C-contiguous float32/float64 cupy
    array ``x``, or None."""
    import cupy as cp
    n = int(x.size)
    if n == 0:
        return None
    with x.device:
        out = cp.asarray(np.array([n], dtype=np.uint64))
        kernel("checks", _KERNELS[x.dtype])((_blocks(x),), (BLOCK,), (x, _i64(n), out))
        got = int(cp.asnumpy(out)[0])
    return None if got == n else got


def _from_key(k: int) -> float:
    """Inverse of checks.cu's order_key."""
    b = k & 0x7FFFFFFFFFFFFFFF if k >> 63 else ~k & 0xFFFFFFFFFFFFFFFF
    return float(np.array([b], dtype=np.uint64).view(np.float64)[0])


def label_scan(y) -> tuple[int | None, int | None, float | None, float | None]:
    """(index of the first non-finite label, index of the first finite non-integer one, the
    least finite label, the greatest), each None where there is none, of a contiguous float64
    cupy vector ``y``."""
    import cupy as cp
    n = int(y.size)
    with y.device:
        out = cp.asarray(np.array([n, n, 2 ** 64 - 1, 0], dtype=np.uint64))
        if n:
            kernel("checks", "label_scan")((_blocks(y),), (BLOCK,), (y, _i64(n), out))
        bad, nonint, lo, hi = (int(v) for v in cp.asnumpy(out))
    finite = lo != 2 ** 64 - 1
    return (bad if bad < n else None, nonint if nonint < n else None,
            _from_key(lo) if finite else None, _from_key(hi) if finite else None)
