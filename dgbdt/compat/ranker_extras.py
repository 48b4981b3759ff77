"""XGBoost's XGBRanker conventions (dgbdt.compat.xgboost_sklearn.XGBRanker): the queries in a
DataFrame's ``qid`` column, custom metrics averaged over the queries, and score."""
from __future__ import annotations

import numpy as np

from ..kernels.arrays import to_host
from ..metrics.registry import is_metric_custom  # noqa: F401  (the ranker's import)


def qid_column(X, qid):
    """(X without its ``qid`` column, the column) for a DataFrame with one; else (X, qid).
    Both a ``qid`` column and qid= is ambiguous: ValueError."""
    columns = getattr(X, "columns", None)
    if columns is None or "qid" not in columns:
        return X, qid
    if qid is not None:
        raise ValueError("Found both the special column `qid` in `X` and qid= of fit: "
                         "remove one of them")
    return X.drop(columns="qid"), X["qid"]


def per_query_metric(func):
    """A ranker's custom metric as XGBoost's XGBRanker applies it: ``func(y_true, y_score)``
    of each query's rows (a query of one row: 1.0), averaged over the queries, weighted by
    the queries' weights when the data has them; named after the function."""
    from ..data.queries import group_pointers
    name = getattr(func, "__name__", "custom")

    def metric(preds, d):
        y, p = to_host(d.get_label()), to_host(preds)
        if d.qid is None:
            raise ValueError("a ranking metric needs the rows' queries (qid= or group=)")
        gptr, _ = group_pointers(to_host(d.qid))
        scores = np.array([1.0 if e - b == 1 else float(func(y[b:e], p[b:e]))
                           for b, e in zip(gptr[:-1], gptr[1:])])
        w = d.get_weight()
        w = None if w is None or len(w) == 0 else to_host(w)[gptr[:-1]]
        return name, float(np.average(scores, weights=w))
    return metric


def ranking_score(est, X, y, qid) -> float:
    """XGBRanker.score: the last of est's evaluation metrics (eval_metric's names, or its
    custom metric averaged over the queries, or the objective's default metric) of the
    model's predictions of (X, y) grouped by qid."""
    from ..engine.batch_eval import dataset_eval
    from ..metrics.registry import get_metric
    from .dmatrix import DMatrix
    booster = est.get_booster()
    d = DMatrix(X, y, qid=qid, missing=est.missing, enable_categorical=est.enable_categorical,
                feature_types=est.feature_types).dataset
    metric = est.eval_metric
    if callable(metric) and not is_metric_custom(metric):
        return per_query_metric(metric)(booster.predict(d, output_margin=True), d)[1]
    names = [metric] if isinstance(metric, str) or is_metric_custom(metric) else \
        [m for m in (metric or []) if not callable(m)] or [booster.objective.default_metric]
    metrics = [get_metric(m) for m in names]
    return float(dataset_eval(d, booster).scores(booster, [], booster.objective, metrics)[-1])
