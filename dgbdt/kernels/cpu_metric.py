"""Metric kernels on the host (numba): the twin of dgbdt.kernels.gpu_metric."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _twice_area(score, pos, cneg, bounds):
    total = np.int64(0)
    n_parts = bounds.shape[0] - 1
    for q in range(n_parts):
        for j in range(n_parts):
            a, b = bounds[j], bounds[j + 1]
            lo = a
            hi = a
            for i in range(bounds[q], bounds[q + 1]):
                s = score[i]
                while lo < b and score[lo] < s:
                    lo += 1
                if hi < lo:
                    hi = lo
                while hi < b and score[hi] <= s:
                    hi += 1
                if pos[i] != 0:
                    total += pos[i] * (cneg[lo] + cneg[hi] - 2 * cneg[a])
    return total


def auc_twice_area(score, pos, cneg, bounds) -> int:
    """``sum_i pos_i (2 N(< s_i) + N(= s_i))`` over rows held as parts sorted by score
    (dgbdt.metrics.sorted_scores; ``cneg`` the exclusive prefix sums of the negatives [n + 1],
    ``bounds`` the parts' row bounds): for each pair of parts one merge-like walk, the
    pointers of the lower and upper bound only moving forward (what a binary search per row
    answers, in linear time). Exact int64 while the caller's bound holds."""
    return int(_twice_area(np.ascontiguousarray(score), np.ascontiguousarray(pos), cneg,
                           np.asarray(bounds, dtype=np.int64)))


__all__ = ["auc_twice_area"]
