"""Custom objectives (obj=): the user's gradients drive training; a function computing a built-in
objective's gradients gives that objective's model; bad returns get clear errors."""
import numpy as np
import pytest

import dgbdt


def data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    Z = np.nan_to_num(X)
    return X, Z[:, 0] * 2 + np.sin(Z[:, 1]) + 0.1 * rng.standard_normal(n)


def squared_error(preds, dtrain):
    return preds - dtrain.get_label(), np.ones_like(preds)


def test_custom_squared_error_is_the_built_in_model():
    X, y = data()
    w = np.random.default_rng(1).uniform(0.5, 2, len(y))
    p = {"max_depth": 4, "base_score": 0.5}

    def weighted(preds, dtrain):
        return (preds - dtrain.get_label()) * dtrain.get_weight(), dtrain.get_weight()
    for kw, fn in (({}, squared_error), ({"weight": w}, weighted)):
        built_in = dgbdt.train(p, dgbdt.Dataset(X, y, **kw), 10, verbose_eval=False)
        custom = dgbdt.train({"max_depth": 4}, dgbdt.Dataset(X, y, page_rows=700, **kw), 10,
                             verbose_eval=False, obj=fn)      # base_score 0.5 by default
        assert custom.save_raw() == built_in.save_raw()


def test_custom_logistic_and_softmax_match_the_built_ins():
    X, y = data(seed=2)
    yb = (y > 0).astype(np.float64)

    def logistic(preds, dtrain):
        p = 1.0 / (1.0 + np.exp(-preds))
        return p - dtrain.get_label(), np.maximum(p * (1.0 - p), 1e-16)
    params = {"objective": "binary:logistic", "max_depth": 3, "base_score": 0.5}
    ref = dgbdt.train(params, dgbdt.Dataset(X, yb), 8, verbose_eval=False)
    got = dgbdt.train(params, dgbdt.Dataset(X, yb), 8, verbose_eval=False, obj=logistic)
    np.testing.assert_allclose(got.predict(X), ref.predict(X), atol=1e-6)   # probabilities
    yk = np.digitize(y, [-1.0, 1.0]).astype(np.float64)

    def softmax(preds, dtrain):
        e = np.exp(preds - preds.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        onehot = np.eye(3)[dtrain.get_label().astype(int)]
        return p - onehot, np.maximum(2.0 * p * (1.0 - p), 1e-16)
    mp = {"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "base_score": 0.5}
    ref = dgbdt.train(mp, dgbdt.Dataset(X, yk), 6, verbose_eval=False)
    got = dgbdt.train(mp, dgbdt.Dataset(X, yk), 6, verbose_eval=False, obj=softmax)
    np.testing.assert_allclose(got.predict(X), ref.predict(X), atol=1e-6)


def test_custom_objective_against_xgboost():
    xgb = pytest.importorskip("xgboost")
    X, y = data(seed=3)

    def xgb_se(preds, dtrain):
        return preds - dtrain.get_label(), np.ones_like(preds)
    xb = xgb.train({"max_depth": 3, "tree_method": "hist"}, xgb.DMatrix(X, y), 10, obj=xgb_se)
    ours = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(X, y), 10, verbose_eval=False,
                       obj=squared_error)
    pred_x, pred_d = xb.predict(xgb.DMatrix(X)), ours.predict(X)
    # XGBoost rounds custom gradients to float32 pairs, dgbdt to 64-bit fixed point: near-tied
    # splits may differ, the fit does not
    assert np.corrcoef(pred_x, pred_d)[0, 1] > 0.99
    rmse = (lambda p: float(np.sqrt(np.mean((p - y) ** 2))))
    assert abs(rmse(pred_d) - rmse(pred_x)) < 0.02 * rmse(pred_x)


def test_bad_returns_are_clear():
    X, y = data(n=300)
    d = dgbdt.Dataset(X, y)
    with pytest.raises(TypeError, match="obj must return a pair"):
        dgbdt.train({}, d, 1, obj=lambda p, d: p, verbose_eval=False)
    with pytest.raises(ValueError, match="obj returned grad of 10 values; expected 300"):
        dgbdt.train({}, d, 1, obj=lambda p, d: (p[:10], p[:10]), verbose_eval=False)
    with pytest.raises(ValueError, match="non-finite hess"):
        dgbdt.train({}, d, 1, obj=lambda p, d: (p, p * np.nan), verbose_eval=False)
    with pytest.raises(TypeError, match="obj must be a callable"):
        dgbdt.train({}, d, 1, obj="squared", verbose_eval=False)


def test_custom_metric_is_scored_and_drives_early_stopping():
    X, y = data(seed=4)
    yb = (y > 0).astype(np.float64)
    d, dv = dgbdt.Dataset(X[:1500], yb[:1500]), dgbdt.Dataset(X[1500:], yb[1500:])
    seen = []

    def error_rate(preds, dataset):          # probabilities (binary:logistic's transform)
        seen.append(float(preds.min()) >= 0.0 and float(preds.max()) <= 1.0)
        return "my-error", float(np.mean((preds > 0.5) != dataset.get_label()))
    hist = {}
    p = {"objective": "binary:logistic", "max_depth": 6, "eta": 1.0}
    b = dgbdt.train(p, d, 60, evals=[(d, "train"), (dv, "valid")], evals_result=hist,
                    custom_metric=error_rate, early_stopping_rounds=3, verbose_eval=False)
    assert list(hist["valid"]) == ["logloss", "my-error"] and all(seen)
    errs = hist["valid"]["my-error"]
    ref = [float(np.mean((b[:r + 1].predict(dv) > 0.5) != yb[1500:]))
           for r in range(b.num_boosted_rounds())]
    assert errs == ref                                   # the metric of each round's model
    assert b.best_iteration == int(np.argmin(errs))      # minimized (maximize=False)
    assert b.num_boosted_rounds() == b.best_iteration + 4
    with pytest.raises(TypeError, match="custom_metric must return"):
        dgbdt.train(p, d, 1, evals=[(dv, "v")], custom_metric=lambda p, d: 0.5,
                    verbose_eval=False)


def test_custom_metric_gets_built_in_objectives_transformed_predictions():
    """survival:cox (gradients over all rows at once): custom_metric gets the hazard ratios
    exp(margin), the model's predictions, as for any built-in objective (XGBoost's rule); the
    user's own gradients give it raw margins (test above)."""
    X, y = data(seed=5)
    t = np.abs(y) + 0.1
    d = dgbdt.Dataset(X, np.where(y > 0, t, -t))
    got = []

    def record(preds, dataset):
        got.append(np.array(preds, copy=True))
        return "rec", 0.0
    b = dgbdt.train({"objective": "survival:cox", "max_depth": 3}, d, 3, evals=[(d, "t")],
                    custom_metric=record, verbose_eval=False)
    assert len(got) == 3 and (got[-1] > 0).all()
    np.testing.assert_allclose(got[-1], b.predict(d), rtol=1e-12)
    np.testing.assert_allclose(got[-1], np.exp(b.predict(d, output_margin=True)), rtol=1e-12)


@pytest.mark.parametrize("mode, workers", [("task", 1), ("collective", 2), ("graph", 2)])
def test_custom_objective_on_dask_is_the_in_process_model(request, mode, workers):
    """An elementwise gradient computed per worker over its rows gives the in-process model."""
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    client = request.getfixturevalue(f"client{workers}")
    X, y = data(seed=5)

    def se(preds, dtrain):           # dtrain: the worker's rows (LocalRows)
        assert preds.shape == (dtrain.num_row,)
        return preds - dtrain.get_label(), np.ones_like(preds)
    d = dgd.DaskDataset(client, da.from_array(X, chunks=(500, 5)), da.from_array(y, chunks=500))
    out = dgd.train(client, {"max_depth": 4}, d, 6, mode=mode, obj=se, verbose_eval=False)
    ref = dgbdt.train({"max_depth": 4}, dgbdt.Dataset(X, y), 6, verbose_eval=False,
                      obj=squared_error)
    assert out["booster"].save_raw() == ref.save_raw()


def test_estimators_take_callables_as_xgboost_does(client2):
    """objective(y_true, y_pred) -> (grad, hess) and eval_metric(y_true, y_pred) -> float, as
    XGBoost's scikit-learn API takes them; a classifier keeps its probabilities."""
    from dgbdt.sklearn import GBDTClassifier, GBDTRegressor
    X, y = data(seed=6)

    def se(y_true, y_pred):
        return y_pred - y_true, np.ones_like(y_pred)
    ref = GBDTRegressor(n_estimators=5, max_depth=3, base_score=0.5).fit(X, y)
    got = GBDTRegressor(n_estimators=5, max_depth=3, objective=se).fit(X, y)
    assert got.get_booster().save_raw() == ref.get_booster().save_raw()
    yb = (y > 0).astype(int)

    def logistic(y_true, y_pred):
        p = 1.0 / (1.0 + np.exp(-y_pred))
        return p - y_true, np.maximum(p * (1.0 - p), 1e-16)

    def accuracy(y_true, y_pred):
        return float(np.mean((y_pred > 0.5) == y_true))
    clf = GBDTClassifier(n_estimators=40, max_depth=4, learning_rate=1.0, objective=logistic,
                         eval_metric=accuracy, early_stopping_rounds=3)
    clf.fit(X[:1500], yb[:1500], eval_set=[(X[1500:], yb[1500:])])
    acc = clf.evals_result_["validation_0"]["accuracy"]
    assert clf.best_iteration == int(np.argmax(acc))          # accuracy is maximized
    proba = clf.predict_proba(X[1500:])
    assert proba.shape == (500, 2) and np.allclose(proba.sum(axis=1), 1.0)
    da = pytest.importorskip("dask.array")
    from dgbdt.dask import DaskGBDTRegressor
    est = DaskGBDTRegressor(n_estimators=5, max_depth=3, objective=se)
    est.client = client2
    est.fit(da.from_array(X, chunks=(700, 5)), da.from_array(y, chunks=700))
    assert est.get_booster().save_raw() == ref.get_booster().save_raw()
    est = DaskGBDTRegressor(n_estimators=5, eval_metric=accuracy)
    est.client = client2
    with pytest.raises(NotImplementedError, match="a function as eval_metric is not supported on Dask"):
        est.fit(da.from_array(X, chunks=(700, 5)), da.from_array(y, chunks=700))
