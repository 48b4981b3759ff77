"""XGBoost's DMatrix.get_quantile_cut over dgbdt's cuts (dgbdt.data.quantize.Cuts).

Both libraries bin a value x of a numerical feature into the first bin whose upper bound is
above it, the last bound above the feature's largest value; XGBoost's getter lists, for each
numerical feature, the feature's minimum and then those bounds, and for a categorical feature
its categories; so do these, from the cuts a matrix was quantized with.
"""
from __future__ import annotations

import numpy as np


def quantile_cut(cuts) -> tuple[np.ndarray, np.ndarray]:
    """(indptr uint64 [F + 1], values float32) in XGBoost's layout (module doc)."""
    ptrs = np.asarray(cuts.ptrs, dtype=np.int64)
    categorical = cuts.categorical
    parts, indptr = [], [0]
    for f in range(len(ptrs) - 1):
        values = np.asarray(cuts.values[ptrs[f]:ptrs[f + 1]], dtype=np.float32)
        if categorical is None or not categorical[f]:
            values = np.concatenate([[np.float32(cuts.min_values[f])], values])
        parts.append(values)
        indptr.append(indptr[-1] + values.size)
    data = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    return np.asarray(indptr, dtype=np.uint64), data.astype(np.float32)
