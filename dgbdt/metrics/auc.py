"""auc and aucpr as mergeable summaries, exact for any partitioning (see dgbdt.metrics.registry).

Per output column the summary is a ``RocRuns``: the partition's distinct scores in increasing
order with the integer positive and negative weight at each (weights in fixed point with one
global scale, ``auc_weight_scale``; unit weights are counts). Merging concatenates runs and
adds weights at equal scores, exactly. From the merged runs, with ``N_<j`` the negative weight
below score ``j``, ``2 area = sum_j pos_j (2 N_<j + neg_j)`` (a pair counts 1 when the positive
scores higher, 1/2 on a tie), summed exactly; ``auc = area / (P N)``. XGBoost's distributed
AUC averages per-worker values; this one is the AUC of all rows. Unweighted binary auc
summarizes as dgbdt.metrics.sorted_scores.SortedScores instead (the same integers, no merging).
"""
from __future__ import annotations

import numpy as np

from ..kernels.fixedpoint import ExactSum, _module, scale_for
from ..kernels.gpu_metric import unit_labels
from .base import Metric, _as, _class_index, _labels, _vector_pred, _weights
from .sorted_scores import SortedScores

__all__ = ["AUC", "AUCPR", "RocRuns", "auc_weight_scale"]


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
            from ..kernels.cpu_sum import merge_sorted_runs
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


def _area_and_totals(summary) -> tuple:
    """(twice the ROC area, P, N) of one column's summary: one kernel for sorted parts
    within their exact range, else from the merged runs."""
    if isinstance(summary, SortedScores) and summary.exact():
        return summary.stats()
    runs = _runs(summary)
    pos, neg = runs.totals()
    return runs.twice_area(pos + neg), pos, neg


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
        if not multi and w is None and weight_scale is None:
            # unit weights: sorted rows, never merged (dgbdt.metrics.sorted_scores)
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
        these element-wise passes were a large part of a round's auc on a GPU
        (docs/benchmarks-archive.md#figures-behind-code-choices). Keyed by the array
        object (labels are not changed in place during a training)."""
        cache = self.__dict__.setdefault("_label_cache", {})
        hit = cache.get(id(y))
        if hit is not None and hit[0] is y:
            return hit[1], hit[2]
        yy = _labels(xp, y, n)
        if xp is np:
            pos = xp.where(yy == 1, 1, xp.where(yy == 0, 0, xp.rint(yy))).astype(np.int64)
            neg = 1 - pos
        else:       # the same rule by a kernel that ships built (no compile at a first fit)
            pos, neg = unit_labels(yy)
        if len(cache) >= 4:
            cache.clear()
        cache[id(y)] = hit = (y, pos, neg)
        return hit[1], hit[2]

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_label_cache"}

    # merge: Metric's, element-wise (RocRuns add by merging)

    def value(self, s) -> float:
        if s is None:
            raise ValueError("auc: no rows to evaluate")
        if len(s) == 1:
            return _binary_auc(*_area_and_totals(s[0]))
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


    def value_later(self, s):
        """A callable that gives ``value(s)``. For binary sorted parts within their exact range
        on a device the kernel is queued now and the call waits for its totals alone (a
        collective rank reads round r's auc after round r + 1's trees are queued:
        dgbdt.dask.collective_scores); otherwise the value is computed now."""
        if s is not None and len(s) == 1 and isinstance(s[0], SortedScores) and s[0].exact():
            stats = s[0].stats_later()
            return lambda: _binary_auc(*stats())
        value = self.value(s)
        return lambda: value


def _binary_auc(area2: int, pos: int, neg: int) -> float:
    """Binary auc from twice the area and the positive and negative totals."""
    if not (pos > 0 and neg > 0):
        raise ValueError(
            "auc needs both classes: the labels (with positive weight) contain only "
            + ("negatives" if not pos > 0 else "positives"))
    return area2 / (2.0 * float(pos) * float(neg))


class AUCPR(AUC):
    """Area under the precision-recall curve, XGBoost's ``aucpr``: the scores in decreasing
    order, between consecutive distinct scores the precision-recall segment interpolated as
    Davis and Goadrich do (doi:10.1371/journal.pone.0092209), each segment's area in closed
    form; multi-class: the unweighted mean of the one-vs-rest areas. The same summary as auc
    (RocRuns), so exact for any partitioning too. Raises ``ValueError`` when a class (binary:
    the positives or the negatives) has no weight."""

    name = "aucpr"

    def value_later(self, s):
        """``value(s)``, computed now, as a callable (see AUC.value_later)."""
        value = self.value(s)
        return lambda: value

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
