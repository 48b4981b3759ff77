"""Input checks on the device (cuda/checks.cu): the first infinite value of a matrix and the
witnesses of a label vector, each one kernel and one small copy back (no CuPy reduction, which
NVRTC would compile at a fresh install's first fit)."""
from __future__ import annotations

import numpy as np

from .launch import BLOCK, _grid, _i64, kernel, sm_count

_KERNELS = {np.dtype(np.float32): "first_inf_f32", np.dtype(np.float64): "first_inf_f64"}
#: the label kernels' name suffix of each label dtype they take (cuda/checks.cu)
_LABEL_TYPES = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32",
                np.dtype(np.int64): "i64", np.dtype(np.int32): "i32"}


def _arith(y, v):
    """v as the kernels' arithmetic type for y's labels (double for floats, int64 for ints)."""
    return np.float64(v) if y.dtype.kind == "f" else np.int64(v)


def _blocks(x) -> int:
    return max(1, min(_grid(x.size), sm_count(x.device.id) * 8))


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
    or float32 cupy vector ``y``."""
    import cupy as cp
    n = int(y.size)
    name = {np.dtype(np.float64): "label_scan", np.dtype(np.float32): "label_scan_f32"}[y.dtype]
    with y.device:
        out = cp.asarray(np.array([n, n, 2 ** 64 - 1, 0], dtype=np.uint64))
        if n:
            kernel("checks", name)((_blocks(y),), (BLOCK,), (y, _i64(n), out))
        bad, nonint, lo, hi = (int(v) for v in cp.asnumpy(out))
    finite = lo != 2 ** 64 - 1
    return (bad if bad < n else None, nonint if nonint < n else None,
            _from_key(lo) if finite else None, _from_key(hi) if finite else None)


#: the widest label range the class kernels take (a uint32 flag and an int64 rank per value)
MAX_CLASS_RANGE = 1 << 20


def _label_range(y) -> tuple[float, float] | tuple[int, int] | None:
    """(least, greatest) label of a float or integer cupy vector (_LABEL_TYPES) whose labels
    are all finite integers, else None."""
    import cupy as cp
    if y.dtype.kind == "f":
        bad, nonint, lo, hi = label_scan(y)
        return None if bad is not None or nonint is not None or lo is None else (lo, hi)
    n = int(y.size)
    with y.device:
        out = cp.asarray(np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min], np.int64))
        kernel("checks", "int_range_" + _LABEL_TYPES[y.dtype])((_blocks(y),), (BLOCK,),
                                                            (y, _i64(n), out))
        lo, hi = (int(v) for v in cp.asnumpy(out))
    return lo, hi


def _usable(y) -> bool:
    return y.ndim == 1 and y.size > 0 and y.dtype in _LABEL_TYPES and y.flags.c_contiguous


def integer_classes(y) -> np.ndarray | None:
    """The sorted distinct labels of a cupy vector (a dtype of _LABEL_TYPES) as a host array of
    its dtype, by two kernels and a copy of a presence flag per value of [min, max], where the
    labels are finite integers spanning at most MAX_CLASS_RANGE values; else None (the caller
    falls back to a sort)."""
    import cupy as cp
    if not _usable(y):
        return None
    span = _label_range(y)
    if span is None or span[1] - span[0] >= MAX_CLASS_RANGE:
        return None
    lo, hi = span
    rng = int(hi - lo) + 1
    with y.device:
        present = cp.zeros(rng, dtype=np.uint32)
        kernel("checks", "label_presence_" + _LABEL_TYPES[y.dtype])(
            (_blocks(y),), (BLOCK,), (y, _i64(y.size), _arith(y, lo), _i64(rng), present))
        offsets = np.flatnonzero(cp.asnumpy(present))
    return (offsets + y.dtype.type(lo)).astype(y.dtype)


def encode_integer_classes(y, classes: np.ndarray):
    """(float64 cupy vector of each label's index into the sorted ``classes``, the index of
    the first label not among them or None), by one kernel, where ``y`` (_LABEL_TYPES)
    and ``classes`` (numbers) suit integer_classes; else None."""
    import cupy as cp
    if not _usable(y) or len(classes) == 0 or classes.dtype.kind not in "iuf":
        return None
    lo, hi = classes[0], classes[-1]
    if not (np.all(np.isfinite(classes)) and np.all(classes == np.floor(classes))
            and hi - lo < MAX_CLASS_RANGE and abs(float(lo)) < 2 ** 53
            and abs(float(hi)) < 2 ** 53):
        return None
    rng = int(hi - lo) + 1
    rank = np.full(rng, -1, dtype=np.int64)
    rank[(classes - lo).astype(np.int64)] = np.arange(len(classes))
    n = int(y.size)
    with y.device:
        out = cp.empty(n, dtype=np.float64)
        unknown = cp.asarray(np.array([n], dtype=np.uint64))
        kernel("checks", "label_encode_" + _LABEL_TYPES[y.dtype])(
            (_blocks(y),), (BLOCK,),
            (y, _i64(n), _arith(y, lo), _i64(rng), cp.asarray(rank), out, unknown))
        first = int(cp.asnumpy(unknown)[0])
    return out, (first if first < n else None)
