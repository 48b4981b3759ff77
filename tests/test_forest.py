"""Boosted random forests (``num_parallel_tree``): XGBoost's trees and predictions, the same
bytes for any partitioning and in every Dask mode, model files (dgbdt's version 5 and XGBoost's
JSON), continued training and slicing by rounds."""
import json

import numpy as np
import pytest

import dgbdt
import dgbdt.dask as dgd
from dgbdt.model.xgboost_format import to_xgboost

xgb = pytest.importorskip("xgboost")


def data(n=3000, classes=2, seed=0):
    from sklearn.datasets import make_classification
    X, y = make_classification(n, 10, n_informative=5, n_classes=classes, random_state=seed)
    # few distinct values a feature: the cuts are every value in both libraries (exact parity)
    return np.round(X, 1).astype(np.float32), y.astype(np.float64)


@pytest.mark.parametrize("params", [
    {"objective": "binary:logistic", "num_parallel_tree": 4, "learning_rate": 1.0},
    {"objective": "reg:squarederror", "num_parallel_tree": 3, "learning_rate": 0.5},
    {"objective": "multi:softprob", "num_class": 3, "num_parallel_tree": 3},
], ids=lambda p: p["objective"])
def test_same_predictions_as_xgboost(params):
    X, y = data(classes=params.get("num_class", 2))
    params = dict(params, max_depth=4)
    ours = dgbdt.train(params, dgbdt.Dataset(X, label=y), 3)
    theirs = xgb.train(dict(params, tree_method="hist"), xgb.DMatrix(X, label=y), 3)
    P, K = params["num_parallel_tree"], params.get("num_class", 1)
    assert len(ours.trees) == 3 * P * K and ours.num_boosted_rounds() == 3
    for rng in [(0, 0), (0, 1), (1, 3)]:
        a = ours.predict(dgbdt.Dataset(X), iteration_range=rng, output_margin=True)
        b = theirs.predict(xgb.DMatrix(X), iteration_range=rng, output_margin=True)
        np.testing.assert_allclose(a, b, atol=2e-6)
    # the XGBoost file of our model predicts the same in XGBoost, and XGBoost's loads here
    loaded = xgb.Booster(model_file=bytearray(json.dumps(to_xgboost(ours)).encode()))
    np.testing.assert_allclose(loaded.predict(xgb.DMatrix(X)),
                               theirs.predict(xgb.DMatrix(X)), atol=2e-6)
    back = dgbdt.load_model(bytes(theirs.save_raw("json")))
    assert back.num_parallel_tree == P
    np.testing.assert_allclose(back.predict(dgbdt.Dataset(X)), ours.predict(dgbdt.Dataset(X)),
                               atol=2e-6)


SAMPLED = {"objective": "binary:logistic", "num_parallel_tree": 3, "max_depth": 4,
           "subsample": 0.7, "colsample_bynode": 0.6, "learning_rate": 1.0}


def test_each_parallel_tree_draws_its_own_sample():
    X, y = data()
    b = dgbdt.train(SAMPLED, dgbdt.Dataset(X, label=y), 2)
    dumps = b.get_dump()
    assert len(set(dumps[:3])) == 3           # three different trees in round 0
    # without sampling the round's trees are one tree, eta / 3 each
    same = dgbdt.train(dict(SAMPLED, subsample=1.0, colsample_bynode=1.0),
                       dgbdt.Dataset(X, label=y), 1)
    assert len(set(same.get_dump())) == 1


def test_same_bytes_for_any_pages_and_after_save():
    X, y = data()
    ref = dgbdt.train(SAMPLED, dgbdt.Dataset(X, label=y), 3)
    paged = dgbdt.train(SAMPLED, dgbdt.Dataset(X, label=y, page_rows=700), 3)
    assert paged.save_raw() == ref.save_raw()
    doc = json.loads(ref.save_raw())
    assert doc["version"] == 5 and doc["learner"]["num_parallel_tree"] == 3
    assert dgbdt.load_model(doc).save_raw() == ref.save_raw()
    # one tree a round: the version-2 file it always was
    assert json.loads(dgbdt.train(dict(SAMPLED, num_parallel_tree=1),
                                  dgbdt.Dataset(X, label=y), 1).save_raw())["version"] == 2


def test_model_file_checks_forest_layout():
    X, y = data()
    doc = json.loads(dgbdt.train(SAMPLED, dgbdt.Dataset(X, label=y), 2).save_raw())
    for bad in (0, -1, True, "3"):
        d = json.loads(json.dumps(doc))
        d["learner"]["num_parallel_tree"] = bad
        with pytest.raises(dgbdt.ModelFormatError, match="num_parallel_tree"):
            dgbdt.load_model(d)
    d = json.loads(json.dumps(doc))
    d["learner"]["num_parallel_tree"] = 4            # 6 trees are not rounds of 4
    with pytest.raises(dgbdt.ModelFormatError, match="multiple"):
        dgbdt.load_model(d)


def test_slicing_and_continued_training():
    X, y = data()
    d = dgbdt.Dataset(X, label=y)
    full = dgbdt.train(SAMPLED, d, 4)
    first = dgbdt.train(SAMPLED, d, 2)
    assert full[:2].save_raw() == first.save_raw()
    assert len(full[3].trees) == 3
    more = dgbdt.train(SAMPLED, d, 2, xgb_model=first)
    np.testing.assert_allclose(more.predict(d), full.predict(d), rtol=1e-6)
    with pytest.raises(ValueError, match="num_parallel_tree"):
        dgbdt.train(dict(SAMPLED, num_parallel_tree=2), d, 1, xgb_model=first)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["task", "collective", "graph"])
def test_dask_modes_give_the_in_process_bytes(client2, client1, mode):
    import dask.array as da
    X, y = data()
    ref = dgbdt.train(SAMPLED, dgbdt.Dataset(X, label=y), 3).save_raw()
    client = client1 if mode == "task" else client2
    dd = dgd.DaskDataset(client, da.from_array(X, chunks=(800, 10)),
                         da.from_array(y, chunks=800))
    got = dgd.train(client, SAMPLED, dd, 3, mode=mode, verbose_eval=False)["booster"]
    assert got.save_raw() == ref
    # graph mode on several workers with an eval set (its scores of every parallel tree)
    out = dgd.train(client, SAMPLED, dd, 3, mode=mode, evals=[(dd, "train")],
                    verbose_eval=False)
    assert out["booster"].save_raw() == ref and len(out["history"]["train"]["logloss"]) == 3


def test_forest_estimators_are_xgboosts():
    from sklearn.base import clone
    X, y = data(classes=3)
    kw = dict(n_estimators=5, max_depth=3, subsample=1.0, colsample_bynode=1.0)
    ours = dgbdt.GBDTRFClassifier(**kw).fit(X, y)
    theirs = xgb.XGBRFClassifier(tree_method="hist", **kw).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=2e-6)
    assert ours.get_booster().num_boosted_rounds() == 1
    assert len(ours.get_booster().trees) == 5 * 3
    reg = dgbdt.GBDTRFRegressor(n_estimators=4, max_depth=3, random_state=3)
    assert clone(reg).get_params() == reg.get_params()
    assert reg.get_params()["subsample"] == 0.8 and reg.get_params()["learning_rate"] == 1.0
    sampled = reg.fit(X, y).predict(X)
    assert np.array_equal(sampled, clone(reg).fit(X, y).predict(X))
    with pytest.raises(NotImplementedError, match="random forest"):
        dgbdt.GBDTRFRegressor(early_stopping_rounds=2).fit(X, y, eval_set=[(X, y)])
