"""survival:aft (#16): XGBoost's accelerated failure time objective on label intervals, its
gradients and hessians (to float32 precision, the limits far from the data included), the same
trees on identical bins for each distribution and scale, with and without weights, and the
aft-nloglik / interval-regression-accuracy histories."""
import json

import numpy as np
import pytest

import dgbdt
from dgbdt.objectives.registry import get_objective
from test_compare_xgboost import assert_same_trees, low_cardinality

xgb = pytest.importorskip("xgboost")

DISTS = ["normal", "logistic", "extreme"]


def intervals(t, rng):
    """Observed, right-, left- and interval-censored rows (float32, as XGBoost keeps them)."""
    u = rng.random(len(t))
    lo = np.where(u < 0.15, 0.0, t)
    hi = np.where(u < 0.15, t, np.where(u < 0.4, np.inf, np.where(u < 0.55, t * 1.5, t)))
    return lo.astype(np.float32), hi.astype(np.float32)


def xgb_matrix(X, lo, hi, weight=None, base_margin=None):
    d = xgb.DMatrix(X, weight=weight, base_margin=base_margin)
    d.set_float_info("label_lower_bound", lo)
    d.set_float_info("label_upper_bound", hi)
    return d


def xgb_gradient(lo, hi, pred, dist, scale):
    """XGBoost's (g, h) of one row: a one-row tree with lambda = 0 has sum_hessian h and
    root weight -g / h."""
    d = xgb_matrix(np.zeros((1, 1), np.float32), np.array([lo], np.float32),
                   np.array([hi], np.float32), base_margin=np.array([pred], np.float32))
    b = xgb.train({"objective": "survival:aft", "aft_loss_distribution": dist,
                   "aft_loss_distribution_scale": scale, "tree_method": "hist", "lambda": 0.0,
                   "min_child_weight": 0.0, "max_depth": 1}, d, 1)
    t = json.loads(b.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"][0]
    h = t["sum_hessian"][0]
    return -t["base_weights"][0] * h, h


@pytest.mark.parametrize("dist", DISTS)
def test_gradients_are_xgboosts(dist):
    """Every censoring kind, predictions from far below to far above the interval (where the
    ratios are 0/0 and XGBoost's limits and clips take over): g and h to 1e-6 relative
    (XGBoost's are float32)."""
    obj = get_objective("survival:aft", {"aft_loss_distribution": dist,
                                         "aft_loss_distribution_scale": 0.8})
    for lo, hi in [(2.0, 2.0), (2.0, np.inf), (0.0, 2.0), (1.0, 3.0), (0.5, 0.5)]:
        for pred in [-40.0, -8.0, -1.0, 0.0, 0.3, 0.69, 2.0, 8.0, 40.0]:
            gx, hx = xgb_gradient(lo, hi, pred, dist, 0.8)
            g, h = obj.gradients(np.array([[pred]]), np.array([[np.float32(lo),
                                                                np.float32(hi)]]), None)
            where = f"{dist} [{lo}, {hi}] at {pred}"
            assert g[0, 0] == pytest.approx(gx, rel=1e-6, abs=1e-6), where
            assert h[0, 0] == pytest.approx(hx, rel=1e-6), where
    g, h = obj.gradients(np.zeros((3, 1)), np.array([[1.0, 1.0], [1.0, np.inf], [0, 1.0]]),
                         np.array([0.5, 2.0, 0.0]))
    g1, h1 = obj.gradients(np.zeros((3, 1)), np.array([[1.0, 1.0], [1.0, np.inf], [0, 1.0]]),
                           None)
    np.testing.assert_array_equal(g[:, 0], g1[:, 0] * [0.5, 2.0, 0.0])      # times w
    np.testing.assert_array_equal(h[:, 0], h1[:, 0] * [0.5, 2.0, 0.0])


@pytest.mark.parametrize("dist,scale,weighted", [("normal", 1.0, False), ("normal", 0.7, True),
                                                 ("logistic", 1.3, False),
                                                 ("logistic", 1.0, True),
                                                 ("extreme", 0.7, False),
                                                 ("extreme", 1.0, True)])
def test_same_trees_and_metrics(dist, scale, weighted):
    X, signal, rng = low_cardinality(missing=0.1, seed=14)
    lo, hi = intervals(rng.exponential(np.exp(0.5 * signal)), rng)
    w = rng.uniform(0.3, 2.0, len(lo)).astype(np.float32) if weighted else None
    params = {"objective": "survival:aft", "aft_loss_distribution": dist,
              "aft_loss_distribution_scale": scale, "max_depth": 4, "eta": 0.3,
              "eval_metric": ["interval-regression-accuracy", "aft-nloglik"]}
    tr, te = slice(0, 3000), slice(3000, None)
    d = dgbdt.Dataset(X[tr], weight=None if w is None else w[tr], label_lower_bound=lo[tr],
                      label_upper_bound=hi[tr])
    dv = dgbdt.Dataset(X[te])
    dv.set_float_info("label_lower_bound", lo[te])
    dv.set_float_info("label_upper_bound", hi[te])
    res_d, res_x = {}, {}
    booster = dgbdt.train(params, d, 6, evals=[(d, "train"), (dv, "test")],
                          evals_result=res_d, verbose_eval=False)
    dx = xgb_matrix(X[tr], lo[tr], hi[tr], None if w is None else w[tr])
    bst = xgb.train({**params, "tree_method": "hist"}, dx, 6,
                    evals=[(dx, "train"), (xgb_matrix(X[te], lo[te], hi[te]), "test")],
                    evals_result=res_x, verbose_eval=False)
    base = json.loads(bst.save_config())["learner"]["learner_model_param"]["base_score"]
    assert np.exp(booster.base_margin[0]) == pytest.approx(float(base.strip("[]")))
    assert_same_trees(booster, bst)
    p = bst.predict(xgb.DMatrix(X))
    np.testing.assert_allclose(booster.predict(X), p, rtol=1e-5)
    for name in ("train", "test"):
        assert list(res_d[name]) == list(res_x[name])
        for metric in res_d[name]:
            np.testing.assert_allclose(res_d[name][metric], res_x[name][metric], rtol=1e-5,
                                       err_msg=f"{name} {metric}")
    # the model through files: dgbdt's, and XGBoost's format read by XGBoost
    back = dgbdt.load_model(booster.save_raw())
    np.testing.assert_array_equal(back.predict(X), booster.predict(X))
    bx = xgb.Booster()
    bx.load_model(bytearray(booster.save_raw("xgboost"), "utf-8"))
    np.testing.assert_allclose(bx.predict(xgb.DMatrix(X)), p, rtol=1e-5)


def test_errors_say_what_is_wrong():
    X = np.random.default_rng(0).standard_normal((20, 2)).astype(np.float32)
    lo, hi = np.ones(20), np.full(20, 2.0)
    with pytest.raises(ValueError, match="dtrain needs label_lower_bound and "
                                         "label_upper_bound"):
        dgbdt.train({"objective": "survival:aft"}, dgbdt.Dataset(X, label=lo), 1,
                    verbose_eval=False)
    with pytest.raises(ValueError, match="eval set 'v' needs label_lower_bound"):
        dgbdt.train({"objective": "survival:aft"},
                    dgbdt.Dataset(X, label_lower_bound=lo, label_upper_bound=hi), 1,
                    evals=[(dgbdt.Dataset(X, label=lo), "v")], verbose_eval=False)
    for bad_lo, bad_hi, msg in [(-lo, -lo, r"row 0 has an observed time \(lower == upper\) "
                                           "<= 0"),
                                (hi, lo, "row 0 has label_upper_bound < label_lower_bound"),
                                (np.full(20, np.inf), hi, "has label_lower_bound inf")]:
        with pytest.raises(ValueError, match=msg):
            dgbdt.train({"objective": "survival:aft"},
                        dgbdt.Dataset(X, label_lower_bound=bad_lo, label_upper_bound=bad_hi),
                        1, verbose_eval=False)
    with pytest.raises(ValueError, match="label bounds are survival:aft's labels, read by "
                                         "that objective only"):
        dgbdt.train({"objective": "reg:squarederror"},
                    dgbdt.Dataset(X, label_lower_bound=lo, label_upper_bound=hi), 1)
    with pytest.raises(ValueError, match="label_lower_bound has 3 values; the data has 20"):
        dgbdt.Dataset(X, label_lower_bound=lo[:3])
    from dgbdt.params.normalize import ParameterError
    with pytest.raises(ParameterError, match="aft_loss_distribution must be one of"):
        dgbdt.train({"objective": "survival:aft", "aft_loss_distribution": "gumbel"},
                    dgbdt.Dataset(X, label_lower_bound=lo, label_upper_bound=hi), 1)
    with pytest.raises(ValueError, match="interval-regression-accuracy scores label "
                                         "intervals"):
        dgbdt.train({"eval_metric": "interval-regression-accuracy"},
                    dgbdt.Dataset(X, label=lo), 1, evals=[(dgbdt.Dataset(X, label=lo), "v")],
                    verbose_eval=False)


def test_interval_metrics_merge_to_the_same_bits():
    """aft-nloglik and interval-regression-accuracy are exact sums: any chunking of the rows
    gives the unchunked value's bits."""
    from dgbdt.metrics.registry import get_metric
    rng = np.random.default_rng(2)
    lo, hi = intervals(rng.exponential(size=500), rng)
    y = np.stack([lo, hi], axis=1).astype(np.float64)
    m = rng.normal(size=500)
    w = rng.uniform(0.1, 2.0, 500)
    for name in ("aft-nloglik", "interval-regression-accuracy"):
        metric = get_metric(name, {"aft_loss_distribution": "logistic"})
        ref = metric(y, m, w)
        for cut in ([100], [7, 300, 301]):
            parts = [metric.summary(y[c], m[c], w[c]) for c in np.split(np.arange(500), cut)]
            merged = parts[0]
            for s in parts[1:]:
                merged = metric.merge(merged, s)
            assert metric.value(merged) == ref, name
    assert get_metric("interval-regression-accuracy").higher_is_better


def test_compat_dmatrix_takes_label_bounds():
    """dgbdt.compat.xgboost: DMatrix(label_lower_bound=..., label_upper_bound=...) and
    set_float_info give the Dataset's model."""
    from dgbdt.compat import xgboost as dx
    rng = np.random.default_rng(4)
    X = rng.integers(0, 6, (400, 3)).astype(np.float32)
    lo, hi = intervals(rng.exponential(np.exp(0.3 * X[:, 0])), rng)
    params = {"objective": "survival:aft", "max_depth": 3}
    want = dgbdt.train(params, dgbdt.Dataset(X, label_lower_bound=lo, label_upper_bound=hi),
                       3, verbose_eval=False).save_raw()
    a = dx.DMatrix(X, label_lower_bound=lo, label_upper_bound=hi)
    b = dx.DMatrix(X)
    b.set_float_info("label_lower_bound", lo)
    b.set_float_info("label_upper_bound", hi)
    np.testing.assert_array_equal(b.get_float_info("label_upper_bound"), hi)
    for d in (a, b):
        assert dx.train(params, d, 3).save_raw("dgbdt") == want


def test_continued_training_and_cv():
    rng = np.random.default_rng(6)
    X = rng.integers(0, 6, (400, 3)).astype(np.float32)
    lo, hi = intervals(rng.exponential(np.exp(0.3 * X[:, 0])), rng)
    d = dgbdt.Dataset(X, label_lower_bound=lo, label_upper_bound=hi)
    p = {"objective": "survival:aft", "aft_loss_distribution": "extreme", "max_depth": 3}
    whole = dgbdt.train(p, d, 6, verbose_eval=False)
    first = dgbdt.train(p, d, 4, verbose_eval=False)
    assert dgbdt.train(p, d, 2, xgb_model=first, verbose_eval=False).save_raw() == \
        whole.save_raw()
    res = dgbdt.cv(p, d, 2, nfold=3)
    assert "test-aft-nloglik-mean" in res.columns
