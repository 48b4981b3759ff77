"""A training's piecewise-linear setup (linear_tree, dgbdt.kernels.linear_math): the regressors'
normalization and where each shard's raw feature rows are when its kernels run."""
from __future__ import annotations

import numpy as np

from ..backends.device import is_device_array, to_host
from ..kernels.linear_math import LinearSpec


def linear_setup(p, dtrain, cuts, shards):
    """With linear_tree: the regressors' normalization (exact min / max of the training
    rows, dgbdt.kernels.linear_math.LinearSpec), and each shard's raw rows: views of the Dataset's
    float32 matrix (no copy in-process); on the GPU, views of one device matrix (the
    Dataset's own for cupy input, host rows uploaded once). With pages streamed from host
    memory and host input, a streamed shard's rows stream with its page (Shard.raw_stream,
    dgbdt.data.page_stream) and a resident one's are uploaded alone. None otherwise."""
    if not p["linear_tree"]:
        return None
    be = shards[0].be
    X = dtrain.rows()       # regressors read dense rows (a Dataset's own dense matrix)
    if be.caps.device_memory and any(s.page.streamed for s in shards) and \
            not is_device_array(X):
        X = np.ascontiguousarray(to_host(X), dtype=np.float32)
        for s in shards:
            (a, n), = s.id_pieces
            if s.page.streamed:
                s.raw_stream = X[a:a + n]
            else:
                s.raw = be.xp.asarray(X[a:a + n])
        return LinearSpec.from_data(X, p["max_linear_features"], p["linear_lambda"],
                                    getattr(cuts, "categorical", None))
    X = hold_raw_rows(dtrain, shards)
    if be.caps.device_memory:
        lo, hi = column_range(X, be.xp)
        return LinearSpec.from_range(lo, hi, p["max_linear_features"], p["linear_lambda"],
                                     getattr(cuts, "categorical", None))
    return LinearSpec.from_data(X, p["max_linear_features"], p["linear_lambda"],
                                getattr(cuts, "categorical", None))


def hold_raw_rows(dtrain, shards):
    """Each in-core shard's raw rows (Shard.raw): views of the Dataset's float32 matrix (no
    copy on the host), on the GPU of one device matrix (the Dataset's own for cupy input, host
    rows uploaded once; sparse rows dense). Returns that matrix."""
    be = shards[0].be
    X = dtrain.rows()       # a Dataset's own matrix (dense) or its rows (sparse, batches)
    if be.caps.device_memory:
        xp = be.xp
        X = xp.ascontiguousarray(xp.asarray(X), dtype=xp.float32)
    else:
        X = np.ascontiguousarray(to_host(X), dtype=np.float32)
    for s in shards:
        (a, n), = s.id_pieces
        s.raw = X[a:a + n]
    return X


def column_range(X, xp):
    """Each column's exact min and max (float64 [F] on the host, NaN skipped; NaN for a
    column without values): LinearSpec.from_data's reduction, on X's device."""
    F = X.shape[1]
    if X.shape[0] == 0:
        return np.full(F, np.nan), np.full(F, np.nan)
    # columns as rows: CuPy reduces a C-order [n, F] matrix along axis 0 slowly, along the
    # last axis at memory speed (docs/benchmarks-archive.md#figures-behind-code-choices)
    Xt = xp.ascontiguousarray(X.T)
    missing = xp.isnan(Xt)
    lo = xp.where(missing, xp.float32(np.inf), Xt).min(axis=1)
    hi = xp.where(missing, xp.float32(-np.inf), Xt).max(axis=1)
    empty = missing.all(axis=1)
    lo, hi, empty = to_host(lo).astype(np.float64), to_host(hi).astype(np.float64), \
        to_host(empty)
    lo[empty] = hi[empty] = np.nan
    return lo, hi
