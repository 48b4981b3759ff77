"""Vector-leaf trees: XGBoost's ``multi_strategy="multi_output_tree"``. One tree a round for
all T targets of a multi-target model; its structure is shared and each leaf holds T values.

Gradients are [n, T]. Each target t gets its own fixed-point scales (dgbdt.kernels.fixedpoint,
from its max |g| and max h) and its own histogram; a shard's histogram of a node is int64
[S, 2T] (slot s of target t at columns 2t, 2t + 1), built as T single-target histograms of the
same rows and summed over shards exactly as those are. With (G_t, H_t) a node's sums::

    w_t = CalcWeight(G_t, H_t) = -T_alpha(G_t) / (H_t + lambda)  (0 if H_t < min_child_weight
                                                                  or H_t <= 0; |w_t| clipped
                                                                  to max_delta_step if > 0)
    score(node) = sum_t -float32(w_t) * T_alpha(G_t)
    loss_chg = score(L) + score(R) - score(node)

(XGBoost 3.2's HistMultiEvaluator; kernels.cpu_split_multi scans the candidates). A node splits
when loss_chg > 1e-6 and >= gamma and each side has some target with H_t != 0. A leaf's values
are eta * w_t (float32); an inner node keeps its w_t without eta (XGBoost's base_weights of a
multi-target tree), its sum_hessian is sum_t H_t.

The Tree keeps the weights in ``vector`` (float32 [n_nodes, T]); its leaves' ``threshold``
is 0. Prediction reads a vector tree as T single-output trees of the same structure (``per_target``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .grower import FinishRequest, Growth
from .model import Tree
from .split import SplitCandidates, leaf_weights


#: why a vector-leaf tree does not grow on a GPU, and what to do instead


class VectorCandidates(SplitCandidates):
    """SplitCandidates of T-target sums (left / right int64 [m, 2T])."""

    def take(self, idx) -> "VectorCandidates":
        return VectorCandidates(self.gain[idx], self.feature[idx], self.split_bin[idx],
                                self.default_left[idx], self.left[idx], self.right[idx])

    def splittable(self, p) -> np.ndarray:
        """Gain above 1e-6 and gamma (float32), and on each side some target's hessian
        nonzero (XGBoost's MultiExpandEntry::IsValid)."""
        f32 = np.float32
        return ((self.feature >= 0) & (self.gain > f32(1e-6)) & (self.gain >= f32(p.gamma))
                & (self.left[:, 1::2] != 0).any(axis=1)
                & (self.right[:, 1::2] != 0).any(axis=1))


class VectorGrowth(Growth):
    """A depth-wise vector-leaf tree in growth (module doc): Growth's node table with
    T-target sums; ``scale_g``, ``scale_h`` are float64 [T]. Its requests start the shards'
    trees with ``k = None`` (every target's gradients quantized: Shard.start_tree)."""

    NODE_ARRAYS = dict(Growth.NODE_ARRAYS)

    def __init__(self, cuts, hist_ptrs, max_depth, p, scale_g, scale_h, columns=None,
                 max_leaves: int = 0):
        scale_g = np.asarray(scale_g, np.float64)
        scale_h = np.asarray(scale_h, np.float64)
        super().__init__(None, cuts, hist_ptrs, max_depth, p, scale_g, scale_h, columns,
                         max_leaves)
        self.targets = int(scale_g.shape[0])
        self.totals = np.zeros((len(self.left), 2 * self.targets), np.int64)

    def _evaluate(self, hist, ids):
        from ..kernels.cpu_split_multi import evaluate_multi_splits
        totals = self.totals[ids]
        gain, feat, sbin, dleft, left = evaluate_multi_splits(
            np.asarray(hist), self.hist_ptrs, totals, 1.0 / self.scale_g, 1.0 / self.scale_h,
            self.p.lam, self.p.alpha, self.p.max_delta_step, self.p.min_child_weight)
        return VectorCandidates(gain, feat, sbin, dleft, left, totals - left)

    def _sums(self, n: int):
        """Every node's (G [n, T], H [n, T]) in float64."""
        tot = self.totals[:n]
        return tot[:, 0::2] / self.scale_g, tot[:, 1::2] / self.scale_h

    def _node_weights(self, n: int) -> np.ndarray:
        """float32 [n, T]: inner nodes w_t, leaves eta * w_t (module doc)."""
        g, h = self._sums(n)
        w = leaf_weights(g, h, self.p)
        leaf = (self.left[:n] == -1)[:, None]
        if n == 1:      # a root alone: XGBoost's float32 weight times eta, in float32
            return w.astype(np.float32) * np.float32(self.p.eta)
        return np.where(leaf, w * self.p.eta, w).astype(np.float32)

    def finish_request(self) -> FinishRequest:
        n = self.n_nodes
        leaves = np.flatnonzero(self.left[:n] == -1).astype(np.int64)
        values = self._node_weights(n)[leaves].astype(np.float64)     # [leaves, T]
        return FinishRequest(None, self.pending, leaves, values)

    def tree(self) -> Tree:
        n = self.n_nodes
        vec = self._node_weights(n)
        _, h = self._sums(n)
        leaves = self.left[:n] == -1
        threshold = self.threshold[:n].astype(np.float32)
        threshold[leaves] = 0.0
        return Tree(left=self.left[:n].astype(np.int32), right=self.right[:n].astype(np.int32),
                    parent=self.parent[:n].astype(np.int32),
                    feature=self.feature[:n].astype(np.int32), threshold=threshold,
                    default_left=self.default_left[:n].astype(np.bool_),
                    base_weight=np.zeros(n, np.float32),
                    loss_change=self.loss_change[:n].astype(np.float32),
                    sum_hessian=h.sum(axis=1).astype(np.float32), vector=vec)


def per_target(tree: Tree) -> list[Tree]:
    """A vector tree as T single-output trees (the same structure arrays; tree t's leaves
    hold target t's values), made once a tree (trees are not changed once grown)."""
    made = tree.__dict__.get("_per_target")
    if made is None:
        leaf = tree.left == -1
        made = [dataclasses.replace(tree, threshold=np.where(leaf, tree.vector[:, t],
                                                             tree.threshold).astype(np.float32),
                                    base_weight=tree.vector[:, t].copy(), vector=None)
                for t in range(tree.vector.shape[1])]
        tree.__dict__["_per_target"] = made
    return made


def expand_vector_trees(trees: list, classes: list):
    """(trees, classes, first): vector trees replaced by their per-target trees (class t),
    others as they are; ``first[i]``: where tree i's (first) tree now is."""
    out, cls, first = [], [], []
    for t, k in zip(trees, classes):
        first.append(len(out))
        if t.vector is None:
            out.append(t)
            cls.append(k)
        else:
            parts = per_target(t)
            out += parts
            cls += list(range(len(parts)))
    return out, cls, first


def check_vector_leaf(p: dict, cuts) -> None:
    """Refuse what vector-leaf trees do not take (XGBoost 3.2 refuses the first four too):
    tree_method 'approx' / 'exact', booster 'dart', monotone and interaction constraints; and
    what dgbdt does not grow with them: leaf-wise growth, categorical splits, linear leaves."""
    def refuse(what, fix):
        raise ValueError(f"multi_strategy='multi_output_tree' (vector-leaf trees) does not "
                         f"take {what} (XGBoost refuses it too). Fix: {fix}, or "
                         "multi_strategy='one_output_per_tree'.")
    if p.get("tree_method") in ("approx", "exact"):
        refuse(f"tree_method={p['tree_method']!r}", "tree_method='hist'")
    if p.get("booster") == "dart":
        refuse("booster='dart'", "booster='gbtree'")
    if p.get("monotone_constraints") and any(p["monotone_constraints"]):
        refuse("monotone_constraints", "drop monotone_constraints")
    if p.get("interaction_constraints"):
        refuse("interaction_constraints", "drop interaction_constraints")
    msg = "multi_strategy='multi_output_tree' (vector-leaf trees) with {} is not implemented " \
          "in dgbdt. Fix: {}, or multi_strategy='one_output_per_tree'."
    if p.get("grow_policy") == "lossguide":
        raise NotImplementedError(msg.format("grow_policy='lossguide'",
                                             "grow_policy='depthwise'"))
    if p.get("linear_tree"):
        raise NotImplementedError(msg.format("linear_tree", "drop linear_tree"))
    if getattr(cuts, "categorical", None) is not None:
        raise NotImplementedError(msg.format(
            "categorical features", "encode them as numbers (e.g. one-hot)"))
