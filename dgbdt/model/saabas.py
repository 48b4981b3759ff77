"""Approximate feature contributions (``predict(pred_contribs=True, approx_contribs=True)``):
Saabas's path attributions, XGBoost's ``approx_contribs``.

Each node n of a tree has a mean value m(n): a leaf's value, or the hessian-cover-weighted
mean of its children's, m(n) = (m(l) h(l) + m(r) h(r)) / h(n). A row's path from the root
to its leaf credits each split's feature with the change m(child) - m(parent); the bias
column holds m(root) plus the intercept (or the row's base margin). A row's values sum to its
margin, as SHAP values do, but a feature's credit depends on the order of the splits.
"""
from __future__ import annotations

import numpy as np

from ..backends.device import array_module, to_host


def mean_values(tree) -> np.ndarray:
    """m(n) of every node (module docstring), float64; a node with no cover takes the plain
    mean of its children."""
    left, right = tree.left.astype(np.int64), tree.right.astype(np.int64)
    order = [0]                     # parents before children, read backwards below
    for n in order:
        if left[n] >= 0:
            order += [int(left[n]), int(right[n])]
    m = tree.threshold.astype(np.float64)        # a leaf's value
    h = tree.sum_hessian.astype(np.float64)
    for n in reversed(order):
        if left[n] >= 0:
            a, b = left[n], right[n]
            total = h[a] + h[b]
            m[n] = (m[a] * h[a] + m[b] * h[b]) / total if total > 0 else (m[a] + m[b]) / 2
    return m


def approx_contributions(booster, X, bm, trees, interactions: bool):
    """Saabas attributions [n, K, F + 1] of the listed trees (constant leaves: the caller
    refuses linear ones) for the rows X (numpy or cupy),
    returned where X is; [n, F + 1] for one output. With ``interactions``: [n, K, F + 1,
    F + 1] holding them on the diagonal (XGBoost's approximate interaction values: no
    interaction terms)."""
    xp = array_module(X)
    n, F, K = X.shape[0], booster.n_features, booster.n_outputs
    out = np.zeros((n, K, F + 1))
    out[:, :, F] = to_host(booster.initial_margin(n, None if bm is None else to_host(bm)))
    if trees:
        leaves = xp.zeros((n, len(trees)), dtype=np.int32)
        booster.predict_margin_trees(X, trees, xp.zeros((n, K)), leaves)
        leaves = to_host(leaves).astype(np.int64)
        rows = np.arange(n)
        for j, i in enumerate(trees):
            tree, k = booster.tree_at(i), booster.tree_class[i]
            m = mean_values(tree)
            parent, feature = tree.parent.astype(np.int64), tree.feature.astype(np.int64)
            out[:, k, F] += m[0]
            node = leaves[:, j]
            while True:             # one level a pass, from the leaves up to the root
                up = node != 0
                if not up.any():
                    break
                c, p = node[up], parent[node[up]]
                out[rows[up], k, feature[p]] += m[c] - m[p]
                node = node.copy()
                node[up] = p
    if interactions:
        full = np.zeros((n, K, F + 1, F + 1))
        d = np.arange(F + 1)
        full[:, :, d, d] = out
        out = full
    out = out[:, 0] if K == 1 else out
    return out if xp is np else xp.asarray(out)
