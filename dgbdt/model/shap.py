"""SHAP values of a Booster's trees (``Booster.predict(pred_contribs=True)`` and
``pred_interactions=True``): TreeSHAP, exact for the trees, with XGBoost's definitions.

For a row x and a tree f, f(x) = phi_0 + sum_i phi_i where phi_0 = E[f] (the tree's
cover-weighted mean leaf value) and phi_i is feature i's Shapley value of the game
v(S) = E[f(x) | x_S] over the tree's training cover; a model's values are the sums over its
trees, plus the intercept (or the rows' base margins) in the bias column. Interaction values
phi_ij (i != j) are half the change of phi_j when i goes from never known to always known,
phi_ii the rest of phi_i.

Host rows walk each tree (dgbdt.kernels.cpu_shap, numba; categorical splits too). GPU rows
take the path form (dgbdt.kernels.shap_paths: one path a leaf, a categorical split's set as a
bitset) on their GPU (dgbdt.kernels.gpu_shap), SHAP values and interaction values, for up to
~900 features and paths of at most 31 distinct features (any tree of depth up to 31);
otherwise they are copied to the host.
"""
from __future__ import annotations

import numpy as np

from ..backends.device import array_module, to_host
from ..tree.model import Tree, category_arrays


def contributions(booster, X, bm, trees, interactions: bool, concatenated):
    """SHAP values [n, K, F + 1] (or interaction values [n, K, F + 1, F + 1]) of the
    booster's trees listed in ``trees`` for the rows X (numpy or cupy) with base margins
    ``bm`` (or None); the bias (intercept or base_margin, plus each tree's expected value)
    in the last column (the last diagonal entry). [n, ...] without K for one output.
    ``concatenated(trees, classes)``: the booster's cached node arrays of those trees
    (dgbdt.model.booster), where the GPU keeps the trees' paths."""
    from ..kernels import cpu_shap
    xp = array_module(X)
    n, F, K = X.shape[0], booster.n_features, booster.n_outputs
    bias = to_host(booster.initial_margin(n, None if bm is None else to_host(bm)))
    sel = [booster.tree_at(i) for i in trees]       # a dart model's trees at their weights
    if sel and xp is not np:
        # on the GPU: the path form of TreeSHAP (dgbdt.kernels.gpu_shap), categorical splits
        # included, where a block's values fit in shared memory (up to ~900 features)
        from ..kernels import gpu_shap
        paths = shap_paths_of(concatenated(sel, [booster.tree_class[i] for i in trees]),
                              sel, K)
        if gpu_shap.fits(F, X.device.id) and paths["max_len"] <= gpu_shap.MAX_LEN:
            bias = xp.asarray(bias + paths["expected"])
            if interactions:
                out = xp.zeros((n, K, F + 1, F + 1))
                gpu_shap.interactions(X, paths, out)
                out[:, :, F, F] += bias
            else:
                out = xp.zeros((n, K, F + 1))
                gpu_shap.contributions(X, paths, out)
                out[:, :, F] += bias
            return out[:, 0] if K == 1 else out
    Xh = np.ascontiguousarray(to_host(X), dtype=np.float32)
    out = np.zeros((n, K, F + 1, F + 1) if interactions else (n, K, F + 1))
    if sel:
        ptrs = np.zeros(len(sel) + 1, dtype=np.int64)
        ptrs[1:] = np.cumsum([t.n_nodes for t in sel])
        left = np.concatenate([t.left for t in sel]).astype(np.int64)
        right = np.concatenate([t.right for t in sel]).astype(np.int64)
        thr = np.concatenate([t.threshold for t in sel]).astype(np.float64)
        cover = np.concatenate([t.sum_hessian for t in sel]).astype(np.float64)
        classes = np.array([booster.tree_class[i] for i in trees], dtype=np.int64)
        args = (Xh, left, right, np.concatenate([t.feature for t in sel]).astype(np.int64),
                thr, np.concatenate([t.default_left for t in sel]), cover, ptrs, classes,
                max(cpu_shap.tree_depth(t.left, t.right) for t in sel), out,
                shap_sets(sel, int(ptrs[-1])))
        (cpu_shap.interactions if interactions else cpu_shap.contributions)(*args)
        bias = bias + np.bincount(classes, weights=cpu_shap.root_means(
            left, right, thr, cover, ptrs), minlength=K)
    if interactions:
        out[:, :, F, F] += bias
    else:
        out[:, :, F] += bias
    out = out[:, 0] if K == 1 else out
    return xp.asarray(out) if xp is not np else out


def shap_paths_of(concat: tuple, trees: list[Tree], K: int) -> dict:
    """The root-to-leaf paths of ``trees`` (dgbdt.kernels.shap_paths) with ``expected``, the
    sum of each class's trees' expected values [K]; kept in ``concat`` = (node arrays,
    offsets, classes) of the trees (and uploaded once per device by gpu_shap)."""
    cat, ptrs, cls = concat
    if "_shap_paths" not in cat:
        from ..kernels import cpu_shap, shap_paths
        cover = np.concatenate([t.sum_hessian for t in trees]).astype(np.float64)
        left = cat["left"].astype(np.int64)
        right = cat["right"].astype(np.int64)
        thr = cat["threshold"].astype(np.float64)
        sets = ((cat["is_cat"], cat["cat_begin"], cat["cat_size"], cat["cats"])
                if "is_cat" in cat else None)
        paths = shap_paths.ensemble_paths(left, right, cat["feature"].astype(np.int64), thr,
                                          cat["default_left"], cover, ptrs, cls, sets)
        paths["expected"] = np.bincount(cls, weights=cpu_shap.root_means(
            left, right, thr, cover, ptrs), minlength=K)
        cat["_shap_paths"] = paths
    return cat["_shap_paths"]


def shap_sets(trees: list[Tree], n_nodes: int) -> tuple:
    """The categorical splits' arrays for kernels.cpu_shap (no categorical node: empty)."""
    if any(t.categories for t in trees):
        a = category_arrays(trees, n_nodes)
        return a["is_cat"], a["cat_begin"], a["cat_size"], a["cats"]
    return (np.zeros(n_nodes, np.bool_), np.zeros(n_nodes, np.int64),
            np.zeros(n_nodes, np.int64), np.zeros(0, np.uint8))
