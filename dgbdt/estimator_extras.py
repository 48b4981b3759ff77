"""What dgbdt's estimators (dgbdt.sklearn) share with XGBoost's scikit-learn interface: its
methods (get_xgb_params, intercept_, apply, ...), the helpers of their fit (input checks,
eval_metric lists, random states, the estimator type saved with a model), and XGBoost's rule
for keyword arguments passed by position."""
from __future__ import annotations

import contextlib

import functools
import inspect
import json
import warnings

import numpy as np

DEFAULT_N_ESTIMATORS = 100     # XGBoost's rounds when n_estimators is None
# estimator arguments that are not training parameters (XGBoost's _wrapper_params, and
# dgbdt's checkpoint arguments)
_WRAPPER = {"importance_type", "kwargs", "missing", "n_estimators", "enable_categorical",
            "early_stopping_rounds", "callbacks", "feature_types", "feature_weights",
            "checkpoint_dir", "checkpoint_interval"}


def seed_of(random_state):
    """A random state as XGBoost's seed: numpy's RandomState / Generator draw an int (as
    XGBoost's get_params does), anything else as given."""
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int32).max))
    return random_state


def metric_names(metrics) -> list[str] | None:
    """The names in a list of eval_metric entries (metric names and at most one callable, as
    XGBoost allows; the callable is the custom metric); None when there are none."""
    names, custom = [], 0
    for m in metrics:
        if isinstance(m, str):
            names.append(m)
        elif callable(m):
            custom += 1
        else:
            raise TypeError(f"Invalid type for the `eval_metric`: {type(m).__name__} "
                            f"({m!r}); a metric name (str) or a callable")
    if custom > 1:
        raise NotImplementedError("Using multiple custom metrics is not yet supported.")
    return names or None


def series_as_frame(X):
    """A pandas Series as a one-column DataFrame (XGBoost reads a Series as one feature);
    anything else as given."""
    if type(X).__name__ == "Series" and hasattr(X, "to_frame"):
        return X.to_frame()
    return X


def check_fit_input(est, X, y) -> None:
    """fit's X and y present, refused with XGBoost's words otherwise."""
    if X is None:
        raise TypeError("Invalid data type for X: NoneType; fit needs the training rows")
    if y is None:
        if est._get_type() == "classifier":
            raise ValueError("Invalid classes inferred from unique values of `y`: y is None; "
                             "fit needs the class labels")
        raise ValueError("fit needs the labels: y is None")
    if isinstance(y, np.ndarray) and y.dtype.kind == "f":
        bad = ~np.isfinite(y)
        if bad.any():    # XGBoost's words; scikit-learn's checks look for them too
            raise ValueError("Input y contains NaN, infinity or a value too large (first at "
                             f"row {int(np.flatnonzero(bad.ravel())[0]) // max(1, y[:1].size)}"
                             "): labels must be finite numbers")


def save_with_type(est, path) -> None:
    """Save the estimator's Booster with its type in the ``scikit_learn`` attribute."""
    booster = est.get_booster()
    booster.set_attr(scikit_learn=json.dumps({"_estimator_type": est._get_type()}))
    try:
        booster.save_model(path)
    finally:
        booster.set_attr(scikit_learn=None)


def load_with_type(est, path):
    """The Booster of a model file; TypeError when saved by an estimator of another type."""
    from .model.booster import load_model
    booster = load_model(path)
    meta = booster.attr("scikit_learn")
    if meta is not None:
        saved = json.loads(meta).get("_estimator_type")
        if saved is not None and saved != est._get_type():
            raise TypeError(f"Loading an estimator with different type. Expecting: "
                            f"{est._get_type()}, got: {saved}")
        booster.set_attr(scikit_learn=None)
    return booster


class XGBMethods:
    """XGBoost's XGBModel methods on dgbdt's estimators."""

    _VERBOSE = False        # fit's verbose when not given (XGBoost's estimators: True)
    _TYPE = None            # the estimator type when scikit-learn's tags do not say it
    _MORE_TAGS: dict = {}   # the estimator kind's own scikit-learn tags (see _more_tags)

    def _verbose(self, verbose):
        return self._VERBOSE if verbose is None else verbose

    def get_num_boosting_rounds(self) -> int:
        """The boosting rounds of a fit: n_estimators (100 when None)."""
        return DEFAULT_N_ESTIMATORS if self.n_estimators is None else self.n_estimators

    def get_xgb_params(self) -> dict:
        """The training parameters among get_params (not the estimator's own arguments nor
        callables), a numpy random state as its int seed."""
        out = {k: v for k, v in self.get_params().items()
               if k not in _WRAPPER and not callable(v)}
        if "random_state" in out:
            out["random_state"] = seed_of(out["random_state"])
        return out

    def _more_tags(self) -> dict:
        """scikit-learn's tags as a dict (its pre-1.6 interface; XGBoost's values): the
        estimators read NaN (missing), scipy.sparse and, with enable_categorical, category
        columns themselves, so scikit-learn's input validation checks do not apply; the
        regressors fit several targets, the classifiers several labels (_MORE_TAGS; the
        classifiers' tag is set by their __sklearn_tags__, after scikit-learn's mixin's)."""
        tags = {"allow_nan": True, "no_validation": True, "sparse": True,
                "categorical": bool(self.enable_categorical),
                "string": bool(self.enable_categorical)}
        tags.update(self._MORE_TAGS)
        return tags

    def __sklearn_tags__(self):
        """scikit-learn's (1.6+) Tags of the base classes with _more_tags' values."""
        base = getattr(super(), "__sklearn_tags__", None)
        if base is None:
            import sklearn
            raise AttributeError("__sklearn_tags__() should not be called when using "
                                 f"scikit-learn<1.6. Detected version: {sklearn.__version__}")
        tags, more = base(), self._more_tags()
        tags.non_deterministic = more.get("non_deterministic", False)
        tags.no_validation = more["no_validation"]
        tags.input_tags.allow_nan = more["allow_nan"]
        tags.input_tags.sparse = more["sparse"]
        tags.input_tags.categorical = more["categorical"]
        if "multioutput" in more:
            tags.target_tags.multi_output = more["multioutput"]
            tags.target_tags.single_output = not more["multioutput_only"]
        return tags

    def _get_type(self) -> str:
        """"classifier", "regressor" or "ranker" (XGBoost's _get_type)."""
        if self._TYPE is not None:
            return self._TYPE
        return self.__sklearn_tags__().estimator_type

    @property
    def intercept_(self) -> np.ndarray:
        """The intercept (XGBoost's base_score: in the objective's prediction space), one per
        output, float32; a gblinear model's: its biases (XGBoost's, without base_score)."""
        b = self.get_booster()
        if b.linear is not None:
            return np.array(b.linear.bias, dtype=np.float32)
        return np.asarray(b.objective.margin_to_base_score(b.base_margin), dtype=np.float32)

    @property
    def coef_(self):
        """A gblinear model's weights: [n_features] for one output, [n_classes,
        n_features] for a classifier of more than 2 classes (row k: class k's weights), and
        [n_features * K] (feature-major) for another model of K > 1 outputs, as XGBoost's
        shapes. A tree model raises AttributeError, as XGBoost's."""
        b = self.get_booster()
        if b.linear is None:
            raise AttributeError(f"Coefficients are not defined for Booster type "
                                 f"{b.booster_type}")
        W = np.array(b.linear.coefficients, dtype=np.float64)
        n_classes = getattr(self, "n_classes_", None)
        if n_classes is not None and n_classes > 2:
            return np.ascontiguousarray(W.T)
        return W[:, 0] if W.shape[1] == 1 else W.reshape(-1)

    def _predict_input(self, X):
        """The rows to predict as the Booster reads them (a Series: one column)."""
        return series_as_frame(X)

    def apply(self, X, iteration_range=None) -> np.ndarray:
        """The leaf index of each row in every tree ([n_rows, n_trees]), as XGBoost's
        apply; the iterations up to best_iteration unless iteration_range is given."""
        from .data.dataset import Dataset
        booster = self.get_booster()
        X = self._predict_input(X)
        if booster.feature_types is not None and "c" in booster.feature_types and \
                not self.enable_categorical:
            raise ValueError("this model has categorical features: apply needs "
                             "`enable_categorical` True to read their columns "
                             "(set_params(enable_categorical=True))")
        # a categorical model reads a frame itself (its categories' codes); else a Dataset,
        # which refuses category columns unless enable_categorical
        data = X if booster.feature_types is not None and self.enable_categorical else \
            Dataset(X, **self._data_args())
        return booster.predict(data, pred_leaf=True,
                               iteration_range=self._iteration_range(iteration_range))


def positional_warned(fn=None, *, positional_wins: bool = False):
    """XGBoost's rule for arguments after ``*``: still taken by position, in the signature's
    order, with a FutureWarning that says to pass them by keyword (``xgb.train(params, dtrain,
    10, [(dvalid, "valid")])`` is the most common line of XGBoost code). An argument given
    both ways: TypeError, or with ``positional_wins`` the positional value (XGBoost's
    estimators' constructors do that)."""
    if fn is None:
        return functools.partial(positional_warned, positional_wins=positional_wins)
    sig = inspect.signature(fn)
    positional = [n for n, p in sig.parameters.items()
                  if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD]
    keyword = [n for n, p in sig.parameters.items() if p.kind == inspect.Parameter.KEYWORD_ONLY]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        extra = len(args) - len(positional)
        if extra > 0:
            if extra > len(keyword):
                raise TypeError(f"{fn.__name__}() takes at most "
                                f"{len(positional) + len(keyword)} positional arguments; "
                                f"got {len(args)}")
            names = keyword[:extra]
            warnings.warn(f"Pass `{', '.join(names)}` as keyword args.", FutureWarning,
                          stacklevel=2)
            for name, value in zip(names, args[len(positional):]):
                if name in kwargs and not positional_wins:
                    raise TypeError(f"{fn.__name__}() got multiple values for argument "
                                    f"{name!r}")
                kwargs[name] = value
            args = args[:len(positional)]
        return fn(*args, **kwargs)
    return call


#: scikit-learn's estimator checks that fit without the rows' queries, which a ranker needs
RANKER_FIT_CHECKS = (
    "check_all_zero_sample_weights_error", "check_dict_unchanged",
    "check_dont_overwrite_parameters", "check_estimator_sparse_array",
    "check_estimator_sparse_matrix", "check_estimator_sparse_tag", "check_estimators_dtypes",
    "check_estimators_fit_returns_self", "check_estimators_overwrite_params",
    "check_estimators_pickle", "check_f_contiguous_array_estimator", "check_fit2d_1feature",
    "check_fit2d_1sample", "check_fit_check_is_fitted", "check_fit_idempotent",
    "check_fit_score_takes_y", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_pipeline_consistency",
    "check_positive_only_tag_during_fit", "check_readonly_memmap_input",
    "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weight_equivalence_on_sparse_data", "check_sample_weights_list",
    "check_sample_weights_not_an_array", "check_sample_weights_not_overwritten",
    "check_sample_weights_pandas_series", "check_sample_weights_shape")


def expected_failed_checks(est) -> dict[str, str]:
    """scikit-learn's estimator checks that ``est`` fails, each with the reason: the
    ``expected_failed_checks`` of sklearn.utils.estimator_checks.check_estimator and
    parametrize_with_checks (scikit-learn 1.6+)."""
    out = {}
    if est._get_type() == "ranker":
        out.update(dict.fromkeys(RANKER_FIT_CHECKS, "scikit-learn's check fits without the "
                                 "rows' queries; a ranker needs qid= or group= (XGBoost's "
                                 "XGBRanker fails it the same way)"))
    subsample = est.get_params().get("subsample")
    if subsample is not None and subsample < 1:
        for check in ("check_sample_weight_equivalence_on_dense_data",
                      "check_sample_weight_equivalence_on_sparse_data"):
            out.setdefault(check, f"subsample={subsample} draws rows: a row given twice is "
                           "drawn twice, independently, unlike one row of weight 2")
    return out


@contextlib.contextmanager
def fit_feature_weights(est, feature_weights):
    """XGBoost's fit(feature_weights=): deprecated there (its warning), an error beside the
    constructor's; the estimator's parameter holds them for this fit only."""
    if feature_weights is None:
        yield
        return
    if est.feature_weights is not None:
        raise ValueError("2 different `feature_weights` are provided.  Use the one in "
                         "constructor or `set_params` instead.")
    warnings.warn("`feature_weights` in `fit` method is deprecated for better compatibility "
                  "with scikit-learn, use `feature_weights` in constructor or`set_params` "
                  "instead.", UserWarning, stacklevel=4)
    est.feature_weights = feature_weights
    try:
        yield
    finally:
        est.feature_weights = None
