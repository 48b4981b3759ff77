"""Metric kernels on the device (cuda/metric.cu): arrays in, a few host integers out."""
from __future__ import annotations

import numpy as np

from .host_copy import HostCopy
from .launch import BLOCK, _grid, _i64, kernel, sm_count

#: parts auc_twice_area takes (its offsets are kernel arguments)
AUC_MAX_PARTS = 4


def auc_twice_area(score, pos, cneg, offsets: list[int]):
    """A callable that gives (sum_i pos_i (2 N(< s_i) + N(= s_i)), sum_i pos_i, sum_i neg_i)
    of rows held as parts sorted by score (dgbdt.metrics.sorted_scores): ``score`` float64
    [n], ``pos`` int64 [n], ``cneg`` the exclusive prefix sums of the negatives int64 [n + 1]
    (the last: their total), ``offsets`` the parts' bounds (at most AUC_MAX_PARTS parts). One
    kernel now, its three totals copied back behind it; the call waits for that copy alone."""
    import cupy as cp
    n_parts = len(offsets) - 1
    if not 1 <= n_parts <= AUC_MAX_PARTS:
        raise ValueError(f"auc_twice_area takes 1 to {AUC_MAX_PARTS} parts; got {n_parts}")
    n = int(score.shape[0])
    off = [int(o) for o in offsets] + [int(offsets[-1])] * (AUC_MAX_PARTS + 1 - len(offsets))
    with score.device:
        out = cp.zeros(3, dtype=cp.uint64)
        (out.data + 16).copy_from_device_async(cneg.data + 8 * n, 8)    # the negatives' total
        if n:
            n_sm = sm_count(score.device.id)
            kernel("metric", "auc_twice_area")(
                (max(1, min(_grid(n), n_sm * 8)),), (BLOCK,),
                (score, pos, cneg, _i64(n), np.int32(n_parts), *(_i64(o) for o in off), out))
        copy = HostCopy([out])
    return lambda: _three(copy.wait()[0].view(np.int64))


def _three(got) -> tuple[int, int, int]:
    return int(got[0]), int(got[1]), int(got[2])


def _launch(name: str, n: int, args: tuple, like) -> None:
    n_sm = sm_count(like.device.id)
    kernel("metric", name)((max(1, min(_grid(n), n_sm * 8)),), (BLOCK,), args)


def _stride(a) -> int:
    """a 1-D device array's element stride."""
    return int(a.strides[0]) // a.itemsize if a.ndim == 1 and a.shape[0] > 1 else 1


def sigmoid(m):
    """float64 [n]: the stable sigmoid of a 1-D float64 device vector (any stride), by a
    kernel that ships compiled (dgbdt.objectives.base.sigmoid's operations)."""
    import cupy as cp
    n = int(m.shape[0])
    with m.device:
        p = cp.empty(n, dtype=cp.float64)
        if n:
            _launch("sigmoid_f64", n, (m, _i64(n), _i64(_stride(m)), p), m)
    return p


def unit_labels(y):
    """(pos, neg) int64 [n] of a float64 device label vector (any stride): pos 1 for y = 1,
    0 for y = 0, else rint(y); neg = 1 - pos."""
    import cupy as cp
    n = int(y.shape[0])
    with y.device:
        pos, neg = cp.empty(n, dtype=cp.int64), cp.empty(n, dtype=cp.int64)
        if n:
            _launch("unit_labels", n, (y, _i64(n), _i64(_stride(y)), pos, neg), y)
    return pos, neg


def gather3(order, a, b, c):
    """(a[order], b[order], c[order]) for contiguous 1-D device arrays of 8-byte values and
    an int64 device ``order``."""
    import cupy as cp
    n = int(order.shape[0])
    arrays = [cp.ascontiguousarray(x) for x in (a, b, c)]
    if any(x.itemsize != 8 for x in arrays):
        raise TypeError("gather3 takes arrays of 8-byte values")
    with order.device:
        outs = [cp.empty(n, dtype=x.dtype) for x in arrays]
        if n:
            _launch("gather3_u64", n, (order, _i64(n), *arrays, *outs), order)
    return tuple(outs)


def stack3(a, b, c):
    """int64 [n, 3] rows (a[i], b[i], c[i]) of three 1-D device arrays of 8-byte values
    (their bits)."""
    import cupy as cp
    arrays = [cp.ascontiguousarray(x) for x in (a, b, c)]
    if any(x.itemsize != 8 or x.ndim != 1 for x in arrays):
        raise TypeError("stack3 takes 1-D arrays of 8-byte values")
    n = int(arrays[0].shape[0])
    with arrays[0].device:
        rows = cp.empty((n, 3), dtype=cp.int64)
        if n:
            _launch("stack3_u64", n, (*arrays, _i64(n), rows), rows)
    return rows


def unstack3(rows, dtypes=(np.int64, np.int64, np.int64)):
    """The three columns of C-contiguous [n, 3] rows of 8-byte values, as contiguous arrays
    of ``dtypes`` (the bits reinterpreted)."""
    import cupy as cp
    if rows.ndim != 2 or rows.shape[1] != 3 or rows.itemsize != 8 or \
            not rows.flags.c_contiguous:
        raise TypeError("unstack3 takes C-contiguous [n, 3] rows of 8-byte values")
    n = int(rows.shape[0])
    with rows.device:
        cols = [cp.empty(n, dtype=d) for d in dtypes]
        if n:
            _launch("unstack3_u64", n, (rows, _i64(n), *cols), rows)
    return tuple(cols)
