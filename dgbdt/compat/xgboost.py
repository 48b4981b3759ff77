"""XGBoost's Python names over dgbdt: ``import dgbdt.compat.xgboost as xgb`` and a script
written for XGBoost's core and scikit-learn APIs runs on dgbdt, or stops with an error that names
what dgbdt does not do and the nearest way that works (never a silent difference).

Mapped: DMatrix / QuantileDMatrix (a dgbdt Dataset; ``ref=`` is accepted: dgbdt bins every set
with the training set's cuts anyway; a save_binary file of any name), train (params as XGBoost
reads them: strings, (name, value) pairs; evals, early stopping, evals_result, verbose_eval,
xgb_model, callbacks; keyword arguments by position with XGBoost's FutureWarning), Booster and
load_model (dgbdt's Booster: predict, save_model, slicing, dumps with feature maps, eval /
eval_set, get_fscore, attributes; XGBoost JSON models load), XGBModel / XGBClassifier /
XGBRegressor / XGBRanker (dgbdt's estimators), ranking data (``qid`` / ``group``), DataIter
with DMatrix / QuantileDMatrix / ExtMemQuantileDMatrix (dgbdt.BatchDataset), ``callback``
(dgbdt.callback), ``core.XGBoostError``, ``dask`` (DaskDMatrix, DaskQuantileDMatrix, train,
predict, DaskXGBClassifier / DaskXGBRegressor / DaskXGBRanker).
``cv`` runs dgbdt.cv; ``obj=`` / ``custom_metric=`` the user's functions. Not mapped (an
error says so): ``feval=`` (use custom_metric=), custom metric functions on Dask, query
weights on Dask (DaskDMatrix weight= with qid), label bounds
(survival), feature weights,
XGBoost's own DMatrix binary files (dgbdt's save_binary files load). Sparse input (and
``"file?format=libsvm"`` paths) stays CSR, in ELLPACK pages (dgbdt.data.sparse); ``get_data``
returns the CSR matrix, as XGBoost's does.
"""
from __future__ import annotations

import os

import numpy as np

from .. import callback  # noqa: F401  (xgb.callback.EarlyStopping, ...)
from ..model.booster import load_model as _load_model
from ..data.batches import BatchDataset
from ..data.dataset import Dataset
from ..cv import cv as _cv
from ..train import train as _train
from ._common import (Booster, XGBoostError, _compat, _unsupported, positional_warned,
                      refuse_unsupported, xgb_params)

__version__ = "3.2.0+dgbdt"


class DataIter:
    """XGBoost's DataIter: subclass it with ``next(input_data)``, which calls
    ``input_data(data=X, label=y, weight=..., base_margin=...)`` with the next batch and
    returns True (False when there is none left), and ``reset()``. ``DMatrix(it)``,
    ``QuantileDMatrix(it)`` and ``ExtMemQuantileDMatrix(it)`` read it as a dgbdt BatchDataset:
    the batches are read three times (labels, sketch, pages) and only bit-packed pages are
    kept, one batch in memory at a time (host batches; such a matrix trains, and is evaluated
    as the training set, but is not predicted on)."""

    def __init__(self, cache_prefix=None, release_data: bool = True, **kwargs):
        self.cache_prefix = cache_prefix

    def next(self, input_data) -> bool:
        raise NotImplementedError("a DataIter subclass defines next(input_data)")

    def reset(self) -> None:
        raise NotImplementedError("a DataIter subclass defines reset()")


def _iter_batches(it: DataIter, enable_categorical: bool = False):
    """The BatchDataset batches function of a DataIter: reset, then next until it says no
    (``enable_categorical``: the DMatrix's, for batches with pandas category columns)."""
    def batches():
        it.reset()
        got: list = []

        def input_data(data, label=None, weight=None, base_margin=None, feature_names=None,
                       feature_types=None, group=None, qid=None, label_lower_bound=None,
                       label_upper_bound=None, feature_weights=None, **kwargs):
            refuse_unsupported(group=group, qid=qid, label_lower_bound=label_lower_bound,
                               label_upper_bound=label_upper_bound,
                               feature_weights=feature_weights, feature_types=feature_types)
            got.append(Dataset(data, label=label, weight=weight, base_margin=base_margin,
                               feature_names=feature_names, feature_types=feature_types,
                               enable_categorical=enable_categorical))

        while True:
            more = it.next(input_data)
            yield from got
            got.clear()
            if not more:
                return
    return batches


class DMatrix:
    """XGBoost's DMatrix: data with labels, weights and base margins (a dgbdt Dataset); a
    DataIter as data gives a BatchDataset (see DataIter)."""

    @positional_warned
    def __init__(self, data, label=None, *, weight=None, base_margin=None, missing=None,
                 silent=False, feature_names=None, feature_types=None, nthread=None,
                 group=None, qid=None, label_lower_bound=None, label_upper_bound=None,
                 feature_weights=None, enable_categorical=False, **kwargs):
        refuse_unsupported(group=group, qid=qid, feature_weights=feature_weights,
                           enable_categorical=enable_categorical, feature_types=feature_types)
        if isinstance(data, DataIter) and missing is not None and \
                not (isinstance(missing, float) and np.isnan(missing)):
            _unsupported(f"missing={missing!r} with a DataIter",
                         "mark the batches' missing values NaN, or pass arrays")
        if isinstance(data, DataIter) and (label_lower_bound is not None
                                           or label_upper_bound is not None):
            refuse_unsupported(label_lower_bound=label_lower_bound)
        self._kw = kwargs
        if isinstance(data, DataIter):
            if label is not None or weight is not None or base_margin is not None:
                raise ValueError("with a DataIter, labels, weights and base margins come with "
                                 "each batch (input_data(data=..., label=...))")
            self.dataset = BatchDataset(_iter_batches(data, enable_categorical),
                                        feature_names=feature_names)
        elif _saved_dataset(data):
            self.dataset = Dataset.load_binary(data)      # saved by save_binary
        else:
            self.dataset = Dataset(data, label=label, weight=weight, base_margin=base_margin,
                                   missing=np.nan if missing is None else missing,
                                   feature_names=feature_names, feature_types=feature_types,
                                   enable_categorical=enable_categorical, qid=qid, group=group,
                                   label_lower_bound=label_lower_bound,
                                   label_upper_bound=label_upper_bound)
        self.feature_types = feature_types

    @property
    def __dgbdt_dataset__(self) -> Dataset:
        return self.dataset

    # XGBoost's accessors
    def num_row(self) -> int:
        return self.dataset.num_row

    def num_col(self) -> int:
        return self.dataset.num_col

    @property
    def feature_names(self):
        return self.dataset.feature_names

    def get_label(self):
        return None if self.dataset.label is None else np.asarray(self.dataset.label)

    def get_weight(self):
        w = self.dataset.weight
        return np.zeros(0) if w is None else np.asarray(w)

    def get_base_margin(self):
        m = self.dataset.base_margin
        return np.zeros(0) if m is None else np.asarray(m).ravel()

    def _rebuild(self, **change):
        d = self.dataset
        fields = dict(label=d.label, weight=d.weight, base_margin=d.base_margin, qid=d.qid)
        fields.update(change)
        self.dataset = Dataset(d.data, feature_names=d.feature_names, **fields)
        self.dataset.set_label_bounds(d.label_lower_bound, d.label_upper_bound)

    def set_float_info(self, field: str, data) -> None:
        """XGBoost's: label, weight, base_margin, label_lower_bound, label_upper_bound."""
        if field in ("label_lower_bound", "label_upper_bound"):
            self.dataset.set_label_bounds(**{field.split("_")[-2]: data})
        elif field in ("label", "weight", "base_margin"):
            self._rebuild(**{field: data})
        else:
            raise ValueError(f"set_float_info: field {field!r}; dgbdt sets label, weight, "
                             "base_margin, label_lower_bound and label_upper_bound")

    def get_float_info(self, field: str):
        if field == "base_margin":
            return self.get_base_margin()
        return np.asarray(self.dataset.get_float_info(field))

    def set_label(self, label) -> None:
        self._rebuild(label=label)

    def set_weight(self, weight) -> None:
        self._rebuild(weight=weight)

    def set_base_margin(self, margin) -> None:
        self._rebuild(base_margin=margin)

    def save_binary(self, fname, silent: bool = True) -> None:
        """Save the rows and their quantization (dgbdt's format; DMatrix("x.buffer") reads it)."""
        self.dataset.save_binary(fname)

    def get_data(self):
        return self.dataset.data

    def slice(self, rindex, allow_groups: bool = False) -> "DMatrix":
        out = DMatrix.__new__(DMatrix)
        out._kw, out.feature_types = self._kw, self.feature_types
        out.dataset = self.dataset.slice(np.asarray(rindex))
        return out


class QuantileDMatrix(DMatrix):
    """XGBoost's QuantileDMatrix: the same as DMatrix here (dgbdt quantizes every training set
    itself; ``ref=`` and ``max_bin=`` are accepted: evaluation sets are binned with the training
    set's cuts, and max_bin is a training parameter)."""

    def __init__(self, data, label=None, *, ref=None, max_bin=None, **kwargs):
        super().__init__(data, label=label, **kwargs)
        self.max_bin = max_bin


class ExtMemQuantileDMatrix(QuantileDMatrix):
    """XGBoost's external-memory QuantileDMatrix: a DataIter's batches as bit-packed pages
    (dgbdt.BatchDataset; the pages stay in memory, or spill within device_memory_budget)."""

    def __init__(self, data, *, max_bin=None, ref=None, **kwargs):
        if not isinstance(data, DataIter):
            raise TypeError("ExtMemQuantileDMatrix reads a DataIter; use QuantileDMatrix for "
                            "arrays and frames")
        super().__init__(data, max_bin=max_bin, ref=ref, **kwargs)


def _saved_dataset(data) -> bool:
    """Whether ``data`` names a file save_binary wrote (an .npz archive: a zip), whatever its
    name, as XGBoost's DMatrix(path) reads its own binary files."""
    if not isinstance(data, (str, os.PathLike)) or "?" in str(data):
        return False
    try:
        with open(data, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:
        return False


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
    params = xgb_params(params, dtrain)
    fn = None if obj is None else (lambda preds, _d: obj(preds, dtrain))  # the user's DMatrix
    metric = None if custom_metric is None else (
        lambda preds, d: custom_metric(preds, {id(_dataset(e)): e for e, _ in evals or []}
                                       .get(id(d), dtrain)))
    booster = _compat(_train(params, _dataset(dtrain), num_boost_round, obj=fn,
                             custom_metric=metric, maximize=maximize,
                             evals=[(_dataset(d), n) for d, n in (evals or [])],
                             early_stopping_rounds=early_stopping_rounds,
                             evals_result=evals_result, verbose_eval=verbose_eval,
                             xgb_model=xgb_model, callbacks=callbacks))
    if params.get("eval_metric"):          # what Booster.eval reports, as XGBoost's keeps it
        booster.set_param("eval_metric", params["eval_metric"])
    return booster


def cv(params, dtrain, num_boost_round: int = 10, **kwargs):
    """xgboost.cv on dgbdt.cv (a DataFrame of per-round means and deviations)."""
    return _cv(xgb_params(params, dtrain), _dataset(dtrain), num_boost_round, **kwargs)


def load_model(fname) -> Booster:
    return _compat(_load_model(fname))


_XGB_MODEL = []


def _xgb_model(sklearn):
    """XGBoost's XGBModel: an estimator that fits and predicts any objective (dgbdt.sklearn.
    _Model), of which every dgbdt estimator is an instance, as XGBoost's estimators are of
    XGBModel (isinstance and issubclass answer for any of dgbdt's estimators)."""
    if not _XGB_MODEL:
        class AnyEstimator(type(sklearn._Model)):
            def __instancecheck__(cls, obj):
                return isinstance(obj, sklearn._GBDTModel)

            def __subclasscheck__(cls, sub):
                return issubclass(sub, sklearn._GBDTModel)

        class XGBModel(sklearn._Model, metaclass=AnyEstimator):
            __doc__ = _xgb_model.__doc__
        _XGB_MODEL.append(XGBModel)
    return _XGB_MODEL[0]


def __getattr__(name):
    if name in ("XGBClassifier", "XGBRegressor", "XGBRanker", "XGBModel"):
        from .. import sklearn
        if name == "XGBModel":
            return _xgb_model(sklearn)
        return getattr(sklearn, "GBDT" + name[3:])
    if name == "dask":
        from . import xgboost_dask
        return xgboost_dask
    if name in ("core", "training"):          # xgb.core.XGBoostError, xgb.training.train
        import sys
        return sys.modules[__name__]
    if name in ("XGBRFClassifier", "XGBRFRegressor"):
        from .. import sklearn
        return getattr(sklearn, "GBDTRF" + name[5:])
    raise AttributeError(f"module 'dgbdt.compat.xgboost' has no attribute {name!r}")


__all__ = ["Booster", "DMatrix", "DataIter", "ExtMemQuantileDMatrix", "QuantileDMatrix",
           "XGBoostError", "callback", "cv", "load_model", "train"]
