"""booster="dart" (dgbdt.engine.dart): drops, weights, the margins they leave, model files
both ways with XGBoost, the same bytes for any partitioning and in the Dask modes that build
it."""
import json

import numpy as np
import pytest

import dgbdt
import dgbdt.dask as dgd
from dgbdt.engine.dart import Dropout
from dgbdt.model.xgboost_format import to_xgboost
from dgbdt.params.normalize import normalize_params


def data(n=3000, seed=0):
    from sklearn.datasets import make_classification
    X, y = make_classification(n, 10, random_state=seed)
    return np.round(X, 1).astype(np.float32), y.astype(np.float64)


DART = {"objective": "binary:logistic", "booster": "dart", "max_depth": 4, "rate_drop": 0.3}


def logloss(y, p):
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


@pytest.mark.parametrize("extra", [{}, {"sample_type": "weighted", "normalize_type": "forest"},
                                   {"rate_drop": 0.0, "one_drop": True},
                                   {"skip_drop": 0.5, "subsample": 0.8}])
def test_eval_metrics_are_the_final_models(extra):
    """The training rows' and the eval set's margins, kept round by round through drops and
    re-weighing, are the margins the final model predicts."""
    X, y = data()
    d, v = dgbdt.Dataset(X, label=y), dgbdt.Dataset(X[:700], label=y[:700])
    res = {}
    b = dgbdt.train(dict(DART, **extra), d, 15, evals=[(d, "train"), (v, "valid")],
                    evals_result=res, verbose_eval=False)
    assert b.tree_weights is not None and len(b.tree_weights) == 15
    assert any(w != 1.0 for w in b.tree_weights)
    assert res["train"]["logloss"][-1] == pytest.approx(logloss(y, b.predict(d)), rel=1e-6)
    assert res["valid"]["logloss"][-1] == pytest.approx(logloss(y[:700], b.predict(v)),
                                                        rel=1e-6)


def test_without_drops_it_is_gbtree():
    X, y = data()
    d = dgbdt.Dataset(X, label=y)
    dart = dgbdt.train(dict(DART, rate_drop=0.0), d, 5)
    gbtree = dgbdt.train(dict(DART, booster="gbtree"), d, 5)
    assert dart.tree_weights == [1.0] * 5
    assert dart.get_dump() == gbtree.get_dump()
    np.testing.assert_array_equal(dart.predict(d), gbtree.predict(d))


def test_drops_and_normalization_follow_the_rule():
    p = normalize_params(dict(DART, rate_drop=0.5, seed=3))
    drop = Dropout(p)
    counts = [len(drop.dropped(e, [1.0] * 200)) for e in range(20)]
    assert 80 < np.mean(counts) < 120                     # rate_drop of 200 trees
    assert drop.dropped(4, [1.0] * 50) == drop.dropped(4, [1.0] * 50)
    assert drop.normalize(0.3, 1, 0) == (1.0, 1.0)
    f, w = drop.normalize(0.3, 1, 2)
    assert f == pytest.approx(2 / 2.3) and w == pytest.approx(1 / 2.3)
    f, w = Dropout(normalize_params(dict(DART, normalize_type="forest"))).normalize(0.3, 2, 2)
    assert f == w == pytest.approx(1 / 1.15)        # lr = eta / the round's 2 new trees
    one = Dropout(normalize_params(dict(DART, rate_drop=0.0, one_drop=True)))
    assert all(len(one.dropped(e, [1.0] * 7)) == 1 for e in range(10))
    skip = Dropout(normalize_params(dict(DART, rate_drop=1.0, skip_drop=1.0)))
    assert skip.dropped(0, [1.0] * 7) == []


def test_model_files_both_ways_with_xgboost():
    xgb = pytest.importorskip("xgboost")
    X, y = data()
    ours = dgbdt.train(DART, dgbdt.Dataset(X, label=y), 8)
    doc = json.loads(ours.save_raw())
    assert doc["version"] == 6 and doc["learner"]["booster"] == "dart"
    assert dgbdt.load_model(doc).save_raw() == ours.save_raw()
    theirs = xgb.Booster(model_file=bytearray(json.dumps(to_xgboost(ours)).encode()))
    for rng in [(0, 0), (2, 6)]:
        np.testing.assert_allclose(
            theirs.predict(xgb.DMatrix(X), iteration_range=rng),
            ours.predict(dgbdt.Dataset(X), iteration_range=rng), atol=1e-6)
    xb = xgb.train(dict(DART, tree_method="hist"), xgb.DMatrix(X, label=y), 8)
    back = dgbdt.load_model(bytes(xb.save_raw("json")))
    assert back.tree_weights == pytest.approx(
        json.loads(xb.save_raw("json"))["learner"]["gradient_booster"]["weight_drop"])
    np.testing.assert_allclose(back.predict(dgbdt.Dataset(X)), xb.predict(xgb.DMatrix(X)),
                               atol=1e-6)
    bad = json.loads(json.dumps(doc))
    bad["learner"]["tree_weights"] = bad["learner"]["tree_weights"][:-1]
    with pytest.raises(dgbdt.ModelFormatError, match="tree_weights"):
        dgbdt.load_model(bad)


def test_same_bytes_for_any_pages_slicing_and_continuing():
    X, y = data()
    params = dict(DART, subsample=0.8, objective="multi:softprob", num_class=3)
    y3 = np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.float64)
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y3), 6)
    assert dgbdt.train(params, dgbdt.Dataset(X, label=y3, page_rows=700), 6).save_raw() \
        == ref.save_raw()
    assert ref[2:4].tree_weights == ref.tree_weights[6:12]
    first = dgbdt.train(params, dgbdt.Dataset(X, label=y3), 3)
    more = dgbdt.train(params, dgbdt.Dataset(X, label=y3), 2, xgb_model=first)
    assert len(more.tree_weights) == 15


def test_estimator_and_refusals():
    X, y = data(800)
    est = dgbdt.GBDTClassifier(n_estimators=5, booster="dart", rate_drop=0.2).fit(X, y)
    assert est.get_booster().booster_type == "dart"
    with pytest.raises(dgbdt.ParameterError, match="booster"):
        dgbdt.train({"booster": "gbforest"}, dgbdt.Dataset(X, label=y), 1)
    with pytest.raises(NotImplementedError, match='dart" with linear_tree'):
        dgbdt.train(dict(DART, linear_tree=True), dgbdt.Dataset(X, label=y), 1)


@pytest.mark.slow
def test_dask_modes_give_the_in_process_bytes(client1, client2):
    import dask.array as da
    X, y = data()
    params = dict(DART, subsample=0.8)
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y), 5).save_raw()
    for client, mode in [(client1, "task"), (client2, "collective"), (client2, "auto")]:
        d = dgd.DaskDataset(client, da.from_array(X, chunks=(800, 10)),
                            da.from_array(y, chunks=800))
        out = dgd.train(client, params, d, 5, mode=mode, evals=[(d, "train")],
                        verbose_eval=False)
        assert out["booster"].save_raw() == ref, mode
    with pytest.raises(NotImplementedError, match='dart" in graph mode'):
        dgd.train(client2, params, d, 2, mode="graph")
