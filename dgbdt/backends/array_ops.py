"""Array basics for either memory: numpy on the host, dgbdt.kernels.gpu_arrays on a GPU (which
never compiles at run time, where CuPy's own functions compile a kernel per dtype at first use:
a fresh worker's first fit paid 2 s of them). For code written once for numpy and cupy arrays
(the tree growers, the shards, the collective seam)."""
from __future__ import annotations

import numpy as np

from ..kernels.arrays import is_device_array


def _gpu():
    from ..kernels import gpu_arrays
    return gpu_arrays


def fill(a, value) -> None:
    """a[...] = value, in place (a C-contiguous)."""
    if is_device_array(a):
        _gpu().fill(a, value)
    else:
        a.fill(value)


def copy(a):
    """A C-contiguous copy of a C-contiguous array."""
    return _gpu().copy(a) if is_device_array(a) else a.copy()


def concatenate(parts):
    """C-contiguous arrays of one kind, dtype and trailing shape, along axis 0."""
    return _gpu().concatenate(parts) if is_device_array(parts[0]) else np.concatenate(parts)


def arange(n: int, dtype, xp):
    """0 .. n - 1 (int32 or int64) as an ``xp`` array."""
    return np.arange(n, dtype=dtype) if xp is np else _gpu().arange(n, dtype)


def repeat_row(row, n: int):
    """[n, k]: a 1-D array (8-byte elements on a GPU) repeated on n rows (np.tile(row, (n, 1)))."""
    return _gpu().repeat_row(row, n) if is_device_array(row) else np.tile(row, (n, 1))


def row_range_sums(a, lo: int, hi: int, out) -> None:
    """out[...] = a[lo:hi].sum(axis=0) of an int64 [*, k] array (exact: integers)."""
    if is_device_array(a):
        _gpu().row_range_sums(a, lo, hi, out)
    else:
        out[...] = a[lo:hi].sum(axis=0)


def flags(a):
    """A 1-D int64 array of 0s and 1s as bools (on a GPU a view: no copy, no kernel)."""
    return _gpu().flags(a) if is_device_array(a) else a.astype(np.bool_)
