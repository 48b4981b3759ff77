"""``xgboost.cv`` on dgbdt: dgbdt.cv's lockstep folds (dgbdt.cv.run_folds) with XGBoost's
folds and XGBoost's objects.

The folds are XGBoost's, row for row and in its order: ``numpy.random.seed(seed)`` then a
permutation split by ``numpy.array_split`` (a fold's training rows: the other folds' in fold
order), whole query groups for ranking data, scikit-learn's ``StratifiedKFold(shuffle=True,
random_state=seed)`` for ``stratified=True``, a splitter's ``split(X=label, y=label)``, or the
given (train, test) index pairs. Each fold's sets are DMatrix slices: ``fpreproc(dtrain, dtest,
params)``, ``obj(preds, dtrain)`` and ``custom_metric(preds, dmatrix)`` get them, and callbacks
see them as ``model.cvfolds[i].dtrain`` / ``.dtest`` beside the fold's Booster ``.bst``
(XGBoost's). A custom metric's values are averaged as XGBoost's evaluation line prints them
(6 decimals).
"""
from __future__ import annotations

import numpy as np

from ..cv import CVPack, as_frame, fold_metrics, run_folds
from ._common import XGBoostError, positional_warned, xgb_params
from .booster import _compat
from .dmatrix import DMatrix, QuantileDMatrix, with_feature_weights


@positional_warned
def cv(params, dtrain, num_boost_round: int = 10, *, nfold: int = 3, stratified: bool = False,
       folds=None, metrics=(), obj=None, maximize=None, early_stopping_rounds=None,
       fpreproc=None, as_pandas: bool = True, verbose_eval=None, show_stdv: bool = True,
       seed: int = 0, callbacks=None, shuffle: bool = True, custom_metric=None):
    """xgboost.cv on dgbdt (see the module docstring): a DataFrame (a dict without pandas or
    with ``as_pandas=False``) of ``{train,test}-{metric}-{mean,std}``, a row per round."""
    if isinstance(dtrain, QuantileDMatrix):
        raise ValueError("`QuantileDMatrix` is not yet supported.")
    if not isinstance(dtrain, DMatrix):
        raise TypeError(f"dtrain must be a DMatrix; got {type(dtrain).__name__}")
    if stratified and folds is None:
        try:
            import sklearn.model_selection as _  # noqa: F401  (the splitter _folds uses)
        except ImportError:
            raise XGBoostError("sklearn needs to be installed in order to use stratified "
                               "cv") from None
    params = _as_dict(params)
    metrics = fold_metrics(params, metrics)
    packs = []
    for train_rows, test_rows, groups in _folds(dtrain, nfold, stratified, folds, shuffle,
                                                seed):
        grouped = groups is not None       # XGBoost slices the groups of group folds only
        tr = dtrain.slice(train_rows, allow_groups=grouped)
        te = dtrain.slice(test_rows, allow_groups=grouped)
        if grouped:
            tr.set_group(groups[0])
            te.set_group(groups[1])
        p = dict(params)
        if fpreproc is not None:
            tr, te, p = fpreproc(tr, te, p)
        p = xgb_params(p, tr)
        if metrics:
            p["eval_metric"] = list(metrics)
        p = with_feature_weights(p, tr)
        packs.append(_Fold(tr, te, p))
    results = run_folds(packs, num_boost_round, callbacks=callbacks,
                        early_stopping_rounds=early_stopping_rounds, maximize=maximize,
                        verbose_eval=verbose_eval, show_stdv=show_stdv, obj=obj,
                        custom_metric=custom_metric)
    return as_frame(results) if as_pandas else results


def _as_dict(params) -> dict:
    """XGBoost's cv's parameters: a dict, or (name, value) pairs with every eval_metric kept."""
    if isinstance(params, (list, tuple)):
        metrics = [v for k, v in params if k == "eval_metric"]
        params = dict(params)
        if metrics:
            params["eval_metric"] = metrics
    return dict(params or {})


def _folds(dall: DMatrix, nfold: int, stratified: bool, folds, shuffle: bool, seed: int):
    """(training rows, test rows, query groups or None) of each fold, as XGBoost's mknfold
    makes them (numpy's global seed set to ``seed``, as XGBoost sets it)."""
    np.random.seed(seed)
    if folds is None and not stratified:
        ptr = dall.get_uint_info("group_ptr")
        if len(ptr) > 1:          # ranking: folds of whole query groups
            sizes = np.diff(ptr)
            idx = np.random.permutation(len(sizes)) if shuffle else np.arange(len(sizes))
            out = np.array_split(idx, nfold)
            ins = [np.concatenate([out[i] for i in range(nfold) if i != k])
                   for k in range(nfold)]

            def rows(groups):
                return np.concatenate([np.arange(ptr[g], ptr[g + 1]) for g in groups])
            return [(rows(a), rows(b), (sizes[a], sizes[b])) for a, b in zip(ins, out)]
        idx = np.random.permutation(dall.num_row()) if shuffle else np.arange(dall.num_row())
        out = np.array_split(idx, nfold)
        ins = [np.concatenate([out[i] for i in range(nfold) if i != k]) for k in range(nfold)]
        return [(a, b, None) for a, b in zip(ins, out)]
    if folds is not None:
        if hasattr(folds, "split"):                  # a scikit-learn splitter
            label = dall.get_label()
            pairs = list(folds.split(X=label, y=label))
        else:                                        # (train, test) index pairs
            pairs = list(folds)
        return [(a, b, None) for a, b in pairs]
    from sklearn.model_selection import StratifiedKFold
    label = dall.get_label()
    return [(a, b, None) for a, b in StratifiedKFold(n_splits=nfold, shuffle=True,
                                                      random_state=seed).split(X=label, y=label)]


class _Fold(CVPack):
    """A fold of DMatrix slices: its model is XGBoost's Booster (eval / eval_set with the
    fold's metrics); the user's objective and metric get the fold's DMatrix."""

    def adopt(self, booster):
        booster = _compat(booster)
        if self.params.get("eval_metric"):
            booster.set_param("eval_metric", self.params["eval_metric"])
        booster.config_params = dict(self.params)
        return booster

    def train(self, rounds, callbacks, obj=None, custom_metric=None, maximize=None):
        fn = None if obj is None else (lambda preds, _d: obj(preds, self.dtrain))
        metric = None
        if custom_metric is not None:
            sets = {id(self.dtrain.dataset): self.dtrain, id(self.dtest.dataset): self.dtest}

            def printed(preds, d):
                return _as_printed(custom_metric(preds, sets.get(id(d), self.dtrain)))
            metric = printed
        return super().train(rounds, callbacks, fn, metric, maximize)


def _as_printed(out):
    """A custom metric's (name, value) pairs with the values XGBoost's evaluation line gives
    cv (``%f``: 6 decimals)."""
    if isinstance(out, list):
        return [_as_printed(pair) for pair in out]
    if isinstance(out, tuple) and len(out) == 2:
        return out[0], float(f"{float(out[1]):f}")
    return out
