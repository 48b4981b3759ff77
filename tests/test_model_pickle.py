"""Pickling models (how Dask sends them to workers): the per-node dicts of a tree (linear
leaves, categorical splits) travel as a few flat arrays (dgbdt.tree.model's _PackedNodes) and
come back as they were: the same model file, the same predictions, the same dtypes."""
import pickle

import numpy as np
import pytest

import dgbdt
from dgbdt.tree.model import _PackedNodes


def _linear_model():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (2000, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.where(X[:, 0] > 0, 2 * np.nan_to_num(X[:, 1]), -np.nan_to_num(X[:, 2]))
    b = dgbdt.train({"linear_tree": True, "max_depth": 4, "max_linear_features": 3}, dgbdt.Dataset(
        X, label=y), 6, verbose_eval=False)
    return b, X


def _categorical_model():
    rng = np.random.default_rng(4)
    X = np.stack([rng.integers(0, 20, 3000), rng.normal(size=3000)], 1).astype(np.float32)
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    b = dgbdt.train({"max_depth": 4, "max_cat_to_onehot": 1}, dgbdt.Dataset(
        X, label=y, feature_types=["c", "q"]), 6, verbose_eval=False)
    return b, X


def _nodes(tree):
    return {n: {k: (v.dtype, v.tolist()) for k, v in d.items()}
            for n, d in (tree.linear or {}).items()}


@pytest.mark.parametrize("make", [_linear_model, _categorical_model], ids=["linear", "categorical"])
@pytest.mark.parametrize("loaded", [False, True], ids=["trained", "loaded"])
def test_pickled_model_is_the_same_model(make, loaded):
    b, X = make()
    if loaded:                      # a model read from its file: its own arrays' dtypes
        b = dgbdt.load_model(b.save_raw())
    kind = "linear" if b.trees[0].linear else "categories"
    assert getattr(b.trees[0], kind), "the model has no per-node dicts to pack"
    # the packed state: a few arrays a tree, not one a node
    state = b.trees[0].__getstate__()
    assert isinstance(state[kind], _PackedNodes)
    b2 = pickle.loads(pickle.dumps(b))
    assert b2.save_raw() == b.save_raw()
    np.testing.assert_array_equal(b2.predict(X), b.predict(X))
    for t, t2 in zip(b.trees, b2.trees):
        assert _nodes(t2) == _nodes(t)
        assert {n: (c.dtype, c.tolist()) for n, c in (t2.categories or {}).items()} == \
            {n: (c.dtype, c.tolist()) for n, c in (t.categories or {}).items()}


def test_dicts_it_cannot_pack_pickle_as_they_are():
    """Mixed dtypes or other keys: the dict is kept whole (no silent dtype change)."""
    mixed = {1: {"codes": np.array([1, 2], np.int32)}, 4: {"codes": np.array([3], np.int64)}}
    assert _PackedNodes.of(mixed, ("codes",)) is None
    assert _PackedNodes.of({1: {"other": np.zeros(2)}}, ("codes",)) is None
    b, _ = _linear_model()
    t = b.trees[0]
    t.categories = {n: d["codes"] for n, d in mixed.items()}
    t2 = pickle.loads(pickle.dumps(t))
    assert {n: c.dtype for n, c in t2.categories.items()} == {1: np.int32, 4: np.int64}
