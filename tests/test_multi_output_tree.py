"""Vector-leaf trees (multi_strategy="multi_output_tree", dgbdt.tree.multi_target): one tree a
round for every target, T values a leaf. Real XGBoost is the oracle: on data whose cuts are
every distinct value in both libraries, the trees have XGBoost's structure (split features,
children) and the predictions agree to float32 rounding (leaf values are float32 and the
gradients' sums differ only in their last bits: dgbdt sums fixed-point, XGBoost doubles);
model files cross both ways; Dask gives the in-process bytes."""
from __future__ import annotations

import json

import numpy as np
import pytest

import dgbdt
import dgbdt.compat.xgboost as dx
import dgbdt.dask as dgd

xgb = pytest.importorskip("xgboost")

MOT = {"multi_strategy": "multi_output_tree", "max_depth": 3, "eta": 0.3}


def data(n=300, seed=0):
    rng = np.random.RandomState(seed)
    # few distinct values a feature: the cuts are every value in both libraries
    X = np.round(rng.randn(n, 4), 1).astype(np.float32)
    X[::11, 3] = np.nan
    y = np.c_[X[:, 0] + 0.1 * rng.randn(n), 2 * X[:, 1], X[:, 2] ** 2]
    return X, y, rng.rand(n)


def xgb_trees(b) -> list:
    return json.loads(b.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]


@pytest.mark.parametrize("extra", [
    {}, {"objective": "reg:pseudohubererror"},
    {"reg_alpha": 0.5, "reg_lambda": 2.0, "max_delta_step": 0.4, "min_child_weight": 30,
     "gamma": 0.1}])
def test_same_trees_and_predictions_as_xgboost(extra):
    X, y, w = data()
    p = dict(MOT, **extra)
    ours = dx.train(p, dx.DMatrix(X, y, weight=w), 4)
    ref = xgb.train(dict(p, tree_method="hist"), xgb.DMatrix(X, y, weight=w), 4)
    assert ours.num_boosted_rounds() == 4 and len(ours.get_dump()) == 4
    for a, b in zip(xgb_trees(ours), xgb_trees(ref)):
        for key in ("split_indices", "left_children", "right_children", "default_left"):
            assert a[key] == b[key], key
        np.testing.assert_allclose(a["leaf_weights"], b["leaf_weights"], rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(a["sum_hessian"], b["sum_hessian"], rtol=1e-6)
    np.testing.assert_allclose(ours.predict(dx.DMatrix(X)), ref.predict(xgb.DMatrix(X)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ours.predict(dx.DMatrix(X), pred_leaf=True),
                                  ref.predict(xgb.DMatrix(X), pred_leaf=True))


def test_estimators_multi_label_and_multiclass_match_xgboost():
    X, y, _ = data(200)
    labels = (y > np.median(y, axis=0)).astype(np.int64)
    kw = dict(multi_strategy="multi_output_tree", n_estimators=4, max_depth=3)
    ours = dx.XGBClassifier(**kw).fit(X, labels)
    ref = xgb.XGBClassifier(**kw).fit(X, labels)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)
    reg = dx.XGBRegressor(**kw).fit(X, y)
    np.testing.assert_allclose(reg.predict(X), xgb.XGBRegressor(**kw).fit(X, y).predict(X),
                               atol=1e-5)
    classes = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    mc = dict(MOT, objective="multi:softprob", num_class=3)
    np.testing.assert_allclose(dx.train(mc, dx.DMatrix(X, classes), 3).predict(dx.DMatrix(X)),
                               xgb.train(mc, xgb.DMatrix(X, classes), 3).predict(
                                   xgb.DMatrix(X)), atol=1e-6)


def test_custom_objective_evals_and_early_stopping():
    X, y, _ = data()

    def squared(preds, dtrain):
        return preds - dtrain.get_label().reshape(preds.shape), np.ones(preds.shape)
    d = dgbdt.Dataset(X, label=y)
    ours = dgbdt.train(dict(MOT, num_target=3), d, 3, obj=squared)
    builtin = dgbdt.train(dict(MOT, base_score=0.5), d, 3)
    np.testing.assert_allclose(ours.predict(X), builtin.predict(X), atol=1e-12)
    hist = {}
    es = dgbdt.train(dict(MOT, eta=1.0, max_depth=6), d, 50, evals=[(d, "t"), (
        dgbdt.Dataset(X[:50], label=y[::-1][:50]), "v")], evals_result=hist,
        early_stopping_rounds=2, verbose_eval=False)
    assert es.best_iteration is not None and es.num_boosted_rounds() < 50
    assert len(hist["v"]["rmse"]) == es.num_boosted_rounds()


def test_determinism_and_model_files(tmp_path):
    X, y, w = data()
    p = dict(MOT, subsample=0.8, colsample_bynode=0.75)
    a = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 4)
    raw = a.save_raw()
    assert raw == dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 4).save_raw()
    doc = json.loads(raw)
    assert doc["version"] == 8 and doc["learner"]["multi_strategy"] == "multi_output_tree"
    assert doc["tree_class"] == [0] * 4 and doc["trees"][0]["size_leaf_vector"] == 3
    back = dgbdt.load_model(raw)
    assert back.save_raw() == raw
    np.testing.assert_array_equal(back.predict(X), a.predict(X))
    # one_output_per_tree models keep their format version (4: num_target)
    assert json.loads(dgbdt.train(dict(MOT, multi_strategy="one_output_per_tree"),
                                  dgbdt.Dataset(X, label=y), 1).save_raw())["version"] == 4
    # XGBoost's JSON and UBJSON, both ways; real XGBoost predicts the same
    c = dx.train(p, dx.DMatrix(X, y, weight=w), 4)      # compat: XGBoost's format
    np.testing.assert_array_equal(c.predict(dx.DMatrix(X)), a.predict(X))
    for ext in ("json", "ubj"):
        c.save_model(str(tmp_path / f"m.{ext}"))
        ref = xgb.Booster(model_file=str(tmp_path / f"m.{ext}"))
        np.testing.assert_allclose(ref.predict(xgb.DMatrix(X)), a.predict(X), atol=1e-6)
        ref.save_model(str(tmp_path / f"x.{ext}"))
        again = dgbdt.load_model(str(tmp_path / f"x.{ext}"))
        assert again.vector_leaf
        np.testing.assert_allclose(again.predict(X), a.predict(X), atol=1e-6)
    # a file's vector that does not fit its tree is refused
    bad = json.loads(raw)
    bad["trees"][1]["leaf_vector"] = bad["trees"][1]["leaf_vector"][:-1]
    with pytest.raises(dgbdt.ModelFormatError, match="leaf_vector"):
        dgbdt.load_model(json.dumps(bad))
    bad = json.loads(raw)
    del bad["learner"]["multi_strategy"]
    with pytest.raises(dgbdt.ModelFormatError, match="4 trees is not a multiple of the 3"):
        dgbdt.load_model(json.dumps(bad))


def test_slices_dumps_and_refusals():
    X, y, _ = data(100)
    b = dx.train(MOT, dx.DMatrix(X, y), 4)
    np.testing.assert_array_equal(b[1:3].predict(dx.DMatrix(X)),
                                  b.predict(dx.DMatrix(X), iteration_range=(1, 3)))
    assert "leaf=[" in b.get_dump()[0]
    assert isinstance(json.loads(b.get_dump(dump_format="json")[0])["children"], list)
    with pytest.raises(NotImplementedError, match="with_stats"):
        b.get_dump(with_stats=True)
    with pytest.raises(NotImplementedError, match="pred_contribs"):
        b.predict(dx.DMatrix(X), pred_contribs=True)
    d = dgbdt.Dataset(X, label=y)
    for extra, err in [({"tree_method": "approx"}, ValueError), ({"booster": "dart"}, ValueError),
                       ({"monotone_constraints": (1, 0, 0, 0)}, ValueError),
                       ({"grow_policy": "lossguide"}, NotImplementedError)]:
        with pytest.raises(err, match="one_output_per_tree"):
            dgbdt.train(dict(MOT, **extra), d, 1)
    prior = dgbdt.train(dict(MOT, multi_strategy="one_output_per_tree"), d, 1)
    with pytest.raises(ValueError, match="continues with the model's multi_strategy"):
        dgbdt.train(MOT, d, 1, xgb_model=prior)
    # one target: the parameter changes nothing (scalar trees, as in XGBoost)
    one = dgbdt.Dataset(X, label=y[:, 0])
    assert dgbdt.train(MOT, one, 2).save_raw() == dgbdt.train(
        dict(MOT, multi_strategy="one_output_per_tree"), one, 2).save_raw()


@pytest.mark.parametrize("mode", ["task", "graph", "collective"])
def test_dask_gives_the_in_process_bytes(client2, client1, mode):
    import dask.array as da
    X, y, w = data()
    p = dict(MOT, subsample=0.8)
    ref = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 3).save_raw()
    client = client1 if mode == "task" else client2
    dd = dgd.DaskDataset(client, da.from_array(X, chunks=(90, 4)),
                         da.from_array(y, chunks=(90, 3)), weight=da.from_array(w, chunks=90))
    out = dgd.train(client, p, dd, 3, evals=[(dd, "train")], verbose_eval=False, mode=mode)
    assert out["booster"].save_raw() == ref
    assert len(out["history"]["train"]["rmse"]) == 3
