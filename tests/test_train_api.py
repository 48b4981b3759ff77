"""dgbdt.train: evaluation results, logging, early stopping, and edge-case data."""
import json
import re

import numpy as np
import pytest

import dgbdt
from dgbdt.metrics.registry import get_metric
from dgbdt.engine.boosting import STAGES


def binary_data(n=400, f=5, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, f)).astype(np.float32)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    Z = np.nan_to_num(X)
    y = (rng.random(n) < 1 / (1 + np.exp(-1.5 * Z[:, 0] + Z[:, 1]))).astype(np.float64)
    return X, y


def low_cardinality(n=1200, f=4, levels=8, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.integers(0, levels, size=(n, f)) * 0.5 - 1.5).astype(np.float32)
    s = X[:, 0] - 0.7 * X[:, 1] + 0.4 * X[:, 2] * X[:, 3]
    return X, s, rng


def split(X, y, at):
    return dgbdt.Dataset(X[:at], label=y[:at]), dgbdt.Dataset(X[at:], label=y[at:])


# -- evals_result / metrics ----------------------------------------------------------------
def test_evals_result_structure():
    X, y = binary_data()
    dtrain, dvalid = split(X, y, 300)
    res = {"stale": {"x": [1.0]}}
    dgbdt.train({"objective": "binary:logistic"}, dtrain, 6,
                evals=[(dtrain, "train"), (dvalid, "valid")], evals_result=res,
                verbose_eval=False)
    assert list(res) == ["train", "valid"]
    for name in res:
        assert list(res[name]) == ["logloss"]
        assert len(res[name]["logloss"]) == 6
        assert all(isinstance(v, float) for v in res[name]["logloss"])
    # training loss goes down on the training set
    assert res["train"]["logloss"][-1] < res["train"]["logloss"][0]


def test_multiple_metrics_in_order():
    X, y = binary_data(seed=1)
    dtrain, dvalid = split(X, y, 300)
    res = {}
    metrics = ["error", "auc", "logloss"]
    b = dgbdt.train({"objective": "binary:logistic", "eval_metric": metrics}, dtrain, 4,
                    evals=[(dvalid, "valid")], evals_result=res, verbose_eval=False)
    assert list(res["valid"]) == metrics
    pred = b.predict(dvalid)
    yv = y[300:]
    for m in metrics:
        assert len(res["valid"][m]) == 4
        assert res["valid"][m][-1] == pytest.approx(float(get_metric(m)(yv, pred)), rel=1e-12)
    # each round's value is the metric of the model truncated to that round
    for r in range(4):
        p = b.predict(dvalid, iteration_range=(0, r + 1))
        assert res["valid"]["auc"][r] == pytest.approx(float(get_metric("auc")(yv, p)), rel=1e-12)


def test_single_metric_string_and_default_per_objective():
    X, y = binary_data(seed=2)
    for params, key in [({"objective": "reg:squarederror"}, "rmse"),
                        ({"objective": "binary:logistic", "eval_metric": "auc"}, "auc"),
                        ({"objective": "multi:softprob", "num_class": 2}, "mlogloss"),
                        ({"objective": "multi:softmax", "num_class": 2}, "merror")]:
        res = {}
        d = dgbdt.Dataset(X, label=y)
        dgbdt.train(params, d, 2, evals=[(d, "d")], evals_result=res, verbose_eval=False)
        assert list(res["d"]) == [key]


# -- verbose_eval --------------------------------------------------------------------------
LINE = re.compile(r"^\[(\d+)\]\tvalid-logloss:\d+\.\d{5}$")


def test_verbose_true_prints_every_round(capsys):
    X, y = binary_data()
    dtrain, dvalid = split(X, y, 300)
    res = {}
    dgbdt.train({"objective": "binary:logistic"}, dtrain, 5, evals=[(dvalid, "valid")],
                evals_result=res, verbose_eval=True)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5
    for r, line in enumerate(lines):
        m = LINE.match(line)
        assert m, line
        assert int(m.group(1)) == r
        assert line.endswith(f"{res['valid']['logloss'][r]:.5f}")


def test_verbose_default_is_true(capsys):
    X, y = binary_data()
    dtrain, dvalid = split(X, y, 300)
    dgbdt.train({"objective": "binary:logistic"}, dtrain, 3, evals=[(dvalid, "valid")])
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_verbose_int_prints_every_n_and_last(capsys):
    X, y = binary_data()
    dtrain, dvalid = split(X, y, 300)
    dgbdt.train({"objective": "binary:logistic"}, dtrain, 8, evals=[(dvalid, "valid")],
                verbose_eval=3)
    lines = capsys.readouterr().out.splitlines()
    assert [int(LINE.match(x).group(1)) for x in lines] == [0, 3, 6, 7]


def test_verbose_false_and_no_evals_print_nothing(capsys):
    X, y = binary_data()
    dtrain, dvalid = split(X, y, 300)
    dgbdt.train({"objective": "binary:logistic"}, dtrain, 3, evals=[(dvalid, "valid")],
                verbose_eval=False)
    dgbdt.train({"objective": "binary:logistic"}, dtrain, 3, verbose_eval=True)
    assert capsys.readouterr().out == ""


def test_verbose_several_sets_and_metrics(capsys):
    X, y = binary_data()
    dtrain, dvalid = split(X, y, 300)
    dgbdt.train({"objective": "binary:logistic", "eval_metric": ["auc", "logloss"]}, dtrain, 1,
                evals=[(dtrain, "train"), (dvalid, "valid")], verbose_eval=True)
    out = capsys.readouterr().out
    assert re.fullmatch(r"\[0\]\ttrain-auc:\d\.\d{5}\ttrain-logloss:\d\.\d{5}"
                        r"\tvalid-auc:\d\.\d{5}\tvalid-logloss:\d\.\d{5}\n", out), out


# -- early stopping ------------------------------------------------------------------------
@pytest.mark.parametrize("metric", ["logloss", "auc", "error"])
def test_early_stopping(metric):
    X, y = binary_data(n=300, seed=0)
    dtrain, dvalid = split(X, y, 200)
    res = {}
    N = 4
    b = dgbdt.train({"objective": "binary:logistic", "eta": 0.5, "eval_metric": metric},
                    dtrain, 200, evals=[(dvalid, "valid")], early_stopping_rounds=N,
                    evals_result=res, verbose_eval=False)
    hist = np.array(res["valid"][metric])
    rounds = b.num_boosted_rounds()
    assert rounds < 200, "expected overfitting to stop training early"
    assert len(hist) == rounds
    maximize = metric == "auc"
    # strict improvement: the first occurrence of the best value
    best = int(np.argmax(hist) if maximize else np.argmin(hist))
    assert b.best_iteration == best
    assert b.best_score == hist[best]
    assert rounds == best + N + 1
    # training did not stop too early: no earlier round was N rounds past its best so far
    for r in range(rounds - 1):
        sofar = hist[: r + 1]
        b_r = int(np.argmax(sofar) if maximize else np.argmin(sofar))
        assert r - b_r < N


def test_early_stopping_uses_last_metric_of_last_set():
    X, y = binary_data(n=300, seed=3)
    dtrain, dvalid = split(X, y, 200)
    res = {}
    b = dgbdt.train({"objective": "binary:logistic", "eta": 0.5,
                     "eval_metric": ["auc", "logloss"]},
                    dtrain, 200, evals=[(dvalid, "valid"), (dtrain, "train")],
                    early_stopping_rounds=3, evals_result=res, verbose_eval=False)
    # the train set's logloss keeps improving, so training runs to the end
    assert b.num_boosted_rounds() == 200
    hist = res["train"]["logloss"]
    assert b.best_iteration == int(np.argmin(hist))
    assert b.best_score == min(hist)


def test_no_early_stopping_leaves_best_unset():
    X, y = binary_data()
    dtrain, dvalid = split(X, y, 300)
    b = dgbdt.train({"objective": "binary:logistic"}, dtrain, 3, evals=[(dvalid, "v")],
                    verbose_eval=False)
    assert b.best_iteration is None and b.best_score is None


def test_early_stopping_matches_xgboost():
    """Same bins, same trees: the same metric history and the same best iteration."""
    xgb = pytest.importorskip("xgboost")
    X, s, rng = low_cardinality(n=1500, seed=5)
    y = (rng.random(len(s)) < 1 / (1 + np.exp(-s))).astype(np.float32)
    params = {"objective": "binary:logistic", "eta": 0.8, "max_depth": 5,
              "eval_metric": "logloss"}
    res_d, res_x = {}, {}
    b = dgbdt.train(params, dgbdt.Dataset(X[:1000], label=y[:1000]), 100,
                    evals=[(dgbdt.Dataset(X[1000:], label=y[1000:]), "v")],
                    early_stopping_rounds=3, evals_result=res_d, verbose_eval=False)
    bx = xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X[:1000], label=y[:1000]), 100,
                   evals=[(xgb.DMatrix(X[1000:], label=y[1000:]), "v")],
                   early_stopping_rounds=3, evals_result=res_x, verbose_eval=False)
    assert b.num_boosted_rounds() < 100
    assert b.best_iteration == bx.best_iteration
    assert b.num_boosted_rounds() == bx.num_boosted_rounds()
    np.testing.assert_allclose(res_d["v"]["logloss"], res_x["v"]["logloss"], rtol=1e-5)


# -- the train set as an eval set ----------------------------------------------------------
@pytest.mark.parametrize("objective,metric", [("binary:logistic", "logloss"),
                                              ("reg:squarederror", "rmse"),
                                              ("multi:softprob", "mlogloss")])
@pytest.mark.parametrize("page_rows", [None, 97])
def test_train_set_metric_equals_predict(objective, metric, page_rows):
    X, y = binary_data(n=400, seed=4, missing=0.1)
    rng = np.random.default_rng(0)
    params = {"objective": objective, "max_depth": 3}
    if objective == "reg:squarederror":
        y = y + np.nan_to_num(X[:, 2])
    if objective.startswith("multi"):
        y = y + (np.nan_to_num(X[:, 3]) > 0)
        params["num_class"] = 3
    w = rng.uniform(0.5, 2.0, len(y))
    dtrain = dgbdt.Dataset(X, label=y, weight=w, page_rows=page_rows)
    res = {}
    b = dgbdt.train(params, dtrain, 5, evals=[(dtrain, "train")], evals_result=res,
                    verbose_eval=False)
    value = float(get_metric(metric)(y, b.predict(X), w))
    assert res["train"][metric][-1] == pytest.approx(value, rel=1e-12)
    # and the same again on a separate copy of the data, scored by traversal
    res2 = {}
    b2 = dgbdt.train(params, dtrain, 5, evals=[(dgbdt.Dataset(X, label=y, weight=w), "copy")],
                     evals_result=res2, verbose_eval=False)
    assert b2.save_raw() == b.save_raw()
    np.testing.assert_allclose(res2["copy"][metric], res["train"][metric], rtol=1e-12)


def test_train_set_metric_with_base_margin():
    X, y = binary_data(n=300, seed=6)
    bm = np.linspace(-1, 1, len(y))
    dtrain = dgbdt.Dataset(X, label=y, base_margin=bm, page_rows=128)
    res = {}
    b = dgbdt.train({"objective": "binary:logistic"}, dtrain, 4, evals=[(dtrain, "train")],
                    evals_result=res, verbose_eval=False)
    p = b.predict(dtrain)  # a Dataset's base_margin is used by predict
    assert res["train"]["logloss"][-1] == pytest.approx(
        float(get_metric("logloss")(y, p)), rel=1e-12)
    assert res["train"]["logloss"][-1] != pytest.approx(
        float(get_metric("logloss")(y, b.predict(X))), rel=1e-6)


# -- degenerate models and data ------------------------------------------------------------
def test_zero_rounds_predicts_base_score():
    X, y = binary_data()
    d = dgbdt.Dataset(X, label=y)
    res = {"old": {}}
    b = dgbdt.train({"objective": "binary:logistic", "base_score": 0.3}, d, 0,
                    evals=[(d, "train")], evals_result=res, verbose_eval=False)
    assert b.num_boosted_rounds() == 0 and b.trees == []
    assert res == {}
    np.testing.assert_allclose(b.predict(X), 0.3, rtol=1e-12)
    np.testing.assert_allclose(b.predict(X, output_margin=True), np.log(0.3 / 0.7), rtol=1e-12)
    assert b.predict(X, pred_leaf=True).shape == (len(X), 0)
    yr = X[:, 0].astype(np.float64) * 2 + 1
    reg = dgbdt.train({}, dgbdt.Dataset(X, label=yr), 0)
    np.testing.assert_allclose(reg.predict(X), np.mean(yr), rtol=1e-12)
    # the empty model survives a round trip
    assert dgbdt.load_model(b.save_raw()).save_raw() == b.save_raw()


def test_huge_min_child_weight_single_leaf_trees():
    X, y = binary_data()
    yr = y * 3 + 1
    n = len(y)
    b = dgbdt.train({"min_child_weight": 0.6 * n, "base_score": 0.0, "eta": 0.3},
                    dgbdt.Dataset(X, label=yr), 3, verbose_eval=False)
    assert all(t.n_nodes == 1 for t in b.trees)
    pred = b.predict(X)
    assert np.all(pred == pred[0])
    m = 0.0
    for _ in range(3):  # leaf = eta * sum(y - m) / (n + lambda), rounded to float32
        m += float(np.float32(0.3 * np.sum(yr - m) / (n + 1.0)))
    assert pred[0] == pytest.approx(m, rel=1e-6)
    # above the root's hessian the leaf weight itself is 0 (XGBoost's CalcWeight)
    b = dgbdt.train({"min_child_weight": 1e9, "base_score": 0.0}, dgbdt.Dataset(X, label=yr), 2,
                    verbose_eval=False)
    assert all(t.n_nodes == 1 for t in b.trees)
    np.testing.assert_array_equal(b.predict(X), 0.0)


def test_constant_feature_never_used():
    X, y = binary_data(seed=7)
    X[:, 2] = 1.25
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 6, "min_child_weight": 0},
                    dgbdt.Dataset(X, label=y), 10, verbose_eval=False)
    used = np.concatenate([t.feature[t.left != -1] for t in b.trees])
    assert used.size > 0
    assert 2 not in used
    assert "f2" not in b.get_score()


def test_all_nan_column_never_used_and_changes_nothing():
    X, y = binary_data(seed=8, missing=0.1)
    Xn = X.copy()
    Xn[:, 1] = np.nan
    params = {"objective": "binary:logistic", "max_depth": 4, "min_child_weight": 0}
    b = dgbdt.train(params, dgbdt.Dataset(Xn, label=y), 5, verbose_eval=False)
    used = np.concatenate([t.feature[t.left != -1] for t in b.trees])
    assert 1 not in used and used.size > 0
    without = np.delete(Xn, 1, axis=1)
    ref = dgbdt.train(params, dgbdt.Dataset(without, label=y), 5, verbose_eval=False)
    np.testing.assert_array_equal(b.predict(Xn), ref.predict(without))


def test_one_row():
    X = np.array([[0.5, -1.0, 2.0]], dtype=np.float32)
    b = dgbdt.train({"base_score": 0.0, "eta": 0.3}, dgbdt.Dataset(X, label=[3.0]), 3,
                    verbose_eval=False)
    assert b.num_boosted_rounds() == 3
    assert all(t.n_nodes == 1 for t in b.trees)
    m = 0.0
    for _ in range(3):  # leaf = eta * (y - m) / (1 + lambda)
        m += float(np.float32(0.3 * (3.0 - m) / 2.0))
    assert b.predict(X)[0] == pytest.approx(m, rel=1e-6)
    # default base score: the label itself, nothing left to learn
    b = dgbdt.train({}, dgbdt.Dataset(X, label=[3.0]), 2, verbose_eval=False)
    assert b.predict(X)[0] == pytest.approx(3.0)
    # binary with one row and evals (auc would be undefined; logloss is fine)
    d = dgbdt.Dataset(X, label=[1.0])
    res = {}
    dgbdt.train({"objective": "binary:logistic"}, d, 2, evals=[(d, "t")], evals_result=res,
                verbose_eval=False)
    assert len(res["t"]["logloss"]) == 2


def same_structure(a, b):
    assert len(a.trees) == len(b.trees)
    for s, t in zip(a.trees, b.trees):
        np.testing.assert_array_equal(s.left, t.left)
        np.testing.assert_array_equal(s.right, t.right)
        np.testing.assert_array_equal(s.feature, t.feature)
        np.testing.assert_array_equal(s.threshold[s.left != -1], t.threshold[t.left != -1])
        np.testing.assert_array_equal(s.default_left, t.default_left)


def test_duplicated_rows_equal_weight_two():
    X, s, rng = low_cardinality(n=600, seed=1)
    y = s + rng.normal(scale=0.3, size=len(s))
    params = {"max_depth": 4, "min_child_weight": 0}
    dup = dgbdt.train(params, dgbdt.Dataset(np.vstack([X, X]), label=np.concatenate([y, y])), 5,
                      verbose_eval=False)
    w2 = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=np.full(len(y), 2.0)), 5,
                     verbose_eval=False)
    same_structure(dup, w2)
    np.testing.assert_allclose(dup.predict(X), w2.predict(X), rtol=1e-6, atol=1e-6)


def test_many_duplicate_rows_train():
    X = np.repeat(np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]], dtype=np.float32), 50, axis=0)
    y = np.repeat([1.0, 5.0, 9.0], 50)
    b = dgbdt.train({"eta": 1.0, "lambda": 0.0}, dgbdt.Dataset(X, label=y), 3, verbose_eval=False)
    np.testing.assert_allclose(b.predict(X[[0, 50, 100]]), [1.0, 5.0, 9.0], rtol=1e-5)


def test_zero_weight_rows_same_as_dropped():
    X, s, rng = low_cardinality(n=800, seed=2)
    y = s + rng.normal(scale=0.3, size=len(s))
    drop = rng.random(len(y)) < 0.3
    Xz = X.copy()
    # the zero-weight rows carry values no kept row has: they must not add cuts
    Xz[drop, 0] = rng.uniform(-9, 9, drop.sum()).astype(np.float32)
    Xz[drop, 1] = 123.0
    yz = y.copy()
    yz[drop] = 1000.0
    w = rng.uniform(0.5, 2.0, len(y))
    wz = np.where(drop, 0.0, w)
    params = {"max_depth": 4}
    zero = dgbdt.train(params, dgbdt.Dataset(Xz, label=yz, weight=wz, page_rows=300), 5,
                       verbose_eval=False)
    kept = dgbdt.train(params, dgbdt.Dataset(X[~drop], label=y[~drop], weight=w[~drop]), 5,
                       verbose_eval=False)
    c_zero = dgbdt.Dataset(Xz, label=yz, weight=wz).cuts(256)
    c_kept = dgbdt.Dataset(X[~drop], label=y[~drop], weight=w[~drop]).cuts(256)
    np.testing.assert_array_equal(c_zero.values, c_kept.values)
    np.testing.assert_array_equal(c_zero.ptrs, c_kept.ptrs)
    same_structure(zero, kept)
    np.testing.assert_allclose(zero.predict(X), kept.predict(X), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(zero.base_margin, kept.base_margin, rtol=1e-12)


def test_zero_weight_rows_same_trees_as_xgboost():
    xgb = pytest.importorskip("xgboost")
    X, s, rng = low_cardinality(n=800, seed=3)
    y = (s + rng.normal(scale=0.3, size=len(s))).astype(np.float32)
    w = rng.uniform(0.5, 2.0, len(y))
    drop = rng.random(len(y)) < 0.3
    X[drop, 0] = rng.uniform(-5, 5, drop.sum()).astype(np.float32)
    w[drop] = 0.0
    params = {"max_depth": 3}
    ours = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=w), 4, verbose_eval=False)
    theirs = xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X, label=y, weight=w), 4)
    trees = json.loads(theirs.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    for a, t in zip(ours.trees, trees):
        np.testing.assert_array_equal(a.left, t["left_children"])
        inner = a.left != -1
        np.testing.assert_array_equal(a.feature[inner], np.array(t["split_indices"])[inner])
        np.testing.assert_array_equal(
            a.threshold[inner], np.array(t["split_conditions"], dtype=np.float32)[inner])
    np.testing.assert_allclose(ours.predict(X), theirs.predict(xgb.DMatrix(X)), atol=1e-5)


# -- timings -------------------------------------------------------------------------------
def test_timings_have_every_stage():
    X, y = binary_data()
    dtrain, dvalid = split(X, y, 300)
    b = dgbdt.train({"objective": "binary:logistic"}, dtrain, 3, evals=[(dvalid, "v")],
                    verbose_eval=False)
    assert set(b.timings) == set(STAGES)
    assert all(isinstance(v, float) and v >= 0.0 for v in b.timings.values())
    assert b.timings["histograms"] > 0 and b.timings["evaluation"] > 0
    # timings are not part of the model file
    assert "timings" not in b.save_raw()
    assert dgbdt.load_model(b.save_raw()).timings == {}
