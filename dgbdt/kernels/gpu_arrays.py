"""Array basics on a GPU that never compile at run time.

CuPy's own array functions (``fill`` with a non-zero value, ``copy``, ``concatenate``,
``arange``, ``tile``, axis sums, fancy indexing) compile a kernel per dtype with NVRTC at their
first use, 0.1-0.2 s each. A fresh GPU worker's first fit paid 16 of them, 2.0 s of a 6.6 s fit
(bench_multi_gpu.py --first --cold-cache). These do the same with ``cudaMemsetAsync``,
``cudaMemcpyAsync`` or the prebuilt kernels of cuda/arrays.cu. Arrays are cupy arrays, C-contiguous
where an output is written; everything is enqueued on the current stream (no host wait).
"""
from __future__ import annotations

import numpy as np

from .launch import BLOCK, _grid, _i32, _i64, kernel


def _uniform_byte(value, dtype) -> int | None:
    """The byte b if every byte of ``value`` as ``dtype`` is b (0, -1, False, True...)."""
    raw = np.asarray(value, dtype=dtype).tobytes()
    return raw[0] if raw == raw[:1] * len(raw) else None


def fill(a, value) -> None:
    """a[...] = value, in place (a C-contiguous)."""
    if not a.flags.c_contiguous:
        raise ValueError("gpu_arrays.fill needs a C-contiguous array")
    if a.size == 0:
        return
    b = _uniform_byte(value, a.dtype)
    if b is not None:
        a.data.memset_async(b, a.nbytes)
        return
    size = a.dtype.itemsize
    if size not in (4, 8):
        raise TypeError(f"gpu_arrays.fill: {a.dtype} with {value!r} (4- and 8-byte elements, "
                        "or a value of one repeated byte)")
    bits = np.asarray(value, dtype=a.dtype).view(np.uint32 if size == 4 else np.uint64)
    name = "fill_b32" if size == 4 else "fill_b64"
    kernel("arrays", name)((_grid(a.size, cap=4096),), (BLOCK,), (a, bits[()], _i64(a.size)))


def full(shape, value, dtype):
    """A new array of ``shape`` with every element ``value``."""
    import cupy as cp
    a = cp.empty(shape, dtype=dtype)
    fill(a, value)
    return a


def copy(a):
    """A C-contiguous copy of a C-contiguous array (one device-to-device copy)."""
    import cupy as cp
    if not a.flags.c_contiguous:
        raise ValueError("gpu_arrays.copy needs a C-contiguous array")
    out = cp.empty(a.shape, dtype=a.dtype)
    if a.nbytes:
        out.data.copy_from_device_async(a.data, a.nbytes)
    return out


def concatenate(parts):
    """The C-contiguous arrays ``parts`` (one dtype, equal trailing shapes) along axis 0."""
    import cupy as cp
    first = parts[0]
    if any(p.dtype != first.dtype or p.shape[1:] != first.shape[1:] or
           not p.flags.c_contiguous for p in parts):
        raise ValueError("gpu_arrays.concatenate needs C-contiguous arrays of one dtype and "
                         "equal trailing shapes")
    out = cp.empty((sum(p.shape[0] for p in parts),) + first.shape[1:], dtype=first.dtype)
    at = 0
    for p in parts:
        if p.nbytes:
            (out.data + at).copy_from_device_async(p.data, p.nbytes)
        at += p.nbytes
    return out


def iota(a) -> None:
    """a[i] = i, in place (a C-contiguous 1-D int32 or int64 array)."""
    if a.dtype not in (np.int32, np.int64) or a.ndim != 1 or not a.flags.c_contiguous:
        raise TypeError(f"gpu_arrays.iota: a C-contiguous 1-D int32 or int64 array, not {a.dtype}")
    if a.size:
        kernel("arrays", "iota_i32" if a.dtype == np.int32 else "iota_i64")(
            (_grid(a.size, cap=4096),), (BLOCK,), (a, _i64(a.size)))


def arange(n: int, dtype):
    """0, 1, ..., n - 1 as int32 or int64."""
    import cupy as cp
    a = cp.empty(int(n), dtype=dtype)
    iota(a)
    return a


def repeat_row(row, n: int):
    """[n, k] of an 8-byte [k] device row repeated n times (np.tile(row, (n, 1)))."""
    import cupy as cp
    row = cp.ascontiguousarray(row)
    if row.ndim != 1 or row.dtype.itemsize != 8:
        raise TypeError("gpu_arrays.repeat_row: a 1-D array of 8-byte elements")
    k = row.shape[0]
    a = cp.empty((int(n), k), dtype=row.dtype)
    if n and k:
        kernel("arrays", "repeat_row_b64")((_grid(n * k, cap=4096),), (BLOCK,),
                                           (a, row, _i64(n), _i32(k)))
    return a


def row_range_sums(a, lo: int, hi: int, out) -> None:
    """out[c] = a[lo:hi, c].sum() of a C-contiguous int64 [*, k] array (k <= 8), exact."""
    if a.dtype != np.int64 or a.ndim != 2 or a.shape[1] > 8 or not a.flags.c_contiguous:
        raise TypeError("gpu_arrays.row_range_sums: a C-contiguous int64 [*, k <= 8] array")
    kernel("arrays", "row_range_sums")((1,), (256,), (a, _i64(lo), _i64(hi),
                                                     _i32(a.shape[1]), out))


def flags(a):
    """A bool view of an int64 array of 0s and 1s: its low bytes (little-endian, as every CUDA
    host), no copy and no kernel."""
    if a.dtype != np.int64 or a.ndim != 1:
        raise TypeError("gpu_arrays.flags: a 1-D int64 array")
    return a.view(np.uint8)[::8].view(np.bool_)


_TO_F64 = {np.dtype(t): f"to_f64_{n}" for t, n in (
    (np.float32, "f32"), (np.int8, "i8"), (np.uint8, "u8"), (np.bool_, "u8"), (np.int16, "i16"),
    (np.uint16, "u16"), (np.int32, "i32"), (np.uint32, "u32"), (np.int64, "i64"),
    (np.uint64, "u64"))}


def to_f64(a):
    """A new C-contiguous float64 copy of a 1-D device vector (``a.astype(float64)``) by a
    prebuilt cast for the real and boolean dtypes numpy has (float64: a copy); other dtypes
    and strided vectors through CuPy."""
    import cupy as cp
    name = _TO_F64.get(a.dtype)
    if a.ndim != 1 or not a.flags.c_contiguous or (name is None and a.dtype != np.float64):
        return a.astype(cp.float64)
    if name is None:
        return copy(a)
    out = cp.empty(a.shape[0], dtype=cp.float64)
    if a.size:
        src = a.view(cp.uint8) if a.dtype == np.bool_ else a
        kernel("arrays", name)((_grid(a.size, cap=4096),), (BLOCK,), (src, out, _i64(a.size)))
    return out


def proba_pair(p):
    """[n, 2] of a 1-D float32/float64 device vector p: columns 1 - p (in p's type) and p."""
    import cupy as cp
    if p.ndim != 1 or p.dtype not in (np.float32, np.float64) or not p.flags.c_contiguous:
        return cp.stack([1.0 - p, p], axis=1)
    out = cp.empty((p.shape[0], 2), dtype=p.dtype)
    if p.size:
        kernel("arrays", "proba_pair_f32" if p.dtype == np.float32 else "proba_pair_f64")(
            (_grid(p.size, cap=4096),), (BLOCK,), (p, out, _i64(p.size)))
    return out
