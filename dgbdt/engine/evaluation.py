"""Evaluation during training: metrics where the predictions live, merged like histograms.

An evaluation set's margins live beside its rows (numpy on the host, cupy on the GPU that holds
them) and advance by the new trees only. Each round every holder of rows turns its margins into
the metrics' *summaries* (dgbdt.metrics.registry: exact sums, or auc's integer-weighted score runs),
computed on its device; the summaries are merged by whatever reduction the seam uses (nothing in
process, a tree-reduce over the task graph, an all-reduce or all-gather between ranks), and only
the merged summary becomes one float per metric. The merge is exact, so every partitioning,
worker count and mode gives the same bits.

The sources of one training (``DatasetEval``, ``SeamEval`` here; the Dask and collective seams
have their own) all answer ``scores(booster, new_trees, objective, metrics) -> [float]``.
"""
from __future__ import annotations

import copy

import numpy as np

from ..backends.device import array_module
from ..kernels.fixedpoint import ExactSum
from ..metrics.registry import auc_weight_scale


def metric_input(objective, margin):
    """What metrics score: probabilities for classification objectives (logitraw included, as
    XGBoost), the prediction itself for regression. On the margins' device."""
    return objective.metric_input(margin)


def weight_scale(max_weight: float | None, n_rows: int) -> float | None:
    """The auc weight scale of a whole evaluation set (None for unit weights): every part of
    the set must summarize with the same one."""
    return None if max_weight is None else auc_weight_scale(max_weight, n_rows)


class EvalRows:
    """An evaluation set's (local) labels and weights, on the device of its margins.

    ``scale``: the whole set's auc weight scale (``weight_scale``), the same for each part.
    """

    def __init__(self, label, weight, scale: float | None, qid=None):
        # float64 once, as every metric reads them (not a conversion a round)
        xp = array_module(label)
        label = xp.asarray(label, dtype=np.float64)
        weight = None if weight is None else xp.asarray(weight, dtype=np.float64)
        self.label, self.weight, self.scale = label, weight, scale
        self.qid = qid      # query ids (host int64) for the ranking metrics, or None
        self.n = int(label.shape[0])
        # the ratio metrics' sum of weights: the same every round, computed once
        self.weight_sum = None if weight is None or self.n == 0 else ExactSum.of(weight)

    @classmethod
    def whole(cls, label, weight, qid=None) -> "EvalRows":
        """Rows that are the whole set: the scale from their own weights."""
        xp = array_module(label)
        mw = None if weight is None else (float(xp.max(weight)) if weight.shape[0] else 0.0)
        return cls(label, weight, weight_scale(mw, int(label.shape[0])), qid)

    def summaries(self, objective, metrics, margin) -> list:
        """Each metric's summary of these rows at these margins (None without rows)."""
        if self.n == 0:
            return [m.empty() for m in metrics]
        pred = metric_input(objective, margin)
        return [m.query_summary(self.label, pred, self.qid, self.weight)
                if getattr(m, "by_query", False)
                else m.summary(self.label, pred, self.weight, self.scale, self.weight_sum)
                for m in metrics]


def merge(metrics, *parts) -> list:
    """The metric summaries of the union of parts' rows (``None`` parts hold no rows)."""
    parts = [p for p in parts if p is not None]
    out = [m.empty() for m in metrics]
    for p in parts:
        out = [m.merge(a, b) for m, a, b in zip(metrics, out, p)]
    return out


def values(metrics, merged) -> list[float]:
    """One float per metric from merged summaries."""
    return [float(m.value(s)) for m, s in zip(metrics, merged)]


class DatasetEval:
    """An in-memory evaluation set: margins advanced by traversing each new tree."""

    def __init__(self, d, booster):
        from ..model.margins import MarginStart
        self.d = d
        # the model's margins so far (continued training: the prior model's trees first)
        self.X = d.data
        if booster.feature_types is not None:     # category codes as the training's
            from ..data.categorical import mask_of, recode
            self.X = recode(d.data, mask_of(booster.feature_types),
                            getattr(d, "categories", None), booster.categories,
                            d.feature_names)
        self.margin = MarginStart(booster.base_margin, booster).of(self.X, d.base_margin)
        self.rows = EvalRows.whole(d.label, d.weight, d.qid)

    def scores(self, booster, new_trees, objective, metrics) -> list[float]:
        from ..model.margins import add_tree_margins
        add_tree_margins(self.X, *booster.round_trees(new_trees), self.margin)
        return values(metrics, self.rows.summaries(objective, metrics, self.margin))

    def custom_margins(self):
        """The margins and the Dataset, for a custom metric."""
        return self.margin, self.d


class SeamEval:
    """The training set itself: its margins are the seam's shards' (no traversal)."""

    def __init__(self, seam, label, weight, dataset=None, qid=None):
        xp = array_module(seam.shards[0].margin)
        self.seam, self.dataset = seam, dataset
        self.rows = EvalRows.whole(xp.asarray(label), None if weight is None
                                   else xp.asarray(weight), qid)

    _margin = None       # set on a snapshot: the margins of the round it was taken at

    def _margins(self):
        return self.seam.margins() if self._margin is None else self._margin

    def snapshot(self) -> "SeamEval":
        """This source with the margins as they are now (a copy enqueued on the device): a
        round scored later (dgbdt.engine.boosting.boost defers it on GPUs) must not see later trees."""
        out = copy.copy(self)
        out._margin = self.seam.margins()
        return out

    def scores(self, booster, new_trees, objective, metrics) -> list[float]:
        return values(metrics, self.rows.summaries(objective, metrics, self._margins()))

    def custom_margins(self):
        if self.dataset is None:
            return None
        return self._margins(), self.dataset


__all__ = ["DatasetEval", "EvalRows", "SeamEval", "merge", "metric_input", "values",
           "weight_scale"]
