"""SHAP values of device rows on the GPU (dgbdt.kernels.gpu_shap: the path form of TreeSHAP)
against the CPU's tree walk, and against XGBoost's GPU SHAP on the same trees."""
import numpy as np
import pytest

import dgbdt

cp = pytest.importorskip("cupy")


def _model(n, F, depth, K, missing, seed, rounds=10):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, F)).astype(np.float32)
    X[:, 1] = np.round(X[:, 1])
    score = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.5 * X[:, 3]
    if K > 1:
        y = np.digitize(score, [-0.5, 0.5]).astype(float)
        params = {"objective": "multi:softprob", "num_class": K}
    else:
        y = (score + 0.3 * rng.standard_normal(n) > 0).astype(float)
        params = {"objective": "binary:logistic"}
    X[rng.random(X.shape) < missing] = np.nan
    b = dgbdt.train(dict(params, max_depth=depth, device="cuda"),
                    dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), rounds,
                    verbose_eval=False)
    return b, X


@pytest.mark.parametrize("n,F,depth,K,missing", [
    (5000, 8, 6, 1, 0.1),       # many rows: one path chunk
    (37, 6, 8, 3, 0.2),         # few rows: the paths cut into chunks that add atomically
    (3000, 5, 14, 1, 0.05),     # deep: a longer compiled path bound (MAXL 16)
    (600, 300, 5, 1, 0.0),      # wide: fewer rows a block (shared memory)
])
def test_gpu_shap_equals_the_cpu_walk(n, F, depth, K, missing):
    b, X = _model(n, F, depth, K, missing, seed=n)
    host = b.predict(X, pred_contribs=True)
    dev = b.predict(cp.asarray(X), pred_contribs=True)
    assert isinstance(dev, cp.ndarray) and dev.shape == host.shape
    np.testing.assert_allclose(cp.asnumpy(dev), host, rtol=1e-9, atol=1e-9)
    # a tree range, and base_margin in the bias column
    margin = np.full((n, K) if K > 1 else n, 0.25)
    on_host = dgbdt.Dataset(X, base_margin=margin)
    host = b.predict(on_host, pred_contribs=True, iteration_range=(2, 7))
    dev = b.predict(dgbdt.Dataset(cp.asarray(X), base_margin=cp.asarray(margin)),
                    pred_contribs=True, iteration_range=(2, 7))
    dev = cp.asnumpy(dev) if isinstance(dev, cp.ndarray) else dev
    np.testing.assert_allclose(dev, host, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        dev.sum(axis=-1), b.predict(on_host, output_margin=True, iteration_range=(2, 7)),
        rtol=1e-6, atol=1e-6)


def test_gpu_shap_equals_xgboost_gpu_shap():
    xgb = pytest.importorskip("xgboost")
    b, X = _model(4000, 8, 7, 1, 0.1, seed=1, rounds=30)
    xb = xgb.Booster()
    xb.load_model(bytearray(b.save_raw("xgboost").encode()))
    xb.set_param({"device": "cuda"})
    theirs = xb.predict(xgb.DMatrix(cp.asarray(X)), pred_contribs=True)
    ours = cp.asnumpy(b.predict(cp.asarray(X), pred_contribs=True))
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)   # XGBoost: float32


def test_dask_predict_of_cupy_partitions_computes_shap_on_the_worker_gpu(cuda_client):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    b, X = _model(3000, 8, 6, 3, 0.1, seed=5)
    Xd = da.from_array(cp.asarray(X), chunks=(700, -1), asarray=False)
    got = dgd.predict(cuda_client, b, Xd, pred_contribs=True).compute()
    assert isinstance(got, cp.ndarray) and got.shape == (3000, 3, 9)
    np.testing.assert_allclose(cp.asnumpy(got), b.predict(X, pred_contribs=True),
                               rtol=1e-9, atol=1e-9)
