"""An evaluation set whose rows come in batches (dgbdt.BatchDataset), not the training set.

Its margins ([n, K] float64) are kept, as a Dataset's are; its rows are not: each round the
batches are read again, one in memory at a time, and each batch's rows advance their slice of
the margins by the round's new trees. The metrics are those of the rows held together (the
same margins, labels and weights), so the scores equal the in-memory Dataset's.
"""
from __future__ import annotations

import numpy as np

from .evaluation import DatasetEval, EvalRows, values


def _features(b, booster):
    """A batch's features as the model reads them (category codes recoded to the model's)."""
    X = b.data
    if booster.feature_types is not None:
        from ..data.categorical import mask_of, recode
        X = recode(X, mask_of(booster.feature_types), getattr(b, "categories", None),
                   booster.categories, b.feature_names)
    return X


class BatchEval(DatasetEval):
    """DatasetEval's answers for a BatchDataset (module docstring)."""

    def __init__(self, d, booster):
        from ..model.margins import MarginStart
        self.d = d
        start = MarginStart(booster.base_margin, booster)
        self.margin = np.empty((d.num_row, len(start)), np.float64)
        for a, z, b in d.each_batch():
            self.margin[a:z] = start.of(_features(b, booster), b.base_margin)
        self.rows = EvalRows.whole(d.label, d.weight, d.qid)

    def scores(self, booster, new_trees, objective, metrics) -> list[float]:
        from ..model.margins import add_tree_margins
        trees = booster.round_trees(new_trees)
        if trees[0]:
            for a, z, b in self.d.each_batch():
                part = self.margin[a:z]          # a view: the kernel adds into it
                add_tree_margins(_features(b, booster), *trees, part)
        return values(metrics, self.rows.summaries(objective, metrics, self.margin))


def dataset_eval(d, booster):
    """The evaluation of an in-memory set: a BatchDataset's rows read again each round
    (BatchEval), any other Dataset's margins kept (DatasetEval)."""
    from ..data.batches import BatchDataset
    return (BatchEval if isinstance(d, BatchDataset) else DatasetEval)(d, booster)
