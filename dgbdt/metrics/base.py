"""The Metric protocol (summary, merge, value) and the input checks every metric shares
(dgbdt.metrics.registry holds the ratio metrics and the registry, dgbdt.metrics.auc the auc family)."""
from __future__ import annotations

import numpy as np

from ..kernels.fixedpoint import ExactSum, _module

_PROB_EPS = 1e-16


def _as(xp, a, dtype=np.float64):
    """a as an array of module xp (host data moves to the device once, if xp is cupy)."""
    if xp is np and hasattr(a, "__cuda_array_interface__"):
        return a.get().astype(dtype, copy=False)
    return xp.asarray(a, dtype=dtype)


def _labels(xp, y, n: int | None = None):
    y = _as(xp, y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {tuple(y.shape)}")
    if n is not None and y.shape[0] != n:
        raise ValueError(f"labels have {y.shape[0]} rows, predictions have {n}")
    return y


def _is_multi_target(y, pred) -> bool:
    """Whether labels and prediction are both [n, T] with T > 1 (a multi-target label)."""
    ys, ps = getattr(y, "shape", ()), getattr(pred, "shape", ())
    return len(ys) == 2 and ys[1] > 1 and tuple(ys) == tuple(ps)


def _vector_pred(pred):
    xp = _module(pred)
    p = xp.asarray(pred, dtype=np.float64)
    if p.ndim == 2 and p.shape[1] == 1:
        p = p[:, 0]
    if p.ndim != 1:
        raise ValueError(f"this metric needs a 1-D prediction, got shape {tuple(p.shape)}")
    return p


def _matrix_pred(pred):
    xp = _module(pred)
    p = xp.asarray(pred, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"this metric needs class probabilities [n, K], got shape "
                         f"{tuple(p.shape)}")
    return p


def _weights(xp, w, n: int):
    if w is None:
        return None
    w = _as(xp, w).reshape(-1)
    if w.shape[0] != n:
        raise ValueError(f"weight has {w.shape[0]} rows, labels have {n}")
    return w


def _class_index(xp, y, k: int, name: str):
    bad = ~xp.isfinite(y) | (y != xp.floor(y)) | (y < 0) | (y >= k)
    if bool(bad.any()):
        first = int(xp.flatnonzero(bad)[0])
        raise ValueError(
            f"{name}: labels must be integers in [0, {k}) to match the {k} prediction columns; "
            f"first bad label {float(y[first])!r} at row {first}"
        )
    return y.astype(np.int64)


class Metric:
    """An evaluation metric: ``metric(y, pred, w=None) -> float``, or in pieces:
    ``value(merge(summary(...), summary(...)))`` over the partitions of the rows."""

    name: str = ""
    higher_is_better: bool = False

    def summary(self, y, pred, w=None, weight_scale: float | None = None,
                weight_sum: ExactSum | None = None):
        """The mergeable summary of these rows (on pred's device). Ratio metrics: the exact
        sums ``[sum_i w_i loss_i, sum_i w_i]``, ``weight_sum`` the second when the caller keeps
        it (it does not change between rounds); ``weight_scale`` is for auc only."""
        if self._vector and _is_multi_target(y, pred):
            # several targets (XGBoost's element-wise metrics): a row's loss is the mean of
            # its targets' losses, so the value is the mean over rows and targets
            xp = _module(pred)
            pred = xp.asarray(pred, dtype=np.float64)
            y = _as(xp, y)
            w = _weights(xp, w, y.shape[0])
            loss = self._row_loss(xp, y, pred).mean(axis=1)
            y = y[:, 0]
        else:
            pred = _vector_pred(pred) if self._vector else _matrix_pred(pred)
            xp = _module(pred)
            y = _labels(xp, y, pred.shape[0])
            w = _weights(xp, w, y.shape[0])
            loss = self._row_loss(xp, y, pred)
        if w is None:
            return [ExactSum.of(loss), ExactSum(int(y.shape[0]) << ExactSum._SHIFT)]
        return [ExactSum.of(w * loss), weight_sum if weight_sum is not None else ExactSum.of(w)]

    @staticmethod
    def empty():
        """The summary of no rows (the identity of ``merge``)."""
        return None

    def merge(self, a, b):
        """The summary of two disjoint row sets' rows together (exact, associative)."""
        if a is None or b is None:
            return b if a is None else a
        return [x + y for x, y in zip(a, b)]

    def value(self, s) -> float:
        """Metric value from a (merged) summary: the weighted mean of the row losses."""
        if s is None:
            raise ValueError(f"{self.name}: no rows to evaluate")
        num, den = (float(v) for v in s)
        if not den > 0:
            raise ValueError(f"{self.name}: the sum of sample weights is not positive")
        return float(num / den)

    def __call__(self, y, pred, w=None) -> float:
        return self.value(self.summary(y, pred, w))

    _vector = True

    def _row_loss(self, xp, y, pred):
        """Per-row loss [n] of labels y [n] and prediction pred."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
