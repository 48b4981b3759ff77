"""XGBoost's updaters of an existing tree (``process_type="update"``): ``refresh`` and ``prune``.

**refresh** (XGBoost's TreeRefresher): every row adds its gradient pair (g, h) to each node on
its path, and each node's statistics are recomputed from its sums (G, H):

    base_weight = w*(G, H) = -T_alpha(G) / (H + lambda), clipped to +-max_delta_step, 0 where
                  H < min_child_weight (dgbdt.tree.split.leaf_weights);
    sum_hessian = H;
    loss_change = score(left) + score(right) - score(node) for an inner node, where
    score(G, H) = T_alpha(G)^2 / (H + lambda) (max_delta_step 0), else
                  -(2 G w + (H + lambda) w^2) + alpha |w| with w = w*(G, H); 0 where
                  H < min_child_weight or H <= 0 (XGBoost's CalcGain);

and with ``refresh_leaf`` each leaf's value becomes eta * w*. XGBoost writes every node's
base_weight as w* here, leaves' too. The sums are fixed-point (dgbdt.kernels.fixedpoint),
exact in any row order, as a tree's growth sums them: a tree grown without row sampling,
refreshed on its rows at its gradients, gets its own leaf values, hessians and gains back.

**prune** (XGBoost's TreePruner): from each leaf, in node order, upwards: a node whose two
children are leaves becomes a leaf of value eta * base_weight (float32 arithmetic, as
XGBoost's) where its loss_change < min_split_loss or its leaves lie deeper than max_depth
(0: no limit), and the test moves on to its parent. XGBoost keeps the cut nodes as unused
slots; a dgbdt tree is renumbered in node order (children still after their parents), and
``pruned`` says where each old node's rows now end.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .model import Tree
from .split import SplitParams, leaf_weights


def node_sums(tree: Tree, leaf: np.ndarray, qg: np.ndarray, qh: np.ndarray):
    """Each node's fixed-point (G, H) over the rows of its subtree: ``leaf`` int [n] each row's
    leaf, ``qg`` / ``qh`` int64 [n] the rows' fixed-point gradients. Exact integer sums, so
    the result does not depend on the rows' order."""
    n = tree.n_nodes
    G = np.zeros(n, np.int64)
    H = np.zeros(n, np.int64)
    np.add.at(G, leaf, qg)
    np.add.at(H, leaf, qh)
    for node in range(n - 1, -1, -1):      # children come after their parents
        if tree.left[node] != -1:
            G[node] = G[tree.left[node]] + G[tree.right[node]]
            H[node] = H[tree.left[node]] + H[tree.right[node]]
    return G, H


def node_scores(g: np.ndarray, h: np.ndarray, p: SplitParams) -> np.ndarray:
    """score(G, H) of the module docstring (XGBoost's CalcGain), float64."""
    w = leaf_weights(g, h, p)
    if p.max_delta_step == 0.0:
        t = np.where(g > p.alpha, g - p.alpha, np.where(g < -p.alpha, g + p.alpha, 0.0))
        s = t * t / (h + p.lam)
    else:
        s = -(2.0 * g * w + (h + p.lam) * w * w) + p.alpha * np.abs(w)
    return np.where((h < p.min_child_weight) | (h <= 0.0), 0.0, s)


def refreshed(tree: Tree, g: np.ndarray, h: np.ndarray, p: SplitParams,
              refresh_leaf: bool) -> Tree:
    """The tree with statistics from the nodes' sums ``g``, ``h`` (float64 [n_nodes]), and its
    leaves' values too with ``refresh_leaf`` (module docstring)."""
    w = leaf_weights(g, h, p)
    score = node_scores(g, h, p)
    inner = np.flatnonzero(tree.left != -1)
    loss = tree.loss_change.copy()
    loss[inner] = (score[tree.left[inner]] + score[tree.right[inner]]
                   - score[inner]).astype(np.float32)
    threshold = tree.threshold.copy()
    if refresh_leaf:
        leaves = np.flatnonzero(tree.left == -1)
        threshold[leaves] = (w[leaves] * p.eta).astype(np.float32)
    return dataclasses.replace(tree, threshold=threshold, base_weight=w.astype(np.float32),
                               sum_hessian=h.astype(np.float32), loss_change=loss)


def _parents_and_depths(tree: Tree):
    n = tree.n_nodes
    parent = np.full(n, -1, np.int64)
    depth = np.zeros(n, np.int64)
    for node in range(n):
        if tree.left[node] != -1:
            for c in (tree.left[node], tree.right[node]):
                parent[c], depth[c] = node, depth[node] + 1
    return parent, depth


def pruned(tree: Tree, p: SplitParams, max_depth: int) -> tuple[Tree, np.ndarray]:
    """(the pruned tree, int64 [old n_nodes]: the new id of the node where each old node's
    rows end up: itself, or the ancestor that became their leaf). Module docstring."""
    n = tree.n_nodes
    left, right = tree.left.astype(np.int64), tree.right.astype(np.int64)
    threshold = tree.threshold.copy()
    parent, depth = _parents_and_depths(tree)
    deleted = np.zeros(n, bool)
    eta = np.float32(p.eta)
    for leaf in range(n):
        if left[leaf] != -1 or deleted[leaf]:
            continue
        node, d = leaf, depth[leaf]
        while node != 0:
            up = parent[node]
            a, b = left[up], right[up]
            if not (left[a] == -1 and left[b] == -1 and (
                    tree.loss_change[up] < p.gamma or (max_depth and d > max_depth))):
                break
            deleted[a] = deleted[b] = True
            left[up] = right[up] = -1
            # XGBoost's learning_rate * base_weight: a float32 product (exact in float64,
            # then rounded once)
            threshold[up] = np.float32(np.float64(eta) * np.float64(tree.base_weight[up]))
            node, d = up, d - 1
    if not deleted.any():
        return tree, np.arange(n, dtype=np.int64)
    keep = ~deleted
    new_id = np.cumsum(keep) - 1
    owner = np.arange(n, dtype=np.int64)    # where a node's rows end: itself or an ancestor
    for node in range(1, n):
        if deleted[node]:
            owner[node] = owner[parent[node]]
    inner = left != -1
    new_left = np.where(inner, new_id[np.maximum(left, 0)], -1)[keep]
    new_right = np.where(inner, new_id[np.maximum(right, 0)], -1)[keep]
    new_parent = np.where(parent >= 0, new_id[np.maximum(parent, 0)], -1)[keep]
    leaf_now = ~inner[keep]
    feature = np.where(leaf_now, 0, tree.feature[keep])
    default_left = np.where(leaf_now, False, tree.default_left[keep])
    categories = None
    if tree.categories:
        categories = {int(new_id[c]): codes for c, codes in tree.categories.items()
                      if keep[c] and inner[c]} or None
    out = Tree(left=new_left.astype(np.int32), right=new_right.astype(np.int32),
               parent=new_parent.astype(np.int32), feature=feature.astype(np.int32),
               threshold=threshold[keep], default_left=default_left.astype(np.bool_),
               base_weight=tree.base_weight[keep].copy(),
               loss_change=tree.loss_change[keep].copy(),      # (a new leaf's kept)
               sum_hessian=tree.sum_hessian[keep].copy(), categories=categories)
    return out, new_id[owner]
