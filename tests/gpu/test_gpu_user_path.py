"""The RAPIDS user's path: cuDF and dask_cudf in every estimator, evaluation on the GPU.

Every estimator x (cuDF in-process, dask_cudf on a LocalCUDACluster) x eval set: the fit works
on GPU labels of every kind, gives the model of the same rows as cupy arrays (byte for byte),
predictions come back as the input's kind, and the device metrics equal the host metrics.
"""
import json

import numpy as np
import pandas as pd
import pytest

import cupy as cp

import dgbdt
import dgbdt.dask as dgd
from dgbdt.metrics.registry import METRICS, get_metric

cudf = pytest.importorskip("cudf")
dask_cudf = pytest.importorskip("dask_cudf")
dask_cuda = pytest.importorskip("dask_cuda")


@pytest.fixture(scope="module")
def client(cuda_client):
    return cuda_client


def _frame(n=5000, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6)).astype(np.float32)
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(6)])
    df.loc[rng.random(n) < 0.05, "c2"] = np.nan
    logit = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 3]) - X[:, 4]
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    df["z"] = X[:, 0] * 2 + X[:, 5]
    df["w"] = rng.uniform(0.5, 2.0, n)
    return df


FEATS = [f"c{i}" for i in range(6)]


def _raw(est):
    return json.dumps(est.get_booster().to_dict(), sort_keys=True)


@pytest.mark.parametrize("label_kind", ["int", "bool", "category", "str"])
def test_classifier_on_cudf(label_kind):
    pdf = _frame()
    tr, va = pdf.iloc[:4000], pdf.iloc[4000:]
    conv = {"int": lambda s: s, "bool": lambda s: s.astype(bool),
            "category": lambda s: s.astype("category"),
            "str": lambda s: s.map({0: "no", 1: "yes"})}[label_kind]
    g, gv = cudf.from_pandas(tr), cudf.from_pandas(va)
    kw = dict(n_estimators=30, max_depth=4, eval_metric=["logloss", "auc"],
              early_stopping_rounds=4)
    est = dgbdt.GBDTClassifier(**kw).fit(
        g[FEATS], cudf.from_pandas(conv(tr["y"])), sample_weight=g["w"],
        eval_set=[(gv[FEATS], cudf.from_pandas(conv(va["y"])))],
        sample_weight_eval_set=[gv["w"]])
    assert isinstance(est.classes_, np.ndarray) and len(est.classes_) == 2
    # the same rows with labels (and weights) as cupy 0/1 arrays: the same model
    ref = dgbdt.GBDTClassifier(**kw).fit(
        g[FEATS], cp.asarray(tr["y"].to_numpy()), sample_weight=cp.asarray(tr["w"].to_numpy()),
        eval_set=[(gv[FEATS], cp.asarray(va["y"].to_numpy()))],
        sample_weight_eval_set=[cp.asarray(va["w"].to_numpy())])
    assert _raw(est) == _raw(ref)
    assert est.evals_result() == ref.evals_result()
    proba = est.predict_proba(gv[FEATS])
    assert isinstance(proba, cp.ndarray) and proba.shape == (len(va), 2)
    pred = est.predict(gv[FEATS])
    if label_kind in ("int", "bool"):
        assert isinstance(pred, cp.ndarray)
    assert est.score(gv[FEATS], cudf.from_pandas(conv(va["y"]))) > 0.6
    # the recorded auc of the best round is scikit-learn's on the predictions
    skm = pytest.importorskip("sklearn.metrics")
    best = est.best_iteration
    assert est.evals_result()["validation_0"]["auc"][best] == pytest.approx(
        skm.roc_auc_score(va["y"], cp.asnumpy(proba[:, 1]), sample_weight=va["w"]), rel=1e-9)


def test_regressor_on_cudf_with_base_margin():
    pdf = _frame(seed=1)
    g = cudf.from_pandas(pdf)
    kw = dict(n_estimators=8, max_depth=4)
    est = dgbdt.GBDTRegressor(**kw).fit(g[FEATS], g["z"], sample_weight=g["w"],
                                         base_margin=g["c5"] * 0.5,
                                         eval_set=[(g[FEATS], g["z"])])
    cpu = dgbdt.GBDTRegressor(**kw).fit(pdf[FEATS], pdf["z"], sample_weight=pdf["w"],
                                         base_margin=pdf["c5"] * 0.5,
                                         eval_set=[(pdf[FEATS], pdf["z"])])
    assert _raw(est) == _raw(cpu)          # squared error: the CPU's model, byte for byte
    assert est.evals_result() == cpu.evals_result()   # rmse: exact sums on either device
    assert isinstance(est.predict(g[FEATS]), cp.ndarray)
    assert est.score(g[FEATS], g["z"]) == pytest.approx(cpu.score(pdf[FEATS], pdf["z"]))


def test_missing_cudf_label_says_where():
    pdf = _frame(300, seed=2)
    g = cudf.from_pandas(pdf)
    y = g["y"].astype("float64")
    y[7] = None
    with pytest.raises(ValueError, match=r"y has missing values \(first at row 7\)"):
        dgbdt.GBDTClassifier(n_estimators=2).fit(g[FEATS], y)


def test_device_metrics_equal_host_metrics():
    """Each metric's summary computed on the GPU gives the host's value, on labels and
    predictions of the metric's domain: bit for bit where the row losses are exact IEEE
    arithmetic (+ - * / sqrt), within 1e-12 where they take logs, powers or lgamma (CUDA's
    libm and the host's may differ in an ulp)."""
    rng = np.random.default_rng(3)
    n = 20000
    yb = (rng.random(n) < 0.4).astype(float)
    pb = np.round(rng.random(n), 3)                   # ties
    ym = rng.integers(0, 3, n).astype(float)
    pm = rng.dirichlet(np.ones(3), n)
    yr = np.round(rng.uniform(0.5, 6.0, n), 2)        # positive: rmsle, mape, gamma, tweedie...
    pr = rng.uniform(0.3, 7.0, n)
    ycox = np.where(rng.random(n) < 0.7, 1.0, -1.0) * np.round(rng.uniform(1, 50, n))
    w = rng.uniform(0.1, 3.0, n)
    binary = ("logloss", "error", "auc", "aucpr")
    exact = ("rmse", "mae", "error", "auc", "merror", "mape", "mphe", "quantile")
    # (the ranking metrics need query ids, the AFT ones label intervals; both are scored on
    # the host: tests/test_rank.py, tests/test_survival_aft.py)
    for name in [m for m in METRICS if m not in ("ndcg", "map", "pre", "aft-nloglik",
                                                 "interval-regression-accuracy")]:
        m = get_metric(name)
        if name in ("mlogloss", "merror"):
            pairs = [(ym, pm)]
        elif name in binary:
            pairs = [(yb, pb)] + ([(ym, pm)] if name in ("auc", "aucpr") else [])
        elif name == "cox-nloglik":
            pairs = [(ycox, pr)]
        else:
            pairs = [(yr, pr)]
        for y, p in pairs:
            for ww in (None, w):
                host = m(y, p, ww)
                dev = m(cp.asarray(y), cp.asarray(p), None if ww is None else cp.asarray(ww))
                assert np.isfinite(host), name
                if name in exact:
                    assert dev == host, name
                else:
                    assert dev == pytest.approx(host, rel=1e-12), name


@pytest.mark.parametrize("cls", ["classifier", "regressor"])
def test_dask_estimators_on_dask_cudf(client, cls):
    pdf = _frame(seed=4)
    tr, va = pdf.iloc[:4000], pdf.iloc[4000:]
    dtr = dask_cudf.from_cudf(cudf.from_pandas(tr), npartitions=3)
    dva = dask_cudf.from_cudf(cudf.from_pandas(va), npartitions=2)
    target = "y" if cls == "classifier" else "z"
    kw = dict(n_estimators=25, max_depth=4, early_stopping_rounds=4,
              eval_metric=["auc", "logloss"] if cls == "classifier" else ["rmse"])
    Est = dgd.DaskGBDTClassifier if cls == "classifier" else dgd.DaskGBDTRegressor
    est = Est(**kw)
    est.client = client
    est.fit(dtr[FEATS], dtr[target], sample_weight=dtr["w"],
            eval_set=[(dva[FEATS], dva[target])])
    Ref = dgbdt.GBDTClassifier if cls == "classifier" else dgbdt.GBDTRegressor
    g, gv = cudf.from_pandas(tr), cudf.from_pandas(va)
    ref = Ref(**kw).fit(g[FEATS], g[target], sample_weight=g["w"],
                        eval_set=[(gv[FEATS], gv[target])])
    assert _raw(est) == _raw(ref)
    assert est.evals_result() == ref.evals_result()
    pred = est.predict(dva[FEATS]).compute()
    assert type(pred).__module__.startswith("cudf")
    np.testing.assert_array_equal(pred.to_numpy(), cp.asnumpy(ref.predict(gv[FEATS])))
    if cls == "classifier":
        proba = est.predict_proba(dva[FEATS]).compute()
        assert isinstance(proba, cp.ndarray)
        np.testing.assert_array_equal(cp.asnumpy(proba), cp.asnumpy(ref.predict_proba(gv[FEATS])))
        assert list(est.classes_) == [0, 1]
    assert est.score(dva[FEATS], dva[target]) == pytest.approx(ref.score(gv[FEATS], gv[target]))
