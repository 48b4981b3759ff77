"""scikit-learn style estimators: GBDTRegressor and GBDTClassifier.

They follow scikit-learn's conventions (constructor arguments stored as given, get_params /
set_params, fit returns self, learned attributes end in ``_``) and xgboost.sklearn's habits
(XGBoost parameter names, extra keyword parameters passed through to training, eval_set,
evals_result(), get_booster()). scikit-learn is optional: when installed, the estimators
derive from its BaseEstimator and mixins, so clone, pipelines and cross_val_score work.
"""
from __future__ import annotations

import inspect

import numpy as np

from .booster import Booster, load_model
from .data.dataset import Dataset
from .train import train

try:  # scikit-learn's base classes when it is installed (for clone, cross_val_score, tags)
    from sklearn.base import BaseEstimator as _Base
    from sklearn.base import ClassifierMixin as _ClassifierMixin
    from sklearn.base import RegressorMixin as _RegressorMixin
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    class _Base:
        pass

    class _ClassifierMixin:
        pass

    class _RegressorMixin:
        pass

# estimator argument -> training parameter name
_RENAMED = {"learning_rate": "eta", "reg_lambda": "lambda", "reg_alpha": "alpha",
            "random_state": "seed", "n_jobs": "nthread"}
_NOT_PARAMS = {"n_estimators", "early_stopping_rounds", "importance_type", "kwargs"}


class _GBDTModel(_Base):
    def __init__(self, n_estimators: int = 100, max_depth: int | None = None,
                 learning_rate: float | None = None, objective: str | None = None,
                 max_bin: int | None = None, reg_lambda: float | None = None,
                 reg_alpha: float | None = None, gamma: float | None = None,
                 min_child_weight: float | None = None, max_delta_step: float | None = None,
                 base_score: float | None = None, random_state: int | None = None,
                 n_jobs: int | None = None, eval_metric=None,
                 early_stopping_rounds: int | None = None, tree_method: str | None = None,
                 device: str | None = None, verbosity: int | None = None,
                 importance_type: str = "gain", **kwargs):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.objective = objective
        self.max_bin = max_bin
        self.reg_lambda = reg_lambda
        self.reg_alpha = reg_alpha
        self.gamma = gamma
        self.min_child_weight = min_child_weight
        self.max_delta_step = max_delta_step
        self.base_score = base_score
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.eval_metric = eval_metric
        self.early_stopping_rounds = early_stopping_rounds
        self.tree_method = tree_method
        self.device = device
        self.verbosity = verbosity
        self.importance_type = importance_type
        self.kwargs = kwargs

    # -- scikit-learn protocol ---------------------------------------------------------------
    @classmethod
    def _arg_names(cls) -> list[str]:
        sig = inspect.signature(_GBDTModel.__init__)
        return [n for n, p in sig.parameters.items()
                if n != "self" and p.kind != p.VAR_KEYWORD]

    def get_params(self, deep: bool = True) -> dict:
        params = {n: getattr(self, n) for n in self._arg_names()}
        params.update(self.kwargs)
        return params

    def set_params(self, **params) -> "_GBDTModel":
        names = set(self._arg_names())
        for k, v in params.items():
            if k in names:
                setattr(self, k, v)
            else:
                self.kwargs[k] = v   # validated at fit, like xgboost's extra parameters
        return self

    def _train_params(self) -> dict:
        out = {}
        for n in self._arg_names():
            if n in _NOT_PARAMS:
                continue
            v = getattr(self, n)
            if v is not None:
                out[_RENAMED.get(n, n)] = v
        out.update(self.kwargs)
        return out

    # -- fitting -----------------------------------------------------------------------------
    def _fit(self, X, y, params, sample_weight, base_margin, eval_set,
             sample_weight_eval_set, verbose):
        dtrain = Dataset(X, label=y, weight=sample_weight, base_margin=base_margin)
        evals = []
        if eval_set is not None:
            if sample_weight_eval_set is not None and len(sample_weight_eval_set) != len(eval_set):
                raise ValueError("sample_weight_eval_set must have one entry per eval_set pair")
            for i, pair in enumerate(eval_set):
                if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                    raise TypeError("eval_set must be a list of (X, y) pairs")
                w = None if sample_weight_eval_set is None else sample_weight_eval_set[i]
                evals.append((Dataset(pair[0], label=self._encode(pair[1]), weight=w),
                              f"validation_{i}"))
        self.evals_result_: dict = {}
        self._Booster = train(params, dtrain, self.n_estimators, evals=evals,
                              early_stopping_rounds=self.early_stopping_rounds,
                              evals_result=self.evals_result_, verbose_eval=verbose)
        self.n_features_in_ = dtrain.num_col
        if dtrain.feature_names is not None and not isinstance(X, np.ndarray):
            self.feature_names_in_ = np.array(dtrain.feature_names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_   # from an earlier fit on a DataFrame
        return self

    def _encode(self, y):
        return y

    def get_booster(self) -> Booster:
        if not hasattr(self, "_Booster"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit first")
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
        b = self.get_booster()
        return None if b.best_iteration is None else (0, b.best_iteration + 1)

    def _margin_or_prediction(self, X, output_margin, iteration_range):
        return self.get_booster().predict(Dataset(X), output_margin=output_margin,
                                          iteration_range=self._iteration_range(iteration_range))

    @property
    def feature_importances_(self) -> np.ndarray:
        """Importance of each feature (importance_type, default gain), summing to 1."""
        b = self.get_booster()
        score = b.get_score(importance_type=self.importance_type)
        names = b.feature_names or [f"f{i}" for i in range(b.n_features)]
        v = np.array([score.get(n, 0.0) for n in names], dtype=np.float64)
        total = v.sum()
        return v / total if total > 0 else v

    def save_model(self, path) -> None:
        self.get_booster().save_model(path)

    def load_model(self, path) -> None:
        self._Booster = load_model(path)
        self.n_features_in_ = self._Booster.n_features


class GBDTRegressor(_RegressorMixin, _GBDTModel):
    """Gradient-boosted trees for regression (default objective reg:squarederror)."""

    def fit(self, X, y, sample_weight=None, base_margin=None, eval_set=None,
            sample_weight_eval_set=None, verbose: bool | int = False) -> "GBDTRegressor":
        params = self._train_params()
        params.setdefault("objective", "reg:squarederror")
        return self._fit(X, y, params, sample_weight, base_margin, eval_set,
                         sample_weight_eval_set, verbose)

    def predict(self, X, output_margin: bool = False, iteration_range=None) -> np.ndarray:
        return self._margin_or_prediction(X, output_margin, iteration_range)

    def score(self, X, y, sample_weight=None) -> float:
        """Coefficient of determination R^2 of the predictions."""
        y = np.asarray(y, dtype=np.float64)
        w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, float)
        resid = np.sum(w * (y - self.predict(X)) ** 2)
        total = np.sum(w * (y - np.average(y, weights=w)) ** 2)
        return float(1.0 - resid / total) if total > 0 else 0.0


class GBDTClassifier(_ClassifierMixin, _GBDTModel):
    """Gradient-boosted trees for classification (binary:logistic or multi:softprob)."""

    def fit(self, X, y, sample_weight=None, base_margin=None, eval_set=None,
            sample_weight_eval_set=None, verbose: bool | int = False) -> "GBDTClassifier":
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D class labels; got shape {y.shape}")
        self.classes_ = np.unique(y)
        self.n_classes_ = len(self.classes_)
        if self.n_classes_ < 2:
            raise ValueError(f"y has a single class ({self.classes_.tolist()}); a classifier "
                             "needs at least two")
        params = self._train_params()
        if self.n_classes_ == 2:
            params.setdefault("objective", "binary:logistic")
        else:
            params.setdefault("objective", "multi:softprob")
            params["num_class"] = self.n_classes_
        return self._fit(X, self._encode(y), params, sample_weight, base_margin, eval_set,
                         sample_weight_eval_set, verbose)

    def load_model(self, path) -> None:
        """Load a saved model; the model file keeps no labels, so classes_ becomes 0..K-1
        (as in xgboost.XGBClassifier)."""
        super().load_model(path)
        self.n_classes_ = self._Booster.num_class or 2
        self.classes_ = np.arange(self.n_classes_)

    def _encode(self, y):
        y = np.asarray(y)
        idx = np.searchsorted(self.classes_, y)
        idx = np.clip(idx, 0, len(self.classes_) - 1)
        unknown = self.classes_[idx] != y
        if unknown.any():
            raise ValueError(f"labels {np.unique(y[unknown])[:5].tolist()} were not seen in "
                             f"fit (classes_ = {self.classes_.tolist()})")
        return idx.astype(np.float64)

    def predict_proba(self, X, iteration_range=None) -> np.ndarray:
        """Class probabilities [n, n_classes] (binary: [1 - p, p])."""
        p = self._margin_or_prediction(X, False, iteration_range)
        if self.get_booster().objective.name == "multi:softmax":
            raise ValueError("predict_proba needs objective multi:softprob, not multi:softmax")
        if p.ndim == 1:
            return np.column_stack([1.0 - p, p])
        return p

    def predict(self, X, output_margin: bool = False, iteration_range=None) -> np.ndarray:
        if output_margin:
            return self._margin_or_prediction(X, True, iteration_range)
        if self.get_booster().objective.name == "multi:softmax":
            idx = self._margin_or_prediction(X, False, iteration_range).astype(np.int64)
        else:
            idx = np.argmax(self.predict_proba(X, iteration_range), axis=1)
        return self.classes_[idx]

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy (weighted by sample_weight)."""
        hit = (self.predict(X) == np.asarray(y)).astype(np.float64)
        return float(np.average(hit, weights=sample_weight))
