"""``xgboost.dask``'s names over dgbdt.dask (reached as ``dgbdt.compat.xgboost.dask``)."""
from __future__ import annotations

import numpy as np

from ..model.booster import Booster
from ..dask.data import DaskDataset
from ..dask.predict import predict as _predict
from ..dask.train import train as _train
from ._common import _unsupported, refuse_unsupported, xgb_params
from .booster import _compat


class DaskDMatrix:
    """xgboost.dask.DaskDMatrix: a dgbdt DaskDataset of dask collections."""

    def __init__(self, client, data, label=None, *, weight=None, base_margin=None,
                 missing=None, silent=False, feature_names=None, feature_types=None,
                 group=None, qid=None, label_lower_bound=None, label_upper_bound=None,
                 feature_weights=None, enable_categorical=False, **kwargs):
        refuse_unsupported(group=group, qid=qid, weight=weight,
                           feature_weights=feature_weights,
                           enable_categorical=enable_categorical, feature_types=feature_types)
        if group is not None:
            _unsupported("group= on Dask", "pass qid= partitioned like data (each query "
                         "within one partition), as xgboost.dask does")
        self.dataset = DaskDataset(client, data, label, weight, base_margin,
                                   feature_names=feature_names, feature_types=feature_types,
                                   enable_categorical=enable_categorical, qid=qid,
                                   label_lower_bound=label_lower_bound,
                                   label_upper_bound=label_upper_bound,
                                   missing=np.nan if missing is None else missing)


class DaskQuantileDMatrix(DaskDMatrix):
    def __init__(self, client, data, label=None, *, ref=None, max_bin=None, **kwargs):
        super().__init__(client, data, label, **kwargs)
        self.max_bin = max_bin


def _ds(d):
    return d.dataset if isinstance(d, DaskDMatrix) else d


def train(client, params, dtrain, num_boost_round: int = 10, *, evals=None, obj=None,
          early_stopping_rounds=None, xgb_model=None, verbose_eval=True, callbacks=None,
          custom_metric=None, coll_cfg=None, feval=None):
    """xgboost.dask.train (its signature: an argument it does not take, such as
    evals_result, is a TypeError): returns {"booster": Booster, "history": {...}}."""
    if feval is not None or custom_metric is not None:
        _unsupported("custom metrics on Dask", "use dgbdt's metrics (eval_metric)")
    if coll_cfg is not None:
        _unsupported("coll_cfg (XGBoost's communicator settings)", "dgbdt.dask.train's "
                     "mode= and collective_timeout= set dgbdt's collectives")
    params = xgb_params(params, dtrain)
    out = _train(client, params, _ds(dtrain), num_boost_round,
                 evals=[(_ds(d), n) for d, n in (evals or [])],
                 early_stopping_rounds=early_stopping_rounds, verbose_eval=verbose_eval,
                 xgb_model=xgb_model, callbacks=callbacks, obj=obj)
    booster = _compat(out["booster"])
    booster.config_params = dict(params)     # what save_config reports (booster_config)
    return {"booster": booster, "history": out["history"]}


def predict(client, model, data, output_margin: bool = False, pred_leaf: bool = False,
            pred_contribs: bool = False, iteration_range=None, pred_interactions: bool = False,
            **kwargs):
    """xgboost.dask.predict: lazy predictions (model: a Booster, train's dict, or a Future
    of either, e.g. ``client.scatter(booster)``: fetched once here)."""
    from distributed import Future
    if isinstance(model, Future):
        model = model.result()
    booster = model["booster"] if isinstance(model, dict) else model
    if not isinstance(booster, Booster):
        raise TypeError(f"model must be a Booster or the dict train returns; got "
                        f"{type(model).__name__}")
    return _predict(client, booster, _ds(data), output_margin=output_margin,
                    pred_leaf=pred_leaf, iteration_range=iteration_range,
                    pred_contribs=pred_contribs, pred_interactions=pred_interactions)


inplace_predict = predict


_ESTIMATORS: dict = {}


def _estimator(name: str):
    """xgboost.dask's estimator ``name``: dgbdt's Dask estimator whose get_booster gives
    XGBoost's Booster (save_config, ...), as xgb.XGBRegressor's does."""
    if name not in _ESTIMATORS:
        from ..dask import sklearn
        base = getattr(sklearn, name.replace("XGB", "GBDT", 1))

        def get_booster(self):
            return _compat(base.get_booster(self))
        _ESTIMATORS[name] = type(name, (base,), {
            "get_booster": get_booster, "__module__": __name__,
            "__doc__": f"xgboost.dask.{name}: dgbdt.dask.{base.__name__} (XGBoost's Booster)"})
    return _ESTIMATORS[name]


def __getattr__(name):
    if name in ("DaskXGBRFClassifier", "DaskXGBRFRegressor", "DaskXGBClassifier",
                "DaskXGBRegressor", "DaskXGBRanker"):
        return _estimator(name)
    raise AttributeError(f"module 'dgbdt.compat.xgboost.dask' has no attribute {name!r}")
