"""Metric tests against scikit-learn (float64 oracle) and xgboost 3.2's own evaluation."""

import time

import numpy as np
import pytest

from dgbdt.metrics.registry import METRICS, get_metric

skm = pytest.importorskip("sklearn.metrics")
xgb = pytest.importorskip("xgboost")

RNG = np.random.default_rng(99)
N = 500


def _w(weighted, n=N):
    return RNG.uniform(0.05, 3.0, n) if weighted else None


def _binary(n=N):
    y = (RNG.uniform(size=n) < 0.4).astype(np.float64)
    p = np.clip(_sigmoid(RNG.normal(size=n) + 1.5 * (y - 0.5)), 1e-3, 1 - 1e-3)
    return y, p


def _sigmoid(m):
    return 1.0 / (1.0 + np.exp(-m))


def _multi(n=N, k=4):
    y = RNG.integers(0, k, n).astype(np.float64)
    m = RNG.normal(size=(n, k))
    m[np.arange(n), y.astype(int)] += 1.0
    p = np.exp(m) / np.exp(m).sum(axis=1, keepdims=True)
    return y, p


# --------------------------------------------------------------------------- vs scikit-learn
@pytest.mark.parametrize("weighted", [False, True])
def test_regression_metrics(weighted):
    y, p = RNG.normal(size=N), RNG.normal(size=N)
    w = _w(weighted)
    np.testing.assert_allclose(get_metric("rmse")(y, p, w), np.sqrt(skm.mean_squared_error(y, p, sample_weight=w)),
                               rtol=1e-12)
    np.testing.assert_allclose(get_metric("mae")(y, p, w), skm.mean_absolute_error(y, p, sample_weight=w), rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_binary_metrics(weighted):
    y, p = _binary()
    w = _w(weighted)
    np.testing.assert_allclose(get_metric("logloss")(y, p, w), skm.log_loss(y, p, sample_weight=w), rtol=1e-12)
    np.testing.assert_allclose(get_metric("error")(y, p, w),
                               1 - skm.accuracy_score(y, p > 0.5, sample_weight=w), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(get_metric("auc")(y, p, w), skm.roc_auc_score(y, p, sample_weight=w), rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_auc_with_ties(weighted):
    y, p = _binary()
    p = np.round(p * 8) / 8  # only 9 distinct scores: many ties spanning both classes
    w = _w(weighted)
    np.testing.assert_allclose(get_metric("auc")(y, p, w), skm.roc_auc_score(y, p, sample_weight=w), rtol=1e-12)
    # all scores tied: AUC is exactly 0.5
    assert get_metric("auc")(y, np.full(N, 0.3), w) == pytest.approx(0.5, rel=1e-14)


def test_auc_simple_values():
    auc = get_metric("auc")
    assert auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == pytest.approx(0.75)
    assert auc([0, 1], [0.9, 0.1]) == 0.0
    assert auc([0, 1], [0.5, 0.5]) == 0.5
    assert auc.higher_is_better and not get_metric("logloss").higher_is_better


def test_auc_single_class_raises():
    with pytest.raises(ValueError, match="auc needs both classes.*only negatives"):
        get_metric("auc")(np.zeros(5), np.linspace(0, 1, 5))
    with pytest.raises(ValueError, match="auc needs both classes.*only positives"):
        get_metric("auc")(np.ones(5), np.linspace(0, 1, 5))
    with pytest.raises(ValueError, match="auc needs both classes"):  # negatives carry zero weight
        get_metric("auc")(np.array([0.0, 1.0, 1.0]), np.array([0.1, 0.2, 0.3]), np.array([0.0, 1.0, 1.0]))


def test_auc_is_n_log_n():
    n = 1_000_000
    y = (RNG.uniform(size=n) < 0.5).astype(np.float64)
    p = np.round(RNG.uniform(size=n), 3)
    t = time.perf_counter()
    get_metric("auc")(y, p)
    assert time.perf_counter() - t < 5.0


@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_metrics(weighted):
    y, p = _multi()
    w = _w(weighted)
    np.testing.assert_allclose(get_metric("mlogloss")(y, p, w), skm.log_loss(y, p, sample_weight=w, labels=range(4)),
                               rtol=1e-12)
    np.testing.assert_allclose(get_metric("merror")(y, p, w),
                               1 - skm.accuracy_score(y, p.argmax(axis=1), sample_weight=w), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(get_metric("auc")(y, p, w),
                               skm.roc_auc_score(y, p, sample_weight=w, multi_class="ovr", average="weighted"),
                               rtol=1e-12)


def test_probability_clipping():
    # p = 0 for the true class costs -log(1e-16), not inf
    np.testing.assert_allclose(get_metric("logloss")([1.0, 0.0], [0.0, 1.0]), -np.log(1e-16), rtol=1e-12)
    np.testing.assert_allclose(get_metric("mlogloss")([1.0], [[1.0, 0.0]]), -np.log(1e-16), rtol=1e-12)
    assert get_metric("logloss")([1.0, 0.0], [1.0, 0.0]) < 1e-15


def test_error_threshold_is_strict():
    # p == 0.5 is predicted negative
    assert get_metric("error")([0.0, 1.0], [0.5, 0.5]) == 0.5
    assert get_metric("error")([1.0, 1.0], [0.5, 0.51]) == 0.5


def test_bad_multiclass_labels_and_shapes():
    with pytest.raises(ValueError, match=r"labels must be integers in \[0, 3\)"):
        get_metric("mlogloss")(np.array([0.0, 3.0]), np.full((2, 3), 1 / 3))
    with pytest.raises(ValueError, match=r"labels must be integers in \[0, 3\)"):
        get_metric("merror")(np.array([0.5, 1.0]), np.full((2, 3), 1 / 3))
    with pytest.raises(ValueError, match=r"class probabilities \[n, K\]"):
        get_metric("mlogloss")(np.array([0.0, 1.0]), np.array([0.2, 0.3]))
    with pytest.raises(ValueError, match="rows"):
        get_metric("rmse")(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="sum of sample weights"):
        get_metric("rmse")(np.zeros(3), np.zeros(3), np.zeros(3))


@pytest.mark.parametrize("weighted", [False, True])
def test_merged_summaries_are_the_same_bits_for_any_partitioning(weighted):
    """Every metric, auc included, is value(merge(summary(chunk)...)): the same bits as the
    unpartitioned metric for any chunking and merge order (exact merges)."""
    from dgbdt.engine.evaluation import weight_scale
    yb, pb = _binary()
    ym, pm = _multi()
    pb = np.round(pb, 2)                      # ties inside and across chunks
    w = _w(weighted)
    scale = weight_scale(None if w is None else float(w.max()), N)
    rng = np.random.default_rng(5)
    # (#16's metrics need other labels: test_more_metrics_equal_xgboost merges them)
    for name in [m for m in METRICS if m not in _MORE + _RANK + _SURVIVAL]:
        metric = get_metric(name)
        pairs = [(ym, pm)] if name in ("mlogloss", "merror") else [(yb, pb)]
        if name in ("auc", "aucpr"):
            pairs.append((ym, pm))
        for y, p in pairs:
            ref = metric(y, p, w)
            for _ in range(4):
                cut = np.sort(rng.choice(np.arange(1, N), size=rng.integers(1, 6), replace=False))
                chunks = np.split(rng.permutation(N), cut)
                parts = [metric.summary(y[c], p[c], None if w is None else w[c], scale)
                         for c in chunks]
                rng.shuffle(parts)
                merged = parts[0]
                for s in parts[1:]:
                    merged = metric.merge(merged, s)
                assert metric.value(merged) == ref, name
                # an empty partition is the identity
                assert metric.value(metric.merge(metric.empty(), merged)) == ref


def test_auc_summary_is_the_distinct_scores():
    """Weighted auc's summary holds one entry per distinct score, not per row; unit weights
    summarize as sorted rows (SortedScores) with the same value."""
    y = np.array([0, 1, 1, 0, 1, 0], dtype=float)
    p = np.array([0.2, 0.2, 0.7, 0.7, 0.7, 0.1])
    metric = get_metric("auc")
    (runs,) = metric.summary(y, p, np.full(6, 0.5))
    unit = runs.pos[1]
    np.testing.assert_array_equal(runs.score, [0.1, 0.2, 0.7])
    np.testing.assert_array_equal(runs.pos, np.array([0, 1, 2]) * unit)
    np.testing.assert_array_equal(runs.neg, np.array([1, 1, 1]) * unit)
    (rows,) = metric.summary(y, p)
    assert type(rows).__name__ == "SortedScores"
    np.testing.assert_array_equal(rows.score, np.sort(p))
    assert metric.value([rows]) == metric.value([runs]) == skm.roc_auc_score(y, p)


_MORE = ("rmsle", "mape", "mphe", "poisson-nloglik", "gamma-nloglik", "gamma-deviance",
         "tweedie-nloglik", "quantile", "cox-nloglik")
# (the ranking metrics need query ids: tests/test_rank.py)
_RANK = ("ndcg", "map", "pre")
# (survival:aft's metrics score label intervals: tests/test_survival_aft.py)
_SURVIVAL = ("aft-nloglik", "interval-regression-accuracy")


def test_registry():
    assert set(METRICS) == {"rmse", "mae", "logloss", "error", "auc", "aucpr", "mlogloss",
                            "merror", *_MORE, *_RANK, *_SURVIVAL}
    for name in METRICS:
        assert get_metric(name).name == name or name == "tweedie-nloglik"
    with pytest.raises(ValueError, match="unknown metric 'ndcgg'"):
        get_metric("ndcgg")


# --------------------------------------------------------------------------- vs xgboost's own evaluation
def _xgb_eval(bst, dm, metrics):
    """{metric: value} parsed from xgboost's eval string."""
    out = bst.eval(dm, "d")
    return {kv.split(":")[0][2:]: float(kv.split(":")[1]) for kv in out.split("\t")[1:] if kv.split(":")[0][2:] in metrics}


@pytest.mark.parametrize("weighted", [False, True])
def test_binary_metrics_match_xgboost_eval(weighted):
    n = 400
    X = RNG.normal(size=(n, 4))
    y = (X[:, 0] + RNG.normal(size=n) > 0).astype(np.float64)
    w = _w(weighted, n)
    names = ["rmse", "mae", "logloss", "error", "auc", "aucpr"]
    dm = xgb.DMatrix(X, y, weight=w)
    bst = xgb.train({"objective": "binary:logistic", "tree_method": "hist", "max_depth": 2, "eval_metric": names},
                    dm, 3)
    p = bst.predict(dm).astype(np.float64)
    ref = _xgb_eval(bst, dm, names)
    for name in names:
        np.testing.assert_allclose(get_metric(name)(y, p, w), ref[name], rtol=2e-5, atol=2e-6, err_msg=name)


@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_metrics_match_xgboost_eval(weighted):
    n, k = 400, 3
    X = RNG.normal(size=(n, 4))
    y = np.digitize(X[:, 0] + 0.5 * RNG.normal(size=n), [-0.5, 0.5]).astype(np.float64)
    w = _w(weighted, n)
    names = ["mlogloss", "merror", "auc", "aucpr"]
    dm = xgb.DMatrix(X, y, weight=w)
    bst = xgb.train({"objective": "multi:softprob", "num_class": k, "tree_method": "hist", "max_depth": 2,
                     "eval_metric": names}, dm, 3)
    p = bst.predict(dm).astype(np.float64)
    ref = _xgb_eval(bst, dm, names)
    for name in names:
        np.testing.assert_allclose(get_metric(name)(y, p, w), ref[name], rtol=2e-5, atol=2e-6, err_msg=name)


def test_weighted_auc_does_not_depend_on_row_order():
    """Rows gathered from partitions or ranks arrive in any order: the same bits."""
    from dgbdt.metrics.registry import get_metric
    rng = np.random.default_rng(0)
    n = 5000
    y = (rng.random(n) < 0.4).astype(float)
    p = np.round(rng.random(n), 2)                      # many ties
    w = rng.uniform(0.1, 3.0, n)
    auc = get_metric("auc")
    ref = auc(y, p, w)
    for seed in range(5):
        perm = np.random.default_rng(seed).permutation(n)
        assert auc(y[perm], p[perm], w[perm]) == ref


def test_aucpr_simple_values_and_errors():
    aucpr = get_metric("aucpr")
    assert aucpr([0, 1, 1], [0.1, 0.8, 0.9]) == pytest.approx(1.0)   # positives ranked first
    assert aucpr.higher_is_better
    with pytest.raises(ValueError, match="aucpr needs both classes.*only negatives"):
        aucpr(np.zeros(4), np.linspace(0, 1, 4))
    with pytest.raises(ValueError, match="only negatives for class 2"):
        aucpr(np.array([0.0, 1.0, 0.0]), np.full((3, 3), 1 / 3))


# -- #16's metrics against XGBoost's evaluator ---------------------------------------------------
def _xgb_metric(objective, metric, y, p, margin, w=None, extra=None):
    """XGBoost's value of ``metric`` at predictions p: one round with eta 0 from base_margin
    ``margin`` (the objective's link of p), so its evaluator scores exactly p."""
    rng = np.random.default_rng(0)
    d = xgb.DMatrix(rng.standard_normal((len(y), 2)).astype(np.float32), label=y, weight=w,
                    base_margin=margin)
    res: dict = {}
    xgb.train({"objective": objective, "eta": 0, "max_depth": 1, "eval_metric": metric,
               **(extra or {})}, d, 1, evals=[(d, "v")], evals_result=res, verbose_eval=False)
    return next(iter(res["v"].values()))[0]


_N = 3000
_R = np.random.default_rng(16)


@pytest.mark.parametrize("objective,metric,y,p,link,rtol", [
    ("reg:squaredlogerror", "rmsle", _R.gamma(2, 1, _N), _R.gamma(2, 1, _N), None, 1e-7),
    ("reg:squarederror", "mape", _R.gamma(2, 1, _N) + 0.5, _R.gamma(2, 1, _N), None, 1e-7),
    ("reg:pseudohubererror", "mphe", _R.normal(0, 3, _N), _R.normal(0, 3, _N), None, 1e-7),
    ("count:poisson", "poisson-nloglik", _R.poisson(2, _N).astype(float), _R.gamma(2, 1, _N),
     np.log, 1e-7),
    ("reg:gamma", "gamma-nloglik", _R.gamma(2, 1, _N), _R.gamma(2, 1, _N), np.log, 1e-7),
    # (XGBoost adds its 1e-9 to p in float32)
    ("reg:gamma", "gamma-deviance", _R.gamma(2, 1, _N), _R.gamma(2, 1, _N), np.log, 2e-5),
    ("reg:tweedie", "tweedie-nloglik@1.5", _R.poisson(2, _N).astype(float), _R.gamma(2, 1, _N),
     np.log, 1e-7),
    # (XGBoost reads the power as a float32: 1.2 is 1.2000000477)
    ("reg:tweedie", "tweedie-nloglik@1.2", _R.poisson(2, _N).astype(float), _R.gamma(2, 1, _N),
     np.log, 1e-6),
    ("binary:logistic", "error@0.7", (_R.random(_N) < 0.4).astype(float), _R.random(_N),
     lambda q: np.log(q) - np.log1p(-q), 1e-7),
    ("reg:quantileerror", "quantile", _R.normal(0, 3, _N), _R.normal(0, 3, _N), None, 1e-7),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_more_metrics_equal_xgboost(objective, metric, y, p, link, rtol, weighted):
    y = y.astype(np.float32).astype(np.float64)          # XGBoost keeps labels in float32
    p = p.astype(np.float32).astype(np.float64)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y)) if weighted else None
    extra = {"huber_slope": 2.0} if metric == "mphe" else \
        {"quantile_alpha": 0.3} if metric == "quantile" else None
    theirs = _xgb_metric(objective, metric, y, p, p if link is None else link(p), w, extra)
    m = get_metric(metric, {"huber_slope": 2.0, "quantile_alpha": 0.3})
    assert m.name == metric
    assert m(y, p, w) == pytest.approx(theirs, rel=rtol)
    # a reduction: the summaries of any slicing merge to the same bits
    cuts = [0, 7, 1000, 1001, 2500, len(y)]
    parts = [m.summary(y[a:b], p[a:b], None if w is None else w[a:b])
             for a, b in zip(cuts[:-1], cuts[1:])]
    merged = parts[0]
    for s in parts[1:]:
        merged = m.merge(merged, s)
    assert m.value(merged) == m(y, p, w)


def test_metric_names_with_parameters():
    assert get_metric("error").threshold == 0.5 and get_metric("error").name == "error"
    assert get_metric("error@0.25").name == "error@0.25"
    assert get_metric("tweedie-nloglik", {"tweedie_variance_power": 1.7}).name == \
        "tweedie-nloglik@1.7"
    assert get_metric("mphe", {"huber_slope": 3.0}).slope == 3.0
    with pytest.raises(ValueError, match="'x' after '@' is not a number"):
        get_metric("error@x")
    with pytest.raises(ValueError, match="only error@ and tweedie-nloglik@ take a number"):
        get_metric("rmse@3")
    with pytest.raises(ValueError, match="the power must be in"):
        get_metric("tweedie-nloglik@2.5")
    with pytest.raises(ValueError, match="unknown metric 'poisson'"):
        get_metric("poisson")
