"""The path form of TreeSHAP (dgbdt.kernels.shap_paths), the GPU kernel's specification,
against the CPU's tree walk (dgbdt.kernels.cpu_shap): the same SHAP values for models with
missing values, repeated features along a path, several classes and deep trees."""
import numpy as np
import pytest

import dgbdt
from dgbdt.booster import _shap_paths
from dgbdt.kernels import shap_paths


def _model(n, F, depth, K, missing, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, F)).astype(np.float32)
    X[:, 1] = np.round(X[:, 1])        # few values: a path splits on it again and again
    score = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.5 * X[:, min(3, F - 1)]
    if K > 1:
        y = np.digitize(score, [-0.5, 0.5]).astype(float)
        params = {"objective": "multi:softprob", "num_class": K}
    else:
        y = (score + 0.3 * rng.standard_normal(n) > 0).astype(float)
        params = {"objective": "binary:logistic"}
    X[rng.random(X.shape) < missing] = np.nan
    b = dgbdt.train(dict(params, max_depth=depth), dgbdt.Dataset(X, label=y), 12,
                    verbose_eval=False)
    return b, X


@pytest.mark.parametrize("n,F,depth,K,missing", [
    (2000, 6, 6, 1, 0.1), (1500, 4, 10, 3, 0.2), (1000, 12, 3, 1, 0.0)])
def test_path_form_equals_the_tree_walk(n, F, depth, K, missing):
    b, X = _model(n, F, depth, K, missing, seed=depth)
    trees = list(range(len(b.trees)))
    ref = b.predict(X, pred_contribs=True, strict_shape=True)     # the CPU walk
    paths = _shap_paths([b.trees[i] for i in trees], [b.tree_class[i] for i in trees], K)
    # one path a leaf, each with its root element; a repeated feature is one element
    leaves = sum(int((t.left == -1).sum()) for t in b.trees)
    assert paths["path_ptr"].shape[0] == leaves + 1
    lengths = np.diff(paths["path_ptr"])
    assert lengths.max() == paths["max_len"] <= depth + 1
    for p in range(leaves):
        f = paths["feature"][paths["path_ptr"][p]:paths["path_ptr"][p + 1]]
        assert f[0] == -1 and len(set(f[1:].tolist())) == len(f) - 1
    assert np.all(np.diff(paths["path_class"]) >= 0)            # grouped by class
    out = np.zeros((n, K, F + 1))
    shap_paths.contributions_from_paths(
        X, paths["path_ptr"], paths["path_class"], paths["path_value"], paths["feature"],
        paths["lo"], paths["hi"], paths["miss"], paths["z"], out)
    np.testing.assert_allclose(out[:, :, :F], ref[:, :, :F], rtol=1e-10, atol=1e-12)
    # the bias column: the intercept plus every class's expected tree values
    np.testing.assert_allclose(ref[0, :, F], b.base_margin + paths["expected"], rtol=1e-12)
