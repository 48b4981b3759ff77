"""#17 categorical features train on the CPU for now: training on a GPU, and cuDF category
columns, stop with an error that says what is missing and what to do (device='cpu', host
rows), as the constraints do; a categorical model predicts device rows of codes on the GPU."""
import numpy as np
import pytest

import cupy as cp

import dgbdt

MATCH = r"categorical features train.*on the CPU for now"


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = np.stack([rng.integers(0, 7, n), rng.standard_normal(n)], 1).astype(np.float32)
    y = X[:, 0] % 3 + X[:, 1]
    return X, y, ["c", "q"]


def test_training_on_the_gpu_is_refused():
    X, y, types = _data()
    with pytest.raises(ValueError, match=MATCH):
        dgbdt.train({"device": "cuda"}, dgbdt.Dataset(X, label=y, feature_types=types), 2,
                    verbose_eval=False)
    with pytest.raises(ValueError, match=MATCH):
        dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y), feature_types=types)


def test_prediction_of_gpu_rows_equals_the_cpu():
    """A categorical model predicts device rows of codes on the GPU (cuda/predict.cu's
    predict_raw_cat): the CPU's values, leaves included, with XGBoost's rule for codes outside
    a set, negative, non-integer or missing."""
    X, y, types = _data(n=3000)
    rng = np.random.default_rng(1)
    X[:, 0] = rng.integers(0, 12, len(X))                       # enough for partition splits
    y = np.where(np.isin(X[:, 0], [1, 4, 5, 9]), 2.0, -1.0) + X[:, 1]
    b = dgbdt.train({"device": "cpu", "max_depth": 4, "max_cat_to_onehot": 1},
                    dgbdt.Dataset(X, label=y, feature_types=types), 8, verbose_eval=False)
    assert any(t.categories for t in b.trees)
    Z = X[:500].copy()
    Z[:5, 0] = [np.nan, -1.0, 2.5, 40.0, 1e9]                  # missing, outside, not whole
    for kw in ({}, {"pred_leaf": True}, {"output_margin": True}):
        host = b.predict(Z, **kw)
        dev = b.predict(cp.asarray(Z), **kw)
        assert isinstance(dev, cp.ndarray)
        np.testing.assert_array_equal(cp.asnumpy(dev), host)


def test_cudf_category_columns_are_refused():
    cudf = pytest.importorskip("cudf")
    df = cudf.DataFrame({"c": cudf.Series(["a", "b", "a", "c"], dtype="category"),
                         "x": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(ValueError, match=r"on the CPU for now.*to_pandas"):
        dgbdt.Dataset(df, label=[1.0, 2.0, 3.0, 4.0], enable_categorical=True)
