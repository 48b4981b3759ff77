"""tree_method="exact": split thresholds as XGBoost's exact greedy method sets them (the float32
midpoint of the node's adjacent values; dgbdt.tree.exact_split), hist untouched."""
import json

import numpy as np
import pytest

import dgbdt
from dgbdt.data.quantize import Cuts
from dgbdt.tree.exact_split import exact_threshold


def _trees(doc: str) -> list:
    return json.loads(doc)["learner"]["gradient_booster"]["model"]["trees"]


def _splits(tree: dict):
    """(left_children, split_indices, split_conditions float32) of one tree's JSON."""
    return (np.asarray(tree["left_children"]), np.asarray(tree["split_indices"]),
            np.asarray(tree["split_conditions"], np.float32))


def test_toy_thresholds_are_midpoints():
    """XGBoost's AFT toy test: X = 1..5 grows thresholds {2.5, 3.5, 4.5} (and 1.5)."""
    X = np.arange(1, 6, dtype=np.float32)[:, None]
    p = {"tree_method": "exact", "max_depth": 3, "min_child_weight": 0}
    bst = dgbdt.train(p, dgbdt.Dataset(X, label=X[:, 0]), 2)
    for t in bst.trees:
        inner = t.left != -1
        assert set(t.threshold[inner].tolist()) <= {1.5, 2.5, 3.5, 4.5}
        assert 2.5 in t.threshold[inner].tolist()


def test_node_adjacent_values_and_end_thresholds():
    """The adjacent values are the node's (bins holding its rows), not the feature's; a split
    sending every value one way goes |v| + 1e-6 beyond the node's extreme value v."""
    cuts = Cuts(values=np.array([2, 3, 4, 5, 11], np.float32), ptrs=np.array([0, 5]),
                min_values=np.array([-1e-5], np.float32),
                first_values=np.array([1], np.float32))   # bins hold 1, 2, 3, 4, 5
    hist_ptrs = cuts.hist_ptrs()
    h = np.zeros((6, 2), np.int64)
    h[[0, 3], 1] = 7                      # the node's rows hold 1 and 4 only
    assert exact_threshold(cuts, hist_ptrs, h, 0, 1, 3.0) == np.float32(2.5)
    assert exact_threshold(cuts, hist_ptrs, h, 0, 2, 4.0) == np.float32(2.5)
    assert exact_threshold(cuts, hist_ptrs, h, 0, 3, 5.0) == np.float32(4) + np.float32(4 + 1e-6)
    assert exact_threshold(cuts, hist_ptrs, h, 0, -1, -1e-5) == np.float32(1) - np.float32(1 + 1e-6)
    # adjacent floats: the midpoint rounds onto one of them; the upper keeps the partition
    a = np.float32(1)
    b = np.nextafter(a, np.float32(2))
    adj = Cuts(values=np.array([b, 3], np.float32), ptrs=np.array([0, 2]),
               min_values=np.array([-1e-5], np.float32), first_values=np.array([a]))
    h = np.ones((3, 2), np.int64)
    t = exact_threshold(adj, adj.hist_ptrs(), h, 0, 0, b)
    assert t == b and a < t


def test_thresholds_are_xgboosts_exact():
    """Real XGBoost as the oracle: the same trees, threshold for threshold (bits), with ties,
    few distinct values and missing values (the forward and backward scans)."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    for trial in range(4):
        X = rng.normal(size=(200, 4)).astype(np.float32)
        X[:, 1] = np.round(X[:, 1] * 3)
        X[:, 2] = rng.integers(0, 5, 200)
        if trial % 2:
            X[rng.random(X.shape) < 0.1] = np.nan
        y = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + rng.normal(size=200) * 0.3
        p = {"tree_method": "exact", "max_depth": 4, "eta": 0.3}
        if trial == 2:
            p["objective"], y = "binary:logistic", (y > 0).astype(np.float64)
        ours = _trees(dgbdt.train(p, dgbdt.Dataset(X, label=y), 3).save_raw("xgboost"))
        theirs = _trees(xgb.train(p, xgb.DMatrix(X, label=y), 3).save_raw("json").decode())
        for mine, ref in zip(ours, theirs):
            (lc, fi, th), (rlc, rfi, rth) = _splits(mine), _splits(ref)
            inner = lc != -1
            np.testing.assert_array_equal(lc, rlc)
            np.testing.assert_array_equal(fi[inner], rfi[inner])
            np.testing.assert_array_equal(th[inner].view(np.uint32), rth[inner].view(np.uint32))


def test_hist_thresholds_are_cuts():
    """tree_method="hist" keeps its cut thresholds (exact's rule is exact's only)."""
    X = np.arange(1, 6, dtype=np.float32)[:, None]
    p = {"tree_method": "hist", "max_depth": 3, "min_child_weight": 0}
    bst = dgbdt.train(p, dgbdt.Dataset(X, label=X[:, 0]), 1)
    t = bst.trees[0]
    assert set(t.threshold[t.left != -1].tolist()) <= {2.0, 3.0, 4.0, 5.0}
