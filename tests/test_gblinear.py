"""booster="gblinear" (dgbdt.engine.gblinear): XGBoost's linear booster, with real XGBoost as the oracle.

XGBoost with nthread=1 runs its coordinate descent in row order (float32 gradients, float32
weights), dgbdt in float64 sums with float32 weights: weights agree to ~1e-6 after 10 rounds
(tolerance here 1e-5 absolute), predictions to ~1e-6.
"""
import json

import numpy as np
import pytest
import scipy.sparse as sp

import dgbdt
from dgbdt.model.booster import load_model
from dgbdt.tree.model import ModelFormatError

xgb = pytest.importorskip("xgboost")

TOL = 1e-5


def _data(n=200, f=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    Z = np.nan_to_num(X)
    return X, Z, rng


def _xgb_weights(b):
    return np.array(json.loads(b.save_raw("json"))["learner"]["gradient_booster"]["model"]
                    ["weights"])


def _both(params, X, y, rounds=10, weight=None):
    params = {"booster": "gblinear", "nthread": 1, **params}
    b = xgb.train(params, xgb.DMatrix(X, y, weight=weight), rounds)
    d = dgbdt.train(params, dgbdt.Dataset(X, y, weight=weight), rounds, verbose_eval=False)
    return b, d


@pytest.mark.parametrize("extra", [
    {"updater": "coord_descent"},
    {},                                                        # shotgun, cyclic
    {"updater": "coord_descent", "lambda": 0.1, "alpha": 0.05},  # elastic net
    {"updater": "coord_descent", "feature_selector": "greedy", "top_k": 3},
    {"updater": "coord_descent", "feature_selector": "thrifty", "top_k": 2},
    {"eta": 0.3, "lambda": 1.0},
])
def test_regression_matches_xgboost(extra):
    X, Z, rng = _data()
    y = Z[:, 0] * 2 - Z[:, 3] + 1 + rng.normal(size=len(Z)) * 0.1
    b, d = _both(extra, X, y)
    np.testing.assert_allclose(d.linear.weights.reshape(-1), _xgb_weights(b), atol=TOL)
    np.testing.assert_allclose(d.predict(X), b.predict(xgb.DMatrix(X)), atol=TOL)


def test_multiclass_weighted_logistic_and_contribs():
    X, Z, rng = _data(300, 6, 1)
    yc = (Z[:, 0] + Z[:, 1] > 0).astype(float) + (Z[:, 2] > 0.5)
    b, d = _both({"objective": "multi:softprob", "num_class": 3}, X, yc, 8)
    np.testing.assert_allclose(d.linear.weights.reshape(-1), _xgb_weights(b), atol=TOL)
    np.testing.assert_allclose(d.predict(X), b.predict(xgb.DMatrix(X)), atol=TOL)
    np.testing.assert_allclose(d.predict(X, pred_contribs=True),
                               b.predict(xgb.DMatrix(X), pred_contribs=True), atol=1e-4)
    yb = (Z[:, 0] > 0).astype(float)
    b, d = _both({"objective": "binary:logistic", "lambda": 0.01, "alpha": 0.001}, X, yb,
                 weight=rng.random(300) + 0.5)
    np.testing.assert_allclose(d.predict(X, output_margin=True),
                               b.predict(xgb.DMatrix(X), output_margin=True), atol=TOL)
    c = d.predict(X, pred_contribs=True)
    np.testing.assert_allclose(c.sum(axis=1), d.predict(X, output_margin=True), atol=1e-9)


def test_sparse_input_same_as_dense():
    X, Z, rng = _data(150, 6, 2)
    y = (Z[:, 1] > 0).astype(float)
    csr = sp.csr_matrix(Z)
    params = {"booster": "gblinear", "objective": "binary:logistic", "nthread": 1}
    d = dgbdt.train(params, dgbdt.Dataset(csr, y), 6, verbose_eval=False)
    dense = dgbdt.train(params, dgbdt.Dataset(Z, y), 6, verbose_eval=False)
    assert d.save_raw() == dense.save_raw()
    b = xgb.train(params, xgb.DMatrix(csr, y), 6)
    np.testing.assert_allclose(d.predict(csr), b.predict(xgb.DMatrix(csr)), atol=TOL)


def test_dump_score_and_no_slicing():
    X, Z, rng = _data()
    y = Z[:, 0] + 1
    b, d = _both({"updater": "coord_descent"}, X, y, 3)
    text = d.get_dump()[0]
    assert text.startswith("bias:\n") and "\nweight:\n" in text
    nums = [float(v) for v in text.split() if v[0] not in "bw"]
    np.testing.assert_allclose(nums, [float(v) for v in b.get_dump()[0].split()
                                      if v[0] not in "bw"], atol=TOL)
    assert json.loads(d.get_dump(dump_format="json")[0]).keys() == {"bias", "weight"}
    assert list(d.get_score()) == list(b.get_score())
    np.testing.assert_allclose(list(d.get_score().values()), list(b.get_score().values()),
                               atol=TOL)
    with pytest.raises(ValueError, match="weight"):
        d.get_score(importance_type="gain")
    with pytest.raises(ValueError, match="Slice"):
        d[0:1]
    with pytest.raises(ValueError, match="leaf"):
        d.predict(X, pred_leaf=True)
    assert d.num_boosted_rounds() == 3 and d.booster_type == "gblinear"


def test_evals_early_stopping_callbacks_and_continuation():
    X, Z, rng = _data(200, 5, 3)
    y = Z[:, 0] * 2 + rng.normal(size=200)
    tr, va = dgbdt.Dataset(X[:150], y[:150]), dgbdt.Dataset(X[150:], y[150:])
    params = {"booster": "gblinear", "eta": 0.05}
    hist = {}
    seen = []

    class Count(dgbdt.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            seen.append(epoch)
            return False

    d = dgbdt.train(params, tr, 200, evals=[(tr, "train"), (va, "valid")],
                    early_stopping_rounds=3, evals_result=hist, verbose_eval=False,
                    callbacks=[Count()])
    n = d.num_boosted_rounds()
    assert n < 200 and len(hist["valid"]["rmse"]) == n == len(seen)
    assert d.best_iteration == int(np.argmin(hist["valid"]["rmse"]))
    whole = dgbdt.train(params, tr, 10, verbose_eval=False)
    half = dgbdt.train(params, tr, 5, verbose_eval=False)
    assert dgbdt.train(params, tr, 5, verbose_eval=False, xgb_model=half).save_raw() == \
        whole.save_raw()
    with pytest.raises(ValueError, match="gblinear"):
        dgbdt.train({"booster": "gbtree"}, tr, 1, verbose_eval=False, xgb_model=half)


def test_model_files_cross_both_ways(tmp_path):
    X, Z, rng = _data(200, 4, 4)
    y = (Z[:, 0] > 0).astype(float) + (Z[:, 1] > 0)
    params = {"booster": "gblinear", "objective": "multi:softprob", "num_class": 3}
    d = dgbdt.train(params, dgbdt.Dataset(X, y), 4, verbose_eval=False)
    d.save_model(tmp_path / "d.json")
    assert load_model(tmp_path / "d.json").save_raw() == d.save_raw()
    assert json.loads(d.save_raw())["version"] == 7
    d.save_model(tmp_path / "x.json", format="xgboost")
    b = xgb.Booster(model_file=str(tmp_path / "x.json"))
    np.testing.assert_allclose(b.predict(xgb.DMatrix(X)), d.predict(X), atol=1e-6)
    b = xgb.train({**params, "nthread": 1}, xgb.DMatrix(X, y), 4)
    for ext in ("json", "ubj"):
        b.save_model(tmp_path / f"m.{ext}")
        e = load_model(tmp_path / f"m.{ext}")
        assert e.num_boosted_rounds() == 4
        np.testing.assert_allclose(e.predict(X), b.predict(xgb.DMatrix(X)), atol=1e-6)
    bad = json.loads(d.save_raw())
    bad["learner"]["linear"]["weights"] = bad["learner"]["linear"]["weights"][:-1]
    with pytest.raises(ModelFormatError, match="weights"):
        load_model(json.dumps(bad))


def test_deterministic_and_selectors_seeded():
    X, Z, rng = _data(120, 6, 5)
    y = Z @ np.arange(6)
    for sel, upd in (("shuffle", "shotgun"), ("random", "coord_descent")):
        p = {"booster": "gblinear", "feature_selector": sel, "updater": upd, "seed": 3}
        a = dgbdt.train(p, dgbdt.Dataset(X, y), 5, verbose_eval=False).save_raw()
        assert a == dgbdt.train(p, dgbdt.Dataset(X, y), 5, verbose_eval=False).save_raw()
        assert a != dgbdt.train({**p, "seed": 4}, dgbdt.Dataset(X, y), 5,
                                verbose_eval=False).save_raw()
    with pytest.raises(ValueError, match="shotgun"):
        dgbdt.train({"booster": "gblinear", "feature_selector": "greedy"},
                    dgbdt.Dataset(X, y), 1)


def test_estimators_coef_intercept_importance():
    import dgbdt.compat.xgboost as dx
    X, Z, rng = _data(200, 4, 6)
    y = Z[:, 0] * 3 + 2
    reg = dx.XGBRegressor(booster="gblinear", n_estimators=5).fit(X, y)
    ref = xgb.XGBRegressor(booster="gblinear", n_estimators=5, n_jobs=1).fit(X, y)
    np.testing.assert_allclose(reg.coef_, ref.coef_, atol=TOL)
    np.testing.assert_allclose(reg.intercept_, ref.intercept_, atol=1e-4)
    assert reg.intercept_.dtype == np.float32
    np.testing.assert_allclose(reg.feature_importances_, ref.feature_importances_, atol=1e-4)
    own = dgbdt.GBDTRegressor(booster="gblinear", n_estimators=5).fit(X, y)
    assert own.get_booster().save_raw() == dgbdt.GBDTRegressor(
        booster="gblinear", n_estimators=5).fit(X, y).get_booster().save_raw()
    yc = (Z[:, 0] > 0).astype(int) + (Z[:, 1] > 0)
    clf = dx.XGBClassifier(booster="gblinear", n_estimators=4).fit(X, yc)
    assert clf.coef_.shape == (3, 4) and clf.feature_importances_.shape == (4, 3)
    np.testing.assert_allclose(clf.coef_, clf.get_booster().linear.coefficients.T)
    with pytest.raises(AttributeError):
        dx.XGBRegressor(n_estimators=2).fit(X, y).coef_


def test_dask_refuses_gblinear(client1):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    X, Z, rng = _data(40, 3, 7)
    d = dgd.DaskDataset(client1, da.from_array(Z, chunks=20), da.from_array(Z[:, 0], chunks=20))
    with pytest.raises(NotImplementedError, match="gblinear"):
        dgd.train(client1, {"booster": "gblinear"}, d, 2)
