"""scikit-learn style estimators: GBDTRegressor, GBDTClassifier and GBDTRanker.

They follow scikit-learn's conventions (constructor arguments stored as given, get_params /
set_params, fit returns self, learned attributes end in ``_``) and xgboost.sklearn's habits
(XGBoost parameter names, extra keyword parameters passed through to training, eval_set,
evals_result(), get_booster()). ``checkpoint_dir`` / ``checkpoint_interval`` are train's: a
fit killed with its process resumes when run again (dgbdt.engine.checkpoint). scikit-learn is
optional: when installed, the estimators derive from its BaseEstimator and mixins, so clone,
pipelines and cross_val_score work.
"""
from __future__ import annotations

import inspect

import numpy as np

from .kernels.arrays import to_host
from .model.booster import Booster
from .data.dataset import Dataset
from .data.input import is_nan_missing
from .data.labels import (distinct, encode, host_values, label_values, multilabel_values,
                          labels_from_prediction, proba_columns)
from .metrics.registry import is_metric_custom
from .train import train
from .estimator_extras import (XGBMethods as _XGBMethods, check_fit_input as _check_fit_input,
                               fit_feature_weights,
                               load_with_type, metric_names as _metric_names,
                               positional_warned, save_with_type, seed_of,
                               series_as_frame as _series_as_frame)

try:  # scikit-learn's base classes when it is installed (for clone, cross_val_score, tags)
    from sklearn.base import BaseEstimator as _Base
    from sklearn.base import ClassifierMixin as _ClassifierMixin
    from sklearn.base import RegressorMixin as _RegressorMixin
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    class _Base:
        pass

    class NotFittedError(ValueError, AttributeError):
        """scikit-learn's NotFittedError, where scikit-learn is not installed."""

    class _ClassifierMixin:
        pass

    class _RegressorMixin:
        pass

# estimator argument -> training parameter name
_RENAMED = {"learning_rate": "eta", "reg_lambda": "lambda", "reg_alpha": "alpha",
            "random_state": "seed", "n_jobs": "nthread"}
#: estimator arguments that go to the Dataset, not the training parameters
_NOT_PARAMS = {"n_estimators", "early_stopping_rounds", "importance_type", "kwargs",
               "enable_categorical", "feature_types", "missing",
               "checkpoint_dir", "checkpoint_interval", "callbacks"}


class _GBDTModel(_XGBMethods, _Base):
    @positional_warned
    def __init__(self, *, n_estimators: int | None = 100, max_depth: int | None = None,
                 max_leaves: int | None = None, max_bin: int | None = None,
                 grow_policy: str | None = None, learning_rate: float | None = None,
                 verbosity: int | None = None, objective=None, booster: str | None = None,
                 tree_method: str | None = None, n_jobs: int | None = None,
                 gamma: float | None = None, min_child_weight: float | None = None,
                 max_delta_step: float | None = None, subsample: float | None = None,
                 sampling_method: str | None = None, colsample_bytree: float | None = None,
                 colsample_bylevel: float | None = None, colsample_bynode: float | None = None,
                 reg_alpha: float | None = None, reg_lambda: float | None = None,
                 scale_pos_weight: float | None = None, base_score=None, random_state=None,
                 missing: float = np.nan, num_parallel_tree: int | None = None,
                 monotone_constraints=None, interaction_constraints=None,
                 importance_type: str = "gain", device: str | None = None,
                 validate_parameters: bool | None = None, enable_categorical: bool = False,
                 feature_types=None, feature_weights=None, max_cat_to_onehot: int | None = None,
                 max_cat_threshold: int | None = None, multi_strategy: str | None = None,
                 eval_metric=None, early_stopping_rounds: int | None = None, callbacks=None,
                 checkpoint_dir=None, checkpoint_interval: int = 10, **kwargs):
        # XGBModel's arguments, in its order (passing any of them by position is deprecated,
        # with a FutureWarning, as in XGBoost); dgbdt's checkpoint arguments last
        args = dict(locals())
        for name, value in args.items():
            if name not in ("self", "kwargs", "__class__"):
                setattr(self, name, value)
        if kwargs:       # as XGBoost: only when given (scikit-learn's check_no_attributes_set_in_init)
            self.kwargs = kwargs

    # -- scikit-learn protocol ---------------------------------------------------------------
    @classmethod
    def _arg_names(cls) -> list[str]:
        sig = inspect.signature(_GBDTModel.__init__)
        return [n for n, p in sig.parameters.items()
                if n != "self" and p.kind != p.VAR_KEYWORD]

    def get_params(self, deep: bool = True) -> dict:
        params = {n: getattr(self, n) for n in self._arg_names()}
        params.update(self.__dict__.get("kwargs", {}))
        return params

    def set_params(self, **params) -> "_GBDTModel":
        names = set(self._arg_names())
        for k, v in params.items():
            if k in names:
                setattr(self, k, v)
            else:   # validated at fit, like xgboost's extra parameters
                self.__dict__.setdefault("kwargs", {})[k] = v
        self._params_changed()
        return self

    def _params_changed(self) -> None:
        """After set_params: nothing here (the compat estimators record them on the fitted
        Booster's configuration, as XGBoost does)."""

    def _train_params(self) -> dict:
        out = {}
        for n in self._arg_names():
            if n in _NOT_PARAMS:
                continue
            v = getattr(self, n)
            if n == "eval_metric" and isinstance(v, (list, tuple)):
                v = _metric_names(v)         # the callables among them: custom_metric=
            # callables and Metric instances: obj= / custom_metric=
            if v is not None and not callable(v) and not is_metric_custom(v):
                out[_RENAMED.get(n, n)] = v
        out.update(self.__dict__.get("kwargs", {}))
        if "seed" in out:                    # XGBoost takes numpy's random states too
            out["seed"] = seed_of(out["seed"])
        return out

    def _rounds(self) -> int:
        """Boosting rounds of a fit: get_num_boosting_rounds (a forest: one round)."""
        return self.get_num_boosting_rounds()

    def _data_args(self) -> dict:
        """The Dataset's arguments among the estimator's (XGBoost's enable_categorical and
        feature_types: categorical features, dgbdt.data.categorical; missing: the value that
        marks a missing entry besides NaN)."""
        out = {"missing": self.missing} if not is_nan_missing(self.missing) else {}
        if self.enable_categorical:
            out["enable_categorical"] = True
        if self.feature_types is not None:
            out["feature_types"] = self.feature_types
        return out

    # -- fitting -----------------------------------------------------------------------------
    def _eval_pairs(self, eval_set, sample_weight_eval_set, base_margin_eval_set=None):
        """The checked eval_set: (X, y, weight, base_margin, "validation_i") per pair."""
        if eval_set is None:
            return []
        for what, extra in (("sample_weight_eval_set", sample_weight_eval_set),
                            ("base_margin_eval_set", base_margin_eval_set)):
            if extra is not None and len(extra) != len(eval_set):
                raise ValueError(f"{what} must have one entry per eval_set pair")
        out = []
        for i, pair in enumerate(eval_set):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError("eval_set must be a list of (X, y) pairs")
            w = None if sample_weight_eval_set is None else sample_weight_eval_set[i]
            m = None if base_margin_eval_set is None else base_margin_eval_set[i]
            out.append((pair[0], pair[1], w, m, f"validation_{i}"))
        return out

    def _fit(self, X, y, params, sample_weight, base_margin, eval_set,
             sample_weight_eval_set, verbose, base_margin_eval_set=None, xgb_model=None,
             queries=None, eval_queries=None):
        """``xgb_model``: a model to continue (a Booster, a fitted estimator, or a model file
        of dgbdt's or XGBoost's format): its trees first, n_estimators new rounds after.
        ``queries``: the Dataset's qid= / group= arguments (a dict; the ranker's), and
        ``eval_queries`` one such dict per eval_set pair."""
        _check_fit_input(self, X, y)
        own = [pair[0] is X for pair in (eval_set or [])]
        X = _series_as_frame(X)
        if eval_set is not None:      # a Series in an eval pair: one column too
            eval_set = [(X if mine else _series_as_frame(pair[0]), *pair[1:])
                        for pair, mine in zip(eval_set, own)]
        given = self._dataset(X, self._encode(y), sample_weight, base_margin, queries or {})
        dtrain = _dataset_of(given)        # the compat's estimators give a QuantileDMatrix
        pairs = self._eval_pairs(eval_set, sample_weight_eval_set, base_margin_eval_set)
        eval_queries = eval_queries or [{}] * len(pairs)
        # the training rows themselves as an eval set (the same objects): scored on dtrain,
        # not copied into a second Dataset (XGBoost reuses its DMatrix the same way)
        evals = [(dtrain if (ex is X and ey is y and w is sample_weight and m is base_margin
                             and not q) else
                  _dataset_of(self._dataset(ex, self._encode(ey), w, m, q, ref=given)),
                  name)
                 for (ex, ey, w, m, name), q in zip(pairs, eval_queries)]
        self.evals_result_: dict = {}
        obj, metric, maximize = self._callables()
        self._Booster = train(params, dtrain, self._rounds(), evals=evals,
                              early_stopping_rounds=self.early_stopping_rounds,
                              evals_result=self.evals_result_, verbose_eval=verbose,
                              xgb_model=_booster_of(xgb_model), obj=obj,
                              custom_metric=metric, maximize=maximize,
                              checkpoint_dir=self.checkpoint_dir,
                              checkpoint_interval=self.checkpoint_interval,
                              callbacks=self._fit_callbacks())
        self._Booster.config_params = params     # what save_config reports
        self._set_fit_features(dtrain.num_col, None if isinstance(X, np.ndarray)
                               else dtrain.feature_names)
        return self

    def _dataset(self, X, label, weight, base_margin, queries: dict, ref=None):
        """The Dataset of fit's rows (``ref``: the training set's, for an eval set)."""
        return Dataset(X, label=label, weight=weight, base_margin=base_margin,
                       **self._data_args(), **queries)

    def _callables(self):
        """train's (obj, custom_metric, maximize) of the objective and eval_metric."""
        return _callables(self.objective, self.eval_metric)

    def _fit_callbacks(self):
        """The callbacks= for one fit: copies, as XGBoost's estimators make them, so a
        callback's state (EarlyStopping's best score) does not leak into the next fit."""
        import copy
        return [copy.deepcopy(cb) for cb in self.callbacks] if self.callbacks else None

    def _set_fit_features(self, n_features: int, feature_names) -> None:
        """n_features_in_, and feature_names_in_ when fitted on a DataFrame."""
        self.n_features_in_ = n_features
        if feature_names is not None:
            self.feature_names_in_ = np.array(feature_names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_   # from an earlier fit on a DataFrame

    def _encode(self, y):
        return y

    def get_booster(self) -> Booster:
        if not hasattr(self, "_Booster"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. Call "
                                 "'fit' with appropriate arguments before using this estimator.")
        return self._Booster

    def evals_result(self) -> dict:
        self.get_booster()
        return self.evals_result_

    @property
    def best_iteration(self):
        return self.get_booster().best_iteration

    @property
    def best_score(self):
        return self.get_booster().best_score

    def _iteration_range(self, iteration_range):
        if iteration_range is not None:
            return iteration_range
        best = self.get_booster().best()[0]
        return None if best is None else (0, best + 1)

    def _margin_or_prediction(self, X, output_margin, iteration_range, base_margin=None,
                              validate_features: bool = True):
        booster = self.get_booster()     # categorical models read frames themselves
        X = self._predict_input(X)
        if validate_features:
            self._check_features(X)
        if base_margin is not None:       # a DataFrame / list of margins: an array
            base_margin = np.asarray(base_margin, dtype=np.float64)
        if not is_nan_missing(self.missing) or base_margin is not None:
            # the fit's missing value marks the rows too; base_margin rides with them
            X = Dataset(X, base_margin=base_margin, **self._data_args())
        elif booster.feature_types is None:
            X = Dataset(X)
        return booster.predict(X,
                               output_margin=output_margin,
                               iteration_range=self._iteration_range(iteration_range))

    @property
    def feature_importances_(self) -> np.ndarray:
        """Importance of each feature (importance_type, default gain), summing to 1. A
        gblinear model: its weights over their sum, as XGBoost's ([F], or [F, K] for several
        outputs; importance_type "weight", which the default "gain" means for it)."""
        b = self.get_booster()
        if b.linear is not None:
            kind = "weight" if self.importance_type in (None, "gain") else self.importance_type
            b.linear.score(b._names(), kind)       # "weight" only: others raise
            v = np.array(b.linear.coefficients, dtype=np.float32)
            v = v[:, 0] if v.shape[1] == 1 else v
            total = v.sum()
            return v / total if total != 0 else v
        score = b.get_score(importance_type=self.importance_type)
        names = b.feature_names or [f"f{i}" for i in range(b.n_features)]
        v = np.array([score.get(n, 0.0) for n in names], dtype=np.float64)
        total = v.sum()
        return v / total if total > 0 else v

    def _check_features(self, X) -> None:
        """Before predicting: nothing more than the Booster checks (the compat estimators
        check feature names as XGBoost does)."""

    def save_model(self, path) -> None:
        """The Booster's model file, with the estimator's type as XGBoost records it (the
        ``scikit_learn`` attribute), which load_model checks."""
        save_with_type(self, path)

    def load_model(self, path) -> None:
        """Load a saved model; one saved by an estimator of another type (a classifier's into
        a regressor) raises TypeError, as in XGBoost."""
        self._Booster = load_with_type(self, path)
        self.n_features_in_ = self._Booster.n_features


class _Model(_GBDTModel):
    """XGBoost's XGBModel: the estimators' base, itself an estimator of any objective
    (reg:squarederror by default) whose predict gives the objective's predictions."""

    @positional_warned
    def fit(self, X, y, *, sample_weight=None, base_margin=None, eval_set=None,
            sample_weight_eval_set=None, verbose: bool | int | None = None,
            base_margin_eval_set=None, xgb_model=None, feature_weights=None):
        """Train on (X, y); arguments after y by keyword (by position: a FutureWarning, as in
        XGBoost). ``verbose`` None: the class's default (_VERBOSE)."""
        with fit_feature_weights(self, feature_weights):
            return self._fit(X, y, _regression_params(self), sample_weight, base_margin,
                             eval_set, sample_weight_eval_set, self._verbose(verbose),
                             base_margin_eval_set, xgb_model)

    def predict(self, X, output_margin: bool = False, iteration_range=None, *,
                base_margin=None, validate_features: bool = True) -> np.ndarray:
        """The objective's predictions (margins with output_margin); ``base_margin``: each
        row's starting margin, as given to fit."""
        return self._margin_or_prediction(X, output_margin, iteration_range, base_margin,
                                          validate_features)


class GBDTRegressor(_RegressorMixin, _Model):
    """Gradient-boosted trees for regression (default objective reg:squarederror)."""

    _MORE_TAGS = {"multioutput": True, "multioutput_only": False}   # scikit-learn's tags

    def score(self, X, y, sample_weight=None) -> float:
        """Coefficient of determination R^2 of the predictions."""
        return _r2_score(y, self.predict(X), sample_weight)


class _ClassifierBase(_ClassifierMixin, _GBDTModel):
    """What the in-process and the Dask classifiers share: classes_, the objective, loading."""

    _MORE_TAGS = {"multilabel": True}        # scikit-learn's tags

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()    # ClassifierMixin's classifier_tags, then ours
        tags.classifier_tags.multi_label = self._more_tags()["multilabel"]
        return tags

    def _set_classes(self, classes) -> dict:
        """Set classes_ / n_classes_ from the sorted distinct labels; the training params."""
        classes = np.asarray(classes)
        if classes.size == 0:
            raise ValueError("y is empty: a classifier needs labelled rows to fit")
        if classes.dtype.kind == "f" and np.any(classes != np.floor(classes)):
            # scikit-learn's type_of_target rule and words; XGBoost refuses such labels too
            odd = classes[classes != np.floor(classes)][:3].tolist()
            raise ValueError(f"Unknown label type: continuous (y holds values such as {odd}); "
                             "a classifier needs discrete classes: for a continuous target "
                             f"use {type(self).__name__.replace('Classifier', 'Regressor')}")
        self.classes_ = classes
        self.n_classes_ = len(self.classes_)
        if self.n_classes_ < 2:
            raise ValueError(f"y has a single class ({self.classes_.tolist()}); a classifier "
                             "needs at least two, got 1 class")
        params = self._train_params()
        if self.n_classes_ == 2:
            params.setdefault("objective", "binary:logistic")
        else:
            params.setdefault("objective", "multi:softprob")
            params["num_class"] = self.n_classes_
        return params

    def load_model(self, path) -> None:
        """Load a saved model; the model file keeps no labels, so classes_ becomes 0..K-1
        (as in xgboost.XGBClassifier)."""
        super().load_model(path)
        self.n_classes_ = self._Booster.num_class or 2
        self.classes_ = np.arange(self.n_classes_)

    def _is_softmax(self) -> bool:
        return self.get_booster().objective.name == "multi:softmax"

    def _check_proba(self) -> None:
        if self._is_softmax():
            raise ValueError("predict_proba needs objective multi:softprob, not multi:softmax")


class GBDTClassifier(_ClassifierBase):
    """Gradient-boosted trees for classification (binary:logistic or multi:softprob)."""

    @positional_warned
    def fit(self, X, y, *, sample_weight=None, base_margin=None, eval_set=None,
            sample_weight_eval_set=None, verbose: bool | int | None = None,
            base_margin_eval_set=None, xgb_model=None,
            feature_weights=None) -> "GBDTClassifier":
        """Train on (X, y); arguments after y by keyword (by position: a FutureWarning, as in
        XGBoost). ``verbose`` None: the class's default (_VERBOSE)."""
        _check_fit_input(self, X, y)
        multi = multilabel_values(y)       # a 2-D y of 0/1 columns: multi-label
        self._multilabel = multi is not None
        y = multi if self._multilabel else label_values(y)
        with fit_feature_weights(self, feature_weights):
            params = self._set_classes(distinct(y.reshape(-1) if self._multilabel else y))
            return self._fit(X, y, params, sample_weight, base_margin, eval_set,
                             sample_weight_eval_set, self._verbose(verbose),
                             base_margin_eval_set, xgb_model)

    def _encode(self, y):
        if getattr(self, "_multilabel", False):     # one binary:logistic target a label
            return multilabel_values(y)
        return encode(label_values(y), self.classes_)

    def predict_proba(self, X, iteration_range=None, *, base_margin=None,
                      validate_features: bool = True) -> np.ndarray:
        """Class probabilities [n, n_classes] (binary: [1 - p, p])."""
        p = self._margin_or_prediction(X, False, iteration_range, base_margin,
                                       validate_features)
        self._check_proba()
        return proba_columns(p)

    def predict(self, X, output_margin: bool = False, iteration_range=None, *,
                base_margin=None, validate_features: bool = True) -> np.ndarray:
        """Class labels (margins with output_margin); ``base_margin`` as given to fit."""
        p = self._margin_or_prediction(X, output_margin, iteration_range, base_margin,
                                       validate_features)
        if output_margin:
            return p
        if p.ndim == 2 and self.get_booster().num_class is None:    # multi-label: 0/1 each
            return (p > 0.5).astype(np.int64)
        return labels_from_prediction(p, self.classes_, self._is_softmax())

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy (weighted by sample_weight)."""
        return _accuracy(y, self.predict(X), sample_weight)


class _Forest:
    """XGBoost's random forest estimators (XGBRFClassifier / XGBRFRegressor): one round of
    ``n_estimators`` parallel trees (num_parallel_tree), each on its own sample of the rows
    (``subsample``, default 0.8) and of each node's features (``colsample_bynode``, 0.8), with
    learning_rate 1 and reg_lambda 1e-5 by default: the forest's prediction is the mean of
    its trees' (each takes 1/n_estimators of the step)."""

    @positional_warned
    def __init__(self, *, learning_rate: float | None = 1.0, subsample: float = 0.8,
                 colsample_bynode: float = 0.8, reg_lambda: float | None = 1e-5, **kwargs):
        super().__init__(learning_rate=learning_rate, reg_lambda=reg_lambda,
                         subsample=subsample, colsample_bynode=colsample_bynode, **kwargs)

    def _rounds(self) -> int:
        # XGBoost's words: a forest is one round, nothing to stop early or call back on
        if self.early_stopping_rounds is not None or self.callbacks:
            raise NotImplementedError("`early_stopping_rounds` and `callbacks` are not "
                                      "implemented for random forest.")
        return 1

    def get_num_boosting_rounds(self) -> int:
        """One round (the forest's trees grow in it)."""
        return 1

    def get_xgb_params(self) -> dict:
        return dict(super().get_xgb_params(), num_parallel_tree=self._forest_size())

    def _forest_size(self) -> int:
        return super().get_num_boosting_rounds()

    def _train_params(self) -> dict:
        return dict(super()._train_params(), num_parallel_tree=self._forest_size())


class GBDTRFRegressor(_Forest, GBDTRegressor):
    """A random forest regressor (XGBoost's XGBRFRegressor; see _Forest)."""


class GBDTRFClassifier(_Forest, GBDTClassifier):
    """A random forest classifier (XGBoost's XGBRFClassifier; see _Forest)."""


class GBDTRanker(_GBDTModel):
    """Learning to rank (default objective rank:ndcg), as xgboost.XGBRanker: ``fit(X, y,
    qid=...)`` or ``group=`` (query sizes), the rows of a query contiguous and the ids sorted;
    ``eval_set`` with ``eval_qid`` (or ``eval_group``), one per pair. ``predict`` gives the
    ranking scores (margins)."""

    _TYPE = "ranker"

    @positional_warned
    def fit(self, X, y, *, group=None, qid=None, sample_weight=None, base_margin=None,
            eval_set=None, eval_group=None, eval_qid=None, verbose: bool | int | None = None,
            xgb_model=None, sample_weight_eval_set=None,
            base_margin_eval_set=None, feature_weights=None) -> "GBDTRanker":
        queries, eval_queries = _rank_queries(group, qid, eval_set, eval_group, eval_qid)
        with fit_feature_weights(self, feature_weights):
            return self._fit(X, y, _ranking_params(self), sample_weight, base_margin,
                             eval_set, sample_weight_eval_set, self._verbose(verbose),
                             base_margin_eval_set, xgb_model, queries, eval_queries)

    def predict(self, X, output_margin: bool = False, iteration_range=None, *,
                base_margin=None, validate_features: bool = True) -> np.ndarray:
        """The ranking scores (margins); ``base_margin`` as given to fit."""
        return self._margin_or_prediction(X, output_margin, iteration_range, base_margin,
                                          validate_features)


# -- pieces shared with dgbdt.dask.sklearn ---------------------------------------------------
def _ranking_params(est: _GBDTModel) -> dict:
    params = est._train_params()
    params.setdefault("objective", "rank:ndcg")
    if not str(params["objective"]).startswith("rank:"):
        raise ValueError(f"a ranker trains a rank:* objective; got {params['objective']!r}")
    return params


def _rank_queries(group, qid, eval_set, eval_group, eval_qid, allow_group: bool = True):
    """The Dataset query arguments of the training rows and of each eval_set pair."""
    if group is not None and qid is not None:
        raise ValueError("Either `group` or `qid` should be given, not both: qid= (each "
                         "row's query id) or group= (the query sizes)")
    if group is None and qid is None:   # XGBoost's words first
        raise ValueError("Either `group` or `qid` is required for ranking task: a ranker "
                         "needs the query of every row (qid=, or group= the query sizes)")
    if group is not None and not allow_group:
        raise ValueError("group= is not supported on Dask (a query must lie within one "
                         "partition): pass qid= partitioned like X")
    n_eval = 0 if eval_set is None else len(eval_set)
    out = []
    for what, given in (("eval_group", eval_group), ("eval_qid", eval_qid)):
        if given is not None and len(given) != n_eval:
            raise ValueError(f"{what} must have one entry per eval_set pair")
    for i in range(n_eval):
        g = None if eval_group is None else eval_group[i]
        q = None if eval_qid is None else eval_qid[i]
        if g is not None and q is not None:
            raise ValueError(f"eval_set pair {i} has both eval_group and eval_qid; give one")
        if g is None and q is None:
            raise ValueError(f"eval_set pair {i} needs its queries (Either `group` or `qid` "
                             "is required for ranking task): eval_qid (or eval_group), one "
                             "entry per pair")
        out.append({"qid": q} if g is None else {"group": g})
    return ({"qid": qid} if group is None else {"group": group}), out



def _regression_params(est: _GBDTModel) -> dict:
    params = est._train_params()
    params.setdefault("objective", "reg:squarederror")
    return params


def _r2_score(y, pred, sample_weight) -> float:
    y = host_values(y).astype(np.float64)
    pred = host_values(pred).astype(np.float64)
    w = np.ones_like(y) if sample_weight is None else host_values(sample_weight).astype(float)
    resid = np.sum(w * (y - pred) ** 2)
    total = np.sum(w * (y - np.average(y, weights=w)) ** 2)
    return float(1.0 - resid / total) if total > 0 else 0.0


def _accuracy(y, pred, sample_weight) -> float:
    hit = (host_values(pred) == host_values(y)).astype(np.float64)
    return float(np.average(hit, weights=host_values(sample_weight)))


def _dataset_of(data):
    """The dgbdt Dataset of a Dataset or of the compat's DMatrix."""
    return getattr(data, "__dgbdt_dataset__", data)


def _booster_of(model):
    """The Booster of a fitted estimator (XGBoost's sklearn API accepts one as xgb_model);
    anything else as given (dgbdt.train resolves Boosters, paths and JSON)."""
    get = getattr(model, "get_booster", None)
    return get() if callable(get) else model


_MAXIMIZED = ("auc", "aucpr", "pre", "map", "ndcg", "accuracy", "r2", "f1", "precision",
              "recall", "roc_auc")


def _callables(objective, eval_metric):
    """XGBoost's scikit-learn callables as train's: ``objective(y_true, y_pred) -> (grad,
    hess)`` (raw margins in) and ``eval_metric(y_true, y_pred) -> float`` (predictions in,
    scikit-learn's metric interface; named after the function, maximized when the name says
    so, e.g. accuracy or auc); returns (obj, custom_metric, maximize). A dgbdt.metrics.registry.Metric
    instance (or a list of them) is passed on as it is: scored as the built-in metrics are,
    exact on Dask too."""
    obj = metric = maximize = None
    if callable(objective):
        obj = (lambda preds, d: objective(to_host(d.get_label()), preds))
    if isinstance(eval_metric, (list, tuple)):      # names and (at most) one callable
        _metric_names(eval_metric)
        eval_metric = next((m for m in eval_metric if callable(m)), None)
    if is_metric_custom(eval_metric):
        metric = eval_metric
    elif callable(eval_metric):
        name = getattr(eval_metric, "__name__", "custom")

        def metric(preds, d):
            # XGBoost's: the rows' weights as sample_weight= when the data has them
            w = d.get_weight()
            extra = {} if w is None or len(w) == 0 else {"sample_weight": to_host(w)}
            return name, float(eval_metric(to_host(d.get_label()), to_host(preds), **extra))
        maximize = name.lower().startswith(_MAXIMIZED) or \
            name.lower().endswith(("accuracy", "auc", "score"))
    return obj, metric, maximize
