"""Objective tests: finite-difference gradients, intercepts vs xgboost 3.2, label checks."""

import json

import numpy as np
import pytest

from dgbdt.objectives.registry import OBJECTIVES, get_objective, sigmoid, softmax

xgb = pytest.importorskip("xgboost")

RNG = np.random.default_rng(1234)
N = 300


def _sigmoid_ref(m):
    return 1.0 / (1.0 + np.exp(-m))


# --------------------------------------------------------------------------- losses (test oracles)
def loss_squared(m, y):
    return 0.5 * (m[:, 0] - y) ** 2


def loss_logistic(m, y):
    p = _sigmoid_ref(m[:, 0])
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def loss_softmax(m, y):
    z = m - m.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(m.shape[0]), y.astype(int)]


def fd_grad(loss, m, y, eps=1e-6):
    """Central differences of the per-row loss w.r.t. each margin column."""
    g = np.empty_like(m)
    for k in range(m.shape[1]):  # loop over columns only
        d = np.zeros_like(m)
        d[:, k] = eps
        g[:, k] = (loss(m + d, y) - loss(m - d, y)) / (2 * eps)
    return g


def _data(obj_name, k=4, n=N):
    m = RNG.normal(scale=2.0, size=(n, k if obj_name.startswith("multi") else 1))
    if obj_name.startswith("multi"):
        y = RNG.integers(0, k, n).astype(np.float64)
    elif obj_name == "reg:squarederror":
        y = RNG.normal(3.0, 2.0, n)
    else:
        y = RNG.uniform(0, 1, n)  # fractional labels are legal for logistic losses
        y[: n // 2] = np.round(y[: n // 2])
    return m, y


# --------------------------------------------------------------------------- gradients
@pytest.mark.parametrize(
    "name,loss",
    [
        ("reg:squarederror", loss_squared),
        ("reg:logistic", loss_logistic),
        ("binary:logistic", loss_logistic),
        ("binary:logitraw", loss_logistic),
        ("multi:softprob", loss_softmax),
        ("multi:softmax", loss_softmax),
    ],
)
def test_gradient_matches_finite_differences(name, loss):
    obj = get_objective(name)
    m, y = _data(name)
    g, h = obj.gradients(m, y, None)
    assert g.shape == m.shape and h.shape == m.shape
    assert g.dtype == np.float64 and h.dtype == np.float64
    np.testing.assert_allclose(g, fd_grad(loss, m, y), rtol=1e-6, atol=1e-7)
    if name.startswith("multi"):
        p = softmax(m)
        np.testing.assert_allclose(h, 2 * p * (1 - p), rtol=1e-12)  # XGBoost's factor 2
    else:
        # h is the derivative of g (exact for these single-output losses)
        dg = fd_grad(lambda mm, yy: obj.gradients(mm, yy, None)[0][:, 0], m, y)
        np.testing.assert_allclose(h, dg, rtol=1e-5, atol=1e-7)


# (binary:hinge's hessian where the margin is right, FLT_MIN, is unweighted in XGBoost:
# test_hinge_gradients_intercept_and_transform checks it)
# (the rank:* objectives need query ids and take no weights yet: tests/test_rank.py)
RANK = ("rank:ndcg", "rank:pairwise", "rank:map")


# (survival:aft's label intervals: tests/test_survival_aft.py)
@pytest.mark.parametrize("name", [o for o in OBJECTIVES if o not in ("binary:hinge",
                                                                     "survival:aft", *RANK)])
def test_weights_multiply_g_and_h(name):
    obj = get_objective(name)
    m, y = _data(name)
    w = RNG.uniform(0.1, 3.0, m.shape[0])
    g0, h0 = obj.gradients(m, y, None)
    g1, h1 = obj.gradients(m, y, w)
    np.testing.assert_allclose(g1, g0 * w[:, None], rtol=1e-15)
    np.testing.assert_allclose(h1, h0 * w[:, None], rtol=1e-15)


def test_hessian_floor_and_extreme_margins():
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # underflow to 0 is fine
        g, h = get_objective("binary:logistic").gradients(np.array([[800.0], [-800.0]]), np.array([1.0, 0.0]), None)
        assert np.all(h == 1e-16) and np.all(np.abs(g) < 1e-300)
        m = np.array([[1000.0, -1000.0, 0.0]])
        g, h = get_objective("multi:softprob").gradients(m, np.array([2.0]), None)
        np.testing.assert_allclose(g, [[1.0, 0.0, -1.0]])
        assert np.all(h == 1e-16)
        assert np.all(np.isfinite(sigmoid(np.array([-1e308, 1e308]))))


def test_one_dimensional_margin_accepted():
    obj = get_objective("reg:squarederror")
    g, h = obj.gradients(np.array([1.0, 2.0]), np.array([0.0, 0.0]), None)
    np.testing.assert_array_equal(g, [[1.0], [2.0]])


# --------------------------------------------------------------------------- transforms
def test_transforms():
    m1 = RNG.normal(size=(7, 1))
    np.testing.assert_array_equal(get_objective("reg:squarederror").transform(m1), m1[:, 0])
    np.testing.assert_allclose(get_objective("reg:logistic").transform(m1), _sigmoid_ref(m1[:, 0]), rtol=1e-15)
    np.testing.assert_allclose(get_objective("binary:logistic").transform(m1), _sigmoid_ref(m1[:, 0]), rtol=1e-15)
    np.testing.assert_array_equal(get_objective("binary:logitraw").transform(m1), m1[:, 0])
    for out in (get_objective(n).transform(m1) for n in OBJECTIVES[:4]):
        assert out.shape == (7,)
    m3 = RNG.normal(size=(7, 3)) * 50
    p = get_objective("multi:softprob").transform(m3)
    assert p.shape == (7, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-14)
    e = np.exp(m3 - m3.max(axis=1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(axis=1, keepdims=True), rtol=1e-14)
    c = get_objective("multi:softmax").transform(m3)
    assert c.dtype == np.float64 and c.shape == (7,)
    np.testing.assert_array_equal(c, np.argmax(m3, axis=1))


def test_transform_matches_xgboost_predict():
    X = RNG.normal(size=(200, 3))
    y = RNG.integers(0, 3, 200).astype(float)
    for name, params in [("binary:logistic", {}), ("multi:softprob", {"num_class": 3}),
                         ("multi:softmax", {"num_class": 3})]:
        yy = (y > 0).astype(float) if name.startswith("binary") else y
        bst = xgb.train({"objective": name, "tree_method": "hist", **params}, xgb.DMatrix(X, yy), 3)
        margin = bst.predict(xgb.DMatrix(X), output_margin=True).astype(np.float64).reshape(200, -1)
        ours = get_objective(name).transform(margin)
        np.testing.assert_allclose(ours, bst.predict(xgb.DMatrix(X)), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- intercepts vs xgboost
def _xgb_intercept(params, y, w):
    """(reported base_score, margin actually used) from xgboost 3.2 with eta=0."""
    X = RNG.normal(size=(y.shape[0], 3))
    bst = xgb.train({**params, "tree_method": "hist", "eta": 0.0}, xgb.DMatrix(X, y, weight=w), 1)
    reported = json.loads(bst.save_config())["learner"]["learner_model_param"]["base_score"]
    reported = np.atleast_1d(np.asarray(json.loads(reported), dtype=np.float64))
    margin = bst.predict(xgb.DMatrix(X[:1]), output_margin=True).astype(np.float64).reshape(-1)
    return reported, margin


def _labels_for(name, k, n=400, absent=()):
    if name.startswith("multi"):
        classes = np.setdiff1d(np.arange(k), absent)
        return RNG.choice(classes, n).astype(np.float64)
    if name in ("reg:squarederror", "reg:pseudohubererror"):
        return RNG.normal(5.0, 3.0, n)
    if name in ("reg:gamma", "reg:squaredlogerror"):
        return RNG.gamma(2.0, 1.5, n)
    if name in ("count:poisson", "reg:tweedie"):
        return RNG.poisson(1.3, n).astype(np.float64)
    return (RNG.uniform(size=n) < 0.3).astype(np.float64)


# (XGBoost has no default quantile_alpha: reg:quantileerror's intercept is checked in
# test_compare_xgboost.py with one given)
# (survival:cox's intercept is checked with its trees in test_compare_xgboost.py)
@pytest.mark.parametrize("name", [o for o in OBJECTIVES if o not in ("reg:quantileerror",
                                                                      "survival:cox",
                                                                      "survival:aft", *RANK)])
@pytest.mark.parametrize("weighted", [False, True])
def test_intercept_matches_xgboost(name, weighted):
    k = 4
    params = {"objective": name, "num_class": k} if name.startswith("multi") else {"objective": name}
    y = _labels_for(name, k)
    w = RNG.uniform(0.1, 2.0, y.shape[0]) if weighted else None
    obj = get_objective(name)
    obj.check_labels(y, k)
    ours = obj.base_margin_from_labels(y, w, k)
    assert ours.shape == (obj.n_outputs(k),) and ours.dtype == np.float64
    reported, margin = _xgb_intercept(params, y, w)
    np.testing.assert_allclose(ours, margin, rtol=1e-5, atol=1e-6)
    if name in ("reg:logistic", "binary:logistic"):
        mean = np.average(y, weights=w)
        np.testing.assert_allclose(reported, [mean], rtol=1e-5)  # reported in probability space
        np.testing.assert_allclose(sigmoid(ours), [mean], rtol=1e-12)
    elif name.startswith("multi"):
        np.testing.assert_allclose(ours, reported, rtol=1e-5, atol=1e-6)
    else:     # reported as the prediction (exp of the margin for count:poisson, ...)
        np.testing.assert_allclose(obj.transform(ours[None, :]), reported, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,absent", [("multi:softprob", (3,)), ("multi:softmax", (0, 2))])
def test_multiclass_intercept_with_absent_classes(name, absent):
    k = 5
    y = _labels_for(name, k, absent=absent)
    w = RNG.uniform(0.1, 2.0, y.shape[0])
    ours = get_objective(name).base_margin_from_labels(y, w, k)
    assert np.all(np.isfinite(ours))
    np.testing.assert_allclose(ours.sum(), 0.0, atol=1e-12)
    reported, margin = _xgb_intercept({"objective": name, "num_class": k}, y, w)
    np.testing.assert_allclose(ours, reported, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, margin, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["reg:logistic", "binary:logistic"])
def test_logistic_intercept_all_one_class_is_clipped(name):
    obj = get_objective(name)
    zeros = np.zeros(50)
    ours = obj.base_margin_from_labels(zeros, None, None)
    np.testing.assert_allclose(ours, [np.log(1e-6 / (1 - 1e-6))], rtol=1e-12)
    _, margin = _xgb_intercept({"objective": name}, zeros, None)
    np.testing.assert_allclose(ours, margin, rtol=1e-5)
    # all ones: symmetric in float64 (xgboost's float32 1 - 1e-6 gives 13.745 instead)
    np.testing.assert_allclose(obj.base_margin_from_labels(np.ones(50), None, None), -ours, rtol=1e-9)


def test_label_stats_are_additive_over_partitions():
    # (the quantile losses' intercept is a quantile of all labels: no additive statistics)
    for name in [o for o in OBJECTIVES if o not in ("reg:absoluteerror", "reg:quantileerror",
                                                    "survival:cox", "survival:aft")]:
        obj = get_objective(name)
        y = _labels_for(name, 4)
        w = RNG.uniform(0.1, 2.0, y.shape[0])
        chunks = [obj.label_stats(y[s], w[s], 4)
                  for s in (slice(0, 100), slice(100, 250), slice(250, None))]
        parts = [sum(col) for col in zip(*chunks)]  # exact sums: the partitioning leaves no trace
        np.testing.assert_array_equal(obj.base_margin_from_stats(parts, 4),
                                      obj.base_margin_from_labels(y, w, 4))


def test_zero_weight_sum_raises():
    with pytest.raises(ValueError, match="sum of sample weights"):
        get_objective("reg:squarederror").base_margin_from_labels(np.ones(3), np.zeros(3), None)


# --------------------------------------------------------------------------- user base_score
@pytest.mark.parametrize(
    "name,b",
    [("reg:squarederror", 2.5), ("reg:logistic", 0.2), ("binary:logistic", 0.7), ("binary:logistic", 0.0),
     ("binary:logitraw", 1.5), ("binary:logitraw", -3.0), ("multi:softprob", 0.3), ("multi:softmax", -1.0)],
)
def test_base_score_to_margin_matches_xgboost(name, b):
    k = 3
    params = {"objective": name, "base_score": b}
    if name.startswith("multi"):
        params["num_class"] = k
    y = _labels_for(name, k, n=100)
    ours = get_objective(name).base_score_to_margin(b, k)
    assert ours.shape == (get_objective(name).n_outputs(k),)
    _, margin = _xgb_intercept(params, y, None)
    np.testing.assert_allclose(ours, margin, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("b", [-0.1, 1.5, np.nan])
def test_logistic_base_score_out_of_range(b):
    with pytest.raises(ValueError, match=r"base_score must be in \[0, 1\]"):
        get_objective("binary:logistic").base_score_to_margin(b, None)


# --------------------------------------------------------------------------- labels
@pytest.mark.parametrize("name", [o for o in OBJECTIVES if o != "survival:aft"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_labels_rejected(name, bad):
    y = np.zeros(10)
    y[6] = bad
    with pytest.raises(ValueError, match=r"label contains NaN or infinite values \(first at row 6\)"):
        get_objective(name).check_labels(y, 3)


@pytest.mark.parametrize("name", ["reg:logistic", "binary:logistic", "binary:logitraw"])
def test_logistic_label_range(name):
    obj = get_objective(name)
    obj.check_labels(np.array([0.0, 0.25, 1.0]), None)
    for bad in (1.5, -0.5):
        with pytest.raises(ValueError, match=rf"label must be in \[0, 1\] for {name}.*first bad at row 2"):
            obj.check_labels(np.array([0.0, 1.0, bad]), None)


def test_squarederror_accepts_any_finite_label():
    get_objective("reg:squarederror").check_labels(np.array([-1e30, 0.0, 1e30]), None)


@pytest.mark.parametrize("name", ["multi:softprob", "multi:softmax"])
def test_multiclass_label_rules(name):
    obj = get_objective(name)
    obj.check_labels(np.array([0.0, 1.0, 2.0]), 3)
    with pytest.raises(ValueError, match=r"num_class=3.*invalid values \[0.5, 3\] \(first at row 1\)"):
        obj.check_labels(np.array([0.0, 0.5, 3.0, 1.0, 3.0]), 3)
    with pytest.raises(ValueError, match=r"invalid values \[-1\]"):
        obj.check_labels(np.array([0.0, -1.0]), 3)
    with pytest.raises(ValueError, match="requires num_class"):
        obj.check_labels(np.array([0.0, 1.0]), None)
    with pytest.raises(ValueError, match="requires num_class"):
        obj.n_outputs(None)
    assert obj.n_outputs(3) == 3
    with pytest.raises(ValueError, match="num_class=3"):
        obj.base_margin_from_labels(np.array([0.0, 5.0]), None, 3)


def test_registry():
    assert set(OBJECTIVES) == {"reg:squarederror", "reg:logistic", "binary:logistic", "binary:logitraw",
                               "multi:softprob", "multi:softmax", "reg:squaredlogerror",
                               "reg:pseudohubererror", "count:poisson", "reg:gamma", "reg:tweedie",
                               "binary:hinge", "reg:absoluteerror", "reg:quantileerror",
                               "survival:cox", "survival:aft", *RANK}
    expected_metric = {"reg:squarederror": "rmse", "reg:logistic": "rmse", "binary:logistic": "logloss",
                       "binary:logitraw": "logloss", "multi:softprob": "mlogloss", "multi:softmax": "merror",
                       "reg:squaredlogerror": "rmsle", "reg:pseudohubererror": "mphe",
                       "count:poisson": "poisson-nloglik", "reg:gamma": "gamma-deviance",
                       "reg:tweedie": "tweedie-nloglik@1.5", "binary:hinge": "error",
                       "reg:absoluteerror": "mae", "reg:quantileerror": "quantile",
                       "survival:cox": "cox-nloglik", "survival:aft": "aft-nloglik",
                       "rank:ndcg": "ndcg@32",
                       "rank:pairwise": "ndcg@32", "rank:map": "map@32"}
    for name in OBJECTIVES:
        obj = get_objective(name)
        assert obj.name == name and obj.default_metric == expected_metric[name]
        assert obj.n_outputs(None if not name.startswith("multi") else 5) == (5 if name.startswith("multi") else 1)
    with pytest.raises(ValueError, match="unknown objective 'survival:nope'"):
        get_objective("survival:nope")


# --------------------------------------------------------------------------- #16's objectives
def _loss_more(name, a):
    """Per-row losses of the objectives added for #16, in margin space (test oracles)."""
    if name == "reg:squaredlogerror":
        return lambda m, y: 0.5 * (np.log1p(m[:, 0]) - np.log1p(y)) ** 2
    if name == "reg:pseudohubererror":
        return lambda m, y: a * a * (np.sqrt(1 + ((m[:, 0] - y) / a) ** 2) - 1)
    if name == "count:poisson":
        return lambda m, y: np.exp(m[:, 0]) - y * m[:, 0]
    if name == "reg:gamma":
        return lambda m, y: y * np.exp(-m[:, 0]) + m[:, 0]
    if name == "reg:tweedie":
        return lambda m, y: (-y * np.exp((1 - a) * m[:, 0]) / (1 - a)
                             + np.exp((2 - a) * m[:, 0]) / (2 - a))


@pytest.mark.parametrize("name,params", [
    ("reg:squaredlogerror", {}), ("reg:pseudohubererror", {"huber_slope": 1.7}),
    ("count:poisson", {"max_delta_step": 0.0}), ("reg:gamma", {}),
    ("reg:tweedie", {"tweedie_variance_power": 1.3}),
])
def test_more_gradients_match_finite_differences(name, params):
    """g is the loss's derivative; h too (second differences), where XGBoost's hessian is
    the true one (poisson with max_delta_step 0; squared log error away from its floor)."""
    obj = get_objective(name, params)
    a = obj.kernel_param
    m = RNG.normal(scale=0.5, size=(N, 1))
    if name == "reg:squaredlogerror":       # predictions, not margins: > -1
        m = np.abs(m) + 0.1
    y = RNG.gamma(2.0, 1.0, N) + (0.0 if name != "reg:pseudohubererror" else -2.0)
    g, h = obj.gradients(m, y, None)
    loss = _loss_more(name, a)
    np.testing.assert_allclose(g, fd_grad(loss, m, y), rtol=1e-5, atol=1e-6)
    dg = fd_grad(lambda mm, yy: obj.gradients(mm, yy, None)[0][:, 0], m, y)
    np.testing.assert_allclose(h, dg, rtol=1e-4, atol=1e-6)


def test_hinge_gradients_intercept_and_transform():
    obj = get_objective("binary:hinge")
    m = np.array([[-2.0], [0.5], [3.0], [0.2]])
    y = np.array([0.0, 1.0, 1.0, 0.0])
    g, h = obj.gradients(m, y, np.array([1.0, 2.0, 1.0, 1.0]))
    np.testing.assert_array_equal(g[:, 0], [0.0, -2.0, 0.0, 1.0])
    np.testing.assert_array_equal(h[:, 0], [np.finfo(np.float32).tiny, 2.0,
                                            np.finfo(np.float32).tiny, 1.0])
    np.testing.assert_array_equal(obj.transform(m), [0.0, 1.0, 1.0, 1.0])
    assert obj.base_margin_from_labels(np.array([1.0, 1.0, 0.0]), None, None)[0] == 1.0
    assert obj.base_margin_from_labels(np.array([1.0, 0.0, 0.0]), None, None)[0] == 0.0


@pytest.mark.parametrize("name,bad,must", [
    ("count:poisson", -1.0, ">= 0"), ("reg:tweedie", -0.5, ">= 0"), ("reg:gamma", 0.0, "> 0"),
    ("reg:squaredlogerror", -1.0, "> -1"), ("binary:hinge", 2.0, r"in \[0, 1\]"),
])
def test_more_label_ranges(name, bad, must):
    with pytest.raises(ValueError, match=f"label must be {must} for {name}"):
        get_objective(name).check_labels(np.array([1.0, bad, 0.5]))


def test_log_link_base_score_and_all_zero_labels():
    obj = get_objective("count:poisson")
    assert obj.base_score_to_margin(2.0, None)[0] == pytest.approx(np.log(2.0))
    with pytest.raises(ValueError, match="base_score must be > 0 for count:poisson"):
        obj.base_score_to_margin(0.0, None)
    with pytest.raises(ValueError, match="weighted mean label is 0, not positive.*base_score"):
        obj.base_margin_from_labels(np.zeros(5), None, None)


def test_objective_parameters_reach_the_objective():
    from dgbdt.params.normalize import normalize_params
    p = normalize_params({"objective": "count:poisson"})
    assert p["max_delta_step"] == 0.7                       # XGBoost's default there
    assert get_objective("count:poisson", p).kernel_param == 0.7
    assert normalize_params({"objective": "count:poisson", "max_delta_step": 0})[
        "max_delta_step"] == 0.0
    assert normalize_params({})["max_delta_step"] == 0.0
    assert get_objective("reg:tweedie", {"tweedie_variance_power": 1.2}).default_metric == \
        "tweedie-nloglik@1.2"
    from dgbdt.params.normalize import ParameterError
    with pytest.raises(ParameterError, match="tweedie_variance_power must be < 2"):
        normalize_params({"tweedie_variance_power": 2.0})
    with pytest.raises(ParameterError, match="huber_slope must be > 0"):
        normalize_params({"huber_slope": 0})


def test_weighted_quantile_is_xgboosts_and_order_free():
    from quantile_ref import sorted_quantile

    from dgbdt.objectives.leaf_quantiles import local_quantiles

    def weighted_quantile(alpha, v, w):        # the production quantile, one group
        q = local_quantiles(alpha, [v], None if w is None else [w])[0]
        assert q == sorted_quantile(alpha, v, w)
        return q
    v = np.array([3.0, 1.0, 2.0, 2.0, 10.0])
    # unweighted: interpolated at alpha (n + 1) in the sorted values 1, 2, 2, 3, 10
    assert weighted_quantile(0.5, v, None) == 2.0
    assert weighted_quantile(0.75, v, None) == pytest.approx(3.0 + 0.5 * 7.0)
    assert weighted_quantile(0.1, v, None) == 1.0 and weighted_quantile(0.95, v, None) == 10.0
    w = np.array([1.0, 1.0, 1.0, 1.0, 6.0])
    assert weighted_quantile(0.5, v, w) == 10.0      # the heavy row holds 60 % of the weight
    assert weighted_quantile(0.4, v, w) == 3.0       # cumulative weight 4 of 10 reaches 0.4
    assert weighted_quantile(0.5, np.zeros(0), None) == 0.0
    rng = np.random.default_rng(0)
    x, ww = rng.normal(size=1001).round(1), rng.uniform(0.1, 3.0, 1001)   # many ties
    for alpha in (0.1, 0.5, 0.77):
        ref = weighted_quantile(alpha, x, ww)
        for _ in range(3):
            p = rng.permutation(1001)
            assert weighted_quantile(alpha, x[p], ww[p]) == ref


def test_quantile_losses_say_where_they_train():
    import dgbdt
    X = np.random.default_rng(0).standard_normal((50, 3)).astype(np.float32)
    with pytest.raises(ValueError, match="reg:absoluteerror's intercept is a quantile of all"):
        get_objective("reg:absoluteerror").label_stats(np.ones(3), None, None)
    from dgbdt.params.normalize import ParameterError, normalize_params
    with pytest.raises(ParameterError, match="quantile_alpha must be < 1"):
        normalize_params({"quantile_alpha": 1.0})
    b = dgbdt.train({"objective": "reg:quantileerror", "quantile_alpha": 0.2},
                    dgbdt.Dataset(X, label=X[:, 0]), 3, verbose_eval=False)
    assert b.num_boosted_rounds() == 3


def test_quantile_leaves_grow_on_the_host_grower_whatever_the_growth_setting(monkeypatch):
    """The quantile losses' leaves are refreshed after the tree (dgbdt.engine.seam.leaf_quantiles):
    their trees grow on the host grower even where the device grower would (GPU shards, or
    DGBDT_GROWTH=device, which runs it on the CPU): the same model bytes."""
    import dgbdt
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 5)).astype(np.float32)
    y = X[:, 0] + rng.standard_cauchy(2000) * 0.3
    p = {"objective": "reg:quantileerror", "quantile_alpha": 0.3, "max_depth": 4,
         "subsample": 0.8}
    models = []
    for setting in ("host", "device"):
        monkeypatch.setenv("DGBDT_GROWTH", setting)
        models.append(dgbdt.train(p, dgbdt.Dataset(X, label=y), 4).save_raw())
    assert models[0] == models[1]


def test_quantile_losses_name_their_cuda_kernels_and_arguments():
    """What the CUDA backend launches (dgbdt.backends.cuda.CudaBackend.gradients): one quantile,
    ``quantile`` with alpha as a float64; several, ``quantiles`` with the alphas as an array
    (the backend's); reg:absoluteerror, ``absolute_error``."""
    class Host:
        @staticmethod
        def asarray(a, dtype=None):
            return np.asarray(a, dtype=dtype)
    one = get_objective("reg:quantileerror", {"quantile_alpha": 0.3})
    several = get_objective("reg:quantileerror", {"quantile_alpha": [0.2, 0.7]})
    assert one.cuda_kernel == "quantile" and one.cuda_params(Host) == (np.float64(0.3),)
    assert several.cuda_kernel == "quantiles"
    (alphas,) = several.cuda_params(Host)
    assert alphas.dtype == np.float64 and alphas.tolist() == [0.2, 0.7]
    mae = get_objective("reg:absoluteerror")
    assert mae.cuda_kernel == "absolute_error" and len(mae.cuda_params(Host)) == 1
    assert get_objective("reg:squarederror").cuda_params(Host) == ()


def test_the_exact_descent_is_the_sorted_quantile():
    """dgbdt.objectives.leaf_quantiles (radix descent over sums, what Dask uses) against the sorted-order
    definition (objective.weighted_quantile) on ties, zero weights, tiny and huge values."""
    from quantile_ref import sorted_quantile as weighted_quantile

    from dgbdt.objectives.leaf_quantiles import key_of, local_quantiles, value_of
    v = np.array([-3.5, -0.0, 0.0, 1e-300, -1e300, 2.0])
    np.testing.assert_array_equal(value_of(key_of(v)), v)
    np.testing.assert_array_equal(np.argsort(key_of(v), kind="stable"),
                                  np.argsort(v, kind="stable"))
    rng = np.random.default_rng(0)
    for trial in range(120):
        n = int(rng.integers(1, 60))
        x = rng.normal(size=n).round(int(rng.integers(0, 3))) * rng.choice([1, 1e-3, 1e5])
        w = rng.uniform(0, 3, n) if trial % 2 else None
        if w is not None and trial % 7 == 0:
            w[:n // 2] = 0
        for a in (0.01, 0.3, 0.5, 0.77, 0.99):
            assert local_quantiles(a, [x], None if w is None else [w])[0] == \
                weighted_quantile(a, x, w)


def test_several_quantiles_are_one_output_each():
    """quantile_alpha as a list: K outputs; each column's gradients, intercept and metric
    are the one-quantile objective's at its alpha; the parameter's checks; the model file
    (version 4) keeps the quantiles, so a loaded model predicts K columns."""
    import json

    import dgbdt
    from dgbdt.metrics.registry import get_metric
    from dgbdt.params.normalize import ParameterError, normalize_params
    rng = np.random.default_rng(3)
    alphas = (0.1, 0.5, 0.85)
    obj = get_objective("reg:quantileerror", {"quantile_alpha": alphas})
    assert obj.n_outputs(None) == 3
    y = rng.normal(size=200)
    w = rng.uniform(0.2, 2.0, 200)
    m = rng.normal(size=(200, 3))
    m[:5] = y[:5, None]                      # m == y: the m >= y side
    g, h = obj.gradients(m, y, w)
    for k, a in enumerate(alphas):
        one = get_objective("reg:quantileerror", {"quantile_alpha": a})
        g1, h1 = one.gradients(m[:, k].copy(), y, w)
        np.testing.assert_array_equal(g[:, k], g1[:, 0])
        np.testing.assert_array_equal(h[:, k], h1[:, 0])
        assert obj.base_margin_from_labels(y, w, None)[k] == \
            one.base_margin_from_labels(y, w, None)[0]
        assert obj.leaf_alphas[k] == a
    losses = [get_metric("quantile", {"quantile_alpha": a})(y, m[:, k], w)
              for k, a in enumerate(alphas)]
    assert get_metric("quantile", {"quantile_alpha": alphas})(y, m, w) == \
        pytest.approx(np.mean(losses), rel=1e-12)
    with pytest.raises(ValueError, match="2 columns, quantile_alpha lists 3"):
        get_metric("quantile", {"quantile_alpha": alphas})(y, m[:, :2], w)

    assert normalize_params({"quantile_alpha": [0.3]})["quantile_alpha"] == 0.3
    assert normalize_params({"quantile_alpha": np.array([0.3, 0.6])})["quantile_alpha"] == \
        (0.3, 0.6)
    for bad, msg in [([0.3, 1.5], "quantile_alpha must be < 1, got 1.5"),
                     ([], "a number or a non-empty list"), (["a"], "must be a number")]:
        with pytest.raises(ParameterError, match=msg):
            normalize_params({"quantile_alpha": bad})

    X = rng.standard_normal((300, 4)).astype(np.float32)
    b = dgbdt.train({"objective": "reg:quantileerror", "quantile_alpha": list(alphas),
                     "max_depth": 3}, dgbdt.Dataset(X, label=X[:, 0]),
                    3, verbose_eval=False)
    assert b.n_outputs == 3 and len(b.trees) == 9 and b.predict(X).shape == (300, 3)
    doc = json.loads(b.save_raw())
    assert doc["version"] == 4
    assert doc["learner"]["objective_params"] == {"quantile_alpha": list(alphas)}
    back = dgbdt.load_model(b.save_raw())
    assert back.save_raw() == b.save_raw()
    np.testing.assert_array_equal(back.predict(X), b.predict(X))
    one = dgbdt.train({"objective": "reg:quantileerror", "quantile_alpha": 0.3},
                      dgbdt.Dataset(X, label=X[:, 0]), 2, verbose_eval=False)
    assert json.loads(one.save_raw())["version"] == 2      # one quantile: the old bytes
    doc["learner"]["objective_params"] = {"quantile_alpha": [0.2, 2.0, 0.5]}
    with pytest.raises(dgbdt.ModelFormatError if hasattr(dgbdt, "ModelFormatError")
                       else ValueError, match="numbers in \\(0, 1\\)"):
        dgbdt.load_model(json.dumps(doc))


def test_several_quantiles_continue_and_cross_validate():
    """Continued training takes the model's quantiles (10 rounds then 5 more: the model of
    15, without repeating quantile_alpha); other quantiles are an error; cv scores them."""
    import dgbdt
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 4)).astype(np.float32)
    y = X[:, 0] + rng.standard_t(3, size=400)
    p = {"objective": "reg:quantileerror", "quantile_alpha": [0.2, 0.8], "max_depth": 3}
    d = dgbdt.Dataset(X, label=y)
    whole = dgbdt.train(p, d, 15, verbose_eval=False)
    first = dgbdt.train(p, d, 10, verbose_eval=False)
    more = dgbdt.train({"max_depth": 3}, d, 5, xgb_model=first, verbose_eval=False)
    assert more.save_raw() == whole.save_raw()
    with pytest.raises(ValueError, match="quantile_alpha=\\[0.3, 0.8\\] differs from "
                                         "xgb_model's \\[0.2, 0.8\\]"):
        dgbdt.train({"quantile_alpha": [0.3, 0.8]}, d, 1, xgb_model=first)
    res = dgbdt.cv(p, d, 3, nfold=3)
    assert list(res.columns)[0] == "train-quantile-mean" and len(res) == 3
