"""The model is a function of the data as a set: byte-identical JSON for repeated training,
row-permuted data, and any split of the rows into pages (partitions)."""
import numpy as np
import pytest

import dgbdt


def make(n=6000, seed=0, missing=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8)).astype(np.float32)
    X[:, 5] = np.round(X[:, 5] * 3)  # a low-cardinality feature
    X[rng.random(X.shape) < missing] = np.nan
    Z = np.nan_to_num(X)
    logit = Z[:, 0] * Z[:, 1] + np.sin(2 * Z[:, 2]) - Z[:, 3] + 0.3 * Z[:, 5]
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float64)
    w = rng.uniform(0.5, 2.0, n)
    return X, y, w


PARAMS = [
    {"objective": "binary:logistic", "max_depth": 5, "eta": 0.3},
    {"objective": "reg:squarederror", "max_depth": 4, "lambda": 2.0, "alpha": 0.1},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 3},
]


def labels_for(params, y, X):
    if params["objective"].startswith("multi"):
        return np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5]).astype(np.float64)
    if params["objective"].startswith("reg"):
        return y + np.nan_to_num(X[:, 2])
    return y


def model_json(params, X, y, w, **kw):
    d = dgbdt.Dataset(X, label=y, weight=w, **kw)
    return dgbdt.train(params, d, 8, verbose_eval=False).save_raw()


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: p["objective"])
def test_repeat_and_permutation_identical(params):
    X, y, w = make()
    y = labels_for(params, y, X)
    first = model_json(params, X, y, w)
    assert model_json(params, X, y, w) == first
    perm = np.random.default_rng(1).permutation(len(y))
    assert model_json(params, X[perm], y[perm], w[perm]) == first


@pytest.mark.parametrize("page_rows", [1000, 2001, 997, 6000])
def test_pages_identical(page_rows):
    X, y, w = make()
    params = PARAMS[0]
    assert model_json(params, X, y, w, page_rows=page_rows) == model_json(params, X, y, w)


def test_unweighted_permutation_identical():
    X, y, _ = make(seed=3, missing=0.0)
    perm = np.random.default_rng(2).permutation(len(y))
    p = {"objective": "binary:logistic"}
    assert model_json(p, X[perm], y[perm], None, page_rows=1500) == model_json(p, X, y, None)
