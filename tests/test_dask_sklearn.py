"""DaskGBDTRegressor / DaskGBDTClassifier: the in-process estimators on Dask collections.

On a 2-worker in-process cluster (conftest's ``client2``), each estimator fitted on dask
collections gives the in-process estimator's model byte for byte, and its lazy predictions
compute to the in-process predictions. Also: eval_set / evals_result, early stopping, the
client attribute, get_params / set_params and clone.
"""
import pickle

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")
pytest.importorskip("sklearn")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
from sklearn.base import clone  # noqa: E402

from dgbdt import Dataset, GBDTClassifier, GBDTRegressor, ParameterError  # noqa: E402
from dgbdt.dask import DaskGBDTClassifier, DaskGBDTRegressor  # noqa: E402

N, F = 300, 4
NAMES = ["a", "b", "c", "d"]
CHUNKS = (90, 110, 100)          # three uneven partitions over two workers


def make(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, F)).astype(np.float32)
    y = X[:, 0] * 2 + np.sin(X[:, 1]) + rng.normal(scale=0.2, size=N)
    yb = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=N) > 0).astype(int)
    y3 = np.digitize(X[:, 0] + rng.normal(scale=0.3, size=N), [-0.5, 0.5])
    return X, y, yb, y3


def darr(v):
    return da.from_array(v, chunks=(CHUNKS,) + v.shape[1:])


def dframe(X):
    return dd.from_pandas(pd.DataFrame(X, columns=NAMES), npartitions=3, sort=False)


def dseries(v):
    return dd.from_pandas(pd.Series(v), npartitions=3, sort=False)


def get(client, x):
    assert dask.is_dask_collection(x)   # predictions are lazy
    return client.compute(x).result()


def same_model(a, b):
    assert a.get_booster().save_raw() == b.get_booster().save_raw()


# -- regressor -----------------------------------------------------------------------------
def test_regressor_dask_array_matches_in_process(client2):
    X, y, _, _ = make()
    kw = dict(n_estimators=5, max_depth=3, learning_rate=0.3, eval_metric=["rmse", "mae"])
    est = DaskGBDTRegressor(**kw)
    est.client = client2
    dX, dy = darr(X), darr(y)
    dXv, dyv = darr(X[::-1].copy()), darr(y[::-1].copy())
    assert est.fit(dX, dy, eval_set=[(dX, dy), (dXv, dyv)]) is est
    ref = GBDTRegressor(**kw).fit(X, y, eval_set=[(X, y), (X[::-1], y[::-1])])
    same_model(est, ref)
    assert est.evals_result() == ref.evals_result()
    assert list(est.evals_result()) == ["validation_0", "validation_1"]
    pred = est.predict(dX)
    assert isinstance(pred, da.Array) and pred.chunks == (CHUNKS,)
    np.testing.assert_array_equal(get(client2, pred), ref.predict(X))
    np.testing.assert_array_equal(get(client2, est.predict(dX, output_margin=True)),
                                  ref.predict(X, output_margin=True))
    assert est.n_features_in_ == 4 and not hasattr(est, "feature_names_in_")
    np.testing.assert_array_equal(est.feature_importances_, ref.feature_importances_)
    assert est.score(dX, dy) == ref.score(X, y)
    assert est.best_iteration is None


def test_regressor_dataframe_weights_margins(client2):
    X, y, _, _ = make(1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, N)
    bm = np.linspace(-1, 1, N)
    df, pdf = dframe(X), pd.DataFrame(X, columns=NAMES)
    est = DaskGBDTRegressor(n_estimators=4, max_depth=3)
    est.client = client2
    est.fit(df, dseries(y), sample_weight=dseries(w), base_margin=dseries(bm))
    ref = GBDTRegressor(n_estimators=4, max_depth=3).fit(pdf, y, sample_weight=w,
                                                         base_margin=bm)
    same_model(est, ref)
    assert list(est.feature_names_in_) == NAMES
    pred = est.predict(df)
    assert isinstance(pred, dd.Series)        # 1-D: a Series aligned with the DataFrame
    got = get(client2, pred)
    pd.testing.assert_index_equal(got.index, pdf.index)
    np.testing.assert_array_equal(got.to_numpy(), ref.predict(pdf))
    # base_margin at prediction time
    with_bm = est.predict(df, base_margin=dseries(bm))
    np.testing.assert_array_equal(get(client2, with_bm),
                                  ref.get_booster().predict(Dataset(pdf, base_margin=bm)))
    assert est.score(df, dseries(y), sample_weight=dseries(w)) == \
        ref.score(pdf, y, sample_weight=w)


def test_regressor_early_stopping(client2):
    X, y, _, _ = make(3)
    noisy = y + np.random.default_rng(5).normal(scale=3.0, size=N)
    kw = dict(n_estimators=60, learning_rate=0.8, max_depth=5, early_stopping_rounds=3)
    est = DaskGBDTRegressor(**kw)
    est.client = client2
    tr, va = slice(0, 200), slice(200, N)
    dXt = da.from_array(X[tr], chunks=100)
    dXv = da.from_array(X[va], chunks=50)
    est.fit(dXt, da.from_array(noisy[tr], chunks=100),
            eval_set=[(dXv, da.from_array(y[va], chunks=50))])
    ref = GBDTRegressor(**kw).fit(X[tr], noisy[tr], eval_set=[(X[va], y[va])])
    same_model(est, ref)
    best = est.best_iteration
    assert best is not None and best == ref.best_iteration and est.best_score == ref.best_score
    assert est.get_booster().num_boosted_rounds() == best + 4 < 60
    assert est.evals_result() == ref.evals_result()
    dX = darr(X)
    np.testing.assert_array_equal(get(client2, est.predict(dX)), ref.predict(X))
    np.testing.assert_array_equal(get(client2, est.predict(dX, iteration_range=(0, 2))),
                                  ref.predict(X, iteration_range=(0, 2)))
    with pytest.raises(ValueError, match="early_stopping_rounds needs"):
        DaskGBDTRegressor(n_estimators=3, early_stopping_rounds=2).set_params(
            client=client2).fit(dX, darr(y))


# -- classifier ----------------------------------------------------------------------------
@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_string_labels_dataframe(client2, n_classes):
    X, _, yb, y3 = make(4)
    labels = (np.array(["no", "yes"])[yb] if n_classes == 2
              else np.array(["red", "green", "blue"])[y3])
    df, pdf, dy = dframe(X), pd.DataFrame(X, columns=NAMES), dseries(labels)
    est = DaskGBDTClassifier(n_estimators=4, max_depth=3)
    est.client = client2
    est.fit(df, dy, eval_set=[(df, dy)])
    ref = GBDTClassifier(n_estimators=4, max_depth=3).fit(pdf, labels, eval_set=[(pdf, labels)])
    same_model(est, ref)
    np.testing.assert_array_equal(est.classes_, ref.classes_)
    assert est.n_classes_ == n_classes
    assert est.get_booster().objective.name == ("binary:logistic" if n_classes == 2
                                                else "multi:softprob")
    assert est.evals_result() == ref.evals_result()
    pred = est.predict(df)
    assert isinstance(pred, dd.Series)
    got = get(client2, pred)
    pd.testing.assert_index_equal(got.index, pdf.index)
    np.testing.assert_array_equal(got.to_numpy(), ref.predict(pdf))
    proba = est.predict_proba(df)
    assert isinstance(proba, da.Array) and proba.ndim == 2 and proba.shape[1] == n_classes
    np.testing.assert_array_equal(get(client2, proba), ref.predict_proba(pdf))
    margin = est.predict(df, output_margin=True)
    np.testing.assert_array_equal(np.asarray(get(client2, margin)),
                                  ref.predict(pdf, output_margin=True))
    assert est.score(df, dy) == ref.score(pdf, labels)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_dask_array(client2, n_classes):
    X, _, yb, y3 = make(6)
    labels = (yb if n_classes == 2 else y3) + 10
    dX, dy = darr(X), darr(labels)
    est = DaskGBDTClassifier(n_estimators=4, max_depth=3)
    est.client = client2
    dXv, dyv = da.from_array(X[:150], chunks=75), da.from_array(labels[:150], chunks=75)
    est.fit(dX, dy, eval_set=[(dXv, dyv)])
    ref = GBDTClassifier(n_estimators=4, max_depth=3).fit(X, labels,
                                                         eval_set=[(X[:150], labels[:150])])
    same_model(est, ref)
    np.testing.assert_array_equal(est.classes_, ref.classes_)
    assert est.evals_result() == ref.evals_result()
    pred, proba = est.predict(dX), est.predict_proba(dX)
    assert isinstance(pred, da.Array) and pred.chunks == (CHUNKS,)
    assert proba.chunks == (CHUNKS, (n_classes,))
    np.testing.assert_array_equal(get(client2, pred), ref.predict(X))
    np.testing.assert_array_equal(get(client2, proba), ref.predict_proba(X))


def test_classifier_early_stopping_softmax_unseen(client2):
    X, _, yb, y3 = make(7)
    flipped = np.where(np.random.default_rng(2).random(N) < 0.3, 1 - yb, yb)
    kw = dict(n_estimators=40, learning_rate=1.0, max_depth=5, early_stopping_rounds=2)
    est = DaskGBDTClassifier(**kw).set_params(client=client2)
    est.fit(da.from_array(X[:200], chunks=100), da.from_array(flipped[:200], chunks=100),
            eval_set=[(da.from_array(X[200:], chunks=50), da.from_array(yb[200:], chunks=50))])
    ref = GBDTClassifier(**kw).fit(X[:200], flipped[:200], eval_set=[(X[200:], yb[200:])])
    same_model(est, ref)
    assert est.best_iteration == ref.best_iteration is not None
    np.testing.assert_array_equal(get(client2, est.predict_proba(darr(X))),
                                  ref.predict_proba(X))
    # multi:softmax: labels from predict, no probabilities
    sm = DaskGBDTClassifier(n_estimators=3, objective="multi:softmax").set_params(client=client2)
    sm.fit(darr(X), darr(y3 + 1))
    smr = GBDTClassifier(n_estimators=3, objective="multi:softmax").fit(X, y3 + 1)
    same_model(sm, smr)
    np.testing.assert_array_equal(get(client2, sm.predict(darr(X))), smr.predict(X))
    with pytest.raises(ValueError, match="multi:softprob"):
        sm.predict_proba(darr(X))
    # labels the training data did not have: raised from the workers
    with pytest.raises(ValueError, match=r"labels \[7\] were not seen in fit"):
        DaskGBDTClassifier(n_estimators=2).set_params(client=client2).fit(
            darr(X), darr(yb), eval_set=[(darr(X), darr(np.where(yb == 1, 7, 0)))])
    with pytest.raises(ValueError, match="single class"):
        DaskGBDTClassifier(n_estimators=2).set_params(client=client2).fit(
            darr(X), darr(np.zeros(N)))
    with pytest.raises(ValueError, match="Unknown label type: continuous .* use "
                                         "DaskGBDTRegressor"):
        DaskGBDTClassifier(n_estimators=2).set_params(client=client2).fit(
            darr(X), darr(np.random.default_rng(3).random(N)))


_LABEL_READS = []


def _counted(part):
    """A label partition, counted each time a worker computes it (in-process cluster)."""
    _LABEL_READS.append(len(part))
    return part


def test_classifier_dataframe_finds_its_classes_with_the_datasets(client2, monkeypatch):
    """A DataFrame fit's classes come from the datasets' own graph (dgbdt.dask.class_labels):
    the client does not compute the labels first, each label partition is computed once for
    the training and the classes, and the model is the in-process one."""
    import dgbdt.dask.sklearn as dsk

    def refuse(*a):
        raise AssertionError("the labels were computed before the datasets")
    monkeypatch.setattr(dsk, "_distinct_labels", refuse)
    X, _, _, y3 = make(11)
    labels = y3 + 5
    df, pdf = dframe(X), pd.DataFrame(X, columns=NAMES)
    dy = dseries(labels).map_partitions(_counted, meta=dseries(labels)._meta)
    _LABEL_READS.clear()
    est = DaskGBDTClassifier(n_estimators=3, max_depth=3).set_params(client=client2)
    est.fit(df, dy, eval_set=[(dframe(X[:100]), dseries(labels[:100]))])
    assert sorted(_LABEL_READS) == sorted(len(p) for p in np.array_split(labels, 3))
    ref = GBDTClassifier(n_estimators=3, max_depth=3).fit(
        pdf, labels, eval_set=[(pdf.iloc[:100], labels[:100])])
    same_model(est, ref)
    np.testing.assert_array_equal(est.classes_, ref.classes_)
    assert est.n_classes_ == 3 and est.evals_result() == ref.evals_result()


def test_classifier_dataframe_label_errors(client2):
    """The DataFrame path's bad labels raise as the array path's do (from the workers or
    from the classes, once the datasets are checked)."""
    X, _, yb, _ = make(12)
    df = dframe(X)

    def fit(y, **kw):
        return DaskGBDTClassifier(n_estimators=2).set_params(client=client2).fit(
            df, dseries(y), **kw)
    with pytest.raises(ValueError, match=r"labels \[7\] were not seen in fit"):
        fit(yb, eval_set=[(df, dseries(np.where(yb == 1, 7, 0)))])
    with pytest.raises(ValueError, match="single class"):
        fit(np.zeros(N))
    with pytest.raises(ValueError, match="Unknown label type: continuous .* use "
                                         "DaskGBDTRegressor"):
        fit(np.random.default_rng(3).random(N))
    with pytest.raises(ValueError, match="(?i)missing|nan"):
        fit(np.where(np.arange(N) == 17, np.nan, yb))


# -- parameters, client, clone -------------------------------------------------------------
@pytest.mark.parametrize("cls", [DaskGBDTRegressor, DaskGBDTClassifier])
def test_params_client_clone(client2, cls):
    X, y, yb, _ = make(8)
    target = y if cls is DaskGBDTRegressor else yb
    est = cls(n_estimators=3, max_depth=2, learning_rate=0.5, min_split_loss=0.1)
    params = est.get_params()
    assert params["n_estimators"] == 3 and params["min_split_loss"] == 0.1
    assert "client" not in params and "kwargs" not in params
    assert set(params) == set(GBDTRegressor(min_split_loss=0.1).get_params())
    assert cls(**params).get_params() == params
    assert est.set_params(tree_method="hist", max_depth=3) is est
    assert est.get_params()["tree_method"] == "hist" and est.max_depth == 3
    # client: None -> distributed's default client at fit time
    assert est._client is None
    with client2.as_current():
        assert est.client is client2
        est.fit(darr(X), darr(target))
    est.client = client2
    assert est.client is client2
    other = cls().set_params(client=client2, n_estimators=2)
    assert other.client is client2 and other.n_estimators == 2 and "client" not in \
        other.get_params()
    # clone: same parameters, not fitted, no client (as in xgboost.dask)
    c = clone(est)
    assert type(c) is cls and c.get_params() == est.get_params()
    assert c._client is None and not hasattr(c, "_Booster")
    c.client = client2
    c.fit(darr(X), darr(target))
    same_model(c, est)
    # pickles without its client
    back = pickle.loads(pickle.dumps(est))
    assert back._client is None
    assert back.get_booster().save_raw() == est.get_booster().save_raw()
    # unknown parameters are validated at fit, as in-process
    bad = cls(n_estimators=2, max_dpeth=3)
    bad.client = client2
    with pytest.raises(ParameterError, match="max_depth"):
        bad.fit(darr(X), darr(target))
