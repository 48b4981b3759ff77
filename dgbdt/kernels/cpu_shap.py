"""TreeSHAP on the CPU: exact Shapley values of each feature's contribution to a tree's output.

Lundberg, Erion and Lee, "Consistent individualized feature attribution for tree ensembles"
(arXiv:1802.03888), Algorithm 2, with XGBoost's conventions: a node's "cover" is its hessian
sum (``sum_hessian``), a missing value follows the node's default direction (a categorical
split's direction is XGBoost's Decision, kernels.cpu_categorical), and the expected
value of a tree is its root's cover-weighted mean leaf value.

For a row x, a tree's output f(x) splits into phi_0 + sum_i phi_i, phi_0 = E[f] (the bias) and
phi_i the Shapley value of feature i for the set function v(S) = E[f(x) | x_S], the expectation
over the tree's training cover. The algorithm walks the tree once per row, keeping the "unique
path" of the features split on from the root, with for each the fraction of cover that flows
down the row's side when the feature is unknown (zero fraction) or known (one fraction), and the
weights of the subset sizes (``pweight``); a feature met twice on a path is unwound first. Cost
O(leaves x depth^2) per row and tree.

The walk uses an explicit stack instead of recursion: a node's path segment lives at a fixed
offset of a per-row scratch array, and its children's segments lie after it, so the segment is
intact when the second child is taken from the stack.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .cpu_categorical import goes_left_cat


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _extend(feat, zero, one, pw, at, depth, pz, po, pf):
    feat[at + depth] = pf
    zero[at + depth] = pz
    one[at + depth] = po
    pw[at + depth] = 1.0 if depth == 0 else 0.0
    for i in range(depth - 1, -1, -1):
        pw[at + i + 1] += po * pw[at + i] * (i + 1) / (depth + 1)
        pw[at + i] = pz * pw[at + i] * (depth - i) / (depth + 1)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _unwind(feat, zero, one, pw, at, depth, k):
    o = one[at + k]
    z = zero[at + k]
    nxt = pw[at + depth]
    for i in range(depth - 1, -1, -1):
        if o != 0.0:
            tmp = pw[at + i]
            pw[at + i] = nxt * (depth + 1) / ((i + 1) * o)
            nxt = tmp - pw[at + i] * z * (depth - i) / (depth + 1)
        else:
            pw[at + i] = pw[at + i] * (depth + 1) / (z * (depth - i))
    for i in range(k, depth):
        feat[at + i] = feat[at + i + 1]
        zero[at + i] = zero[at + i + 1]
        one[at + i] = one[at + i + 1]


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _unwound_sum(zero, one, pw, at, depth, k):
    o = one[at + k]
    z = zero[at + k]
    nxt = pw[at + depth]
    total = 0.0
    for i in range(depth - 1, -1, -1):
        if o != 0.0:
            tmp = nxt * (depth + 1) / ((i + 1) * o)
            total += tmp
            nxt = pw[at + i] - tmp * z * ((depth - i) / (depth + 1))
        elif z != 0.0:
            total += (pw[at + i] / z) / ((depth - i) / (depth + 1))
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _tree_shap(x, left, right, feature, threshold, default_left, cover, base, phi,
               feat, zero, one, pw, st_node, st_depth, st_at, st_pz, st_po, st_pf, st_cf,
               cond, cond_feature, sets):
    """phi[f] += the Shapley value of feature f in this tree (nodes from ``base``) for the
    row x. A node's path segment starts at ``parent's + depth + 1`` (XGBoost's layout).

    ``cond`` = +1 / -1: the values of the game where feature ``cond_feature`` is always known /
    never known (its splits are not on the path; interaction values are the half difference);
    0: the plain values. ``st_cf``: the fraction of the row that reaches a node under that
    condition. ``sets``: (is_cat, cat_begin, cat_size, cats) of the categorical splits
    (kernels.cpu_categorical.predict_raw_cat's arrays; all-False is_cat without any)."""
    is_cat, cat_begin, cat_size, cats = sets
    top = 0
    st_node[0], st_depth[0], st_at[0] = 0, 0, 0
    st_pz[0], st_po[0], st_pf[0], st_cf[0] = 1.0, 1.0, -1, 1.0
    while top >= 0:
        node, depth, parent_at = st_node[top], st_depth[top], st_at[top]
        pz, po, pf, cf = st_pz[top], st_po[top], st_pf[top], st_cf[top]
        top -= 1
        if cf == 0.0:
            continue
        at = parent_at + depth + 1
        for i in range(depth + 1):
            feat[at + i] = feat[parent_at + i]
            zero[at + i] = zero[parent_at + i]
            one[at + i] = one[parent_at + i]
            pw[at + i] = pw[parent_at + i]
        if cond == 0 or pf != cond_feature:
            _extend(feat, zero, one, pw, at, depth, pz, po, pf)
        n = base + node
        if left[n] == -1:
            v = threshold[n] * cf
            for i in range(1, depth + 1):
                w = _unwound_sum(zero, one, pw, at, depth, i)
                phi[feat[at + i]] += w * (one[at + i] - zero[at + i]) * v
            continue
        f = feature[n]
        xv = x[f]
        if is_cat[n]:
            go_left = goes_left_cat(xv, default_left[n], cats, cat_begin[n], cat_size[n])
        else:
            go_left = default_left[n] if np.isnan(xv) else xv < threshold[n]
        hot = left[n] if go_left else right[n]
        cold = right[n] if go_left else left[n]
        w = cover[n]
        hot_z = cover[base + hot] / w
        cold_z = cover[base + cold] / w
        iz, io = 1.0, 1.0
        k = 0
        while k <= depth and feat[at + k] != f:
            k += 1
        if k <= depth:          # the feature was split on above: undo it, redo it here
            iz, io = zero[at + k], one[at + k]
            _unwind(feat, zero, one, pw, at, depth, k)
            depth -= 1
        hot_cf, cold_cf = cf, cf
        if cond != 0 and f == cond_feature:   # not on the path: the children do not extend
            if cond > 0:
                cold_cf = 0.0
            else:
                hot_cf *= hot_z
                cold_cf *= cold_z
            depth -= 1
        # the cold child first on the stack, so the hot one is walked first
        top += 1
        st_node[top], st_depth[top], st_at[top] = cold, depth + 1, at
        st_pz[top], st_po[top], st_pf[top], st_cf[top] = cold_z * iz, 0.0, f, cold_cf
        top += 1
        st_node[top], st_depth[top], st_at[top] = hot, depth + 1, at
        st_pz[top], st_po[top], st_pf[top], st_cf[top] = hot_z * iz, io, f, hot_cf


@njit(cache=True, nogil=True, error_model="numpy")
def _scratch(max_depth):
    """One row's path segments (XGBoost's layout: a node's segment after its parent's) and
    the walk's stack, for trees of depth at most ``max_depth``."""
    size = (max_depth + 2) * (max_depth + 5) // 2 + 2
    stack = 2 * (max_depth + 2)
    return (np.empty(size, dtype=np.int64), np.empty(size), np.empty(size), np.empty(size),
            np.empty(stack, dtype=np.int64), np.empty(stack, dtype=np.int64),
            np.empty(stack, dtype=np.int64), np.empty(stack), np.empty(stack),
            np.empty(stack, dtype=np.int64), np.empty(stack))


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def contributions(X, left, right, feature, threshold, default_left, cover, tree_ptrs,
                  tree_class, max_depth, out, sets):
    """out[r, tree_class[t], f] += tree t's Shapley value of feature f for row r, for every
    tree (node arrays concatenated, tree t owns nodes tree_ptrs[t]..tree_ptrs[t+1]-1)."""
    for r in prange(X.shape[0]):
        (feat, zero, one, pw, st_node, st_depth, st_at, st_pz, st_po, st_pf,
         st_cf) = _scratch(max_depth)
        phi = np.zeros(out.shape[2])
        for t in range(tree_ptrs.shape[0] - 1):
            phi[:] = 0.0
            _tree_shap(X[r], left, right, feature, threshold, default_left, cover,
                       tree_ptrs[t], phi, feat, zero, one, pw, st_node, st_depth, st_at,
                       st_pz, st_po, st_pf, st_cf, 0, -1, sets)
            k = tree_class[t]
            for f in range(out.shape[2]):
                out[r, k, f] += phi[f]


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def interactions(X, left, right, feature, threshold, default_left, cover, tree_ptrs,
                 tree_class, max_depth, out, sets):
    """out[r, k, i, j] += SHAP interaction values of every tree (XGBoost's definition): off
    the diagonal half the change of j's value when i goes from never known to always known;
    on it, i's value minus its interactions. Bias terms are left to the caller."""
    F1 = out.shape[2]
    for r in prange(X.shape[0]):
        (feat, zero, one, pw, st_node, st_depth, st_at, st_pz, st_po, st_pf,
         st_cf) = _scratch(max_depth)
        diag, on, off = np.zeros(F1), np.zeros(F1), np.zeros(F1)
        for t in range(tree_ptrs.shape[0] - 1):
            k = tree_class[t]
            diag[:] = 0.0
            _tree_shap(X[r], left, right, feature, threshold, default_left, cover,
                       tree_ptrs[t], diag, feat, zero, one, pw, st_node, st_depth, st_at,
                       st_pz, st_po, st_pf, st_cf, 0, -1, sets)
            for i in range(F1):
                on[:] = 0.0
                off[:] = 0.0
                _tree_shap(X[r], left, right, feature, threshold, default_left, cover,
                           tree_ptrs[t], on, feat, zero, one, pw, st_node, st_depth, st_at,
                           st_pz, st_po, st_pf, st_cf, 1, i, sets)
                _tree_shap(X[r], left, right, feature, threshold, default_left, cover,
                           tree_ptrs[t], off, feat, zero, one, pw, st_node, st_depth, st_at,
                           st_pz, st_po, st_pf, st_cf, -1, i, sets)
                out[r, k, i, i] += diag[i]
                for j in range(F1):
                    if j != i:
                        v = (on[j] - off[j]) / 2.0
                        out[r, k, i, j] += v
                        out[r, k, i, i] -= v


@njit(cache=True, nogil=True, error_model="numpy")
def root_means(left, right, threshold, cover, tree_ptrs):
    """Each tree's expected output over its training cover: the cover-weighted mean of its
    leaf values, from the leaves up (children come after their parent)."""
    n_trees = tree_ptrs.shape[0] - 1
    out = np.zeros(n_trees)
    mean = np.zeros(left.shape[0])
    for t in range(n_trees):
        b = tree_ptrs[t]
        for i in range(tree_ptrs[t + 1] - 1, b - 1, -1):
            if left[i] == -1:
                mean[i] = threshold[i]
            else:
                lc, rc = b + left[i], b + right[i]
                mean[i] = (mean[lc] * cover[lc] + mean[rc] * cover[rc]) / cover[i]
        out[t] = mean[b]
    return out


def tree_depth(left, right) -> int:
    """The depth of a tree given as child arrays (root 0, children after their parents)."""
    depth = np.zeros(left.shape[0], dtype=np.int64)
    inner = np.flatnonzero(left != -1)
    for i in inner:                      # parents before children: one pass
        depth[left[i]] = depth[right[i]] = depth[i] + 1
    return int(depth.max()) if depth.size else 0
