"""The metrics of survival:aft (XGBoost's src/metric/survival_metric.cu), on label intervals
``[lo, hi]`` ([n, 2]) and the margins ``m`` (XGBoost's AFT metrics read the untransformed
prediction), weighted means as every ratio metric (exact sums, so the same bits for any
partitioning):

* ``aft-nloglik``: the AFT negative log-likelihood of dgbdt.objectives.survival at the
  training's aft_loss_distribution and aft_loss_distribution_scale;
* ``interval-regression-accuracy``: the weighted fraction of rows with ``lo <= exp(m) <= hi``.
"""
from __future__ import annotations

import numpy as np

from ..backends.device import to_host
from ..kernels.fixedpoint import ExactSum
from .base import Metric


class _IntervalMetric(Metric):
    def summary(self, y, pred, w=None, weight_scale=None, weight_sum=None):
        # (host arrays: the survival metrics run their numba loss on the CPU)
        y = np.ascontiguousarray(to_host(y), dtype=np.float64)
        m = np.ascontiguousarray(to_host(pred), dtype=np.float64).reshape(-1)
        if y.ndim != 2 or y.shape[1] != 2:
            raise ValueError(f"{self.name} scores label intervals: pass label_lower_bound and "
                             "label_upper_bound to the eval set's Dataset")
        if y.shape[0] != m.shape[0]:
            raise ValueError(f"labels have {y.shape[0]} rows, predictions have {m.shape[0]}")
        loss = self._interval_loss(y, m)
        if w is None:
            return [ExactSum.of(loss), ExactSum(int(y.shape[0]) << ExactSum._SHIFT)]
        w = np.asarray(to_host(w), dtype=np.float64).reshape(-1)
        return [ExactSum.of(w * loss), weight_sum if weight_sum is not None else ExactSum.of(w)]


class AFTNLogLik(_IntervalMetric):
    """``aft-nloglik``: the mean AFT negative log-likelihood."""

    name = "aft-nloglik"

    def __init__(self, distribution: str = "normal", scale: float = 1.0):
        from ..kernels.cpu_survival import DISTRIBUTIONS
        if distribution not in DISTRIBUTIONS:
            raise ValueError(f"aft-nloglik: aft_loss_distribution must be one of "
                             f"{DISTRIBUTIONS}; got {distribution!r}")
        self.dist = DISTRIBUTIONS.index(distribution)
        self.sigma = float(np.float32(scale))

    def _interval_loss(self, y, m):
        from ..kernels.cpu_survival import aft_loss
        out = np.empty(m.shape[0])
        aft_loss(y, m, self.sigma, self.dist, out)
        return out


class IntervalAccuracy(_IntervalMetric):
    """``interval-regression-accuracy``: the weighted fraction with ``lo <= exp(m) <= hi``;
    larger is better."""

    name = "interval-regression-accuracy"
    higher_is_better = True

    def _interval_loss(self, y, m):
        p = np.exp(m)
        return ((p >= y[:, 0]) & (p <= y[:, 1])).astype(np.float64)
