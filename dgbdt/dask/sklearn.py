"""scikit-learn style estimators on Dask: DaskGBDTRegressor, DaskGBDTClassifier and
DaskGBDTRanker.

The in-process estimators (dgbdt.sklearn) with dask collections in and out, as
xgboost.dask's DaskXGBRegressor / DaskXGBClassifier:

    est = DaskGBDTClassifier(n_estimators=100, max_depth=6)
    est.client = client                      # optional: default, distributed's default client
    est.fit(X, y, eval_set=[(X_val, y_val)])  # X: dask DataFrame or array; y: Series or array
    proba = est.predict_proba(X_test)         # lazy dask array [n, n_classes]

Same constructor parameters, get_params / set_params and learned attributes as the in-process
estimators (they share dgbdt.sklearn._GBDTModel); ``client`` is an attribute, not a parameter
(so clone gives an estimator on the default client, as in xgboost.dask). Training builds
DaskDatasets and runs dgbdt.dask.train, so the model is the same bytes as the in-process
estimator's on the same rows. Predictions are lazy (dgbdt.dask.predict): 1-D results follow the
input (dask Series for a DataFrame, dask array for an array); 2-D results (predict_proba,
multi-output margins) are dask arrays, as in xgboost.dask and scikit-learn (from a DataFrame
their row chunk sizes are unknown until computed).

The classifier finds ``classes_`` with one small distributed computation (the distinct labels),
encodes the labels on the workers (np.searchsorted per partition) and maps predicted class
indices back to ``classes_``, so string labels work.
"""
from __future__ import annotations

import functools

import numpy as np

from ..data.input import is_nan_missing
from ..data.labels import (distinct, encode, encode_block, encode_partition, host_values,
                           label_values, labels_from_prediction, labels_partition, part_distinct,
                           proba_columns, series_like)
from ..metrics.registry import is_metric_custom
from ..sklearn import (_accuracy, _booster_of, _callables, _ClassifierBase, _Forest, _GBDTModel,
                       _r2_score, _rank_queries, _ranking_params, _RegressorMixin,
                       _regression_params)
from .blocks import is_dask_array, is_dask_frame, is_dask_series
from .class_labels import ClassLabels
from .data import DaskDataset
from .predict import predict as _dask_predict
from .train import train as _dask_train
from .worker import client_in_reach, off_loop, on_loop


def _label_column(y):
    """y as a 1-D collection: a one-column dask DataFrame becomes its Series."""
    if is_dask_frame(y):
        if len(y.columns) != 1:
            raise ValueError(f"y must be 1-D; got a DataFrame with {len(y.columns)} columns")
        return y[y.columns[0]]
    return y


def _distinct_labels(client, y) -> np.ndarray:
    """The sorted distinct labels of y (computed on the cluster for dask collections)."""
    if is_dask_array(y):
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D class labels; got shape {y.shape}")
        import dask.array as da
        values = client.compute(da.unique(y)).result()
        if hasattr(values, "__cuda_array_interface__"):
            import cupy
            values = cupy.asnumpy(values)
        return distinct(label_values(values))
    if is_dask_series(y):
        # each partition's distinct labels as a small host array (missing labels raise on
        # the workers, in label_values), merged here: no cuDF on the client, where a first
        # reduction loads libcudf's kernels, a slow start to a first fit
        # (docs/benchmarks-archive.md#figures-behind-code-choices)
        from dask import delayed
        parts = [p for p in client.compute([delayed(part_distinct)(b) for b in y.to_delayed()],
                                           sync=True) if p.shape[0]] or [np.zeros(0)]
        return distinct(np.concatenate(parts))
    return distinct(label_values(y))


def _as_array(out):
    """A 2-D prediction as a dask array (a DataFrame's row chunks are unknown until computed)."""
    return out.to_dask_array() if is_dask_frame(out) else out


def _reaching(method):
    """An estimator method run with client_in_reach's client (inside a task: its worker's,
    the task's thread seceded while the training's tasks run), which ``client`` gives; on an
    asynchronous client's loop, an awaitable of it (dgbdt.dask.worker.off_loop)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if on_loop(self._client):
            return off_loop(self._client, call, self, *args, **kwargs)
        with client_in_reach(self._client) as c:
            self._active = c
            try:
                return method(self, *args, **kwargs)
            finally:
                self._active = None
    return call


def _awaitable(method):
    """A method that calls the client (a prediction's datasets, a score's compute): on an
    asynchronous client's loop, an awaitable of it (dgbdt.dask.worker.off_loop)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return off_loop(self._client, method, self, *args, **kwargs)
    return call


class _DaskGBDTModel(_GBDTModel):
    """The Dask side of the estimators: the client, fitting and predicting on collections.
    With an asynchronous client (``est.client = client``) their methods that reach the
    cluster return awaitables, and ``await est`` is the estimator (xgboost.dask's habit)."""

    def __await__(self):
        async def itself():
            return self
        return itself().__await__()

    _client = None

    @property
    def client(self):
        """The distributed Client used by fit (and predict with base_margin); when unset,
        distributed's client at the time of the call: the default one, or inside a task its
        worker's (a fit may run in a task, as XGBoost's may)."""
        if self._client is not None:
            return self._client
        active = self.__dict__.get("_active")       # a fit's (_reaching)
        if active is not None:
            return active
        from distributed import get_client
        return get_client()

    @client.setter
    def client(self, value) -> None:
        self._client = value

    def set_params(self, **params):
        if "client" in params:           # as in xgboost.dask (set_params sets attributes)
            self.client = params.pop("client")
        return super().set_params(**params)

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_client", None)        # a Client does not pickle
        state.pop("_active", None)
        return state

    def _fit(self, X, y, params, sample_weight, base_margin, eval_set,
             sample_weight_eval_set, verbose, base_margin_eval_set=None, xgb_model=None,
             queries=None, eval_queries=None):
        """``xgb_model``: a model to continue (a Booster, a fitted estimator, or a model file
        of dgbdt's or XGBoost's format): its trees first, n_estimators new rounds after.
        ``queries`` / ``eval_queries``: the ranker's qid= arguments (dicts) of the training
        rows and of each eval_set pair. ``params``: the training's parameters, or a
        ClassLabels whose classes, computed with the datasets, give them (the classifier's
        DataFrame fit)."""
        client = self.client
        # a classifier's classes found with the datasets: the params come from them after
        enc = params if isinstance(params, ClassLabels) else None
        pairs = self._eval_pairs(eval_set, sample_weight_eval_set, base_margin_eval_set)
        queries = queries or {}
        eval_queries = eval_queries or [{}] * len(pairs)
        # the training data as an eval set is scored from its margins; the others are made
        # with it in one go (DaskDataset.together: a parquet read that random_split cut into
        # both is read once)
        own = [ex is X and ey is y and w is sample_weight and m is base_margin
               and q.get("qid") is queries.get("qid")
               for (ex, ey, w, m, _), q in zip(pairs, eval_queries)]

        def spec(i, ex, ey, w, m, q) -> dict:
            """DaskDataset's arguments of the training (i = 0) or an eval set's rows."""
            out = dict(data=ex, label=_label_column(ey), weight=w, base_margin=m,
                       **self._data_args(), **q)
            if enc is None:
                out["label"] = self._encode(out["label"])
            else:       # the training's labels define the classes
                out["label_classes"] = (enc, i == 0)
            return out
        made = self._datasets(client, [
            spec(i, *args) for i, args in enumerate(
                [(X, y, sample_weight, base_margin, queries)]
                + [(*pair[:4], q) for pair, q, mine in zip(pairs, eval_queries, own)
                   if not mine])])
        if enc is not None:
            params = self._set_classes(enc.value())
        dtrain, others = made[0], iter(made[1:])
        evals = [(dtrain if mine else next(others), pair[4]) for pair, mine in zip(pairs, own)]
        obj, metric, _ = _callables(self.objective, self.eval_metric)
        if metric is not None and not is_metric_custom(metric):
            raise NotImplementedError(
                "a function as eval_metric is not supported on Dask (it would need every "
                "prediction in one place): use dgbdt's metrics (e.g. eval_metric='auc') or a "
                "dgbdt.metrics.registry.Metric instance (a row loss or a mergeable summary, exact "
                "across workers)")
        out = _dask_train(client, params, dtrain, self._rounds(), evals=evals,
                          early_stopping_rounds=self.early_stopping_rounds,
                          verbose_eval=verbose, xgb_model=_booster_of(xgb_model), obj=obj,
                          checkpoint_dir=self.checkpoint_dir,
                          checkpoint_interval=self.checkpoint_interval, custom_metric=metric,
                          callbacks=self._fit_callbacks())
        self._Booster = out["booster"]
        self._Booster.config_params = params     # what save_config reports
        self.evals_result_ = out["history"]
        self._set_fit_features(dtrain.num_col,
                               dtrain.feature_names if is_dask_frame(X) else None)
        return self

    def _datasets(self, client, specs: list[dict]) -> list:
        """The DaskDatasets of a fit (each spec: DaskDataset's arguments but ``client``),
        computed in one call (DaskDataset.together)."""
        return DaskDataset.together(client, specs)

    def _predict_raw(self, X, output_margin: bool, iteration_range, base_margin):
        """dgbdt.dask.predict's lazy output (with best_iteration unless iteration_range)."""
        booster = self.get_booster()
        data = X
        if base_margin is not None or not is_nan_missing(self._data_args().get("missing")):
            # rows and margins travel together as a DaskDataset (which also marks missing),
            # not persisted: the lazy prediction holds its parts' graphs, not futures that
            # go when the dataset does
            data = DaskDataset(self.client, X, base_margin=base_margin, persist=False,
                               **self._data_args())
            if (data.feature_names is not None and booster.feature_names is not None
                    and data.feature_names != booster.feature_names):
                raise ValueError("feature names differ from the model's")
        return _dask_predict(self._client, booster, data, output_margin=output_margin,
                             iteration_range=self._iteration_range(iteration_range))

    @_awaitable
    def apply(self, X, iteration_range=None):
        """Lazy leaf indices of each row in every tree, a dask array [n_rows, n_trees] with
        known row chunks (the rows as a DaskDataset), as xgboost.dask's apply; the iterations
        up to best_iteration unless iteration_range is given."""
        data = DaskDataset(self.client, X, persist=False, **self._data_args())
        return _dask_predict(self._client, self.get_booster(), data, pred_leaf=True,
                             iteration_range=self._iteration_range(iteration_range))

    def _compute(self, *objs) -> list:
        """numpy values of the dask collections among objs, computed together on the cluster."""
        import dask
        lazy = [i for i, o in enumerate(objs) if dask.is_dask_collection(o)]
        out = list(objs)
        if lazy:
            values = self.client.compute([objs[i] for i in lazy], sync=True)
            for i, v in zip(lazy, values):
                out[i] = v
        return [host_values(o) for o in out]


class DaskGBDTRegressor(_RegressorMixin, _DaskGBDTModel):
    """Gradient-boosted trees for regression on Dask collections (reg:squarederror default)."""

    @_reaching
    def fit(self, X, y, sample_weight=None, base_margin=None, eval_set=None,
            sample_weight_eval_set=None, verbose: bool | int = False,
            base_margin_eval_set=None, xgb_model=None) -> "DaskGBDTRegressor":
        return self._fit(X, y, _regression_params(self), sample_weight, base_margin, eval_set,
                         sample_weight_eval_set, verbose, base_margin_eval_set, xgb_model)

    @_awaitable
    def predict(self, X, output_margin: bool = False, iteration_range=None, *,
                validate_features: bool = True, base_margin=None):
        """Lazy predictions: a dask Series for a DataFrame, a dask array for an array.
        Feature names are always checked (validate_features is accepted for xgboost code)."""
        return _as_array(self._predict_raw(X, output_margin, iteration_range, base_margin))

    @_awaitable
    def score(self, X, y, sample_weight=None) -> float:
        """Coefficient of determination R^2 of the predictions (computed)."""
        y, pred, w = self._compute(y, self.predict(X), sample_weight)
        return _r2_score(y, pred, w)


class DaskGBDTClassifier(_ClassifierBase, _DaskGBDTModel):
    """Gradient-boosted trees for classification on Dask collections (binary:logistic or
    multi:softprob); labels may be any sortable values (numbers, strings)."""

    @_reaching
    def fit(self, X, y, sample_weight=None, base_margin=None, eval_set=None,
            sample_weight_eval_set=None, verbose: bool | int = False,
            base_margin_eval_set=None, xgb_model=None) -> "DaskGBDTClassifier":
        if self._classes_with_datasets and is_dask_frame(X) and is_dask_series(_label_column(y)):
            params = ClassLabels()      # found in the datasets' graph (dgbdt.dask.class_labels)
        else:
            params = self._set_classes(_distinct_labels(self.client, _label_column(y)))
        return self._fit(X, y, params, sample_weight, base_margin, eval_set,
                         sample_weight_eval_set, verbose, base_margin_eval_set, xgb_model)

    #: whether a DataFrame fit finds its classes with its datasets (DaskDataset.together);
    #: the XGBoost-compatible estimators make their datasets one by one (DaskQuantileDMatrix)
    _classes_with_datasets = True

    def _encode(self, y):
        """Labels -> class indices, per partition on the workers; unseen labels raise there."""
        classes = self.classes_
        if is_dask_array(y):
            if y.ndim != 1:
                raise ValueError(f"y must be 1-D class labels; got shape {y.shape}")
            return y.map_blocks(encode_block, classes=classes, dtype=np.float64)
        if is_dask_series(y):
            meta = series_like(y._meta, y._meta.iloc[:0].astype(np.float64), y.name)
            return y.map_partitions(encode_partition, classes=classes, meta=meta)
        return encode(label_values(y), classes)

    @_awaitable
    def predict_proba(self, X, iteration_range=None, *, validate_features: bool = True,
                      base_margin=None):
        """Lazy class probabilities, a dask array [n, n_classes] (binary: [1 - p, p])."""
        self._check_proba()
        p = self._predict_raw(X, False, iteration_range, base_margin)
        p = p.to_dask_array() if is_dask_series(p) else _as_array(p)
        if p.ndim == 1:
            return p.map_blocks(proba_columns, new_axis=1, chunks=(p.chunks[0], (2,)),
                                dtype=np.float64)
        return p

    @_awaitable
    def predict(self, X, output_margin: bool = False, iteration_range=None, *,
                validate_features: bool = True, base_margin=None):
        """Lazy predicted labels (from classes_): a dask Series for a DataFrame, else a dask
        array. With output_margin, the raw margins (2-D ones as a dask array)."""
        p = self._predict_raw(X, output_margin, iteration_range, base_margin)
        if output_margin:
            return _as_array(p)
        classes, softmax = self.classes_, self._is_softmax()
        if is_dask_frame(p) or is_dask_series(p):
            meta = series_like(p._meta, np.zeros(0, classes.dtype), "prediction")
            return p.map_partitions(labels_partition, classes=classes, softmax=softmax,
                                    meta=meta)
        kw = dict(classes=classes, softmax=softmax, dtype=classes.dtype)
        if p.ndim == 1:
            return p.map_blocks(labels_from_prediction, **kw)
        return p.map_blocks(labels_from_prediction, drop_axis=1, **kw)

    @_awaitable
    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy (weighted by sample_weight), computed."""
        y, pred, w = self._compute(y, self.predict(X), sample_weight)
        return _accuracy(y, pred, w)


class DaskGBDTRFRegressor(_Forest, DaskGBDTRegressor):
    """A random forest regressor on Dask collections (xgboost.dask.DaskXGBRFRegressor;
    dgbdt.sklearn._Forest)."""


class DaskGBDTRFClassifier(_Forest, DaskGBDTClassifier):
    """A random forest classifier on Dask collections (xgboost.dask.DaskXGBRFClassifier;
    dgbdt.sklearn._Forest)."""


class DaskGBDTRanker(_DaskGBDTModel):
    """Learning to rank on Dask collections (default objective rank:ndcg), as
    xgboost.dask.DaskXGBRanker: ``fit(X, y, qid=...)`` with ``qid`` partitioned like X, each
    query within one partition and sorted there (DaskDataset checks it); ``eval_set`` with
    ``eval_qid``. ``predict`` gives the ranking scores, lazily."""

    @_reaching
    def fit(self, X, y, *, group=None, qid=None, sample_weight=None, base_margin=None,
            eval_set=None, eval_group=None, eval_qid=None, verbose: bool | int = False,
            xgb_model=None, sample_weight_eval_set=None,
            base_margin_eval_set=None) -> "DaskGBDTRanker":
        queries, eval_queries = _rank_queries(group, qid, eval_set, eval_group, eval_qid,
                                              allow_group=False)
        return self._fit(X, y, _ranking_params(self), sample_weight, base_margin, eval_set,
                         sample_weight_eval_set, verbose, base_margin_eval_set, xgb_model,
                         queries, eval_queries)

    @_awaitable
    def predict(self, X, output_margin: bool = False, iteration_range=None, *,
                validate_features: bool = True, base_margin=None):
        """Lazy ranking scores: a dask Series for a DataFrame, a dask array for an array."""
        return _as_array(self._predict_raw(X, output_margin, iteration_range, base_margin))
