"""XGBoost's quantiles spelled with a sort: the oracle of dgbdt.objectives.leaf_quantiles's radix descent."""
import numpy as np


def sorted_quantile(alpha: float, v: np.ndarray, w: np.ndarray | None) -> float:
    """XGBoost's quantile of values ``v`` (its common::Quantile / WeightedQuantile), exact and
    independent of the order of ``v``: unweighted, the sorted values interpolated at position
    ``alpha (n + 1)`` (the first / last outside ``[1/(n+1), n/(n+1)]``); weighted, the smallest
    value whose cumulative weight (in increasing order) reaches ``alpha`` of the total
    (``total * alpha`` rounded as XGBoost's float product), the weights in fixed point with a
    power-of-two scale that keeps every cumulative sum below 2**53, so the sums are exact
    integers, the same in any order, and compare exactly as floats. 0 for no values (or no
    weight).
    dgbdt.objectives.leaf_quantiles must find the same value."""
    n = v.shape[0]
    if n == 0:
        return 0.0
    s = np.sort(v, kind="stable")
    if w is None:
        if alpha <= 1.0 / (n + 1):
            return float(s[0])
        if alpha >= n / (n + 1):
            return float(s[-1])
        x = alpha * (n + 1)
        k = int(np.floor(x)) - 1
        d = (x - 1) - k
        return float(s[k] + d * (s[k + 1] - s[k]))
    order = np.argsort(v, kind="stable")
    top = float(w.max())
    scale = 2.0 ** np.floor(np.log2(2.0 ** 52 / (top * n))) if top > 0 else 1.0
    cdf = np.cumsum(np.rint(w[order] * scale).astype(np.int64)).astype(np.float64)
    if not cdf[-1] > 0:
        return 0.0
    idx = int(np.searchsorted(cdf, cdf[-1] * alpha, side="left"))   # XGBoost's lower_bound
    return float(s[min(idx, n - 1)])
