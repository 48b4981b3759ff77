"""GPU training and prediction against the CPU backend (the oracle)."""
import json

import numpy as np
import pytest

import cupy as cp

import dgbdt


def _data(n=4000, nf=8, seed=0, levels=None, nan_frac=0.05):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    if levels:
        X = np.round(X * levels).astype(np.float32)
    X[rng.random((n, nf)) < nan_frac] = np.nan
    z = np.nan_to_num(X[:, 0]) * 1.5 - np.nan_to_num(X[:, 1]) + np.sin(np.nan_to_num(X[:, 2]))
    return X, z


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


def _fit(X, y, params, rounds=8, **kw):
    return dgbdt.train(params, dgbdt.Dataset(X, label=y, **kw), rounds, verbose_eval=False)


@pytest.mark.parametrize("levels", [None, 4])
@pytest.mark.parametrize("page_rows", [None, 1500])
def test_squarederror_model_is_byte_identical(levels, page_rows):
    X, z = _data(levels=levels)
    p = {"objective": "reg:squarederror", "max_depth": 6, "max_bin": 64}
    cpu = _fit(X, z, p, page_rows=page_rows)
    gpu = _fit(cp.asarray(X), cp.asarray(z), p, page_rows=page_rows)
    assert _json(cpu) == _json(gpu)


def test_weights_and_base_margin_byte_identical():
    X, z = _data(seed=1)
    rng = np.random.default_rng(2)
    w = rng.random(len(z)) * 3
    w[::10] = 0
    bm = rng.standard_normal(len(z))
    p = {"objective": "reg:squarederror", "max_depth": 5, "lambda": 0.5, "alpha": 0.2}
    cpu = _fit(X, z, p, weight=w, base_margin=bm)
    gpu = _fit(cp.asarray(X), cp.asarray(z), p, weight=cp.asarray(w),
               base_margin=cp.asarray(bm))
    assert _json(cpu) == _json(gpu)


def test_device_parameter_moves_data():
    X, z = _data(seed=3)
    p = {"objective": "reg:squarederror", "max_depth": 4}
    ref = _json(_fit(X, z, p))
    assert _json(_fit(X, z, {**p, "device": "cuda"})) == ref          # host data, GPU training
    assert _json(_fit(cp.asarray(X), cp.asarray(z), {**p, "device": "cpu"})) == ref


@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softprob"])
def test_classification_matches_cpu(objective):
    X, z = _data(seed=4, levels=3)
    if objective == "binary:logistic":
        y, extra = (z > 0).astype(np.float64), {}
    else:
        y, extra = np.digitize(z, [-1, 0, 1]).astype(np.float64), {"num_class": 4}
    p = {"objective": objective, "max_depth": 5, **extra}
    cpu = _fit(X, y, p, rounds=10)
    gpu = _fit(cp.asarray(X), cp.asarray(y), p, rounds=10)
    for a, b in zip(cpu.trees, gpu.trees):     # same structure on low-cardinality data
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.left, b.left)
    pc = cpu.predict(X)
    pg = gpu.predict(cp.asarray(X))
    assert isinstance(pg, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(pg), pc, rtol=1e-5, atol=1e-7)


def test_predict_on_gpu_equals_cpu():
    X, z = _data(seed=5)
    b = _fit(X, z, {"objective": "reg:squarederror", "max_depth": 6}, rounds=12)
    Xd = cp.asarray(X)
    np.testing.assert_array_equal(cp.asnumpy(b.predict(Xd)), b.predict(X))
    np.testing.assert_array_equal(cp.asnumpy(b.predict(Xd, pred_leaf=True)),
                                  b.predict(X, pred_leaf=True))
    np.testing.assert_array_equal(cp.asnumpy(b.predict(Xd, iteration_range=(2, 5))),
                                  b.predict(X, iteration_range=(2, 5)))


def test_eval_sets_and_early_stopping_match_cpu():
    X, z = _data(seed=6)
    y = (z > 0).astype(np.float64)
    p = {"objective": "binary:logistic", "eval_metric": ["logloss", "auc"], "max_depth": 4}
    res_c, res_g = {}, {}
    dc = dgbdt.Dataset(X[:3000], label=y[:3000])
    vc = dgbdt.Dataset(X[3000:], label=y[3000:])
    bc = dgbdt.train(p, dc, 40, evals=[(dc, "train"), (vc, "valid")],
                     early_stopping_rounds=3, evals_result=res_c, verbose_eval=False)
    dg = dgbdt.Dataset(cp.asarray(X[:3000]), label=cp.asarray(y[:3000]))
    vg = dgbdt.Dataset(cp.asarray(X[3000:]), label=cp.asarray(y[3000:]))
    bg = dgbdt.train(p, dg, 40, evals=[(dg, "train"), (vg, "valid")],
                     early_stopping_rounds=3, evals_result=res_g, verbose_eval=False)
    assert bc.best_iteration == bg.best_iteration
    for name in ("train", "valid"):
        for m in ("logloss", "auc"):
            np.testing.assert_allclose(res_g[name][m], res_c[name][m], rtol=1e-6)


def test_stage_timings_reported():
    X, z = _data(seed=7)
    b = _fit(cp.asarray(X), cp.asarray(z), {"max_depth": 3})
    for k in ("histograms", "partition", "split_evaluation", "gradients", "quantize"):
        assert k in b.timings


def test_bad_gpu_input_errors():
    X, z = _data(n=50, seed=8)
    Xi = cp.asarray(X)
    Xi[3, 2] = cp.inf
    with pytest.raises(ValueError, match="infinite values .*row 3, feature 2"):
        dgbdt.Dataset(Xi, label=cp.asarray(z))
    zz = cp.asarray(z)
    zz[7] = cp.nan
    with pytest.raises(ValueError, match="label contains NaN.*row 7"):
        dgbdt.Dataset(cp.asarray(X), label=zz)
    with pytest.raises(ValueError, match="label has 49 entries"):
        dgbdt.Dataset(cp.asarray(X), label=cp.asarray(z[:49]))
    with pytest.raises(ValueError, match="2-D"):
        dgbdt.Dataset(cp.asarray(X[:, 0]), label=cp.asarray(z))


def test_cudf_input_matches_pandas():
    cudf = pytest.importorskip("cudf")
    import pandas as pd
    X, z = _data(n=3000, seed=9, levels=5)
    pdf = pd.DataFrame(X[:, :4], columns=list("abcd"))
    pdf["a"] = pdf["a"].astype("Float64")                   # nullable: NaN -> <NA>
    cat = pd.Categorical(np.where(z > 0, "hi", "lo"))
    gdf = cudf.from_pandas(pdf)
    gdf["e"] = cudf.Series(cat)
    # a category column without enable_categorical is refused, as pandas' and XGBoost's
    with pytest.raises(ValueError, match=r"category columns \('e'\): pass enable_categorical"):
        dgbdt.Dataset(gdf, label=cudf.Series(z))
    gdf["e"] = cudf.Series(cat.codes.astype(np.float32))
    host = pdf.astype("float32").copy()
    host["e"] = cat.codes.astype(np.float32)
    p = {"objective": "reg:squarederror", "max_depth": 4}
    a = _fit(host, z, p)
    b = _fit(gdf, cudf.Series(z), p)
    assert a.feature_names == b.feature_names == list("abcde")
    assert _json(a) == _json(b)
    out = b.predict(gdf)
    assert isinstance(out, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(out), a.predict(host))


@pytest.mark.parametrize("objective,extra", [
    ("count:poisson", {}), ("reg:gamma", {}), ("reg:tweedie", {"tweedie_variance_power": 1.3}),
    ("reg:squaredlogerror", {}), ("reg:pseudohubererror", {"huber_slope": 2.0}),
    ("binary:hinge", {}), ("binary:logistic", {"scale_pos_weight": 3.0}),
])
def test_more_objectives_match_cpu(objective, extra):
    """#16's objectives: the CUDA gradient kernels (kernels/cuda/objective.cu) give the CPU's
    trees and, up to the kernels' exp/log rounding, its leaves and predictions."""
    X, z = _data(seed=5, levels=3)
    rng = np.random.default_rng(5)
    y = {"count:poisson": rng.poisson(np.exp(0.3 * z)).astype(np.float64),
         "reg:tweedie": rng.poisson(np.exp(0.3 * z)).astype(np.float64),
         "reg:gamma": rng.gamma(2.0, np.exp(0.3 * z) / 2.0),
         "reg:squaredlogerror": np.exp(0.3 * z),
         "reg:pseudohubererror": 2.0 * z,
         "binary:hinge": (z > 0).astype(np.float64),
         "binary:logistic": (z > 0.5).astype(np.float64)}[objective]
    w = rng.uniform(0.5, 2.0, len(y))
    p = {"objective": objective, "max_depth": 5, **extra}
    hc, hg = {}, {}                  # the objective's default metric, scored on each device
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 10, verbose_eval=False,
                      evals=[(dgbdt.Dataset(X[:800], label=y[:800]), "v")], evals_result=hc)
    gpu = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y), weight=cp.asarray(w)),
                      10, verbose_eval=False, evals_result=hg,
                      evals=[(dgbdt.Dataset(cp.asarray(X[:800]), label=cp.asarray(y[:800])),
                              "v")])
    assert list(hg["v"]) == list(hc["v"])
    for name in hc["v"]:
        np.testing.assert_allclose(hg["v"][name], hc["v"][name], rtol=1e-6)
    np.testing.assert_allclose(gpu.base_margin, cpu.base_margin, rtol=1e-12)
    for a, b in zip(cpu.trees, gpu.trees):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.left, b.left)
    pc = cpu.predict(X)
    pg = cp.asnumpy(gpu.predict(cp.asarray(X)))
    np.testing.assert_allclose(pg, pc, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(pc).max()))


def test_cupyx_sparse_input_is_the_dense_matrix_with_missing_values():
    """cupyx.scipy.sparse rows (absent entries missing, as XGBoost) stay on the GPU and give
    the CPU's model of the dense rows with NaN, byte for byte; prediction from cupyx rows."""
    import scipy.sparse as sp
    cpx = pytest.importorskip("cupyx.scipy.sparse")
    rng = np.random.default_rng(5)
    X = sp.random(3000, 12, density=0.25, format="csr", random_state=5, dtype=np.float32)
    X.data = rng.standard_normal(X.nnz).astype(np.float32)
    dense = np.full(X.shape, np.nan, dtype=np.float32)
    coo = X.tocoo()
    dense[coo.row, coo.col] = coo.data
    y = np.nan_to_num(dense[:, 0]) - 2 * np.nan_to_num(dense[:, 3]) + rng.normal(size=3000)
    p = {"objective": "reg:squarederror", "max_depth": 4}
    ref = dgbdt.train(p, dgbdt.Dataset(dense, label=y), 5, verbose_eval=False)
    for fmt in ("csr", "csc", "coo"):
        Xg = cpx.csr_matrix(X).asformat(fmt)
        d = dgbdt.Dataset(Xg, label=cp.asarray(y))
        assert d.on_device
        b = dgbdt.train(p, d, 5, verbose_eval=False)
        assert _json(b) == _json(ref), fmt
    got = b.predict(cpx.csr_matrix(X))
    np.testing.assert_allclose(cp.asnumpy(got), ref.predict(dense), rtol=1e-6, atol=1e-7)
