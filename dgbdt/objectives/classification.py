"""Classification objectives: logistic (reg:logistic, binary:logistic, binary:logitraw), the
softmax of multi-class (multi:softprob, multi:softmax) and the hinge loss (binary:hinge). The
conventions every objective follows are dgbdt.objectives.base's."""
from __future__ import annotations

import numpy as np

from ..kernels import cpu_objective as _kernels
from ..kernels.arrays import array_module
from ..kernels.fixedpoint import ExactSum
from .base import (
    DEVICE_LABEL_STATS, PROB_EPS, Objective, _as_labels, _as_margin, _as_weights, _check_range,
    _first_bad_row, _logit, _mean_from_stats, _need_num_class, sigmoid, softmax)

class RegLogistic(Objective):
    """``reg:logistic``: ``p = sigmoid(m)``, loss ``-[y log p + (1-y) log(1-p)]``.

    ``g = p - y``, ``h = max(p (1 - p), 1e-16)``; labels must lie in ``[0, 1]``. Rows whose
    label is 1 count ``scale_pos_weight`` times their weight (XGBoost's; 1 by default), and
    then the intercept is XGBoost's one Newton step from 0 (``_logistic_stump``).
    Intercept: ``logit(clip(weighted mean of y, 1e-6, 1 - 1e-6))``.
    ``base_score`` is a probability in ``[0, 1]``: margin ``logit(clip(b, 1e-6, 1 - 1e-6))``.
    Prediction: ``sigmoid(m)``.
    """

    name = "reg:logistic"
    default_metric = "rmse"
    defaults = {"scale_pos_weight": 1.0}

    @property
    def kernel_param(self):
        return self.params["scale_pos_weight"]

    def label_stats(self, y, w, num_class):
        """``[sum w' y, sum w']`` with ``w' = w * scale_pos_weight`` on rows whose label is
        1 (XGBoost weighs those rows so in the gradients and in the intercept)."""
        spw = self.params["scale_pos_weight"]
        if spw == 1.0:
            return super().label_stats(y, w, num_class)
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        w = array_module(y).where(y == 1.0, spw, 1.0) * (1.0 if w is None else w)
        return super().label_stats(y, w, num_class)

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        bad = (y < 0.0) | (y > 1.0)
        if bad.any():
            raise ValueError(
                f"label must be in [0, 1] for {self.name}; got values in "
                f"[{y.min():g}, {y.max():g}] (first bad at row {_first_bad_row(bad)})"
            )

    def _prob_to_margin(self, p: float) -> np.ndarray:
        return np.array([float(_logit(np.clip(p, PROB_EPS, 1.0 - PROB_EPS)))])

    def base_margin_from_stats(self, stats, num_class):
        if self.params["scale_pos_weight"] != 1.0:
            return _logistic_stump(stats)
        return self._prob_to_margin(_mean_from_stats(stats))

    def base_score_to_margin(self, base_score, num_class):
        b = float(base_score)
        if not 0.0 <= b <= 1.0:
            raise ValueError(f"base_score must be in [0, 1] for {self.name}, got {base_score!r}")
        return self._prob_to_margin(b)

    _kernel = _kernels.logistic

    @property
    def cuda_kernel(self):
        return "logistic" if self.params["scale_pos_weight"] == 1.0 else "logistic_scaled"

    @property
    def cuda_takes_param(self):
        return self.params["scale_pos_weight"] != 1.0

    def transform(self, margin):
        return sigmoid(_as_margin(margin, 1)[:, 0])

    def margin_to_base_score(self, margin):
        return sigmoid(np.asarray(margin, dtype=np.float64))

    def metric_input(self, margin):
        """Probabilities (binary:logitraw's too, as XGBoost's metrics)."""
        return sigmoid(margin[:, 0])


def _logistic_stump(stats) -> np.ndarray:
    """XGBoost 3.2's logistic intercept when scale_pos_weight is not 1 (measured): one Newton
    step from margin 0, where p = 1/2, g = (1/2 - y) w', h = w'/4: the margin
    ``4 (mean' - 1/2)``, ``mean'`` the label mean under the scaled weights ``w'``."""
    return np.array([4.0 * (_mean_from_stats(stats) - 0.5)])


DEVICE_LABEL_STATS.add(RegLogistic.label_stats)


class BinaryLogistic(RegLogistic):
    """``binary:logistic``: as ``reg:logistic`` with default metric ``logloss``."""

    name = "binary:logistic"
    default_metric = "logloss"


class BinaryLogitRaw(RegLogistic):
    """``binary:logitraw``: logistic gradients, prediction is the raw margin.

    XGBoost 3.2 treats the intercept of this objective in margin space with an
    identity link: the estimated intercept is the weighted mean of ``y`` used
    *directly as the margin* (not its logit), and ``base_score`` is the margin
    itself (any finite value).  Reproduced here for compatibility.
    """

    name = "binary:logitraw"
    default_metric = "logloss"

    def base_margin_from_stats(self, stats, num_class):
        if self.params["scale_pos_weight"] != 1.0:
            return _logistic_stump(stats)
        return np.array([_mean_from_stats(stats)])

    def base_score_to_margin(self, base_score, num_class):
        return Objective.base_score_to_margin(self, base_score, num_class)

    def margin_to_base_score(self, margin):
        return Objective.margin_to_base_score(self, margin)

    def transform(self, margin):
        return _as_margin(margin, 1)[:, 0].copy()


# --------------------------------------------------------------------------- multi-class
class MultiSoftprob(Objective):
    """``multi:softprob``: ``p = softmax(m)`` row-wise over ``K = num_class`` columns.

    Loss ``-log p_y``.  For class ``k``: ``g_k = p_k - [y == k]`` and
    ``h_k = max(2 p_k (1 - p_k), 1e-16)`` (the factor 2 is XGBoost's).
    Labels must be integers in ``[0, num_class)``.

    Intercept (XGBoost 3.x): with weighted class frequencies
    ``f_k = sum_{y_i = k} w_i / sum_i w_i`` clipped below at ``1e-6``,
    ``margin_k = log f_k - (1/K) sum_j log f_j``  (softmax of it gives ``f``
    renormalized; margins sum to zero).  ``base_score`` ``b`` -> all margins ``b``.
    Prediction: probabilities ``[n, K]``.
    """

    name = "multi:softprob"
    default_metric = "mlogloss"

    def n_outputs(self, num_class):
        return _need_num_class(num_class, self.name)

    def check_labels(self, y, num_class=None):
        k = _need_num_class(num_class, self.name)
        super().check_labels(y, num_class)
        y = _as_labels(y)
        bad = (y != np.floor(y)) | (y < 0) | (y >= k)
        if bad.any():
            vals = np.unique(y[bad])
            shown = ", ".join(f"{v:g}" for v in vals[:5]) + (", ..." if vals.size > 5 else "")
            raise ValueError(
                f"label must be an integer in [0, num_class) with num_class={k} for "
                f"{self.name}; got invalid values [{shown}] (first at row {_first_bad_row(bad)})"
            )

    def label_stats(self, y, w, num_class):
        """Weighted class counts ``[K]`` (additive over partitions); validates labels."""
        k = _need_num_class(num_class, self.name)
        self.check_labels(y, k)
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        if w is None:
            counts = np.bincount(y.astype(np.int64), minlength=k)[:k].astype(np.float64)
            return [ExactSum.of(counts[j:j + 1]) for j in range(k)]
        return [ExactSum.of(w[y == j]) for j in range(k)]

    def base_margin_from_stats(self, stats, num_class):
        counts = np.asarray(stats, dtype=np.float64)
        total = counts.sum()
        if not total > 0:
            raise ValueError("cannot estimate base_score: the sum of sample weights is not positive")
        logf = np.log(np.maximum(counts / total, PROB_EPS))
        return logf - logf.mean()

    _kernel = _kernels.softmax
    cuda_kernel = "softmax"

    def transform(self, margin):
        return softmax(_as_margin(margin))

    def metric_input(self, margin):
        return softmax(margin)


class MultiSoftmax(MultiSoftprob):
    """``multi:softmax``: as ``multi:softprob``; prediction is the argmax class
    index as float64 ``[n]`` (first maximum on ties); default metric ``merror``."""

    name = "multi:softmax"
    default_metric = "merror"

    def transform(self, margin):
        return _as_margin(margin).argmax(axis=1).astype(np.float64)


class Hinge(Objective):
    """``binary:hinge``: with ``s = 2y - 1``, ``g = -s``, ``h = 1`` where ``m s < 1``, else
    ``g = 0`` and ``h`` the smallest normal float32 (XGBoost's, unweighted); labels in
    ``[0, 1]``. Prediction: 1 where ``m > 0``, else 0. Intercept (XGBoost 3.x): the
    prediction of one Newton step from 0, ``1`` if ``sum w s > 0`` else ``0``, as the margin.
    """

    name = "binary:hinge"
    default_metric = "error"

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        _check_range(self.name, y, (y < 0.0) | (y > 1.0), "in [0, 1]")

    def label_stats(self, y, w, num_class):
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        s = 2.0 * y - 1.0
        if w is None:
            return [ExactSum.of(s), ExactSum.of(np.array([float(y.shape[0])]))]
        return [ExactSum.of(w * s), ExactSum.of(w)]

    def base_margin_from_stats(self, stats, num_class):
        return np.array([1.0 if _mean_from_stats(stats) > 0 else 0.0])

    _kernel = _kernels.hinge
    cuda_kernel = "hinge"
    cuda_takes_param = True

    def transform(self, margin):
        m = _as_margin(margin, 1)[:, 0]
        return (m > 0).astype(np.float64)

    def metric_input(self, margin):
        return self.transform(margin)               # the 0/1 prediction
