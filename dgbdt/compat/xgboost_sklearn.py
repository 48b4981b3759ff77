"""XGBoost's estimators (xgb.XGBRegressor, XGBClassifier, XGBRanker, XGBModel, XGBRFRegressor,
XGBRFClassifier) over dgbdt's (dgbdt.sklearn), where XGBoost behaves otherwise:

* a parameter dgbdt does not know is a warning (dgbdt's message, did-you-mean included) and
  is left out of the training, as XGBoost warns and ignores it (dgbdt's estimators raise);
* n_estimators defaults to None (100 rounds), fit's verbose to True, and the objective
  argument to XGBoost's default for the class (XGBRegressor: reg:squarederror; XGBRanker:
  rank:ndcg); a first positional argument is the objective (deprecated, FutureWarning);
* get_booster gives XGBoost's Booster (dgbdt.compat.booster.Booster: save_config, ...),
  whose configuration records the fit's parameters and those set by set_params afterwards;
* predicting a DataFrame whose columns differ from the training's raises "feature_names
  mismatch", as XGBoost's Booster does.
"""
from __future__ import annotations

import warnings

from .. import sklearn as _skl
from ._common import positional_warned
from .booster import _compat


class _XGBBehaviour:
    _VERBOSE = True

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
        return params

    def get_booster(self):
        return _compat(super().get_booster())

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


class XGBRegressor(_XGBBehaviour, _skl.GBDTRegressor):
    """XGBoost's XGBRegressor: dgbdt's GBDTRegressor with XGBoost's habits (module doc)."""

    @positional_warned(positional_wins=True)
    def __init__(self, *, objective="reg:squarederror", **kwargs):
        kwargs.setdefault("n_estimators", None)
        super().__init__(objective=objective, **kwargs)


class XGBClassifier(_XGBBehaviour, _skl.GBDTClassifier):
    """XGBoost's XGBClassifier: dgbdt's GBDTClassifier with XGBoost's habits (module doc)."""

    @positional_warned(positional_wins=True)
    def __init__(self, *, objective=None, **kwargs):
        kwargs.setdefault("n_estimators", None)
        super().__init__(objective=objective, **kwargs)


class XGBRanker(_XGBBehaviour, _skl.GBDTRanker):
    """XGBoost's XGBRanker: dgbdt's GBDTRanker with XGBoost's habits (module doc)."""

    @positional_warned(positional_wins=True)
    def __init__(self, *, objective="rank:ndcg", **kwargs):
        kwargs.setdefault("n_estimators", None)
        super().__init__(objective=objective, **kwargs)


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


class XGBRFClassifier(_XGBForest, _skl.GBDTRFClassifier):
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
