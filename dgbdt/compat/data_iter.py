"""XGBoost's DataIter: batches a user's iterator hands over one at a time, read as a dgbdt
BatchDataset (the batches function of dgbdt.data.batches)."""
from __future__ import annotations

from ..data.dataset import Dataset
from ._common import refuse_unsupported


class DataIter:
    """XGBoost's DataIter: subclass it with ``next(input_data)``, which calls
    ``input_data(data=X, label=y, weight=..., base_margin=...)`` with the next batch and
    returns True (False when there is none left), and ``reset()``. ``DMatrix(it)``,
    ``QuantileDMatrix(it)`` and ``ExtMemQuantileDMatrix(it)`` read it as a dgbdt BatchDataset:
    the batches are read three times (labels, sketch, pages) and only bit-packed pages are
    kept, one batch in memory at a time (host batches). What needs the raw rows calls
    ``reset()`` and ``next()`` again, as XGBoost does: predicting the matrix, evaluating it
    as another set than the training set, ``get_data()``. ``tree_method="approx"``, dart and
    linear trees hold the training's raw rows (n x F float32, read from the batches), as
    they do for arrays. Batches without rows are skipped; a DataIter without any batch is an
    error."""

    def __init__(self, cache_prefix=None, release_data: bool = True, **kwargs):
        self.cache_prefix = cache_prefix

    def next(self, input_data) -> bool:
        raise NotImplementedError("a DataIter subclass defines next(input_data)")

    def reset(self) -> None:
        raise NotImplementedError("a DataIter subclass defines reset()")


def iter_batches(it: DataIter, enable_categorical: bool = False):
    """The BatchDataset batches function of a DataIter: reset, then next until it says no
    (``enable_categorical``: the DMatrix's, for batches with pandas category columns).
    Batches without rows are left out; the function's ``seen`` tells of its last pass: the
    batches, those with rows, the features' count and whether it ended (an iterator with
    only empty batches makes a DMatrix of no rows)."""
    seen: dict = {}

    def batches():
        it.reset()
        got: list = []
        seen.update(batches=0, columns=None, rows=0, done=False)

        def input_data(*args, data=None, label=None, weight=None, base_margin=None,
                       feature_names=None, feature_types=None, group=None, qid=None,
                       label_lower_bound=None, label_upper_bound=None, feature_weights=None,
                       **kwargs):
            if args:        # XGBoost's input_data takes keywords only, with these words
                raise TypeError("Keyword argument is required.")
            refuse_unsupported(group=group, qid=qid, label_lower_bound=label_lower_bound,
                               label_upper_bound=label_upper_bound,
                               feature_weights=feature_weights, feature_types=feature_types)
            seen["batches"] += 1
            shape = getattr(data, "shape", None)
            if shape is not None and len(shape) == 2:
                seen["columns"] = int(shape[1])
                if int(shape[0]) == 0:          # XGBoost takes a batch without rows
                    return
            seen["rows"] += 1
            got.append(Dataset(data, label=label, weight=weight, base_margin=base_margin,
                               feature_names=feature_names, feature_types=feature_types,
                               enable_categorical=enable_categorical))

        while True:
            more = it.next(input_data)
            yield from got
            got.clear()
            if not more:
                seen["done"] = True
                return
    batches.seen = seen
    return batches
