"""SHAP values and SHAP interaction values of device rows on the GPU (dgbdt.kernels.gpu_shap:
the path form of TreeSHAP, categorical splits as category bitsets) against the CPU's tree
walk, and against XGBoost's GPU SHAP on the same trees."""
import numpy as np
import pytest

import dgbdt

cp = pytest.importorskip("cupy")


def _model(n, F, depth, K, missing, seed, rounds=10, categorical=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, F)).astype(np.float32)
    X[:, 1] = np.round(X[:, 1])
    types = None
    if categorical:                    # 0: 40 codes (two bitset words), 2: 5 codes
        X[:, 0] = rng.integers(0, 40, n)
        X[:, 2] = rng.integers(0, 5, n)
        types = ["c", "q", "c"] + ["q"] * (F - 3)
    effect = np.sin(np.arange(40) * 1.7)
    score = (effect[X[:, 0].astype(int) % 40] * X[:, 1] if categorical else X[:, 0] * X[:, 1])
    score = score + np.sin(2 * X[:, 2]) + 0.5 * X[:, 3]
    if K > 1:
        y = np.digitize(score, [-0.5, 0.5]).astype(float)
        params = {"objective": "multi:softprob", "num_class": K}
    else:
        y = (score + 0.3 * rng.standard_normal(n) > 0).astype(float)
        params = {"objective": "binary:logistic"}
    X[rng.random(X.shape) < missing] = np.nan
    b = dgbdt.train(dict(params, max_depth=depth, device="cuda", max_cat_to_onehot=4),
                    dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y), feature_types=types),
                    rounds, verbose_eval=False)
    if categorical:
        assert any(t.categories for t in b.trees), "the test needs categorical splits"
        X[:8, 0] = [45, 1000, 39, np.nan, -1, 2.0 ** 25, 3.5, -0.5]   # past every set
    return b, X


def _max_len(b):
    """The longest root-to-leaf path's element count (root included): the kernels' MAXL."""
    from dgbdt.model.margins import _concatenated
    from dgbdt.model.shap import shap_paths_of
    return shap_paths_of(_concatenated(b.trees, list(b.tree_class)), b.trees,
                         b.n_outputs)["max_len"]


@pytest.mark.parametrize("n,F,depth,K,missing", [
    (5000, 8, 6, 1, 0.1),       # many rows: one path chunk
    (37, 6, 8, 3, 0.2),         # few rows: the paths cut into chunks that add atomically
    (4000, 40, 20, 1, 0.05),    # deep and wide enough for paths of 15 elements (MAXL 15)
    (600, 300, 5, 1, 0.0),      # wide: fewer rows a block (shared memory)
])
def test_gpu_shap_equals_the_cpu_walk(n, F, depth, K, missing):
    b, X = _model(n, F, depth, K, missing, seed=n)
    if depth == 20:
        assert _max_len(b) >= 14       # a path holds each feature once: F bounds its length
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


@pytest.mark.parametrize("n,F,depth,K,missing,categorical", [
    (2000, 8, 6, 1, 0.1, False),    # binary, missing values
    (700, 6, 6, 3, 0.2, False),     # 3 classes
    (1500, 40, 20, 1, 0.05, False),  # deep and wide enough for paths of 16 elements
    (50, 7, 5, 1, 0.0, False),      # one block of rows
    (1500, 6, 6, 1, 0.1, True),     # categorical splits (bitsets of 1 and 2 words)
    (600, 6, 5, 3, 0.1, True),
])
def test_gpu_interactions_equal_the_cpu_walk(n, F, depth, K, missing, categorical):
    b, X = _model(n, F, depth, K, missing, seed=n + depth, rounds=8, categorical=categorical)
    if depth == 20:
        assert _max_len(b) >= 14
    host = b.predict(X, pred_interactions=True, strict_shape=True)
    Xd = cp.asarray(X)
    dev = b.predict(Xd, pred_interactions=True, strict_shape=True)
    assert isinstance(dev, cp.ndarray) and dev.shape == host.shape == (n, K, F + 1, F + 1)
    got = cp.asnumpy(dev)
    assert np.abs(got[:, :, :F, :F] * (1 - np.eye(F))).max() > 1e-3   # off-diagonals too
    np.testing.assert_allclose(got, host, rtol=1e-9, atol=1e-9)
    # rows (over j) sum to the GPU's SHAP values, bias included
    contribs = cp.asnumpy(b.predict(Xd, pred_contribs=True, strict_shape=True))
    np.testing.assert_allclose(got.sum(axis=3), contribs, rtol=1e-9, atol=1e-9)
    # one writer per (row, class, i), no atomics: the same bits again
    again = cp.asnumpy(b.predict(Xd, pred_interactions=True, strict_shape=True))
    assert np.array_equal(again, got)
    # XGBoost's shape for one output: [n, F + 1, F + 1]
    if K == 1:
        assert b.predict(Xd, pred_interactions=True).shape == (n, F + 1, F + 1)


@pytest.mark.parametrize("K", [1, 3])
def test_gpu_shap_of_categorical_models_equals_the_cpu_walk(K):
    b, X = _model(3000, 6, 6, K, 0.1, seed=11, rounds=12, categorical=True)
    host = b.predict(X, pred_contribs=True)
    dev = b.predict(cp.asarray(X), pred_contribs=True)
    assert isinstance(dev, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(dev), host, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(cp.asnumpy(dev).sum(-1), b.predict(X, output_margin=True),
                               rtol=1e-6, atol=1e-6)


def _xgboost_gpu(b):
    xgb = pytest.importorskip("xgboost")
    xb = xgb.Booster()
    xb.load_model(bytearray(b.save_raw("xgboost").encode()))
    xb.set_param({"device": "cuda"})
    return xgb, xb


def test_gpu_shap_equals_xgboost_gpu_shap():
    b, X = _model(4000, 8, 7, 1, 0.1, seed=1, rounds=30)
    xgb, xb = _xgboost_gpu(b)
    theirs = xb.predict(xgb.DMatrix(cp.asarray(X)), pred_contribs=True)
    ours = cp.asnumpy(b.predict(cp.asarray(X), pred_contribs=True))
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)   # XGBoost: float32


@pytest.mark.parametrize("categorical", [False, True])
def test_gpu_interactions_equal_xgboost_gpu_interactions(categorical):
    b, X = _model(1500, 7, 6, 1, 0.1, seed=2, rounds=20, categorical=categorical)
    X = X[8:]                                  # the codes past every set left out
    xgb, xb = _xgboost_gpu(b)
    types = ["c", "q", "c"] + ["q"] * 4 if categorical else None
    # categorical codes in numpy with feature_types, as tests/test_categorical.py gives them
    # to XGBoost (its booster, on the GPU, copies them there)
    dm = (xgb.DMatrix(X, feature_types=types, enable_categorical=True) if categorical
          else xgb.DMatrix(cp.asarray(X)))
    theirs = xb.predict(dm, pred_interactions=True)
    ours = cp.asnumpy(b.predict(cp.asarray(X), pred_interactions=True))
    assert ours.shape == theirs.shape == (len(X), 8, 8)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)   # XGBoost: float32
    if categorical:
        np.testing.assert_allclose(cp.asnumpy(b.predict(cp.asarray(X), pred_contribs=True)),
                                   xb.predict(dm, pred_contribs=True), rtol=1e-4, atol=1e-5)


def test_dask_predict_of_cupy_partitions_computes_shap_on_the_worker_gpu(cuda_client):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    b, X = _model(3000, 8, 6, 3, 0.1, seed=5)
    Xd = da.from_array(cp.asarray(X), chunks=(700, -1), asarray=False)
    got = dgd.predict(cuda_client, b, Xd, pred_contribs=True).compute()
    assert isinstance(got, cp.ndarray) and got.shape == (3000, 3, 9)
    np.testing.assert_allclose(cp.asnumpy(got), b.predict(X, pred_contribs=True),
                               rtol=1e-9, atol=1e-9)
    got = dgd.predict(cuda_client, b, Xd[:1200], pred_interactions=True).compute()
    assert isinstance(got, cp.ndarray) and got.shape == (1200, 3, 9, 9)
    np.testing.assert_allclose(cp.asnumpy(got), b.predict(X[:1200], pred_interactions=True),
                               rtol=1e-9, atol=1e-9)
