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
merror     weighted fraction with ``argmax_k p_{i, k} != y_i``
=========  ==================================================================

**Evaluation is a reduction.** Every metric is ``value(merge(summary(part) for part in
parts))``: a summary is computed where a partition's predictions live (numpy on the host, cupy
on a GPU), summaries merge associatively and exactly, and only the merged summary becomes a
float. So the value is the same bits for any partitioning, worker count or merge order:

* ratio metrics (all but auc): the summary is ``[sum_i w_i loss_i, sum_i w_i]`` as exact sums
  (dgbdt.fixedpoint.ExactSum, computed on the device; two small arrays come back);
* auc: per output column a ``RocRuns``, the partition's distinct scores in increasing order
  with the integer positive and negative weight at each (weights in fixed point with one
  global scale, ``auc_weight_scale``; unit weights are counts). Merging concatenates runs and
  adds weights at equal scores, exactly. From the merged runs, with ``N_<j`` the negative
  weight below score ``j``, ``2 area = sum_j pos_j (2 N_<j + neg_j)`` (a pair counts 1 when
  the positive scores higher, 1/2 on a tie), summed exactly; ``auc = area / (P N)``. XGBoost's
  distributed AUC averages per-worker values; this one is the AUC of all rows.
"""
from __future__ import annotations

import numpy as np

from .fixedpoint import ExactSum, _module, scale_for
from .sorted_scores import SortedScores

__all__ = ["AUC", "AUCPR", "Metric", "METRICS", "RocRuns", "auc_weight_scale", "get_metric"]

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
    ``alpha (y - p)`` where ``y >= p``, else ``(1 - alpha) (p - y)``, weighted mean."""

    name = "quantile"

    def __init__(self, alpha: float = 0.5):
        self.alpha = float(alpha)

    def _row_loss(self, xp, y, p):
        d = y - p
        return xp.where(d >= 0, self.alpha * d, (self.alpha - 1.0) * d)


class CoxNLogLik(Metric):
    """Cox negative partial log-likelihood per event (XGBoost's ``cox-nloglik``; unweighted):
    with the rows in the order of |y|, ``-sum over events i of [log p_i - log sum_{|y_j| >=
    |y_i|} p_j] / events`` (``p`` the hazard ratios, Breslow's ties). The summary is the rows
    themselves ((|y|, event, p), merged by concatenation) and the value orders them by (|y|,
    p), so it does not depend on how the rows were split."""

    name = "cox-nloglik"

    def summary(self, y, pred, w=None, weight_scale=None, weight_sum=None):
        from .backend import to_host
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
        from .kernels.cpu_special import lgamma
        return lgamma(a.ravel()).reshape(a.shape)
    from cupyx.scipy.special import gammaln
    return gammaln(a)


# -- auc ---------------------------------------------------------------------------------------
def auc_weight_scale(max_weight: float, n_rows: int) -> float:
    """The fixed-point scale of sample weights for auc over ``n_rows`` rows whose largest
    weight is ``max_weight``: every partial sum, and twice the total, stays below 2**62."""
    return scale_for(float(max_weight), 2 * int(n_rows))


class RocRuns:
    """Distinct scores in increasing order with the positive and negative weight at each
    (int64, fixed point): the mergeable summary of one column's auc (see the module
    docstring). Arrays of the module the scores came from (numpy or cupy)."""

    __slots__ = ("score", "pos", "neg")

    def __init__(self, score, pos, neg):
        self.score, self.pos, self.neg = score, pos, neg

    @classmethod
    def of(cls, score, pos, neg, presorted_runs: bool = False) -> "RocRuns":
        """Runs of per-row (or per-run) scores and int64 weights: sorted, equal scores merged.
        Integer sums: the result does not depend on the order of the rows.
        ``presorted_runs``: the scores are a few sorted runs back to back (a merge), which a
        stable (run-detecting) sort orders faster on the host."""
        xp = _module(score)
        n = score.shape[0]
        if n == 0:
            return cls(score, pos, neg)
        if presorted_runs and xp is np:     # a linear merge of the runs (numba)
            from .kernels.cpu_sum import merge_sorted_runs
            merged = merge_sorted_runs(np.asarray(score), np.asarray(pos), np.asarray(neg))
            if merged is not None:
                return cls(*merged)
        order = xp.argsort(score, kind="stable") if presorted_runs and xp is np else \
            xp.argsort(score)
        s = score[order]
        last = xp.flatnonzero(xp.concatenate([s[1:] != s[:-1], xp.ones(1, dtype=bool)]))
        out = [s[last]]
        for v in (pos, neg):
            c = xp.cumsum(v[order])[last]
            out.append(xp.concatenate([c[:1], c[1:] - c[:-1]]))
        return cls(*out)

    def __add__(self, other: "RocRuns") -> "RocRuns":
        xp = _module(self.score)
        cat = (lambda a, b: xp.concatenate([a, _as(xp, b, a.dtype)]))
        return RocRuns.of(cat(self.score, other.score), cat(self.pos, other.pos),
                          cat(self.neg, other.neg), presorted_runs=True)

    def totals(self) -> tuple[int, int]:
        """(positive, negative) weight of all rows, in fixed-point units."""
        xp = _module(self.pos)
        both = xp.stack([self.pos.sum(), self.neg.sum()])
        both = both.get() if hasattr(both, "get") else both
        return int(both[0]), int(both[1])

    def twice_area(self, total: int) -> float:
        """``sum_j pos_j (2 N_<j + neg_j)`` (see the module docstring), ``total`` the weight of
        all rows. Below 2**31 units in all (counts of unit weights) every product and the sum
        are exact int64; else the float64 products are summed exactly (ExactSum)."""
        xp = _module(self.neg)
        below = xp.cumsum(self.neg) - self.neg
        if total < (1 << 31):
            s = xp.sum(self.pos * (2 * below + self.neg))
            return float(int(s.get() if hasattr(s, "get") else s))
        return float(ExactSum.of(self.pos.astype(np.float64)
                                 * (2 * below + self.neg).astype(np.float64)))

    def __reduce__(self):
        return (RocRuns, (self.score, self.pos, self.neg))


def _runs(summary) -> RocRuns:
    """A column's auc summary as RocRuns (a SortedScores' rows merged into runs)."""
    return RocRuns.of(*summary.arrays()) if isinstance(summary, SortedScores) else summary


def _fixed_weights(xp, w, n, scale):
    if w is None:
        return xp.ones(n, dtype=np.int64)
    if scale is None:
        scale = auc_weight_scale(float(w.max()) if n else 0.0, n)
    return xp.rint(w * scale).astype(np.int64)


class AUC(Metric):
    """Weighted ROC AUC, exact for any partitioning of the rows.

    Binary (``pred`` ``[n]``): row ``i`` adds weight ``w_i y_i`` to the positives and
    ``w_i (1 - y_i)`` to the negatives (labels in [0, 1]). Multi-class (``pred`` ``[n, K]``):
    for each class ``k`` present, the one-vs-rest AUC of column ``k``; the result is their
    average weighted by ``sum_{y_i = k} w_i``. Raises ``ValueError`` when fewer than two classes
    are present. The summary is a list of RocRuns, one per column (one for binary);
    ``weight_scale`` (auc_weight_scale of the whole set's rows) must be the same for every
    partition of a weighted set: without it the partition's own rows set it.
    """

    name = "auc"
    higher_is_better = True

    def summary(self, y, pred, w=None, weight_scale=None, weight_sum=None):
        xp = _module(pred)
        p = xp.asarray(pred, dtype=np.float64)
        multi = p.ndim == 2 and p.shape[1] > 1
        p = p if multi else _vector_pred(p)
        if not multi and xp is not np and w is None and weight_scale is None:
            # unit weights on a GPU: sorted rows, never merged (dgbdt.sorted_scores)
            return [SortedScores.of(p, *self._unit_labels(xp, y, p.shape[0]))]
        y = _labels(xp, y, p.shape[0])
        n = y.shape[0]
        w = _weights(xp, w, n)
        fw = _fixed_weights(xp, w, n, weight_scale)
        if not multi:
            # labels in [0, 1]: the positive part of a row's weight is w y (fractional labels
            # rounded in fixed point), the rest negative; 0/1 labels are exact
            pos = xp.where(y == 1, fw, xp.where(y == 0, 0, xp.rint(fw * y).astype(np.int64)))
            return [RocRuns.of(p, pos, fw - pos)]
        yi = _class_index(xp, y, p.shape[1], self.name)
        runs = []
        for k in range(p.shape[1]):     # a loop over classes, not rows
            is_k = yi == k
            runs.append(RocRuns.of(p[:, k], xp.where(is_k, fw, 0), xp.where(is_k, 0, fw)))
        return runs

    def _unit_labels(self, xp, y, n: int):
        """(pos, neg) int64 of unit-weight binary labels (the summary's rule above with w = 1),
        made once per label array: an eval set's labels are the same array every round, and
        these element-wise passes were a third of a round's auc on a GPU. Keyed by the array
        object (labels are not changed in place during a training)."""
        cache = self.__dict__.setdefault("_label_cache", {})
        hit = cache.get(id(y))
        if hit is not None and hit[0] is y:
            return hit[1], hit[2]
        yy = _labels(xp, y, n)
        pos = xp.where(yy == 1, 1, xp.where(yy == 0, 0, xp.rint(yy))).astype(np.int64)
        if len(cache) >= 4:
            cache.clear()
        cache[id(y)] = hit = (y, pos, 1 - pos)
        return hit[1], hit[2]

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_label_cache"}

    # merge: Metric's, element-wise (RocRuns add by merging)

    def value(self, s) -> float:
        if s is None:
            raise ValueError("auc: no rows to evaluate")
        if len(s) == 1:
            if isinstance(s[0], SortedScores) and s[0].exact():
                area2, pos, neg = s[0].stats()
            else:
                runs = _runs(s[0])
                pos, neg = runs.totals()
            if not (pos > 0 and neg > 0):
                raise ValueError(
                    "auc needs both classes: the labels (with positive weight) contain only "
                    + ("negatives" if not pos > 0 else "positives"))
            if not isinstance(s[0], SortedScores) or not s[0].exact():
                area2 = runs.twice_area(pos + neg)
            return area2 / (2.0 * float(pos) * float(neg))
        totals = [r.totals() for r in s]
        present = [k for k, (pos, neg) in enumerate(totals) if pos > 0]
        if len(present) < 2:
            raise ValueError("auc needs both classes: the labels contain fewer than two classes")
        acc = ExactSum(0)
        for k in present:
            pos, neg = totals[k]
            auc_k = s[k].twice_area(pos + neg) / (2.0 * float(pos) * float(neg))
            acc = acc + ExactSum.of(np.array([auc_k * float(pos)]))
        return float(acc) / float(sum(totals[k][0] for k in present))


class AUCPR(AUC):
    """Area under the precision-recall curve, XGBoost's ``aucpr``: the scores in decreasing
    order, between consecutive distinct scores the precision-recall segment interpolated as
    Davis and Goadrich do (doi:10.1371/journal.pone.0092209), each segment's area in closed
    form; multi-class: the unweighted mean of the one-vs-rest areas. The same summary as auc
    (RocRuns), so exact for any partitioning too. Raises ``ValueError`` when a class (binary:
    the positives or the negatives) has no weight."""

    name = "aucpr"

    def value(self, s) -> float:
        if s is None:
            raise ValueError("aucpr: no rows to evaluate")
        areas = []
        for k, runs in enumerate(s):
            runs = _runs(runs)
            pos, neg = runs.totals()
            if not (pos > 0 and neg > 0):
                raise ValueError(
                    "aucpr needs both classes: the labels (with positive weight) contain only "
                    + ("negatives" if not pos > 0 else "positives")
                    + ("" if len(s) == 1 else f" for class {k}"))
            areas.append(_pr_area(runs, float(pos)))
        if len(areas) == 1:
            return areas[0]
        return float(ExactSum.of(np.array(areas))) / len(areas)


def _pr_area(runs: RocRuns, total_pos: float) -> float:
    """The interpolated precision-recall area of one column's runs (see AUCPR); segments are
    summed exactly, so the value depends only on the runs."""
    xp = _module(runs.pos)
    tp = xp.cumsum(runs.pos[::-1]).astype(np.float64)      # decreasing score
    fp = xp.cumsum(runs.neg[::-1]).astype(np.float64)
    tp_prev = xp.concatenate([xp.zeros(1), tp[:-1]])
    fp_prev = xp.concatenate([xp.zeros(1), fp[:-1]])
    pr, pr_prev = tp / total_pos, tp_prev / total_pos
    flat = tp == tp_prev
    with np.errstate(divide="ignore", invalid="ignore"):
        h = xp.where(flat, 0.0, (fp - fp_prev) / xp.where(flat, 1.0, tp - tp_prev))
        a = xp.where(flat, 1.0, h + 1.0)
        b = xp.where(flat, 0.0, (fp_prev - h * tp_prev) / total_pos)
        curved = (pr - pr_prev - b / a * (xp.log(a * pr + b) - xp.log(a * pr_prev + b))) / a
        area = xp.where(b != 0.0, curved, (pr - pr_prev) / a)
    return float(ExactSum.of(area))


_REGISTRY: dict[str, type[Metric]] = {
    cls.name: cls for cls in (RMSE, MAE, LogLoss, Error, AUC, AUCPR, MLogLoss, MError, RMSLE,
                              MAPE, MPHE, PoissonNLogLik, GammaNLogLik, GammaDeviance,
                              TweedieNLogLik, Quantile, CoxNLogLik)
}
METRICS: tuple[str, ...] = tuple(_REGISTRY)
#: metrics that take a number after "@" (XGBoost's spelling): error@0.7, tweedie-nloglik@1.2
PARAMETRIC = ("error", "tweedie-nloglik")


def get_metric(name, params: dict | None = None) -> Metric:
    """The metric called ``name`` (one of ``METRICS``, or ``error@t`` / ``tweedie-nloglik@r``);
    ``params``: the training parameters a metric reads (huber_slope for mphe). A Metric is
    returned as it is."""
    if isinstance(name, Metric):
        return name
    if not isinstance(name, str):
        raise ValueError(f"a metric name must be a str; got {type(name).__name__}")
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
                         "error@t, tweedie-nloglik@r)")
    if cls is MPHE:
        return MPHE((params or {}).get("huber_slope", 1.0) or 1.0)
    if cls is Quantile:
        return Quantile((params or {}).get("quantile_alpha", 0.5) or 0.5)
    if cls is TweedieNLogLik:
        return TweedieNLogLik((params or {}).get("tweedie_variance_power", 1.5) or 1.5)
    return cls()
