"""``xgboost.dask``'s names over dgbdt.dask (reached as ``dgbdt.compat.xgboost.dask``)."""
from __future__ import annotations

import numpy as np

from .callback import Wrapped
from ..data.input import is_nan_missing
from ..model.booster import Booster
from ..dask.data import DaskDataset
from ..dask.predict import predict as _predict
from ..dask.train import train as _train
from ._common import _unsupported, refuse_categorical, xgb_params
from .dask_dmatrix import DaskDMatrix, DaskQuantileDMatrix, worker_nthreads  # noqa: F401
from .booster import _compat
from ..dask.worker import off_loop as maybe_awaitable


def _ds(d):
    return d.dataset if isinstance(d, DaskDMatrix) else d


def _check_dask_config() -> None:
    """XGBoost's Dask settings (dask.config's ``xgboost`` section): an unknown key is a
    ValueError, as in XGBoost; ``scheduler_address`` (where XGBoost's tracker listens) is
    refused: dgbdt's workers meet through dgbdt's own collectives, with no tracker."""
    import dask
    section = dask.config.get("xgboost", default=None) or {}
    unknown = sorted(k for k in section if k != "scheduler_address")
    if unknown:
        raise ValueError(f"Unknown configuration: {', '.join(unknown)} in dask.config's "
                         "'xgboost' section (XGBoost's key is scheduler_address)")
    if section.get("scheduler_address") is not None:
        _unsupported("dask.config 'xgboost.scheduler_address' (the address of XGBoost's "
                     "tracker)", "leave it out: dgbdt.dask's workers meet through dgbdt's "
                     "own collectives, with no tracker")


class _InConfig(Wrapped):
    """A callback run under the client's global configuration (xgboost.config), as
    XGBoost's Dask workers run the training: the callbacks may run on the workers' threads,
    whose configuration is otherwise the defaults."""

    def __init__(self, callback, settings: dict):
        super().__init__(callback)
        self.settings = settings

    def _run(self, method: str, model, *args):
        from .config import config_context
        with config_context(**self.settings):
            return super()._run(method, model, *args)


def _in_config(callbacks):
    """The callbacks, each run under this thread's global configuration when it is not
    XGBoost's default one (_InConfig)."""
    from .config import _DEFAULTS, get_config
    settings = get_config()
    if not callbacks or settings == _DEFAULTS:
        return callbacks
    return [_InConfig(cb, settings) for cb in callbacks]


def train(client, params, dtrain, num_boost_round: int = 10, *, evals=None, obj=None,
          early_stopping_rounds=None, xgb_model=None, verbose_eval=True, callbacks=None,
          custom_metric=None, coll_cfg=None, feval=None):
    """xgboost.dask.train (its signature: an argument it does not take, such as
    evals_result, is a TypeError): returns {"booster": Booster, "history": {...}}; with an
    asynchronous client, an awaitable of it (dgbdt.dask.worker.off_loop)."""
    return maybe_awaitable(client, _train_now, client, params, dtrain, num_boost_round,
                           evals, obj, early_stopping_rounds, xgb_model, verbose_eval,
                           callbacks, custom_metric, coll_cfg, feval)


def _train_now(client, params, dtrain, num_boost_round, evals, obj, early_stopping_rounds,
               xgb_model, verbose_eval, callbacks, custom_metric, coll_cfg, feval):
    if feval is not None or custom_metric is not None:
        _unsupported("custom metrics on Dask", "use dgbdt's metrics (eval_metric)")
    if coll_cfg is not None:
        _unsupported("coll_cfg (XGBoost's communicator settings)", "dgbdt.dask.train's "
                     "mode= and collective_timeout= set dgbdt's collectives")
    _check_dask_config()
    params = xgb_params(params, dtrain)
    refuse_categorical(params.get("tree_method"), params.get("booster"),
                       getattr(_ds(dtrain), "feature_types", None))
    if isinstance(dtrain, DaskDMatrix) and dtrain.feature_weights is not None:
        params.setdefault("feature_weights", dtrain.feature_weights)
    out = _train(client, params, _ds(dtrain), num_boost_round,
                 evals=[(_ds(d), n) for d, n in (evals or [])],
                 early_stopping_rounds=early_stopping_rounds, verbose_eval=verbose_eval,
                 xgb_model=xgb_model, callbacks=_in_config(callbacks), obj=obj)
    booster = _compat(out["booster"])
    # what save_config reports (booster_config), the workers' threads as XGBoost's
    booster.config_params = dict(params, nthread=worker_nthreads(client, params))
    return {"booster": booster, "history": out["history"]}


def _client(client):
    """The client, or distributed's default one for None (as XGBoost's functions take)."""
    if client is not None:
        return client
    from distributed import get_client
    return get_client()


def _booster(model) -> Booster:
    """The Booster of a Booster, train's dict, or a Future of either (fetched once here)."""
    from distributed import Future
    if isinstance(model, Future):
        model = model.result()
    booster = model["booster"] if isinstance(model, dict) else model
    if not isinstance(booster, Booster):
        raise TypeError(f"model must be a Booster or the dict train returns; got "
                        f"{type(model).__name__}")
    return booster


def predict(client, model, data, *, output_margin: bool = False, missing: float = np.nan,
            pred_leaf: bool = False, pred_contribs: bool = False, approx_contribs: bool = False,
            pred_interactions: bool = False, validate_features: bool = True,
            iteration_range=None, strict_shape: bool = False):
    """xgboost.dask.predict: lazy predictions of a DaskDMatrix or dask collection (model: a
    Booster, train's dict, or a Future of either, e.g. ``client.scatter(booster)``; values
    of a collection equal to ``missing`` are missing). Feature names are always checked
    (validate_features is accepted for XGBoost's code). With an asynchronous client, an
    awaitable of the lazy array (dgbdt.dask.worker.off_loop)."""
    return maybe_awaitable(client, _predict_now, client, model, data, output_margin, missing,
                           pred_leaf, pred_contribs, approx_contribs, pred_interactions,
                           iteration_range, strict_shape)


def _predict_now(client, model, data, output_margin, missing, pred_leaf, pred_contribs,
                 approx_contribs, pred_interactions, iteration_range, strict_shape):
    if approx_contribs:
        _unsupported("approx_contribs (Saabas's approximate contributions)",
                     "pred_contribs=True gives the exact SHAP values")
    data = _ds(data)
    if not isinstance(data, DaskDataset) and not is_nan_missing(missing):
        data = DaskDataset(_client(client), data, persist=False, missing=missing)
    return _predict(client, _booster(model), data, output_margin=output_margin,
                    pred_leaf=pred_leaf, iteration_range=iteration_range,
                    pred_contribs=pred_contribs, pred_interactions=pred_interactions,
                    strict_shape=strict_shape)


def inplace_predict(client, model, data, *, iteration_range=None, predict_type: str = "value",
                    missing: float = np.nan, validate_features: bool = True,
                    base_margin=None, strict_shape: bool = False):
    """xgboost.dask.inplace_predict: lazy predictions of a dask collection as it is
    (``predict_type`` "value" or "margin"; values equal to ``missing`` are missing;
    ``base_margin`` a dask collection partitioned like ``data``). With an asynchronous
    client, an awaitable of the lazy array."""
    if predict_type not in ("value", "margin"):
        raise ValueError(f"predict_type must be 'value' or 'margin'; got {predict_type!r}")
    return maybe_awaitable(client, _inplace_now, client, model, data, iteration_range,
                           predict_type, missing, base_margin, strict_shape)


def _inplace_now(client, model, data, iteration_range, predict_type, missing, base_margin,
                 strict_shape):
    if base_margin is not None or not is_nan_missing(missing):
        # the rows and their margins travel together (not persisted: the lazy result holds
        # its parts' graphs)
        data = DaskDataset(_client(client), data, base_margin=base_margin, persist=False,
                           missing=missing)
    return _predict(client, _booster(model), data, output_margin=predict_type == "margin",
                    iteration_range=iteration_range, strict_shape=strict_shape)


_ESTIMATORS: dict = {}


def _estimator(name: str):
    """xgboost.dask's estimator ``name``: dgbdt's Dask estimator with XGBoost's habits
    (_DaskXGBBehaviour; get_booster gives XGBoost's Booster: save_config, ...), as
    xgb.XGBRegressor's over dgbdt's."""
    if name not in _ESTIMATORS:
        from ..dask import sklearn
        from .xgboost_dask_sklearn import _DaskXGBBehaviour, _DaskXGBClassifierBehaviour
        base = getattr(sklearn, name.replace("XGB", "GBDT", 1))
        habits = _DaskXGBClassifierBehaviour if "Classifier" in name else _DaskXGBBehaviour
        _ESTIMATORS[name] = type(name, (habits, base), {
            "__module__": __name__,
            "__doc__": f"xgboost.dask.{name}: dgbdt.dask.{base.__name__} with XGBoost's "
                       "habits (the Booster XGBoost's)"})
    return _ESTIMATORS[name]


def __getattr__(name):
    if name in ("DaskXGBRFClassifier", "DaskXGBRFRegressor", "DaskXGBClassifier",
                "DaskXGBRegressor", "DaskXGBRanker"):
        return _estimator(name)
    raise AttributeError(f"module 'dgbdt.compat.xgboost.dask' has no attribute {name!r}")
