"""Evaluation metrics with XGBoost's definitions (all sample-weighted).

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
auc        weighted area under the ROC curve (trapezoid rule over groups of
           equal scores); multi-class: one-vs-rest AUC per class averaged with
           weights ``sum_{y_i = k} w_i``
mlogloss   ``-sum_i w_i log p_{i, y_i} / W``, ``p`` clipped to ``[1e-16, 1]``
merror     weighted fraction with ``argmax_k p_{i, k} != y_i``
=========  ==================================================================

All metrics but ``auc`` are ratios of sums, so they also expose
``partial(y, pred, w) -> [numerator, W]`` as exact sums (add the lists of several
data partitions element-wise: the result does not depend on the partitioning) and ``finalize(stats) -> float``; ``decomposable`` says which.
"""

from __future__ import annotations

import numpy as np

from .fixedpoint import ExactSum

__all__ = ["Metric", "METRICS", "get_metric"]

_PROB_EPS = 1e-16


def _labels(y, n: int | None = None) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {y.shape}")
    if n is not None and y.shape[0] != n:
        raise ValueError(f"labels have {y.shape[0]} rows, predictions have {n}")
    return y


def _vector_pred(pred) -> np.ndarray:
    p = np.asarray(pred, dtype=np.float64)
    if p.ndim == 2 and p.shape[1] == 1:
        p = p[:, 0]
    if p.ndim != 1:
        raise ValueError(f"this metric needs a 1-D prediction, got shape {p.shape}")
    return p


def _matrix_pred(pred) -> np.ndarray:
    p = np.asarray(pred, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"this metric needs class probabilities [n, K], got shape {p.shape}")
    return p


def _weights(w, n: int) -> np.ndarray:
    if w is None:
        return np.ones(n)
    w = np.asarray(w, dtype=np.float64).reshape(-1)
    if w.shape[0] != n:
        raise ValueError(f"weight has {w.shape[0]} rows, labels have {n}")
    return w


def _class_index(y: np.ndarray, k: int, name: str) -> np.ndarray:
    bad = ~np.isfinite(y) | (y != np.floor(y)) | (y < 0) | (y >= k)
    if bad.any():
        raise ValueError(
            f"{name}: labels must be integers in [0, {k}) to match the {k} prediction columns; "
            f"first bad label {y[bad][0]!r} at row {int(np.flatnonzero(bad)[0])}"
        )
    return y.astype(np.int64)


class Metric:
    """An evaluation metric: ``metric(y, pred, w=None) -> float``."""

    name: str = ""
    higher_is_better: bool = False
    decomposable: bool = True

    def partial(self, y, pred, w=None) -> list[ExactSum]:
        """Additive statistics ``[sum_i w_i loss_i, sum_i w_i]`` of one chunk, as exact sums:
        adding the lists of any partitioning gives the same bits (dgbdt.fixedpoint.ExactSum)."""
        y, loss = self._row_loss(y, pred)
        w = _weights(w, y.shape[0])
        return [ExactSum.of(w * loss), ExactSum.of(w)]

    def finalize(self, stats) -> float:
        """Metric value from (summed) ``partial`` statistics: the weighted mean."""
        num, den = (float(v) for v in stats)
        if not den > 0:
            raise ValueError(f"{self.name}: the sum of sample weights is not positive")
        return float(num / den)

    def __call__(self, y, pred, w=None) -> float:
        return self.finalize(self.partial(y, pred, w))

    def _row_loss(self, y, pred):
        """Return ``(labels [n], per-row loss [n])``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class RMSE(Metric):
    """Root mean squared error ``sqrt(sum w (y - p)^2 / sum w)``."""

    name = "rmse"

    def _row_loss(self, y, pred):
        p = _vector_pred(pred)
        y = _labels(y, p.shape[0])
        return y, (y - p) ** 2

    def finalize(self, stats):
        return float(np.sqrt(super().finalize(stats)))


class MAE(Metric):
    """Mean absolute error ``sum w |y - p| / sum w``."""

    name = "mae"

    def _row_loss(self, y, pred):
        p = _vector_pred(pred)
        y = _labels(y, p.shape[0])
        return y, np.abs(y - p)


class LogLoss(Metric):
    """Binary negative log-likelihood; ``p`` and ``1 - p`` each floored at ``1e-16``
    (so a confident miss costs ``-log(1e-16)`` either way)."""

    name = "logloss"

    def _row_loss(self, y, pred):
        p = _vector_pred(pred)
        y = _labels(y, p.shape[0])
        pos = np.log(np.maximum(p, _PROB_EPS))
        neg = np.log(np.maximum(1.0 - p, _PROB_EPS))
        return y, -(y * pos + (1.0 - y) * neg)


class Error(Metric):
    """Binary error at threshold 0.5: row loss ``1 - y`` if ``p > 0.5`` else ``y``."""

    name = "error"

    def _row_loss(self, y, pred):
        p = _vector_pred(pred)
        y = _labels(y, p.shape[0])
        return y, np.where(p > 0.5, 1.0 - y, y)


class MLogLoss(Metric):
    """Multi-class negative log-likelihood ``-log p[y]``, ``p`` clipped to ``[1e-16, 1]``."""

    name = "mlogloss"

    def _row_loss(self, y, pred):
        p = _matrix_pred(pred)
        y = _labels(y, p.shape[0])
        py = p[np.arange(p.shape[0]), _class_index(y, p.shape[1], self.name)]
        return y, -np.log(np.clip(py, _PROB_EPS, 1.0))


class MError(Metric):
    """Multi-class error: ``argmax_k p_k != y`` (first maximum on ties)."""

    name = "merror"

    def _row_loss(self, y, pred):
        p = _matrix_pred(pred)
        y = _labels(y, p.shape[0])
        yi = _class_index(y, p.shape[1], self.name)
        return y, (np.argmax(p, axis=1) != yi).astype(np.float64)


def _binary_auc(score: np.ndarray, pos: np.ndarray, neg: np.ndarray,
                weighted: bool = False) -> float:
    """ROC AUC for per-row positive/negative weights, ties by the trapezoid rule.

    Rows are sorted by decreasing score and grouped by equal score.  With
    cumulative positive weight ``TP_j`` and negative weight ``FP_j`` after
    group ``j`` (``TP_0 = FP_0 = 0``),
    ``AUC = sum_j (FP_j - FP_{j-1}) (TP_j + TP_{j-1}) / 2 / (TP_last * FP_last)``.
    O(n log n). With ``weighted`` rows of equal score are also ordered by their weights, so
    the float sums, and the result, do not depend on the order of the rows (gathered from
    partitions or ranks in any order); unit weights add exactly in any order.
    """
    order = (np.lexsort((neg, pos, -score)) if weighted
             else np.argsort(-score, kind="stable"))
    s = score[order]
    last = np.append(np.flatnonzero(s[1:] != s[:-1]), s.shape[0] - 1)  # end of each tie group
    tp = np.concatenate(([0.0], np.cumsum(pos[order])[last]))
    fp = np.concatenate(([0.0], np.cumsum(neg[order])[last]))
    area = np.dot(np.diff(fp), tp[1:] + tp[:-1]) * 0.5
    return float(area / (tp[-1] * fp[-1]))


class AUC(Metric):
    """Weighted ROC AUC.

    Binary (``pred`` ``[n]``): row ``i`` adds weight ``w_i y_i`` to the positives
    and ``w_i (1 - y_i)`` to the negatives.  Multi-class (``pred`` ``[n, K]``):
    for each class ``k`` present, the one-vs-rest AUC of column ``k``; the result
    is their average weighted by ``sum_{y_i = k} w_i``.  Raises ``ValueError``
    when fewer than two classes are present.
    """

    name = "auc"
    higher_is_better = True
    decomposable = False

    def __call__(self, y, pred, w=None) -> float:
        p = np.asarray(pred, dtype=np.float64)
        if p.ndim == 2 and p.shape[1] > 1:
            return self._multiclass(y, p, w)
        p = _vector_pred(p)
        y = _labels(y, p.shape[0])
        w = _weights(w, y.shape[0])
        pos, neg = w * y, w * (1.0 - y)
        if not (pos.sum() > 0 and neg.sum() > 0):
            raise ValueError(
                "auc needs both classes: the labels (with positive weight) contain only "
                + ("negatives" if not pos.sum() > 0 else "positives")
            )
        return _binary_auc(p, pos, neg, weighted=w is not None)

    def _multiclass(self, y, p, w):
        y = _labels(y, p.shape[0])
        yi = _class_index(y, p.shape[1], self.name)
        weighted = w is not None
        w = _weights(w, y.shape[0])
        class_w = np.bincount(yi, weights=w, minlength=p.shape[1])
        present = np.flatnonzero(class_w > 0)
        if present.size < 2:
            raise ValueError("auc needs both classes: the labels contain fewer than two classes")
        total, acc = 0.0, 0.0
        for k in present:  # loop over classes, not rows
            is_k = yi == k
            acc += class_w[k] * _binary_auc(p[:, k], np.where(is_k, w, 0.0),
                                            np.where(is_k, 0.0, w), weighted)
            total += class_w[k]
        return float(acc / total)

    def partial(self, y, pred, w=None):
        raise NotImplementedError("auc is not decomposable into per-partition sums")

    def finalize(self, stats):
        raise NotImplementedError("auc is not decomposable into per-partition sums")


_REGISTRY: dict[str, type[Metric]] = {
    cls.name: cls for cls in (RMSE, MAE, LogLoss, Error, AUC, MLogLoss, MError)
}
METRICS: tuple[str, ...] = tuple(_REGISTRY)


def get_metric(name: str) -> Metric:
    """Instantiate the metric called ``name`` (one of ``METRICS``)."""
    try:
        return _REGISTRY[name]()
    except (KeyError, TypeError):
        raise ValueError(f"unknown metric {name!r}; supported: {', '.join(METRICS)}") from None
