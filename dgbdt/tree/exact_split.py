"""tree_method="exact": a split's threshold as XGBoost's exact greedy method (its colmaker) sets it.

Exact's cuts give every distinct value of a feature its own bin (dgbdt.engine.setup), so a
split at bin ``s`` (bins ``<= s`` go left) partitions a node's rows as XGBoost's does; the
threshold the cuts give is the smallest value of the *feature* above bin ``s``. XGBoost puts
it between the two values adjacent *among the node's rows*: with ``a`` the largest value of
the node going left and ``b`` the smallest going right (both found from the node's histogram:
the bins holding its rows), the threshold is, in float32 arithmetic,

* ``m = (a + b) * 0.5`` when ``a < m <= b``;
* ``b`` otherwise (``a`` and ``b`` adjacent floats, where ``m`` rounds to one of them; or
  ``a + b`` overflows): prediction sends ``x < threshold`` left, so ``a`` still goes left and
  ``b`` right. XGBoost's backward scan (every dense feature) takes ``b`` there too; its forward
  scan (features with missing values) takes ``a``, which would send ``a`` right: the training
  rows' partition is kept instead.

A split sending every non-missing value of the node one way takes XGBoost's end thresholds:
``last + (|last| + 1e-6)`` (all left; ``last`` the node's largest value) or
``first - (|first| + 1e-6)`` (all right; ``first`` its smallest), in float32 arithmetic.

The rows' partition is unchanged by any of these (no training value lies between ``a`` and
``b``), so the threshold is set where a tree's split is recorded, the same in-process and on
Dask workers; hist and approx trees are untouched.
"""
from __future__ import annotations

import numpy as np

from ..backends.device import to_host

__all__ = ["exact_threshold"]

#: XGBoost's kRtEps: the end thresholds' margin beyond the node's extreme value
_RT_EPS = np.float32(1e-6)


def _bin_value(cuts, f: int, i: int) -> np.float32:
    """The one value of feature f's bin i under exact's cuts: bin 0 holds the feature's
    smallest value, bin i > 0 the cut ``values[ptrs[f] + i - 1]`` (bins are [cut_{i-1}, cut_i))."""
    if i == 0:
        return np.float32(cuts.first_values[f])
    return np.float32(cuts.values[cuts.ptrs[f] + i - 1])


def exact_threshold(cuts, hist_ptrs: np.ndarray, node_hist, f: int, split_bin: int,
                    fallback: float) -> np.float32:
    """The threshold of a node's split on feature ``f`` at ``split_bin`` (bins <= split_bin go
    left; -1: every non-missing value goes right), from the node's histogram ``node_hist``
    [S, 2] (fixed-point gradient and hessian sums; numpy or cupy): the rule of the module doc.
    ``fallback`` (the cut threshold) is kept for cuts without their smallest values (those
    read from a file written before they were kept)."""
    if getattr(cuts, "first_values", None) is None:
        return np.float32(fallback)
    lo, n_bins = int(hist_ptrs[f]), int(cuts.ptrs[f + 1] - cuts.ptrs[f])
    sums = to_host(node_hist[lo:lo + n_bins])
    held = np.flatnonzero((sums[:, 0] != 0) | (sums[:, 1] != 0))    # bins with the node's rows
    left, right = held[held <= split_bin], held[held > split_bin]
    if left.size and right.size:
        a, b = _bin_value(cuts, f, int(left[-1])), _bin_value(cuts, f, int(right[0]))
        with np.errstate(over="ignore"):
            m = np.float32(np.float32(a + b) * np.float32(0.5))
        return m if a < m <= b else b
    if left.size:                       # every non-missing value left
        last = _bin_value(cuts, f, int(left[-1]))
        with np.errstate(over="ignore"):
            return np.float32(last + np.float32(np.abs(last) + _RT_EPS))
    if right.size:                      # every non-missing value right
        first = _bin_value(cuts, f, int(right[0]))
        with np.errstate(over="ignore"):
            return np.float32(first - np.float32(np.abs(first) + _RT_EPS))
    return np.float32(fallback)
