"""XGBoost's Python names over dgbdt: ``import dgbdt.compat.xgboost as xgb`` and a script
written for XGBoost's core and scikit-learn APIs runs on dgbdt, or stops with an error that names
what dgbdt does not do and the nearest way that works (never a silent difference).

Mapped: DMatrix / QuantileDMatrix (dgbdt.compat.dmatrix: a dgbdt Dataset with XGBoost's meta
info: set_info, get_float_info / get_uint_info, slice, get_data; ``ref=`` is accepted: dgbdt
bins every set with the training set's cuts anyway; a save_binary file of any name), train
(params as XGBoost reads them: strings, (name, value) pairs; evals, early stopping,
evals_result, verbose_eval, xgb_model, callbacks; keyword arguments by position with XGBoost's
FutureWarning), Booster and load_model (dgbdt's Booster: predict, save_model, slicing, dumps
with feature maps, eval / eval_set, get_fscore, attributes; XGBoost JSON models load),
XGBModel / XGBClassifier / XGBRegressor / XGBRanker (dgbdt's estimators), ranking data (``qid``
/ ``group``), DataIter with DMatrix / QuantileDMatrix / ExtMemQuantileDMatrix
(dgbdt.BatchDataset), ``callback`` (dgbdt.callback), ``plotting`` / plot_importance /
plot_tree / to_graphviz (dgbdt.plotting), ``config`` / set_config / get_config /
config_context (dgbdt.compat.config: what dgbdt does with each key), ``collective``
(dgbdt.compat.collective: one worker outside a Dask training), ``core.XGBoostError``, ``dask``
(DaskDMatrix, DaskQuantileDMatrix, train, predict, DaskXGBClassifier / DaskXGBRegressor /
DaskXGBRanker).
``cv`` (dgbdt.compat.cv: XGBoost's folds, callbacks, ``obj=``, ``custom_metric=``,
``fpreproc=``); a DMatrix's feature weights become the ``feature_weights`` training parameter
(weighted column sampling); multi-target labels train one tree per target, or with
``multi_strategy="multi_output_tree"`` one vector-leaf tree for all (CPU). Not mapped (an
error says so): ``feval=`` (use custom_metric=), custom metric functions on Dask, query
weights on Dask (DaskDMatrix weight= with qid), label bounds (survival) and feature weights
in a DataIter's batches, gblinear on Dask, XGBoost's own
DMatrix binary files (dgbdt's save_binary files load). Sparse input (and ``"file?format=libsvm"`` paths) stays CSR, in
ELLPACK pages (dgbdt.data.sparse); ``get_data`` returns a CSR matrix, as XGBoost's does.
"""
from __future__ import annotations

from . import callback  # noqa: F401  (xgb.callback: dgbdt.callback, XGBoost's checkpoint)
from .. import plotting  # noqa: F401  (xgb.plotting.to_graphviz, ...)
from ..plotting import plot_importance, plot_tree, to_graphviz  # noqa: F401
from ..model.booster import load_model as _load_model
from ..train import train as _train
from ._common import XGBoostError, _unsupported, positional_warned, xgb_params
from . import collective, config  # noqa: F401  (xgb.collective, xgb.config)
from .booster import Booster, _compat
from .cv import cv  # noqa: F401  (xgb.cv: XGBoost's folds over dgbdt.cv's lockstep)
from .config import config_context, get_config, set_config  # noqa: F401
from .dmatrix import (DataIter, DMatrix, ExtMemQuantileDMatrix, QuantileDMatrix,  # noqa: F401
                      check_eval_refs, with_feature_weights, check_training_data)

__version__ = "3.2.0+dgbdt"


def _dataset(d):
    return d.dataset if isinstance(d, DMatrix) else d


@positional_warned
def train(params, dtrain, num_boost_round: int = 10, *, evals=None, obj=None, maximize=None,
          early_stopping_rounds=None, evals_result=None, verbose_eval=True, xgb_model=None,
          callbacks=None, custom_metric=None, feval=None):
    """xgboost.train on dgbdt (see the module docstring for what is refused); XGBoost's
    keyword arguments by position too, with XGBoost's FutureWarning."""
    if feval is not None:
        _unsupported("feval= (deprecated in XGBoost)", "pass the function as custom_metric=")
    check_training_data(params, dtrain, xgb_model)
    check_eval_refs(dtrain, evals)
    params = xgb_params(params, dtrain)
    params = with_feature_weights(params, dtrain)
    if isinstance(dtrain, DMatrix) and dtrain.num_row() == 0:     # XGBoost trains on it
        from .empty import train_empty
        booster = _compat(train_empty(
            params, dtrain.num_col(), dtrain.feature_names, num_boost_round,
            [(None if d.num_row() == 0 else _dataset(d), n) for d, n in (evals or [])],
            evals_result))
        booster.config_params = dict(params)
        return booster
    fn = None if obj is None else (lambda preds, _d: obj(preds, dtrain))  # the user's DMatrix
    metric = None if custom_metric is None else (
        lambda preds, d: custom_metric(preds, {id(_dataset(e)): e for e, _ in evals or []}
                                       .get(id(d), dtrain)))
    booster = _compat(_train(params, _dataset(dtrain), num_boost_round, obj=fn,
                             custom_metric=metric, maximize=maximize,
                             evals=[(_dataset(d), n) for d, n in (evals or [])],
                             early_stopping_rounds=early_stopping_rounds,
                             evals_result=evals_result, verbose_eval=verbose_eval,
                             xgb_model=xgb_model, callbacks=callback.as_xgboost(callbacks)))
    types = dtrain.feature_types if isinstance(dtrain, DMatrix) else None
    if types is not None and booster.feature_types is None:
        booster.feature_types = list(types)    # a frame's column types, as XGBoost's keeps
    if params.get("eval_metric"):          # what Booster.eval reports, as XGBoost's keeps it
        booster.set_param("eval_metric", params["eval_metric"])
    booster.config_params = dict(params)   # what save_config reports (booster_config)
    return booster


def load_model(fname) -> Booster:
    return _compat(_load_model(fname))


def __getattr__(name):
    if name in ("XGBClassifier", "XGBRegressor", "XGBRanker", "XGBModel", "XGBRFClassifier",
                "XGBRFRegressor"):       # dgbdt's estimators with XGBoost's habits
        from . import xgboost_sklearn
        return getattr(xgboost_sklearn, name)
    if name == "dask":
        from . import xgboost_dask
        return xgboost_dask
    if name in ("core", "training"):          # xgb.core.XGBoostError, xgb.training.train
        import sys
        return sys.modules[__name__]
    raise AttributeError(f"module 'dgbdt.compat.xgboost' has no attribute {name!r}")


__all__ = ["Booster", "DMatrix", "DataIter", "ExtMemQuantileDMatrix", "QuantileDMatrix",
           "XGBoostError", "callback", "collective", "config", "config_context", "cv",
           "get_config", "load_model", "plot_importance", "plot_tree", "plotting",
           "set_config", "to_graphviz", "train"]
