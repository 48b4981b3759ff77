"""Evaluation metrics with XGBoost's definitions (all sample-weighted), as mergeable summaries.

``pred`` is the objective's *transformed* prediction: the value itself for
regression, probabilities ``[n]`` for binary objectives and ``[n, K]`` for
multi-class.  ``w=None`` means unit weights.  With ``W = sum_i w_i``:

=========  ==================================================================
rmse       ``sqrt(sum_i w_i (y_i - p_i)^2 / W)``
mae        ``sum_i w_i |y_i - p_i| / W``
logloss    ``-sum_i w_i [y_i log p_i + (1 - y_i) log(1 - p_i)] / W``,
           with ``p`` and ``1 - p`` each floored at ``1e-16``
error      ``sum_i w_i e_i / W`` with ``e_i = 1 - y_i`` if ``p_i > 0.5`` else
           ``y_i`` (for 0/1 labels: the weighted fraction misclassified)
auc        weighted area under the ROC curve (ties count one half); multi-class:
           one-vs-rest AUC per class averaged with weights ``sum_{y_i = k} w_i``
aucpr      area under the precision-recall curve, XGBoost's interpolation (AUCPR);
           multi-class: the mean of the one-vs-rest areas
mlogloss   ``-sum_i w_i log p_{i, y_i} / W``, ``p`` clipped to ``[1e-16, 1]``
aft-nl..,  survival:aft's, on label intervals: dgbdt.metrics.survival
interval-regression-accuracy
merror     weighted fraction with ``argmax_k p_{i, k} != y_i``
ndcg, map, per-query NDCG / average precision / precision (``@k``, ``-``), averaged over
pre        queries: dgbdt.metrics.ranking (rows with query ids)
=========  ==================================================================

**Evaluation is a reduction.** Every metric is ``value(merge(summary(part) for part in
parts))``: a summary is computed where a partition's predictions live (numpy on the host, cupy
on a GPU), summaries merge associatively and exactly, and only the merged summary becomes a
float. So the value is the same bits for any partitioning, worker count or merge order:

* ratio metrics (all but auc): the summary is ``[sum_i w_i loss_i, sum_i w_i]`` as exact sums
  (dgbdt.kernels.fixedpoint.ExactSum, computed on the device; two small arrays come back);
* auc and aucpr: integer ROC runs (or, on a GPU, sorted rows) merged exactly; see
  dgbdt.metrics.auc. XGBoost's distributed AUC averages per-worker values; this one is the AUC
  of all rows.

The Metric protocol and shared input checks are in dgbdt.metrics.base.
"""
from __future__ import annotations

import numpy as np

from .auc import AUC, AUCPR, RocRuns, auc_weight_scale
from .base import _PROB_EPS, Metric, _class_index
from .ranking import RankMetric, is_rank_metric
from .survival import AFTNLogLik, IntervalAccuracy

__all__ = ["AUC", "AUCPR", "Metric", "METRICS", "RankMetric", "RocRuns", "auc_weight_scale",
           "get_metric"]


class RMSE(Metric):
    """Root mean squared error ``sqrt(sum w (y - p)^2 / sum w)``."""

    name = "rmse"

    def _row_loss(self, xp, y, p):
        return (y - p) ** 2

    def value(self, s):
        return float(np.sqrt(super().value(s)))


class MAE(Metric):
    """Mean absolute error ``sum w |y - p| / sum w``."""

    name = "mae"

    def _row_loss(self, xp, y, p):
        return xp.abs(y - p)


class LogLoss(Metric):
    """Binary negative log-likelihood; ``p`` and ``1 - p`` each floored at ``1e-16``
    (so a confident miss costs ``-log(1e-16)`` either way)."""

    name = "logloss"

    def _row_loss(self, xp, y, p):
        pos = xp.log(xp.maximum(p, _PROB_EPS))
        neg = xp.log(xp.maximum(1.0 - p, _PROB_EPS))
        return -(y * pos + (1.0 - y) * neg)


class Error(Metric):
    """Binary error at threshold ``t`` (0.5, or ``error@t``): row loss ``1 - y`` if ``p > t``
    else ``y``."""

    name = "error"

    def __init__(self, threshold: float = 0.5):
        self.threshold = float(threshold)
        if self.threshold != 0.5:
            self.name = f"error@{threshold:g}"

    def _row_loss(self, xp, y, p):
        return xp.where(p > self.threshold, 1.0 - y, y)


class MLogLoss(Metric):
    """Multi-class negative log-likelihood ``-log p[y]``, ``p`` clipped to ``[1e-16, 1]``."""

    name = "mlogloss"
    _vector = False

    def _row_loss(self, xp, y, p):
        yi = _class_index(xp, y, p.shape[1], self.name)
        py = p[xp.arange(p.shape[0]), yi]
        return -xp.log(xp.clip(py, _PROB_EPS, 1.0))


class MError(Metric):
    """Multi-class error: ``argmax_k p_k != y`` (first maximum on ties)."""

    name = "merror"
    _vector = False

    def _row_loss(self, xp, y, p):
        yi = _class_index(xp, y, p.shape[1], self.name)
        return (xp.argmax(p, axis=1) != yi).astype(np.float64)


# -- #16's metrics (XGBoost's formulas; lower is better) ------------------------------------------
class RMSLE(Metric):
    """Root mean squared log error ``sqrt(sum w (log1p(p) - log1p(y))^2 / sum w)``."""

    name = "rmsle"

    def _row_loss(self, xp, y, p):
        return (xp.log1p(y) - xp.log1p(p)) ** 2

    def value(self, s):
        return float(np.sqrt(super().value(s)))


class MAPE(Metric):
    """Mean absolute percentage error ``sum w |(y - p) / y| / sum w``."""

    name = "mape"

    def _row_loss(self, xp, y, p):
        return xp.abs((y - p) / y)


class MPHE(Metric):
    """Mean pseudo-Huber error ``sum w d^2 (sqrt(1 + ((y - p)/d)^2) - 1) / sum w`` with
    ``d = huber_slope`` (a training parameter: get_metric(name, params))."""

    name = "mphe"

    def __init__(self, huber_slope: float = 1.0):
        self.slope = float(huber_slope)

    def _row_loss(self, xp, y, p):
        d2 = self.slope * self.slope
        z = y - p
        return d2 * (xp.sqrt(1.0 + z * z / d2) - 1.0)


class PoissonNLogLik(Metric):
    """Poisson negative log-likelihood ``lgamma(y + 1) + p - y log p``, ``p`` floored at
    1e-16."""

    name = "poisson-nloglik"

    def _row_loss(self, xp, y, p):
        p = xp.maximum(p, 1e-16)
        return _lgamma(xp, y + 1.0) + p - xp.log(p) * y


class GammaNLogLik(Metric):
    """Gamma negative log-likelihood with dispersion 1: ``y / p + log p`` (XGBoost's, whose
    other terms cancel for psi = 1)."""

    name = "gamma-nloglik"

    def _row_loss(self, xp, y, p):
        return y / p + xp.log(p)


class GammaDeviance(Metric):
    """Gamma deviance ``2 sum w (r - log r - 1) / sum w``, ``r = y / (p + 1e-9)``."""

    name = "gamma-deviance"

    def _row_loss(self, xp, y, p):
        r = y / (p + 1e-9)
        return 2.0 * (r - xp.log(r) - 1.0)


class TweedieNLogLik(Metric):
    """Tweedie negative log-likelihood with power ``r`` (``tweedie-nloglik@r``):
    ``-y p^(1-r) / (1 - r) + p^(2-r) / (2 - r)``."""

    name = "tweedie-nloglik"

    def __init__(self, rho: float = 1.5):
        if not 1.0 < rho < 2.0:
            raise ValueError(f"tweedie-nloglik@{rho:g}: the power must be in (1, 2)")
        self.rho = float(rho)
        self.name = f"tweedie-nloglik@{rho:g}"

    def _row_loss(self, xp, y, p):
        r = self.rho
        return -y * xp.exp((1.0 - r) * xp.log(p)) / (1.0 - r) + xp.exp((2.0 - r) * xp.log(p)) / (2.0 - r)


class Quantile(Metric):
    """The pinball loss at ``alpha = quantile_alpha`` (XGBoost's ``quantile``):
    ``alpha (y - p)`` where ``y >= p``, else ``(1 - alpha) (p - y)``, weighted mean. With
    several quantiles ``a_1 .. a_K`` the prediction is ``[n, K]`` and the value is XGBoost's
    mean over rows and quantiles, ``sum_i w_i sum_k loss_ik / (K sum_i w_i)``: a row's loss is
    the mean of its K pinball losses."""

    name = "quantile"

    def __init__(self, alpha=0.5):
        self.alphas = tuple(float(a) for a in np.atleast_1d(alpha))
        self.alpha = self.alphas[0]
        self._vector = len(self.alphas) == 1

    def _row_loss(self, xp, y, p):
        if self._vector:
            d = y - p
            return xp.where(d >= 0, self.alpha * d, (self.alpha - 1.0) * d)
        if p.shape[1] != len(self.alphas):
            raise ValueError(f"quantile: the prediction has {p.shape[1]} columns, "
                             f"quantile_alpha lists {len(self.alphas)} quantiles")
        a = xp.asarray(self.alphas)[None, :]
        d = y[:, None] - p
        return xp.where(d >= 0, a * d, (a - 1.0) * d).mean(axis=1)


class CoxNLogLik(Metric):
    """Cox negative partial log-likelihood per event (XGBoost's ``cox-nloglik``; unweighted):
    with the rows in the order of |y|, ``-sum over events i of [log p_i - log sum_{|y_j| >=
    |y_i|} p_j] / events`` (``p`` the hazard ratios, Breslow's ties). The summary is the rows
    themselves ((|y|, event, p), merged by concatenation) and the value orders them by (|y|,
    p), so it does not depend on how the rows were split."""

    name = "cox-nloglik"
    #: its summary is its rows' 3 columns (merged by concatenation; dgbdt.dask.collective_train
    #: gathers them from the ranks)
    row_summary = 3

    def summary(self, y, pred, w=None, weight_scale=None, weight_sum=None):
        from ..backends.device import to_host
        y = np.asarray(to_host(y), dtype=np.float64).reshape(-1)
        p = np.asarray(to_host(pred), dtype=np.float64).reshape(-1)
        return [np.abs(y), (y > 0).astype(np.float64), p]

    def merge(self, a, b):
        if a is None or b is None:
            return b if a is None else a
        return [np.concatenate([x, z]) for x, z in zip(a, b)]

    def value(self, s) -> float:
        if s is None or not s[0].shape[0]:
            raise ValueError("cox-nloglik: no rows to evaluate")
        t, event, p = s
        order = np.lexsort((p, t))
        t, event, p = t[order], event[order], p[order]
        events = int(event.sum())
        if events == 0:
            raise ValueError("cox-nloglik: no events (every time is censored)")
        # the risk set of a row: every row whose |y| is not smaller (its tie group included)
        first = np.searchsorted(t, t, side="left")
        before = np.concatenate([[0.0], np.cumsum(p)])[first]
        risk = p.sum() - before
        hit = event > 0
        return float(-np.sum(np.log(p[hit]) - np.log(risk[hit])) / events)


def _lgamma(xp, a):
    """log Gamma elementwise on numpy (math.lgamma) or cupy (cupyx.scipy.special.gammaln)."""
    if xp is np:
        from ..kernels.cpu_special import lgamma
        return lgamma(a.ravel()).reshape(a.shape)
    from cupyx.scipy.special import gammaln
    return gammaln(a)


_REGISTRY: dict[str, type[Metric]] = {
    cls.name: cls for cls in (RMSE, MAE, LogLoss, Error, AUC, AUCPR, MLogLoss, MError, RMSLE,
                              MAPE, MPHE, PoissonNLogLik, GammaNLogLik, GammaDeviance,
                              TweedieNLogLik, Quantile, CoxNLogLik, AFTNLogLik,
                              IntervalAccuracy)
}
METRICS: tuple[str, ...] = tuple(_REGISTRY) + ("ndcg", "map", "pre")
#: metrics that take a number after "@" (XGBoost's spelling): error@0.7, tweedie-nloglik@1.2
PARAMETRIC = ("error", "tweedie-nloglik")


def with_custom(eval_metric, default: str, custom, maximize) -> list:
    """The metrics a training scores when ``custom`` (custom_metric=) is a Metric instance or
    a list of them: the configured ones (or the objective's ``default``), then these. Custom
    Metrics summarize per partition and merge like the built-in ones, so they are exact on
    Dask too and early stopping watches the last (larger is better if its
    ``higher_is_better``; ``maximize``, if given, must agree)."""
    customs = list(custom) if isinstance(custom, (list, tuple)) else [custom]
    for m in customs:
        if not isinstance(m, Metric):
            raise TypeError(f"custom_metric: a list holds dgbdt.metrics.registry.Metric instances; got "
                            f"{type(m).__name__}")
        if not isinstance(m.name, str) or not m.name:
            raise ValueError(f"custom_metric: {type(m).__name__} needs a name (a class "
                             "attribute name = '...')")
    last = customs[-1]
    if maximize is not None and bool(maximize) != bool(last.higher_is_better):
        raise ValueError(f"maximize={maximize!r} but {last.name!r} says higher_is_better="
                         f"{last.higher_is_better}: set the Metric's higher_is_better (or "
                         "leave maximize out)")
    return list(eval_metric or [default]) + customs


def is_metric_custom(custom) -> bool:
    """Whether custom_metric is Metric instances (scored as built-in metrics are) rather than
    XGBoost's function of all the predictions."""
    return isinstance(custom, Metric) or (isinstance(custom, (list, tuple)) and bool(custom)
                                          and all(isinstance(m, Metric) for m in custom))


def get_metric(name, params: dict | None = None) -> Metric:
    """The metric called ``name`` (one of ``METRICS``, or ``error@t`` / ``tweedie-nloglik@r``);
    ``params``: the training parameters a metric reads (huber_slope for mphe). A Metric is
    returned as it is."""
    if isinstance(name, Metric):
        return name
    if not isinstance(name, str):
        raise ValueError(f"a metric name must be a str; got {type(name).__name__}")
    if is_rank_metric(name):        # ndcg, map, pre with @k and '-' (dgbdt.metrics.ranking)
        exp_gain = (params or {}).get("ndcg_exp_gain")
        return RankMetric(name, True if exp_gain is None else bool(exp_gain))
    base, at, arg = name.partition("@")
    if at:
        if base not in PARAMETRIC:
            raise ValueError(f"metric {name!r}: only {' and '.join(p + '@' for p in PARAMETRIC)}"
                             " take a number after '@'")
        try:
            value = float(arg)
        except ValueError:
            raise ValueError(f"metric {name!r}: {arg!r} after '@' is not a number") from None
        if base == "error":
            return Error(threshold=value)
        return TweedieNLogLik(value)
    cls = _REGISTRY.get(name)
    if cls is None:
        raise ValueError(f"unknown metric {name!r}; supported: {', '.join(METRICS)} (and "
                         "error@t, tweedie-nloglik@r, ndcg@k, map@k, pre@k and the '-' forms)")
    if cls is MPHE:
        return MPHE((params or {}).get("huber_slope", 1.0) or 1.0)
    if cls is Quantile:
        return Quantile((params or {}).get("quantile_alpha", 0.5) or 0.5)
    if cls is TweedieNLogLik:
        return TweedieNLogLik((params or {}).get("tweedie_variance_power", 1.5) or 1.5)
    if cls is AFTNLogLik:
        return AFTNLogLik((params or {}).get("aft_loss_distribution") or "normal",
                          (params or {}).get("aft_loss_distribution_scale") or 1.0)
    return cls()
