"""XGBoost's estimators (xgb.XGBRegressor, XGBClassifier, XGBRanker, XGBModel, XGBRFRegressor,
XGBRFClassifier) over dgbdt's (dgbdt.sklearn), where XGBoost behaves otherwise:

* a parameter dgbdt does not know is a warning (dgbdt's message, did-you-mean included) and
  is left out of the training, as XGBoost warns and ignores it (dgbdt's estimators raise);
* n_estimators defaults to None (100 rounds), fit's verbose to True, and the objective
  argument to XGBoost's default for the class (XGBRegressor: reg:squarederror; XGBRanker:
  rank:ndcg); a first positional argument is the objective (deprecated, FutureWarning);
* get_booster, ``_Booster`` and the model the callbacks get are XGBoost's Booster
  (dgbdt.compat.booster.Booster: save_config, ...), whose configuration records the fit's parameters and those set by set_params afterwards;
* predicting a DataFrame whose columns differ from the training's raises "feature_names
  mismatch", as XGBoost's Booster does;
* a fitted classifier's ``objective`` is the objective it trained with (_TrainedObjective).
"""
from __future__ import annotations

import warnings

from .. import sklearn as _skl
from ._common import cpu_fallback, positional_warned
from .booster import _compat
from .dmatrix import QuantileDMatrix
from .input import read_features
from .ranker_extras import is_metric_custom, per_query_metric, qid_column, ranking_score


class _XGBBehaviour:
    _VERBOSE = True
    # scikit-learn's HTML repr links an estimator to its API page: these classes are
    # XGBoost's names and behaviour, documented on XGBoost's page of the release they follow
    _doc_link_module = "dgbdt"
    _doc_link_template = ("https://xgboost.readthedocs.io/en/release_3.2.0/python/"
                          "python_api.html#{estimator_module}.{estimator_name}")

    def _doc_link_url_param_generator(self) -> dict:
        return {"estimator_module": "xgboost", "estimator_name": type(self).__name__}

    def _train_params(self) -> dict:
        from ..params.normalize import ALIASES, SCHEMA, _unknown_name
        params = super()._train_params()
        if callable(self.eval_metric):     # XGBoost: a custom metric replaces the default
            params.setdefault("disable_default_eval_metric", True)
        for name in [k for k in params if k not in SCHEMA and k not in ALIASES]:
            warnings.warn(f"{_unknown_name(name)} It is not used by dgbdt "
                          f"(dgbdt.compat.xgboost: XGBoost warns and ignores it too).",
                          UserWarning, stacklevel=4)
            del params[name]
        return cpu_fallback(params, stacklevel=5)

    def get_booster(self):
        return _compat(super().get_booster())

    @property
    def _Booster(self):
        """The fitted Booster, XGBoost's (dgbdt.compat.booster.Booster), as XGBoost's
        estimators keep it; AttributeError before fit."""
        try:
            return self.__dict__["_Booster"]
        except KeyError:
            raise AttributeError("_Booster") from None

    @_Booster.setter
    def _Booster(self, booster) -> None:
        self.__dict__["_Booster"] = None if booster is None else _compat(booster)

    @_Booster.deleter
    def _Booster(self) -> None:
        self.__dict__.pop("_Booster", None)

    def _fit_callbacks(self):
        from .callback import as_xgboost      # the callbacks get XGBoost's Booster
        return as_xgboost(super()._fit_callbacks())

    def _dataset(self, X, label, weight, base_margin, queries: dict, ref=None):
        """fit's rows as XGBoost's estimators take them: a QuantileDMatrix (XGBoost's input
        rules: object arrays as float32, ...; ``ref``: the training set's), made once for
        the training rows and once per other eval_set pair."""
        data = QuantileDMatrix(data=X, label=label, weight=weight, base_margin=base_margin,
                               missing=self.missing, enable_categorical=self.enable_categorical,
                               feature_types=self.feature_types,
                               feature_weights=self.feature_weights, ref=ref, **queries)
        return data

    def _predict_input(self, X):
        X = super()._predict_input(X)
        return X if getattr(X, "columns", None) is not None else read_features(X,
                                                                               self.missing)[0]

    def load_model(self, path) -> None:
        """XGBoost's: the model's feature types set feature_types and enable_categorical."""
        super().load_model(path)
        self.feature_types = self._Booster.feature_types
        self.enable_categorical = self.feature_types is not None and "c" in self.feature_types

    def _params_changed(self) -> None:
        booster = self.__dict__.get("_Booster")
        if booster is not None:          # XGBoost sets them on the fitted Booster
            booster.config_params = dict(getattr(booster, "config_params", None) or {},
                                         **{k: v for k, v in self.get_xgb_params().items()
                                            if v is not None})

    def _check_features(self, X) -> None:
        expected = getattr(self, "feature_names_in_", None)
        columns = getattr(X, "columns", None)
        if expected is None or columns is None:
            return
        got = [str(c) for c in columns]
        if got != list(expected):
            missing = [n for n in expected if n not in got]
            extra = [n for n in got if n not in set(expected)]
            raise ValueError(f"feature_names mismatch: {list(expected)} {got}"
                             + (f"\nexpected {', '.join(missing)} in input data"
                                if missing else "")
                             + (f"\ntraining data did not have the following fields: "
                                f"{', '.join(extra)}" if extra else ""))


class _TrainedObjective:
    """XGBoost's XGBClassifier after fit: ``objective`` reads the objective it trained with
    (binary:logistic, multi:softprob, or the one given; a callable stays), as XGBoost sets
    ``self.objective``. The objective as given stays what get_params reports and what the
    next fit starts from, until it is set again (constructor, set_params or the attribute):
    scikit-learn's rule that fit changes no parameter (clone gives the estimator as
    constructed). A property, so fit changes no public attribute of the instance."""

    @property
    def objective(self):
        d = self.__dict__
        return d["_objective_trained"] if "_objective_trained" in d else d.get("_objective")

    @objective.setter
    def objective(self, value) -> None:
        self.__dict__["_objective"] = value
        self.__dict__.pop("_objective_trained", None)

    def get_params(self, deep: bool = True) -> dict:
        return dict(super().get_params(deep), objective=self.__dict__.get("_objective"))

    def _train_params(self) -> dict:
        out = super()._train_params()
        out.pop("objective", None)
        given = self.__dict__.get("_objective")
        if given is not None and not callable(given):
            out["objective"] = given
        return out

    def _fit(self, X, y, params, *args, **kwargs):
        self.__dict__.pop("_objective_trained", None)      # fit's callables: the given ones
        out = super()._fit(X, y, params, *args, **kwargs)
        if not callable(self.__dict__.get("_objective")):
            self.__dict__["_objective_trained"] = params["objective"]
        return out

    def load_model(self, path) -> None:
        """Load a saved model; ``objective`` then reads the model's objective, as XGBoost's
        load_model sets it (get_params keeps the objective given)."""
        super().load_model(path)
        self.__dict__["_objective_trained"] = self._Booster.objective.name


class XGBRegressor(_XGBBehaviour, _skl.GBDTRegressor):
    """XGBoost's XGBRegressor: dgbdt's GBDTRegressor with XGBoost's habits (module doc)."""

    @positional_warned(positional_wins=True)
    def __init__(self, *, objective="reg:squarederror", **kwargs):
        kwargs.setdefault("n_estimators", None)
        super().__init__(objective=objective, **kwargs)


class XGBClassifier(_TrainedObjective, _XGBBehaviour, _skl.GBDTClassifier):
    """XGBoost's XGBClassifier: dgbdt's GBDTClassifier with XGBoost's habits (module doc)."""

    @positional_warned(positional_wins=True)
    def __init__(self, *, objective=None, **kwargs):
        kwargs.setdefault("n_estimators", None)
        super().__init__(objective=objective, **kwargs)


class XGBRanker(_XGBBehaviour, _skl.GBDTRanker):
    """XGBoost's XGBRanker: dgbdt's GBDTRanker with XGBoost's habits (module doc), and its
    conventions: a DataFrame's column ``qid`` holds the rows' query ids (in fit, eval_set,
    predict, apply and score), a custom eval_metric ``f(y_true, y_score)`` is averaged over
    the queries, and score gives the last evaluation metric."""

    @positional_warned(positional_wins=True)
    def __init__(self, *, objective="rank:ndcg", **kwargs):
        kwargs.setdefault("n_estimators", None)
        super().__init__(objective=objective, **kwargs)

    @positional_warned
    def fit(self, X, y, *, group=None, qid=None, sample_weight=None, base_margin=None,
            eval_set=None, eval_group=None, eval_qid=None, verbose=None, xgb_model=None,
            sample_weight_eval_set=None, base_margin_eval_set=None,
            feature_weights=None) -> "XGBRanker":
        given, (X, qid) = X, qid_column(X, qid)
        if eval_set is not None:
            qids = list(eval_qid) if eval_qid is not None else [None] * len(eval_set)
            pairs = []
            for i, (ex, ey) in enumerate(eval_set):
                # the training frame again: its features and queries (fit reuses its data)
                ex, qids[i] = (X, qid) if ex is given and X is not given else \
                    qid_column(ex, qids[i])
                pairs.append((ex, ey))
            eval_set, eval_qid = pairs, (qids if any(q is not None for q in qids) else None)
        return super().fit(X, y, group=group, qid=qid, sample_weight=sample_weight,
                           base_margin=base_margin, eval_set=eval_set, eval_group=eval_group,
                           eval_qid=eval_qid, verbose=verbose, xgb_model=xgb_model,
                           sample_weight_eval_set=sample_weight_eval_set,
                           base_margin_eval_set=base_margin_eval_set,
                           feature_weights=feature_weights)

    def _predict_input(self, X):
        return super()._predict_input(qid_column(X, None)[0])

    def _callables(self):
        obj, metric, maximize = super()._callables()
        if callable(self.eval_metric) and metric is not None and \
                not is_metric_custom(self.eval_metric):
            metric = per_query_metric(self.eval_metric)
        return obj, metric, maximize

    def score(self, X, y) -> float:
        """The last evaluation metric (eval_metric's, else the objective's default) of the
        model on (X, y), X a DataFrame with the queries in its ``qid`` column."""
        X, qid = qid_column(X, None)
        if qid is None:
            raise ValueError("score needs the rows' queries: X must be a DataFrame with a "
                             "`qid` column")
        return ranking_score(self, X, y, qid)


class _XGBForest(_XGBBehaviour):
    """XGBoost's forest estimators' constructor: its keyword arguments (by position too,
    with XGBoost's FutureWarning), their defaults those of dgbdt.sklearn._Forest."""

    @positional_warned(positional_wins=True)
    def __init__(self, *, learning_rate=1.0, subsample=0.8, colsample_bynode=0.8,
                 reg_lambda=1e-5, **kwargs):
        kwargs.setdefault("n_estimators", None)
        super().__init__(learning_rate=learning_rate, subsample=subsample,
                         colsample_bynode=colsample_bynode, reg_lambda=reg_lambda, **kwargs)


class XGBRFRegressor(_XGBForest, _skl.GBDTRFRegressor):
    """XGBoost's XGBRFRegressor (dgbdt's GBDTRFRegressor, module doc)."""


class XGBRFClassifier(_TrainedObjective, _XGBForest, _skl.GBDTRFClassifier):
    """XGBoost's XGBRFClassifier (dgbdt's GBDTRFClassifier, module doc)."""


class _AnyEstimator(type(_skl._Model)):
    # every dgbdt estimator is an XGBModel, as XGBoost's estimators all derive from it
    def __instancecheck__(cls, obj):
        return isinstance(obj, _skl._GBDTModel)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _skl._GBDTModel)


class XGBModel(_XGBBehaviour, _skl._Model, metaclass=_AnyEstimator):
    """XGBoost's XGBModel: an estimator of any objective (dgbdt.sklearn._Model) with
    XGBoost's habits (module doc); isinstance / issubclass answer True for every dgbdt
    estimator, as XGBoost's estimators all derive from XGBModel."""

    @positional_warned(positional_wins=True)
    def __init__(self, *, objective=None, **kwargs):
        kwargs.setdefault("n_estimators", None)
        super().__init__(objective=objective, **kwargs)
