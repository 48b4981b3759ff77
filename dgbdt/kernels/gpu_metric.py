"""Metric kernels on the device (cuda/metric.cu): arrays in, a few host integers out."""
from __future__ import annotations

import numpy as np

from .launch import BLOCK, _grid, _i64, kernel

#: parts auc_twice_area takes (its offsets are kernel arguments)
AUC_MAX_PARTS = 4


def auc_twice_area(score, pos, cneg, offsets: list[int]) -> tuple[int, int]:
    """(sum_i pos_i (2 N(< s_i) + N(= s_i)), sum_i pos_i) of rows held as parts sorted by
    score (dgbdt.metrics.sorted_scores): ``score`` float64 [n], ``pos`` int64 [n], ``cneg`` the
    exclusive prefix sums of the negatives int64 [n + 1], ``offsets`` the parts' bounds
    (at most AUC_MAX_PARTS parts). One kernel, one copy back."""
    import cupy as cp
    n_parts = len(offsets) - 1
    if not 1 <= n_parts <= AUC_MAX_PARTS:
        raise ValueError(f"auc_twice_area takes 1 to {AUC_MAX_PARTS} parts; got {n_parts}")
    n = int(score.shape[0])
    off = [int(o) for o in offsets] + [int(offsets[-1])] * (AUC_MAX_PARTS + 1 - len(offsets))
    with score.device:
        out = cp.zeros(2, dtype=cp.uint64)
        if n:
            n_sm = score.device.attributes["MultiProcessorCount"]
            kernel("metric", "auc_twice_area")(
                (max(1, min(_grid(n), n_sm * 8)),), (BLOCK,),
                (score, pos, cneg, _i64(n), np.int32(n_parts), *(_i64(o) for o in off), out))
    got = cp.asnumpy(out).view(np.int64)
    return int(got[0]), int(got[1])
