"""Multi-target labels (dgbdt.objectives.multi_target): a label [n, T] trains one tree per
target a round (XGBoost's multi_strategy="one_output_per_tree"), with XGBoost's intercept per
target, predictions [n, T], model files of both formats, the estimators (2-D y, multi-label
classification), vector base_score, and the same bytes for any Dask partitioning."""
from __future__ import annotations

import json

import numpy as np
import pytest

import dgbdt
import dgbdt.dask as dgd

xgb = pytest.importorskip("xgboost")


def data(n=600, seed=0):
    rng = np.random.RandomState(seed)
    # few distinct values a feature: the cuts are every value in both libraries (exact parity)
    X = np.round(rng.randn(n, 4), 1).astype(np.float32)
    y = np.c_[X[:, 0] + 0.1 * rng.randn(n), 2 * X[:, 1], X[:, 2] ** 2]
    return X, y, rng.rand(n)


PARAMS = {"max_depth": 3, "eta": 0.3}


@pytest.mark.parametrize("objective", ["reg:squarederror", "reg:pseudohubererror",
                                       "binary:logistic", "count:poisson",
                                       "reg:squaredlogerror"])
@pytest.mark.parametrize("weighted", [False, True])
def test_same_predictions_as_xgboost(objective, weighted):
    X, y, w = data()
    if objective == "binary:logistic":
        y = (y > np.median(y, axis=0)).astype(np.float64)
    elif objective != "reg:squarederror" and objective != "reg:pseudohubererror":
        y = np.abs(y) + 0.1
    w = w if weighted else None
    p = dict(PARAMS, objective=objective)
    ours = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 4)
    theirs = xgb.train(dict(p, tree_method="hist"), xgb.DMatrix(X, y, weight=w), 4)
    assert ours.n_outputs == 3 and len(ours.trees) == 12
    base = json.loads(theirs.save_config())["learner"]["learner_model_param"]["base_score"]
    np.testing.assert_allclose(ours.objective.margin_to_base_score(ours.base_margin),
                               [float(v) for v in base.strip("[]").split(",")], rtol=1e-5)
    a = ours.predict(dgbdt.Dataset(X))
    assert a.shape == (600, 3)
    np.testing.assert_allclose(a, theirs.predict(xgb.DMatrix(X)), atol=2e-6)


def test_each_target_is_its_own_model_and_metrics_average_targets():
    X, y, _ = data()
    res = {}
    b = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y), 3,
                    evals=[(dgbdt.Dataset(X, label=y), "t")], evals_result=res,
                    verbose_eval=False)
    pred = b.predict(dgbdt.Dataset(X))
    for t in range(3):
        one = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y[:, t]), 3)
        np.testing.assert_array_equal(one.predict(dgbdt.Dataset(X)), pred[:, t])
    # XGBoost's rmse of several targets: over every (row, target) entry
    assert res["t"]["rmse"][-1] == pytest.approx(np.sqrt(np.mean((pred - y) ** 2)), rel=1e-9)


def test_model_files_both_formats(tmp_path):
    X, y, _ = data()
    b = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y), 3)
    pred = b.predict(dgbdt.Dataset(X))
    b.save_model(tmp_path / "m.json")
    np.testing.assert_array_equal(dgbdt.load_model(tmp_path / "m.json").predict(
        dgbdt.Dataset(X)), pred)
    b.save_model(tmp_path / "x.json", format="xgboost")
    doc = json.loads((tmp_path / "x.json").read_text())
    assert doc["learner"]["learner_model_param"]["num_target"] == "3"
    theirs = xgb.Booster(model_file=str(tmp_path / "x.json"))
    np.testing.assert_allclose(theirs.predict(xgb.DMatrix(X)), pred, atol=2e-6)
    back = dgbdt.load_model(tmp_path / "x.json")
    assert back.n_outputs == 3
    np.testing.assert_allclose(back.predict(dgbdt.Dataset(X)), pred, atol=2e-6)


def test_vector_base_score_and_quantiles():
    X, y, _ = data()
    b = dgbdt.train(dict(PARAMS, base_score=[0.1, 0.2, 0.3]), dgbdt.Dataset(X, label=y), 0)
    np.testing.assert_allclose(b.base_margin, [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="base_score has 2 values; the model has 3"):
        dgbdt.train(dict(PARAMS, base_score=[0.1, 0.2]), dgbdt.Dataset(X, label=y), 1)
    # several quantiles with a base_score each (XGBoost's test_quantile_loss): output k is
    # the single-quantile model of alpha k
    q = dict(PARAMS, objective="reg:quantileerror")
    d = dgbdt.Dataset(X, label=y[:, 0])
    multi = dgbdt.train(dict(q, quantile_alpha=[0.1, 0.5], base_score=[0.0, 0.0]), d, 3)
    for k, a in enumerate([0.1, 0.5]):
        one = dgbdt.train(dict(q, quantile_alpha=a, base_score=0.0), d, 3)
        np.testing.assert_allclose(one.predict(d), multi.predict(d)[:, k])


def test_refusals_and_checks():
    X, y, _ = data()
    d = dgbdt.Dataset(X, label=y)
    with pytest.raises(NotImplementedError, match="reg:absoluteerror.*3 targets"):
        dgbdt.train(dict(PARAMS, objective="reg:absoluteerror"), d, 1)
    with pytest.raises(ValueError, match="num_target=2 but the label has 3"):
        dgbdt.train(dict(PARAMS, num_target=2), d, 1)
    with pytest.raises(ValueError, match="eval set 'e' has a label of 1 target"):
        dgbdt.train(PARAMS, d, 1, evals=[(dgbdt.Dataset(X, label=y[:, 0]), "e")])
    bad = np.abs(y)
    bad[5, 2] = -3.0
    with pytest.raises(ValueError, match=r"target 2 .*> -1"):
        dgbdt.train(dict(PARAMS, objective="reg:squaredlogerror"),
                    dgbdt.Dataset(X, label=bad), 1)
    bad[5, 2] = np.nan
    with pytest.raises(ValueError, match="row 5, target 2"):
        dgbdt.Dataset(X, label=bad)


def test_custom_objective_with_num_target():
    X, y, _ = data()

    def squared(preds, dtrain):
        return preds - dtrain.get_label().reshape(preds.shape), np.ones(preds.shape)
    ours = dgbdt.train(dict(PARAMS, num_target=3), dgbdt.Dataset(X, label=y), 3, obj=squared)
    builtin = dgbdt.train(dict(PARAMS, base_score=0.5), dgbdt.Dataset(X, label=y), 3)
    np.testing.assert_allclose(ours.predict(dgbdt.Dataset(X)),
                               builtin.predict(dgbdt.Dataset(X)), atol=1e-12)


def test_estimators_multi_output_and_multi_label():
    import pandas as pd
    X, y, _ = data(200)
    reg = dgbdt.GBDTRegressor(n_estimators=3, max_depth=3).fit(X, y)
    assert reg.predict(X).shape == (200, 3)
    same = dgbdt.GBDTRegressor(n_estimators=3, max_depth=3).fit(
        X, pd.DataFrame(y, columns=["a", "b", "c"]))
    np.testing.assert_array_equal(same.predict(X), reg.predict(X))
    labels = (y > np.median(y, axis=0)).astype(np.int64)
    clf = dgbdt.GBDTClassifier(n_estimators=20, max_depth=4).fit(X, labels)
    assert clf.get_booster().objective.name == "binary:logistic"
    assert clf.predict_proba(X).shape == (200, 3)
    pred = clf.predict(X)
    assert pred.dtype == np.int64 and pred.shape == (200, 3)
    np.testing.assert_array_equal(pred, (clf.predict_proba(X) > 0.5).astype(np.int64))
    assert (pred == labels).mean() > 0.9
    np.testing.assert_array_equal(dgbdt.GBDTClassifier(n_estimators=20, max_depth=4).fit(
        X, labels.tolist()).predict(X), pred)
    with pytest.raises(ValueError, match="multi-label"):
        dgbdt.GBDTClassifier(n_estimators=2).fit(X, y)


@pytest.mark.parametrize("frame,mode", [(False, "task"), (False, "collective"),
                                        (False, "graph"), (True, None)])
def test_dask_gives_the_in_process_bytes(client2, client1, frame, mode):
    import dask.array as da
    import dask.dataframe as ddf
    import pandas as pd
    X, y, w = data()
    p = dict(PARAMS, subsample=0.8)
    ref = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 3).save_raw()
    if frame:
        cols = [f"f{i}" for i in range(4)]
        df = pd.DataFrame(X, columns=cols).assign(a=y[:, 0], b=y[:, 1], c=y[:, 2], w=w)
        f = ddf.from_pandas(df, npartitions=3)
        dd = dgd.DaskDataset(client2, f[cols], f[["a", "b", "c"]], weight=f["w"])
        ref = dgbdt.train(p, dgbdt.Dataset(df[cols], label=y, weight=w), 3).save_raw()
    else:
        dd = dgd.DaskDataset(client2, da.from_array(X, chunks=(170, 4)),
                             da.from_array(y, chunks=(170, 2)), weight=da.from_array(
                                 w, chunks=170))
    client = client1 if mode == "task" else client2
    if mode == "task":
        dd = dgd.DaskDataset(client, da.from_array(X, chunks=(170, 4)),
                             da.from_array(y, chunks=(170, 2)), weight=da.from_array(
                                 w, chunks=170))
    out = dgd.train(client, p, dd, 3, evals=[(dd, "train")], verbose_eval=False,
                    **({"mode": mode} if mode else {}))
    assert out["booster"].save_raw() == ref
    assert len(out["history"]["train"]["rmse"]) == 3
