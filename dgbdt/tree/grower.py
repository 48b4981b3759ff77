"""Depth-wise tree growth over the training seam.

One level at a time:

1. evaluate the best split of every node of the level from its merged histogram;
2. split the nodes worth splitting (children numbered in order, as XGBoost numbers them) and send
   the decisions to the shards, which partition their rows;
3. unless the children are at max_depth, build the histograms of the smaller child of each split
   (smaller by hessian sum, known from the split) and derive the sibling by subtraction,
   parent - smaller, exact in integers (ThunderGBM / LightGBM's histogram subtraction).

The grower never sees rows: it talks to the seam (dgbdt.seam) only, so the same code grows trees
in-process, over Dask futures or on a GPU.
"""
from __future__ import annotations

import time

import numpy as np

from ..shard import SplitBatch
from .model import Tree
from .split import SplitParams, evaluate, leaf_weights


class _Nodes:
    """Growing arrays of a tree's nodes (XGBoost's layout)."""

    def __init__(self):
        self.left, self.right, self.parent = [-1], [-1], [-1]
        self.feature, self.split_bin, self.default_left = [0], [0], [False]
        self.threshold, self.loss_change = [0.0], [0.0]
        self.totals = [None]

    def add_children(self, parent: int, left_tot, right_tot) -> tuple[int, int]:
        ids = []
        for tot in (left_tot, right_tot):
            ids.append(len(self.left))
            for arr, v in ((self.left, -1), (self.right, -1), (self.parent, parent),
                           (self.feature, 0), (self.split_bin, 0), (self.default_left, False),
                           (self.threshold, 0.0), (self.loss_change, 0.0)):
                arr.append(v)
            self.totals.append(tot)
        self.left[parent], self.right[parent] = ids
        return ids[0], ids[1]


def grow_tree(seam, k: int, cuts, hist_ptrs: np.ndarray, max_depth: int, p: SplitParams,
              scale_g: float, scale_h: float, timers: dict) -> Tree:
    """Grow one tree for output class k on the seam's current gradients; update its margins."""
    inv_sg, inv_sh = 1.0 / scale_g, 1.0 / scale_h
    nodes = _Nodes()
    t = time.perf_counter()
    root_hist = seam.build_histograms(np.array([0]))
    timers["histograms"] += time.perf_counter() - t
    nodes.totals[0] = root_hist[0, hist_ptrs[0]:hist_ptrs[1]].sum(axis=0)
    level, hists = [0], {0: root_hist[0]}
    for depth in range(max_depth):
        t = time.perf_counter()
        hist = np.stack([hists.pop(n) for n in level])
        totals = np.stack([nodes.totals[n] for n in level])
        cand = evaluate(hist, totals, hist_ptrs, scale_g, scale_h, p)
        ok = np.flatnonzero(cand.splittable(p, inv_sh))
        timers["split_evaluation"] += time.perf_counter() - t
        if ok.size == 0:
            break
        split_nodes, lefts, rights = [], [], []
        for i in ok:
            n, f, b = level[i], int(cand.feature[i]), int(cand.split_bin[i])
            nodes.feature[n], nodes.split_bin[n] = f, b
            nodes.default_left[n] = bool(cand.default_left[i])
            nodes.loss_change[n] = float(cand.gain[i])
            nodes.threshold[n] = float(cuts.values[cuts.ptrs[f] + b] if b >= 0
                                       else cuts.min_values[f])
            left, right = nodes.add_children(n, cand.left[i], cand.right[i])
            split_nodes.append(n)
            lefts.append(left)
            rights.append(right)
        batch = SplitBatch(
            node=np.array(split_nodes, dtype=np.int64),
            feature=cand.feature[ok].astype(np.int64), split_bin=cand.split_bin[ok].astype(np.int64),
            default_left=cand.default_left[ok].copy(),
            left=np.array(lefts, dtype=np.int64), right=np.array(rights, dtype=np.int64))
        t = time.perf_counter()
        seam.apply_splits(batch)
        timers["partition"] += time.perf_counter() - t
        level = [c for pair in zip(lefts, rights) for c in pair]
        if depth + 1 == max_depth:
            break
        t = time.perf_counter()
        left_smaller = cand.left[ok, 1] <= cand.right[ok, 1]
        small = np.where(left_smaller, batch.left, batch.right)
        large = np.where(left_smaller, batch.right, batch.left)
        built = seam.build_histograms(small)
        for j, i in enumerate(ok):
            hists[int(small[j])] = built[j]
            hists[int(large[j])] = hist[i] - built[j]
        timers["histograms"] += time.perf_counter() - t
    return _finish(seam, k, nodes, p, inv_sg, inv_sh, timers)


def _finish(seam, k, nodes: _Nodes, p: SplitParams, inv_sg, inv_sh, timers) -> Tree:
    """Leaf values (eta * w*, float32) into the tree and onto the shards' margins."""
    tot = np.array(nodes.totals, dtype=np.int64)
    g, h = tot[:, 0] * inv_sg, tot[:, 1] * inv_sh
    weight = (leaf_weights(g, h, p) * p.eta).astype(np.float32)
    left = np.array(nodes.left, dtype=np.int32)
    leaves = np.flatnonzero(left == -1)
    threshold = np.array(nodes.threshold, dtype=np.float32)
    threshold[leaves] = weight[leaves]
    t = time.perf_counter()
    seam.add_leaves(k, leaves.astype(np.int64), weight[leaves].astype(np.float64))
    timers["leaf_update"] += time.perf_counter() - t
    return Tree(
        left=left, right=np.array(nodes.right, dtype=np.int32),
        parent=np.array(nodes.parent, dtype=np.int32),
        feature=np.array(nodes.feature, dtype=np.int32),
        threshold=threshold, default_left=np.array(nodes.default_left, dtype=np.bool_),
        base_weight=weight, loss_change=np.array(nodes.loss_change, dtype=np.float32),
        sum_hessian=h.astype(np.float32))
