"""#17 categorical features are CPU-only for now: on a GPU every entry point stops with an error
that says what is missing and what to do (device='cpu', host rows), as the constraints do."""
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


def test_prediction_of_gpu_rows_is_refused():
    X, y, types = _data()
    b = dgbdt.train({"device": "cpu"}, dgbdt.Dataset(X, label=y, feature_types=types), 2,
                    verbose_eval=False)
    with pytest.raises(ValueError, match=r"on the CPU for now"):
        b.predict(cp.asarray(X))
    np.testing.assert_array_equal(b.predict(X), b.predict(X.copy()))


def test_cudf_category_columns_are_refused():
    cudf = pytest.importorskip("cudf")
    df = cudf.DataFrame({"c": cudf.Series(["a", "b", "a", "c"], dtype="category"),
                         "x": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(ValueError, match=r"on the CPU for now.*to_pandas"):
        dgbdt.Dataset(df, label=[1.0, 2.0, 3.0, 4.0], enable_categorical=True)
