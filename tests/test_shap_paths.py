"""The path form of TreeSHAP (dgbdt.kernels.shap_paths), the GPU kernels' specification,
against the CPU's tree walk (dgbdt.kernels.cpu_shap): the same SHAP values and SHAP
interaction values for models with missing values, repeated features along a path, several
classes, deep trees and categorical splits (a path element's category bitset)."""
import numpy as np
import pytest

import dgbdt
from dgbdt.model.margins import _concatenated
from dgbdt.model.shap import shap_paths_of
from dgbdt.kernels import shap_paths


def _model(n, F, depth, K, missing, seed, categorical=False, rounds=12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, F)).astype(np.float32)
    X[:, 1] = np.round(X[:, 1])        # few values: a path splits on it again and again
    types = None
    if categorical:                    # 0: 40 codes (two bitset words), 2: 5 codes
        X[:, 0] = rng.integers(0, 40, n)
        X[:, 2] = rng.integers(0, 5, n)
        types = ["c", "q", "c"] + ["q"] * (F - 3)
    effect = np.sin(np.arange(40) * 1.7)
    score = (effect[np.nan_to_num(X[:, 0], nan=0).astype(int) % 40] * X[:, 1] if categorical
             else X[:, 0] * X[:, 1]) + np.sin(2 * X[:, 2]) + 0.5 * X[:, min(3, F - 1)]
    if K > 1:
        y = np.digitize(score, [-0.5, 0.5]).astype(float)
        params = {"objective": "multi:softprob", "num_class": K}
    else:
        y = (score + 0.3 * rng.standard_normal(n) > 0).astype(float)
        params = {"objective": "binary:logistic"}
    X[rng.random(X.shape) < missing] = np.nan
    b = dgbdt.train(dict(params, max_depth=depth, max_cat_to_onehot=4), dgbdt.Dataset(
        X, label=y, feature_types=types), rounds, verbose_eval=False)
    if categorical:
        # codes the training never saw (past every set, past the bitset), and values a raw
        # array may hold at predict time: negative, past 2^24, fractional
        X[:8, 0] = [45, 1000, 39, np.nan, -1, 2.0 ** 25, 3.5, -0.5]
        X[8:10, 2] = [7, 64]
    return b, X


def _paths(b):
    trees = list(range(len(b.trees)))
    sel = [b.trees[i] for i in trees]
    return shap_paths_of(_concatenated(sel, [b.tree_class[i] for i in trees]), sel,
                         b.n_outputs)


CASES = [(2000, 6, 6, 1, 0.1, False), (1500, 4, 10, 3, 0.2, False),
         (1000, 12, 3, 1, 0.0, False), (1500, 6, 6, 1, 0.1, True),
         (900, 5, 5, 3, 0.1, True)]


@pytest.mark.parametrize("n,F,depth,K,missing,categorical", CASES)
def test_path_form_equals_the_tree_walk(n, F, depth, K, missing, categorical):
    b, X = _model(n, F, depth, K, missing, seed=depth, categorical=categorical)
    assert bool(any(t.categories for t in b.trees)) == categorical
    ref = b.predict(X, pred_contribs=True, strict_shape=True)     # the CPU walk
    paths = _paths(b)
    # one path a leaf, each with its root element; a repeated feature is one element
    leaves = sum(int((t.left == -1).sum()) for t in b.trees)
    assert paths["path_ptr"].shape[0] == leaves + 1
    lengths = np.diff(paths["path_ptr"])
    assert lengths.max() == paths["max_len"] <= depth + 1
    for p in range(leaves):
        f = paths["feature"][paths["path_ptr"][p]:paths["path_ptr"][p + 1]]
        assert f[0] == -1 and len(set(f[1:].tolist())) == len(f) - 1
    assert np.all(np.diff(paths["path_class"]) >= 0)            # grouped by class
    # a categorical feature's elements carry a bitset; numerical ones none
    is_cat_el = paths["cat"] >= 0
    assert is_cat_el.any() == categorical
    if categorical:
        assert set(paths["feature"][is_cat_el].tolist()) <= {0, 2}
        assert np.all(paths["cat_words"][paths["feature"] == 0] == 2)
    out = np.zeros((n, K, F + 1))
    shap_paths.contributions_from_paths(X, *(paths[k] for k in shap_paths.PATH_ARRAYS), out)
    np.testing.assert_allclose(out[:, :, :F], ref[:, :, :F], rtol=1e-12, atol=1e-12)
    # the bias column: the intercept plus every class's expected tree values
    np.testing.assert_allclose(ref[0, :, F], b.base_margin + paths["expected"], rtol=1e-12)


@pytest.mark.parametrize("n,F,depth,K,missing,categorical", [
    (300, 6, 6, 1, 0.1, False), (200, 4, 9, 3, 0.2, False), (300, 6, 6, 1, 0.1, True),
    (200, 5, 5, 3, 0.1, True)])
def test_path_form_interactions_equal_the_tree_walk(n, F, depth, K, missing, categorical):
    b, X = _model(n, F, depth, K, missing, seed=depth + 1, categorical=categorical, rounds=6)
    ref = b.predict(X, pred_interactions=True, strict_shape=True)  # the CPU walk
    paths = _paths(b)
    out = np.zeros((n, K, F + 1, F + 1))
    shap_paths.interactions_from_paths(X, *(paths[k] for k in shap_paths.PATH_ARRAYS), out)
    assert np.abs(out[:, :, :F, :F]).max() > 1e-3          # not vacuous: off-diagonals too
    assert np.abs(out[:, :, :F, :F] * (1 - np.eye(F))).max() > 1e-3
    np.testing.assert_allclose(out[:, :, :F, :F], ref[:, :, :F, :F], rtol=1e-12, atol=1e-12)
    # nothing but the bias in the last row and column (the caller adds the bias)
    assert not out[:, :, F, :].any() and not out[:, :, :, F].any()
    # symmetric, and each row sums to the path form's contributions
    np.testing.assert_allclose(out, out.transpose(0, 1, 3, 2), rtol=1e-12, atol=1e-12)
    contrib = np.zeros((n, K, F + 1))
    shap_paths.contributions_from_paths(X, *(paths[k] for k in shap_paths.PATH_ARRAYS),
                                        contrib)
    np.testing.assert_allclose(out.sum(axis=3), contrib, rtol=1e-12, atol=1e-12)
