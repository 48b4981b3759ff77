"""Pickling models (how Dask sends them to workers): the per-node dicts of a tree (linear
leaves, categorical splits) travel as a few flat arrays (dgbdt.tree.model's _PackedNodes), a
model's trees as one array a node field (PackedTrees), and come back as they were: the same
model file, the same predictions, the same dtypes."""
import pickle

import numpy as np
import pytest

import dgbdt
from dgbdt.tree.model import PackedTrees, _PackedNodes


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


def _buffers(obj) -> int:
    """The out-of-band buffers of obj's protocol-5 pickle: Dask sends each as its own frame."""
    seen = []
    pickle.dumps(obj, protocol=5, buffer_callback=seen.append)
    return len(seen)


def _dart_model():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1500, 4)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(np.float32)
    b = dgbdt.train({"booster": "dart", "rate_drop": 0.3, "objective": "binary:logistic",
                     "max_depth": 3}, dgbdt.Dataset(X, label=y), 8, verbose_eval=False)
    b.predict(X)        # fills tree_at's cache of weighted trees, which must not travel
    return b, X


def _multi_target_model():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(1500, 4)).astype(np.float32)
    Y = np.stack([X[:, 0], X[:, 1] - X[:, 2]], 1)
    b = dgbdt.train({"multi_strategy": "multi_output_tree", "max_depth": 3}, dgbdt.Dataset(
        X, label=Y), 5, verbose_eval=False)
    return b, X


@pytest.mark.parametrize("make", [_linear_model, _categorical_model, _dart_model,
                                  _multi_target_model],
                         ids=["linear", "categorical", "dart", "multi_target"])
def test_a_models_trees_travel_packed_and_come_back_the_same(make):
    b, X = make()
    state = b.__getstate__()
    assert isinstance(state["trees"], PackedTrees)
    assert "_scaled" not in state
    b2 = pickle.loads(pickle.dumps(b, protocol=5))
    assert b2.save_raw() == b.save_raw()
    np.testing.assert_array_equal(b2.predict(X), b.predict(X))
    for t, t2 in zip(b.trees, b2.trees):
        for name in ("left", "right", "parent", "feature", "threshold", "default_left",
                     "base_weight", "loss_change", "sum_hessian"):
            a, a2 = getattr(t, name), getattr(t2, name)
            assert a2.dtype == a.dtype and a2.flags.writeable and np.array_equal(a2, a)


def test_many_trees_are_a_few_frames():
    """What Dask pays a frame for: 200 trees were 1,800 buffers (9 arrays a tree)."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 4}, dgbdt.Dataset(X, label=y),
                    60, verbose_eval=False)
    assert _buffers(b) <= 12
    assert _buffers(b.trees) == 9 * 60       # a list of trees alone is not packed


def test_trees_it_cannot_pack_pickle_as_they_are():
    b, X = _linear_model()
    b.trees[1].threshold = b.trees[1].threshold.astype(np.float64)   # not the node dtype
    assert PackedTrees.of(b.trees) is None
    assert PackedTrees.of([]) is None
    b2 = pickle.loads(pickle.dumps(b))
    assert b2.trees[1].threshold.dtype == np.float64
    assert all(np.array_equal(t2.left, t.left) for t, t2 in zip(b.trees, b2.trees))
