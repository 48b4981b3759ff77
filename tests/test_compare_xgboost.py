"""Parity with XGBoost's hist trees on identical bins.

On features with at most max_bin distinct values both libraries' cuts are the distinct values
(tests/test_quantize.py checks that), so each tree must be the same: split features, thresholds
(float32, exact), default directions, and leaf values within 1e-5 relative. On continuous data
the sketches differ, so only the test metric is compared.
"""
import json

import numpy as np
import pytest

import dgbdt

xgb = pytest.importorskip("xgboost")


def xgb_trees(bst):
    model = json.loads(bst.save_raw("json"))
    return model["learner"]["gradient_booster"]["model"]["trees"]


def assert_same_trees(booster, bst, rtol=1e-5):
    """Same structure, features, float32 thresholds and default directions; leaf values within
    rtol of the tree's largest leaf (XGBoost's float32 gradients leave ~1e-7 relative noise in
    sums, which a leaf near zero after cancellation shows as a larger relative error)."""
    theirs = xgb_trees(bst)
    assert len(booster.trees) == len(theirs)
    for i, (a, b) in enumerate(zip(booster.trees, theirs)):
        where = f"tree {i}"
        assert a.n_nodes == len(b["left_children"]), where
        np.testing.assert_array_equal(a.left, b["left_children"], err_msg=where)
        np.testing.assert_array_equal(a.right, b["right_children"], err_msg=where)
        inner = ~a.is_leaf()
        np.testing.assert_array_equal(a.feature[inner], np.array(b["split_indices"])[inner],
                                      err_msg=where)
        np.testing.assert_array_equal(
            a.threshold[inner], np.array(b["split_conditions"], dtype=np.float32)[inner],
            err_msg=where)
        np.testing.assert_array_equal(a.default_left[inner],
                                      np.array(b["default_left"], dtype=bool)[inner],
                                      err_msg=where)
        leaves = np.array(b["split_conditions"], np.float32)[~inner]
        np.testing.assert_allclose(a.threshold[~inner], leaves, rtol=rtol,
                                   atol=rtol * np.abs(leaves).max(), err_msg=where)
        np.testing.assert_allclose(a.sum_hessian, b["sum_hessian"], rtol=1e-5, err_msg=where)
        # base_weights: a leaf's value, an inner node's w* without eta (XGBoost's pruner
        # makes eta * w* the value of a node it turns into a leaf)
        base = np.array(b["base_weights"], np.float32)
        np.testing.assert_allclose(a.base_weight, base, rtol=rtol,
                                   atol=rtol * np.abs(base).max(), err_msg=where)


def low_cardinality(n=4000, f=6, levels=12, missing=0.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, levels, size=(n, f)).astype(np.float32) * 0.5 - 2.0
    if missing:
        X[rng.random((n, f)) < missing] = np.nan
    Z = np.nan_to_num(X, nan=0.7)
    signal = Z[:, 0] * 0.8 + np.sin(Z[:, 1]) - 0.3 * Z[:, 2] * Z[:, 3]
    return X, signal, rng


def fit_both(params, X, y, rounds, weight=None):
    y = np.asarray(y, dtype=np.float32)  # XGBoost keeps labels in float32: same inputs
    booster = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=weight), rounds,
                          verbose_eval=False)
    bst = xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X, label=y, weight=weight),
                    rounds)
    return booster, bst


@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_squared_error_same_trees(missing):
    X, signal, rng = low_cardinality(missing=missing)
    y = signal + rng.normal(scale=0.5, size=len(signal))
    params = {"objective": "reg:squarederror", "max_depth": 5, "eta": 0.3}
    booster, bst = fit_both(params, X, y, 8)
    assert_same_trees(booster, bst)
    np.testing.assert_allclose(booster.predict(X), bst.predict(xgb.DMatrix(X)), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("objective", ["binary:logistic", "reg:logistic", "binary:logitraw"])
def test_logistic_same_trees(objective):
    X, signal, rng = low_cardinality(missing=0.1, seed=1)
    y = (rng.random(len(signal)) < 1 / (1 + np.exp(-signal))).astype(np.float64)
    params = {"objective": objective, "max_depth": 4, "eta": 0.3}
    booster, bst = fit_both(params, X, y, 8)
    assert_same_trees(booster, bst)
    np.testing.assert_allclose(booster.predict(X), bst.predict(xgb.DMatrix(X)), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("extra", [
    {"lambda": 5.0, "alpha": 0.5},
    {"gamma": 2.0, "min_child_weight": 20.0},
    # (with lambda=0 too, XGBoost's float32 gain arithmetic makes noise-level splits where a
    # clipped parent and children have equal weights; dgbdt's float64 gains do not)
    {"max_delta_step": 0.2, "lambda": 1.0},
    {"max_bin": 8},
])
def test_regularization_same_trees(extra):
    X, signal, rng = low_cardinality(levels=8, seed=2)
    y = (rng.random(len(signal)) < 1 / (1 + np.exp(-signal))).astype(np.float64)
    params = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.5, **extra}
    booster, bst = fit_both(params, X, y, 6)
    assert_same_trees(booster, bst)


def test_weights_same_trees():
    X, signal, rng = low_cardinality(seed=3)
    y = signal + rng.normal(size=len(signal))
    w = rng.uniform(0.1, 3.0, size=len(y))
    booster, bst = fit_both({"max_depth": 4}, X, y, 6, weight=w)
    assert_same_trees(booster, bst)


def test_multiclass_same_trees():
    X, signal, rng = low_cardinality(n=3000, seed=4)
    y = np.digitize(signal + rng.normal(scale=0.3, size=len(signal)), [-0.5, 0.8]).astype(float)
    params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 3}
    booster, bst = fit_both(params, X, y, 4)
    assert_same_trees(booster, bst)
    np.testing.assert_allclose(booster.predict(X), bst.predict(xgb.DMatrix(X)), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("objective,metric", [("binary:logistic", "logloss"),
                                              ("reg:squarederror", "rmse")])
def test_continuous_metric_close(objective, metric):
    """Different sketches, so different cuts: the held-out metric must still be within 0.5 %."""
    rng = np.random.default_rng(0)
    n = 60000
    X = rng.standard_normal((n, 10)).astype(np.float32)
    signal = (np.sin(2 * X[:, 2]) + X[:, 3] - 0.5 * X[:, 4] ** 2
              + 0.5 * X[:, 0] * (X[:, 1] > 0))
    if objective == "binary:logistic":
        y = (rng.random(n) < 1 / (1 + np.exp(-2 * signal))).astype(np.float32)
    else:
        y = (signal + rng.normal(scale=0.5, size=n)).astype(np.float32)
    tr, te = slice(0, 40000), slice(40000, None)
    params = {"objective": objective, "max_depth": 4, "eta": 0.1, "eval_metric": metric}
    res_d, res_x = {}, {}
    dgbdt.train(params, dgbdt.Dataset(X[tr], label=y[tr]), 100,
                evals=[(dgbdt.Dataset(X[te], label=y[te]), "test")], evals_result=res_d,
                verbose_eval=False)
    xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X[tr], label=y[tr]), 100,
              evals=[(xgb.DMatrix(X[te], label=y[te]), "test")], evals_result=res_x,
              verbose_eval=False)
    ours, theirs = res_d["test"][metric][-1], res_x["test"][metric][-1]
    assert abs(ours - theirs) <= 0.005 * theirs, (ours, theirs)


def _labels_for(objective, signal, rng):
    """Labels each objective accepts, driven by the same signal."""
    if objective in ("count:poisson", "reg:tweedie"):
        return rng.poisson(np.exp(0.4 * signal)).astype(np.float64)
    if objective == "reg:gamma":
        return rng.gamma(2.0, np.exp(0.4 * signal) / 2.0)
    if objective == "reg:squaredlogerror":
        return np.exp(0.5 * signal + rng.normal(scale=0.3, size=len(signal)))
    if objective in ("binary:hinge", "binary:logistic"):
        return (signal + rng.normal(scale=0.7, size=len(signal)) > 0).astype(np.float64)
    return signal * 3.0 + rng.normal(scale=1.0, size=len(signal))      # pseudo-Huber


@pytest.mark.parametrize("objective,extra", [
    ("count:poisson", {}),                                  # max_delta_step 0.7 by default
    ("count:poisson", {"max_delta_step": 0.3}),
    ("reg:gamma", {}),
    ("reg:tweedie", {}),
    ("reg:tweedie", {"tweedie_variance_power": 1.2}),
    ("reg:squaredlogerror", {}),
    ("reg:pseudohubererror", {}),
    ("reg:pseudohubererror", {"huber_slope": 2.5}),
    ("binary:hinge", {}),
    ("binary:logistic", {"scale_pos_weight": 3.0}),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_more_objectives_same_trees(objective, extra, weighted):
    """#16: each objective's gradients, hessians, intercept and transform as XGBoost's: the
    same trees on identical bins, the same base_score, the same predictions."""
    X, signal, rng = low_cardinality(missing=0.1, seed=7)
    y = _labels_for(objective, signal, rng)
    w = rng.uniform(0.3, 2.0, size=len(y)) if weighted else None
    params = {"objective": objective, "max_depth": 4, "eta": 0.3, "eval_metric": "rmse",
              **extra}
    booster, bst = fit_both(params, X, y, 6, weight=w)
    theirs = float(json.loads(bst.save_config())["learner"]["learner_model_param"]
                   ["base_score"].strip("[]"))
    base = booster.objective.transform(np.asarray(booster.base_margin, dtype=np.float64)[None])
    assert float(base[0]) == pytest.approx(theirs, rel=1e-6, abs=1e-7)
    assert_same_trees(booster, bst)
    # (pseudo-Huber's hessians vanish for large residuals, so some leaves are large and carry
    # XGBoost's float32 noise, about 1e-6 of the largest, into the sums)
    theirs = bst.predict(xgb.DMatrix(X))
    np.testing.assert_allclose(booster.predict(X), theirs, rtol=1e-5,
                               atol=1e-5 * np.abs(theirs).max())


@pytest.mark.parametrize("objective,extra", [
    ("count:poisson", {}), ("reg:gamma", {}), ("reg:tweedie", {"tweedie_variance_power": 1.2}),
    ("reg:squaredlogerror", {}), ("reg:pseudohubererror", {"huber_slope": 2.5}),
    ("binary:hinge", {}),
])
def test_more_objectives_default_metric_history(objective, extra):
    """Each objective's default metric (poisson-nloglik, gamma-nloglik, tweedie-nloglik@r,
    rmsle, mphe, error) on a held-out set, round by round, as XGBoost's evaluator gives it."""
    X, signal, rng = low_cardinality(missing=0.1, seed=8)
    y = _labels_for(objective, signal, rng).astype(np.float32)
    params = {"objective": objective, "max_depth": 4, "eta": 0.3, **extra}
    tr, te = slice(0, 3000), slice(3000, None)
    res_d, res_x = {}, {}
    dgbdt.train(params, dgbdt.Dataset(X[tr], label=y[tr]), 6,
                evals=[(dgbdt.Dataset(X[te], label=y[te]), "test")], evals_result=res_d,
                verbose_eval=False)
    xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X[tr], label=y[tr]), 6,
              evals=[(xgb.DMatrix(X[te], label=y[te]), "test")], evals_result=res_x,
              verbose_eval=False)
    assert list(res_d["test"]) == list(res_x["test"])            # the same metric name
    (name, ours), = res_d["test"].items()
    np.testing.assert_allclose(ours, res_x["test"][name], rtol=2e-5)


@pytest.mark.parametrize("objective,extra", [
    ("reg:absoluteerror", {}),
    ("reg:quantileerror", {"quantile_alpha": 0.3}),
    ("reg:quantileerror", {"quantile_alpha": 0.9}),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_quantile_losses_same_trees(objective, extra, weighted):
    """reg:absoluteerror and reg:quantileerror: the trees grown on the sign/pinball gradients,
    then every leaf refreshed to eta times the quantile of its rows' residuals (XGBoost's
    UpdateTreeLeaf), the intercept the labels' quantile, and the default metric's history."""
    X, signal, rng = low_cardinality(missing=0.1, seed=9)
    y = signal * 2.0 + rng.standard_t(3, size=len(signal))
    w = rng.uniform(0.3, 2.0, size=len(y)) if weighted else None
    params = {"objective": objective, "max_depth": 4, "eta": 0.3, **extra}
    booster, bst = fit_both(params, X, y, 6, weight=w)
    theirs = float(json.loads(bst.save_config())["learner"]["learner_model_param"]
                   ["base_score"].strip("[]"))
    assert booster.base_margin[0] == pytest.approx(theirs, rel=1e-6, abs=1e-7)
    assert_same_trees(booster, bst)
    p = bst.predict(xgb.DMatrix(X))
    np.testing.assert_allclose(booster.predict(X), p, rtol=1e-5, atol=1e-5 * np.abs(p).max())
    res_d, res_x = {}, {}
    yf = y.astype(np.float32)
    dgbdt.train(params, dgbdt.Dataset(X[:3000], label=yf[:3000]), 4, verbose_eval=False,
                evals=[(dgbdt.Dataset(X[3000:], label=yf[3000:]), "t")], evals_result=res_d)
    xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X[:3000], label=yf[:3000]), 4,
              evals=[(xgb.DMatrix(X[3000:], label=yf[3000:]), "t")], evals_result=res_x,
              verbose_eval=False)
    assert list(res_d["t"]) == list(res_x["t"])
    for name in res_d["t"]:
        np.testing.assert_allclose(res_d["t"][name], res_x["t"][name], rtol=2e-5)


@pytest.mark.parametrize("weighted", [False, True])
def test_several_quantiles_same_trees(weighted):
    """quantile_alpha=[0.1, 0.5, 0.9] (XGBoost's one output per quantile): the intercept
    vector (each quantile of the labels), the trees of each round (one per quantile, leaves
    refreshed to its quantile), predictions [n, 3], the quantile metric (averaged over the
    quantiles) round by round, and the model through XGBoost's JSON format both ways."""
    X, signal, rng = low_cardinality(missing=0.1, seed=9)
    y = signal * 2.0 + rng.standard_t(3, size=len(signal))
    w = rng.uniform(0.3, 2.0, size=len(y)) if weighted else None
    params = {"objective": "reg:quantileerror", "quantile_alpha": [0.1, 0.5, 0.9],
              "max_depth": 4, "eta": 0.3}
    booster, bst = fit_both(params, X, y, 5, weight=w)
    theirs = json.loads(bst.save_config())["learner"]["learner_model_param"]["base_score"]
    np.testing.assert_allclose(booster.base_margin,
                               [float(v) for v in theirs.strip("[]").split(",")], rtol=1e-6)
    assert_same_trees(booster, bst)
    assert booster.tree_class == [0, 1, 2] * 5
    p = bst.predict(xgb.DMatrix(X))
    assert booster.predict(X).shape == p.shape == (len(y), 3)
    np.testing.assert_allclose(booster.predict(X), p, rtol=1e-5, atol=1e-5 * np.abs(p).max())
    # XGBoost reads dgbdt's export, dgbdt reads XGBoost's model
    bx = xgb.Booster()
    bx.load_model(bytearray(booster.save_raw("xgboost"), "utf-8"))
    np.testing.assert_allclose(bx.predict(xgb.DMatrix(X)), p, rtol=1e-5,
                               atol=1e-5 * np.abs(p).max())
    back = dgbdt.load_model(bytearray(bst.save_raw("json")).decode())
    np.testing.assert_allclose(back.predict(X), p, rtol=1e-5, atol=1e-5 * np.abs(p).max())
    res_d, res_x = {}, {}
    yf = y.astype(np.float32)
    wt = None if w is None else w[3000:]
    dgbdt.train(params, dgbdt.Dataset(X[:3000], label=yf[:3000]), 4, verbose_eval=False,
                evals=[(dgbdt.Dataset(X[3000:], label=yf[3000:], weight=wt), "t")],
                evals_result=res_d)
    xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X[:3000], label=yf[:3000]), 4,
              evals=[(xgb.DMatrix(X[3000:], label=yf[3000:], weight=wt), "t")],
              evals_result=res_x, verbose_eval=False)
    assert list(res_d["t"]) == list(res_x["t"]) == ["quantile"]
    np.testing.assert_allclose(res_d["t"]["quantile"], res_x["t"]["quantile"], rtol=2e-5)


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic"])
@pytest.mark.parametrize("extra", [
    {"monotone_constraints": (1, 0, -1, 0, 0, 0)},
    {"monotone_constraints": "(1,1,0,0,-1,0)", "lambda": 3.0, "alpha": 0.5},
    {"monotone_constraints": (-1, 0, 1), "max_delta_step": 0.4, "gamma": 0.5},
])
def test_monotone_constraints_same_trees(objective, extra):
    """#17: monotone constraints as XGBoost's TreeEvaluator (weights clipped to node bounds,
    gains at the clipped weights, children bounded by the midpoint): the same trees."""
    X, signal, rng = low_cardinality(missing=0.1, seed=11)
    y = signal + rng.normal(scale=0.5, size=len(signal))
    y = y if objective.startswith("reg") else (y > 0).astype(float)
    w = rng.uniform(0.3, 2.0, size=len(y))
    params = {"objective": objective, "max_depth": 5, "eta": 0.3, **extra}
    booster, bst = fit_both(params, X, y, 8, weight=w)
    assert_same_trees(booster, bst)
    np.testing.assert_allclose(booster.predict(X), bst.predict(xgb.DMatrix(X)), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("constraints", ["[[0,1],[2,3]]", "[[0,1],[0,2],[3,4,5]]", "[[5]]",
                                         "[[1, 2, 3]]"])
def test_interaction_constraints_same_trees(constraints):
    """#17: interaction constraints as XGBoost's (any feature at the root; below, the
    features of every group holding the whole path, and the path's own): the same trees."""
    X, signal, rng = low_cardinality(missing=0.1, seed=12)
    Z = np.nan_to_num(X)
    y = signal + Z[:, 4] * Z[:, 5] + rng.normal(scale=0.5, size=len(signal))
    params = {"max_depth": 4, "eta": 0.3, "interaction_constraints": constraints}
    booster, bst = fit_both(params, X, y, 6)
    assert_same_trees(booster, bst)


@pytest.mark.parametrize("weighted", [False, True])
def test_cox_same_trees_and_metric(weighted):
    """survival:cox (censored times negative): XGBoost's risk-set gradients in the order of
    |y|, its intercept (a Newton step from 0), the same trees and cox-nloglik history."""
    X, signal, rng = low_cardinality(missing=0.1, seed=13)
    t = rng.exponential(np.exp(-0.5 * signal))
    y = np.where(rng.random(len(t)) < 0.3, -t, t).astype(np.float32)
    w = rng.uniform(0.5, 2.0, len(y)) if weighted else None
    params = {"objective": "survival:cox", "max_depth": 4, "eta": 0.3}
    booster, bst = fit_both(params, X, y, 6, weight=w)
    assert_same_trees(booster, bst)
    p = bst.predict(xgb.DMatrix(X))
    np.testing.assert_allclose(booster.predict(X), p, rtol=1e-5)
    res_d, res_x = {}, {}
    dgbdt.train(params, dgbdt.Dataset(X[:3000], label=y[:3000]), 4, verbose_eval=False,
                evals=[(dgbdt.Dataset(X[3000:], label=y[3000:]), "t")], evals_result=res_d)
    xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X[:3000], label=y[:3000]), 4,
              evals=[(xgb.DMatrix(X[3000:], label=y[3000:]), "t")], evals_result=res_x,
              verbose_eval=False)
    np.testing.assert_allclose(res_d["t"]["cox-nloglik"], res_x["t"]["cox-nloglik"],
                               rtol=1e-7)


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic"])
@pytest.mark.parametrize("extra", [
    {"max_leaves": 8, "max_depth": 0},
    {"max_leaves": 16, "max_depth": 4},
    {"max_leaves": 0, "max_depth": 5},
    {"max_leaves": 5, "max_depth": 3, "gamma": 0.5, "lambda": 2.0},
    {"max_leaves": 12, "max_depth": 0, "monotone_constraints": (1, 0, -1, 0, 0, 0)},
    {"max_leaves": 12, "max_depth": 0, "interaction_constraints": "[[0,1],[2,3]]"},
])
def test_lossguide_same_trees(objective, extra):
    """#17: grow_policy="lossguide" as XGBoost's driver (the largest float32 loss change
    first, ties to the smaller node id, children numbered in expansion order, max_leaves and
    max_depth, with constraints): the same trees, weighted."""
    X, signal, rng = low_cardinality(missing=0.1, seed=3)
    y = signal + rng.normal(scale=0.5, size=len(signal))
    y = y if objective.startswith("reg") else (y > 0).astype(float)
    w = rng.uniform(0.3, 2.0, size=len(y))
    params = {"objective": objective, "eta": 0.3, "grow_policy": "lossguide", **extra}
    booster, bst = fit_both(params, X, y, 6, weight=w)
    assert_same_trees(booster, bst)


def test_lossguide_multiclass_same_trees():
    X, signal, rng = low_cardinality(missing=0.1, seed=11)
    y = np.digitize(signal, np.quantile(signal, [0.33, 0.66]))
    params = {"objective": "multi:softprob", "num_class": 3, "eta": 0.3,
              "grow_policy": "lossguide", "max_leaves": 6, "max_depth": 0}
    booster, bst = fit_both(params, X, y, 4)
    assert_same_trees(booster, bst)
