"""Regression objectives: squared error, squared log error, pseudo-Huber, the log-link losses
of counts and positive values (Poisson, gamma, Tweedie), and the quantile losses whose leaves
are refreshed after each tree (absolute error, quantile; dgbdt.objectives.leaf_quantiles).
The conventions every objective follows are dgbdt.objectives.base's."""
from __future__ import annotations

import numpy as np

from ..kernels import cpu_objective as _kernels
from ..kernels.arrays import array_module
from ..kernels.fixedpoint import ExactSum
from .base import (
    Objective, _as_labels, _as_margin, _as_weights, _check_range, _mean_from_stats, _stump)

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
    cuda_takes_param = True


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
    cuda_takes_param = True


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

    def margin_to_base_score(self, margin):
        return np.exp(np.asarray(margin, dtype=np.float64))

    def metric_input(self, margin):
        return self.transform(margin)


class Poisson(_LogLink):
    """``count:poisson``: ``p = exp(m)``, ``g = p - y``, ``h = exp(m + max_delta_step)``;
    labels ``>= 0``. As in XGBoost, ``max_delta_step`` defaults to 0.7 with this objective,
    for the hessian and for the leaf values alike (dgbdt.params.normalize)."""

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
    cuda_takes_param = True


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
    cuda_takes_param = True


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
    cuda_takes_param = True


# --------------------------------------------------------------------------- quantile losses
class _QuantileLoss(Objective):
    """Losses whose leaves are refreshed after each tree (XGBoost's UpdateTreeLeaf): a leaf's
    value becomes ``eta`` times the ``alpha`` quantile (XGBoost's, exact: dgbdt.objectives.leaf_quantiles) of
    the residuals ``y - m`` of its (sampled) rows, ``m`` the margins before the tree; the tree
    is grown on ``g``, ``h = w``. Intercept: the ``alpha`` quantile of the labels."""

    leaf_alpha = 0.5

    def label_stats(self, y, w, num_class):
        raise ValueError(f"{self.name}'s intercept is a quantile of all the labels, not a sum "
                         "over partitions (dgbdt.objectives.leaf_quantiles finds it over partitions)")

    def base_margin_from_labels(self, y, w, num_class):
        from .leaf_quantiles import local_quantiles
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        return local_quantiles(self.leaf_alpha, [y], None if w is None else [w])


class AbsoluteError(_QuantileLoss):
    """``reg:absoluteerror``: loss ``|m - y|``: ``g = sign(m - y)``, ``h = 1``; leaves are
    the median residual of their rows (see _QuantileLoss)."""

    name = "reg:absoluteerror"
    default_metric = "mae"

    _kernel = _kernels.absolute_error
    cuda_kernel = "absolute_error"
    cuda_takes_param = True


class QuantileError(_QuantileLoss):
    """``reg:quantileerror`` at ``alpha = quantile_alpha`` (the pinball loss): ``g = 1 -
    alpha`` where ``m >= y``, else ``-alpha``; ``h = 1``; leaves are the ``alpha`` quantile of
    their rows' residuals (see _QuantileLoss).

    ``quantile_alpha`` may list several quantiles ``a_1 .. a_K`` (XGBoost's): then the model
    has ``K`` outputs, as multi-class has, output ``k`` fits ``a_k`` (its column of the
    margins, its own trees: round r holds one tree per quantile, leaves refreshed to ``a_k``
    quantiles), the intercept is each ``a_k`` quantile of the labels, and the prediction is
    the margins ``[n, K]``."""

    name = "reg:quantileerror"
    default_metric = "quantile"
    defaults = {"quantile_alpha": 0.5}

    def __init__(self, params=None):
        a = (params or {}).get("quantile_alpha")
        self.alphas = (0.5,) if a is None else tuple(float(x) for x in np.atleast_1d(a))
        if not self.alphas:
            raise ValueError("quantile_alpha must hold at least one quantile")
        self.params = {"quantile_alpha": self.alphas[0] if len(self.alphas) == 1
                       else self.alphas}

    def n_outputs(self, num_class):
        return len(self.alphas)

    @property
    def leaf_alpha(self):
        return self.alphas[0]

    @property
    def leaf_alphas(self):
        """The quantile of each output's leaves (dgbdt.engine.seam: tree k of a round)."""
        return self.alphas

    @property
    def kernel_param(self):
        return self.alphas[0]

    def model_params(self) -> dict:
        """What a model file must keep to rebuild the objective: the quantiles when there
        are several (they set the number of outputs)."""
        return {"quantile_alpha": list(self.alphas)} if len(self.alphas) > 1 else {}

    def base_margin_from_labels(self, y, w, num_class):
        from .leaf_quantiles import local_quantiles
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        return np.array([local_quantiles(a, [y], None if w is None else [w])[0]
                         for a in self.alphas])

    _kernel = _kernels.quantile
    cuda_takes_param = True

    @property
    def cuda_kernel(self):
        """One quantile: ``quantile`` (alpha its parameter); several: ``quantiles`` (column k
        at alphas[k], a device array: ``cuda_params``)."""
        return "quantile" if len(self.alphas) == 1 else "quantiles"

    def cuda_params(self, backend) -> tuple:
        if len(self.alphas) == 1:
            return super().cuda_params(backend)
        return (backend.asarray(np.array(self.alphas, dtype=np.float64)),)

    def gradients(self, margin, y, w, out=None):
        if len(self.alphas) == 1:
            return super().gradients(margin, y, w, out)
        m = np.ascontiguousarray(_as_margin(margin, len(self.alphas)))
        y = np.ascontiguousarray(_as_labels(y))
        if out is None:
            out = (np.empty_like(m), np.empty_like(m))
        has_w = w is not None
        w = _as_weights(w, y.shape[0]) if has_w else y
        _kernels.quantiles(m, y, w, has_w, np.array(self.alphas), out[0], out[1])
        return out

    def transform(self, margin):
        if len(self.alphas) == 1:
            return super().transform(margin)
        return _as_margin(margin, len(self.alphas)).copy()

    def metric_input(self, margin):
        return margin[:, 0] if len(self.alphas) == 1 else margin
