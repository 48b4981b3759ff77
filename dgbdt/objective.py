"""Learning objectives: gradients, hessians, intercepts and output transforms.

Every objective works in *margin space*: the booster's raw output is a float64
array ``m`` of shape ``[n, K]`` (``K = 1`` except for multi-class, where
``K = num_class``).  An objective supplies

* ``gradients(m, y, w)`` -> ``(g, h)``, the first and second derivative of the
  per-row loss with respect to each margin column, multiplied by the sample
  weight ``w_i`` (``w=None`` means all ones);
* ``base_margin_from_labels(y, w, num_class)`` -> the intercept (``[K]``,
  margin space) that XGBoost 3.x estimates when ``base_score`` is not given;
* ``base_score_to_margin(b, num_class)`` -> margins for a user ``base_score``;
* ``transform(m)`` -> the user-facing prediction.

The intercept is a function of per-label weighted sums only, so it is also
exposed as ``label_stats`` (additive over data partitions: sum the arrays from
each partition) followed by ``base_margin_from_stats``.

Numerical constants follow XGBoost: hessians are floored at ``1e-16``; class
probabilities used for the intercept are clipped to ``[1e-6, 1 - 1e-6]``.
"""

from __future__ import annotations

import numpy as np

from .backend import array_module
from .fixedpoint import ExactSum
from .kernels import cpu_objective as _kernels

__all__ = [
    "Objective",
    "SquaredError",
    "RegLogistic",
    "BinaryLogistic",
    "BinaryLogitRaw",
    "MultiSoftprob",
    "MultiSoftmax",
    "SquaredLogError",
    "PseudoHuberError",
    "Poisson",
    "Gamma",
    "Tweedie",
    "Hinge",
    "AbsoluteError",
    "QuantileError",
    "OBJECTIVES",
    "get_objective",
    "sigmoid",
    "softmax",
]

HESS_FLOOR = _kernels.HESS_FLOOR
"""Lower bound for every hessian entry (keeps leaf weights finite)."""

PROB_EPS = 1e-6
"""Probabilities used to build an intercept are clipped to [PROB_EPS, 1 - PROB_EPS]."""


# --------------------------------------------------------------------------- helpers
def sigmoid(m: np.ndarray) -> np.ndarray:
    """Numerically stable ``1 / (1 + exp(-m))`` (no overflow for any finite m); numpy or cupy."""
    xp = array_module(m)
    m = xp.asarray(m, dtype=np.float64)
    e = xp.exp(-xp.abs(m))  # in (0, 1]
    return xp.where(m >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))


def softmax(m: np.ndarray) -> np.ndarray:
    """Row-wise ``exp(m_k - max_j m_j) / sum_j exp(m_j - max_j m_j)`` for ``m [n, K]``."""
    xp = array_module(m)
    m = xp.asarray(m, dtype=np.float64)
    z = xp.exp(m - m.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _logit(p: np.ndarray | float) -> np.ndarray:
    """``log(p / (1 - p))``."""
    p = np.asarray(p, dtype=np.float64)
    return np.log(p) - np.log1p(-p)


def _as_margin(margin: np.ndarray, k: int | None = None) -> np.ndarray:
    """View ``margin`` as float64 ``[n, K]`` (a 1-D array is one column); numpy or cupy."""
    m = array_module(margin).asarray(margin, dtype=np.float64)
    if m.ndim == 1:
        m = m[:, None]
    if m.ndim != 2:
        raise ValueError(f"margin must be 1-D or 2-D, got shape {m.shape}")
    if k is not None and m.shape[1] != k:
        raise ValueError(f"margin has {m.shape[1]} columns, expected {k}")
    return m


def _as_labels(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {y.shape}")
    return y


def _as_weights(w: np.ndarray | None, n: int) -> np.ndarray | None:
    if w is None:
        return None
    w = np.asarray(w, dtype=np.float64).reshape(-1)
    if w.shape[0] != n:
        raise ValueError(f"weight has {w.shape[0]} rows, labels have {n}")
    return w


def _first_bad_row(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def _need_num_class(num_class: int | None, name: str) -> int:
    if num_class is None or int(num_class) != num_class or int(num_class) < 1:
        raise ValueError(f"{name} requires num_class to be a positive integer, got {num_class!r}")
    return int(num_class)


# --------------------------------------------------------------------------- base class
class Objective:
    """Base class; one subclass per objective name.  Stateless: ``num_class``
    is passed to every method that needs it."""

    name: str = ""
    default_metric: str = ""
    #: the training parameters the objective reads, with XGBoost's defaults
    defaults: dict = {}

    def __init__(self, params: dict | None = None):
        self.params = {k: float(params[k]) if params and params.get(k) is not None else v
                       for k, v in self.defaults.items()}

    @property
    def kernel_param(self) -> float:
        """The one number its gradient kernels take besides the rows (a slope, a power...)."""
        return 0.0

    def n_outputs(self, num_class: int | None) -> int:
        """Number of margin columns ``K``."""
        return 1

    def check_labels(self, y: np.ndarray, num_class: int | None = None) -> None:
        """Raise ``ValueError`` if any label is NaN/inf (subclasses add range rules)."""
        y = _as_labels(y)
        bad = ~np.isfinite(y)
        if bad.any():
            raise ValueError(
                f"label contains NaN or infinite values (first at row {_first_bad_row(bad)})"
            )

    # -- intercept -------------------------------------------------------------
    def label_stats(self, y: np.ndarray, w: np.ndarray | None, num_class: int | None) -> np.ndarray:
        """Additive sufficient statistics for the intercept: ``[sum w*y, sum w]``.

        Summing the arrays of several partitions gives the statistics of their union. The sums
        are exact (dgbdt.fixedpoint.ExactSum), so permuting or partitioning rows gives bit-identical
        statistics.
        """
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        if w is None:
            return [ExactSum.of(y), ExactSum.of(np.array([float(y.shape[0])]))]
        return [ExactSum.of(w * y), ExactSum.of(w)]

    def base_margin_from_stats(self, stats: np.ndarray, num_class: int | None) -> np.ndarray:
        """Intercept ``[K]`` in margin space from (summed) ``label_stats``."""
        raise NotImplementedError

    def base_margin_from_labels(self, y: np.ndarray, w: np.ndarray | None, num_class: int | None) -> np.ndarray:
        """Intercept ``[K]`` in margin space, estimated from labels as XGBoost 3.x does."""
        return self.base_margin_from_stats(self.label_stats(y, w, num_class), num_class)

    def base_score_to_margin(self, base_score: float, num_class: int | None) -> np.ndarray:
        """User ``base_score`` -> margins ``[K]`` (identity by default)."""
        b = float(base_score)
        if not np.isfinite(b):
            raise ValueError(f"base_score must be finite, got {base_score!r}")
        return np.full(self.n_outputs(num_class), b)

    # -- training / prediction -------------------------------------------------
    _kernel = None  # the fused CPU kernel of dgbdt.kernels.cpu_objective computing (g, h)
    cuda_kernel = ""  # its twin in dgbdt/kernels/cuda/objective.cu

    def gradients(self, margin: np.ndarray, y: np.ndarray, w: np.ndarray | None, out=None):
        """``(g, h)``, each float64 ``[n, K]``, sample weights multiplied in.

        ``out``: optional preallocated ``(g, h)`` to write into (reused every round).
        """
        m = np.ascontiguousarray(_as_margin(margin))
        y = np.ascontiguousarray(_as_labels(y))
        if out is None:
            out = (np.empty_like(m), np.empty_like(m))
        has_w = w is not None
        w = _as_weights(w, y.shape[0]) if has_w else y
        type(self)._kernel(m, y, w, has_w, self.kernel_param, out[0], out[1])
        return out

    def transform(self, margin: np.ndarray) -> np.ndarray:
        """Margins ``[n, K]`` -> prediction (``[n]`` when ``K == 1``)."""
        return _as_margin(margin, 1)[:, 0].copy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _mean_from_stats(stats: np.ndarray) -> float:
    s = np.asarray(stats, dtype=np.float64)
    if not s[1] > 0:
        raise ValueError("cannot estimate base_score: the sum of sample weights is not positive")
    return float(s[0] / s[1])


# --------------------------------------------------------------------------- regression
class SquaredError(Objective):
    """``reg:squarederror``: loss ``0.5 (m - y)^2``; ``g = m - y``, ``h = 1``.

    Intercept: weighted mean of ``y``.  ``base_score`` is used as the margin.
    """

    name = "reg:squarederror"
    default_metric = "rmse"

    def base_margin_from_stats(self, stats, num_class):
        return np.array([_mean_from_stats(stats)])

    _kernel = _kernels.squared_error
    cuda_kernel = "squared_error"


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
        w = np.where(y == 1.0, spw, 1.0) * (1.0 if w is None else w)
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
    cuda_kernel = "logistic"

    def transform(self, margin):
        return sigmoid(_as_margin(margin, 1)[:, 0])


def _logistic_stump(stats) -> np.ndarray:
    """XGBoost 3.2's logistic intercept when scale_pos_weight is not 1 (measured): one Newton
    step from margin 0, where p = 1/2, g = (1/2 - y) w', h = w'/4: the margin
    ``4 (mean' - 1/2)``, ``mean'`` the label mean under the scaled weights ``w'``."""
    return np.array([4.0 * (_mean_from_stats(stats) - 0.5)])


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


class MultiSoftmax(MultiSoftprob):
    """``multi:softmax``: as ``multi:softprob``; prediction is the argmax class
    index as float64 ``[n]`` (first maximum on ties); default metric ``merror``."""

    name = "multi:softmax"
    default_metric = "merror"

    def transform(self, margin):
        return _as_margin(margin).argmax(axis=1).astype(np.float64)


# --------------------------------------------------------------------------- more regression
def _check_range(name: str, y, bad, must: str) -> None:
    if bad.any():
        raise ValueError(f"label must be {must} for {name}; got values in [{y.min():g}, "
                         f"{y.max():g}] (first bad at row {_first_bad_row(bad)})")


def _stump(g_sum: ExactSum, h_sum: ExactSum) -> float:
    """XGBoost's intercept for objectives without a closed form: one Newton step from margin
    0, ``-sum g / sum h`` over all rows (its FitStump)."""
    h = float(h_sum)
    if not h > 0:
        raise ValueError("cannot estimate base_score: the sum of hessians at margin 0 is not "
                         "positive; pass base_score")
    return -float(g_sum) / h


class SquaredLogError(Objective):
    """``reg:squaredlogerror``: loss ``0.5 (log1p(m) - log1p(y))^2`` on the prediction ``m``
    itself (no link), with ``m`` floored at ``-1 + 1e-6``:
    ``g = (log1p(m) - log1p(y)) / (m + 1)``,
    ``h = max((log1p(y) - log1p(m) + 1) / (m + 1)^2, 1e-6)``. Labels must be ``> -1``.
    Intercept: one Newton step from 0, ``sum w log1p(y) / sum w max(log1p(y) + 1, 1e-6)``.
    """

    name = "reg:squaredlogerror"
    default_metric = "rmsle"

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        _check_range(self.name, y, y <= -1.0, "> -1")

    def label_stats(self, y, w, num_class):
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        one = 1.0 if w is None else w
        lg = np.log1p(y)
        return [ExactSum.of(-lg * one), ExactSum.of(np.maximum(lg + 1.0, 1e-6) * one)]

    def base_margin_from_stats(self, stats, num_class):
        return np.array([_stump(*stats)])

    _kernel = _kernels.squared_log_error
    cuda_kernel = "squared_log_error"


class PseudoHuberError(Objective):
    """``reg:pseudohubererror``: loss ``d^2 (sqrt(1 + (z/d)^2) - 1)`` for ``z = m - y`` and
    ``d = huber_slope``: ``g = z / s``, ``h = d^2 / ((d^2 + z^2) s)`` with
    ``s = sqrt(1 + (z/d)^2)``. Intercept: one Newton step from 0 (the gradients at ``z = -y``).
    """

    name = "reg:pseudohubererror"
    default_metric = "mphe"
    defaults = {"huber_slope": 1.0}

    @property
    def kernel_param(self):
        return self.params["huber_slope"]

    def label_stats(self, y, w, num_class):
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        one = 1.0 if w is None else w
        d2 = self.params["huber_slope"] ** 2
        sq = np.sqrt(1.0 + y * y / d2)
        return [ExactSum.of(-y / sq * one), ExactSum.of(d2 / ((d2 + y * y) * sq) * one)]

    def base_margin_from_stats(self, stats, num_class):
        return np.array([_stump(*stats)])

    _kernel = _kernels.pseudo_huber
    cuda_kernel = "pseudo_huber"


class _LogLink(Objective):
    """Objectives predicting ``exp(m)``: the intercept is ``log`` of the weighted mean label
    (XGBoost 3.x), ``base_score`` is the prediction (> 0) and its margin ``log(base_score)``."""

    def base_margin_from_stats(self, stats, num_class):
        mean = _mean_from_stats(stats)
        if not mean > 0:
            raise ValueError(f"cannot estimate base_score for {self.name}: the weighted mean "
                             f"label is {mean:g}, not positive (its margin is log of it); "
                             "pass base_score")
        return np.array([np.log(mean)])

    def base_score_to_margin(self, base_score, num_class):
        b = float(base_score)
        if not (np.isfinite(b) and b > 0):
            raise ValueError(f"base_score must be > 0 for {self.name} (a prediction; its "
                             f"margin is log(base_score)); got {base_score!r}")
        return np.array([np.log(b)])

    def transform(self, margin):
        return array_module(margin).exp(_as_margin(margin, 1)[:, 0])


class Poisson(_LogLink):
    """``count:poisson``: ``p = exp(m)``, ``g = p - y``, ``h = exp(m + max_delta_step)``;
    labels ``>= 0``. As in XGBoost, ``max_delta_step`` defaults to 0.7 with this objective,
    for the hessian and for the leaf values alike (dgbdt.params)."""

    name = "count:poisson"
    default_metric = "poisson-nloglik"
    defaults = {"max_delta_step": 0.7}

    @property
    def kernel_param(self):
        return self.params["max_delta_step"]

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        _check_range(self.name, y, y < 0.0, ">= 0")

    _kernel = _kernels.poisson
    cuda_kernel = "poisson"


class Gamma(_LogLink):
    """``reg:gamma``: ``g = 1 - y exp(-m)``, ``h = y exp(-m)``; labels ``> 0``."""

    name = "reg:gamma"
    default_metric = "gamma-deviance"

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        _check_range(self.name, y, y <= 0.0, "> 0")

    _kernel = _kernels.gamma_regression
    cuda_kernel = "gamma_regression"


class Tweedie(_LogLink):
    """``reg:tweedie`` with power ``r = tweedie_variance_power`` in (1, 2):
    ``g = -y exp((1 - r) m) + exp((2 - r) m)``,
    ``h = -y (1 - r) exp((1 - r) m) + (2 - r) exp((2 - r) m)``; labels ``>= 0``."""

    name = "reg:tweedie"
    defaults = {"tweedie_variance_power": 1.5}

    @property
    def default_metric(self):
        return f"tweedie-nloglik@{self.params['tweedie_variance_power']:g}"

    @property
    def kernel_param(self):
        return self.params["tweedie_variance_power"]

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        _check_range(self.name, y, y < 0.0, ">= 0")

    _kernel = _kernels.tweedie
    cuda_kernel = "tweedie"


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

    def transform(self, margin):
        m = _as_margin(margin, 1)[:, 0]
        return (m > 0).astype(np.float64)


# --------------------------------------------------------------------------- quantile losses
def weighted_quantile(alpha: float, v: np.ndarray, w: np.ndarray | None) -> float:
    """XGBoost's quantile of values ``v`` (its common::Quantile / WeightedQuantile), exact and
    independent of the order of ``v``: unweighted, the sorted values interpolated at position
    ``alpha (n + 1)`` (the first / last outside ``[1/(n+1), n/(n+1)]``); weighted, the smallest
    value whose cumulative weight (in increasing order) reaches ``alpha`` of the total
    (``total * alpha`` rounded as XGBoost's float product), the weights in fixed point with a
    power-of-two scale that keeps every cumulative sum below 2**53, so the sums are exact
    integers, the same in any order, and compare exactly as floats. 0 for no values."""
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
    idx = int(np.searchsorted(cdf, cdf[-1] * alpha, side="left"))   # XGBoost's lower_bound
    return float(s[min(idx, n - 1)])


class _QuantileLoss(Objective):
    """Losses whose leaves are refreshed after each tree (XGBoost's UpdateTreeLeaf): a leaf's
    value becomes ``eta`` times the ``alpha`` quantile (``weighted_quantile``) of the
    residuals ``y - m`` of its (sampled) rows, ``m`` the margins before the tree; the tree is
    grown on ``g``, ``h = w``. Intercept: the ``alpha`` quantile of the labels."""

    leaf_alpha = 0.5

    def label_stats(self, y, w, num_class):
        raise ValueError(f"{self.name}'s intercept is a quantile of all the labels, not a sum "
                         "over partitions: pass base_score on Dask for now")

    def base_margin_from_labels(self, y, w, num_class):
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        return np.array([weighted_quantile(self.leaf_alpha, y, w)])


class AbsoluteError(_QuantileLoss):
    """``reg:absoluteerror``: loss ``|m - y|``: ``g = sign(m - y)``, ``h = 1``; leaves are
    the median residual of their rows (see _QuantileLoss)."""

    name = "reg:absoluteerror"
    default_metric = "mae"

    _kernel = _kernels.absolute_error
    cuda_kernel = "absolute_error"


class QuantileError(_QuantileLoss):
    """``reg:quantileerror`` at ``alpha = quantile_alpha`` (the pinball loss): ``g = 1 -
    alpha`` where ``m >= y``, else ``-alpha``; ``h = 1``; leaves are the ``alpha`` quantile of
    their rows' residuals (see _QuantileLoss). One quantile per model for now."""

    name = "reg:quantileerror"
    default_metric = "quantile"
    defaults = {"quantile_alpha": 0.5}

    @property
    def leaf_alpha(self):
        return self.params["quantile_alpha"]

    @property
    def kernel_param(self):
        return self.params["quantile_alpha"]

    _kernel = _kernels.quantile
    cuda_kernel = "quantile"


# --------------------------------------------------------------------------- registry
_REGISTRY: dict[str, type[Objective]] = {
    cls.name: cls
    for cls in (SquaredError, RegLogistic, BinaryLogistic, BinaryLogitRaw, MultiSoftprob,
                MultiSoftmax, SquaredLogError, PseudoHuberError, Poisson, Gamma, Tweedie, Hinge,
                AbsoluteError, QuantileError)
}
OBJECTIVES: tuple[str, ...] = tuple(_REGISTRY)


def get_objective(name: str, params: dict | None = None) -> Objective:
    """Instantiate the objective called ``name`` (e.g. ``"binary:logistic"``), reading its
    own parameters (``huber_slope``, ``tweedie_variance_power``, ``scale_pos_weight``,
    ``max_delta_step``) from ``params`` (their defaults without)."""
    try:
        return _REGISTRY[name](params)
    except (KeyError, TypeError):
        raise ValueError(f"unknown objective {name!r}; supported: {', '.join(OBJECTIVES)}") from None
