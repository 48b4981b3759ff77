"""Depth-wise tree growth as a small state machine over merged histograms.

``Growth`` holds a tree in growth (node table and per-node gradient sums: a few KB) and turns the
merged histograms of one level into the request for the next. A request (``LevelRequest``) is all
a shard needs at a level:

1. apply the previous level's split decisions (partition its rows);
2. build histograms of the *smaller* child of each split from its rows (by hessian sum, known
   from the split), and derive the sibling by subtraction from its own stored partial histogram
   of the parent: parent - smaller, exact in integers (ThunderGBM / LightGBM);
3. return its partial histograms of the level's nodes, which the seam sums over shards.

``Growth.advance(merged)`` evaluates the best split of every node of the level, numbers the
children in order (as XGBoost does) and emits the next request, or ends the tree; then
``finish_request()`` carries the last splits and the leaf values (eta * w*) to the shards.

Because the state machine only ever sees merged histograms, the same code grows trees
in-process (``grow_tree`` below drives it over a seam) and inside Dask tasks (dgbdt.dask
submits a tree's levels as a graph, ``advance`` running in the task that merges a level).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..shard import SplitBatch
from .model import Tree
from .split import SplitParams, evaluate, leaf_weights


@dataclass
class LevelRequest:
    """What every shard does at one level (small: sent to every shard)."""

    splits: SplitBatch | None   # decisions of the previous level (None at the root)
    small: np.ndarray           # int64 nodes whose histograms are built from rows
    large: np.ndarray           # int64 siblings: parent's partial histogram - small's
    parent_slot: np.ndarray     # int64 index of each pair's parent in the previous level
    keep: bool                  # whether shards keep this level's partials (children follow)
    start: tuple | None = None  # root only: (k, scale_g, scale_h) to quantize gradients first

    @property
    def nodes(self) -> np.ndarray:
        """The order of the histograms a shard returns: small, then large."""
        return np.concatenate([self.small, self.large])


@dataclass
class FinishRequest:
    """The last splits and the leaf values, for shards to update class k's margins."""

    k: int
    splits: SplitBatch | None
    leaves: np.ndarray        # int64 leaf node ids
    values: np.ndarray        # float64 leaf values


class Growth:
    """One tree in growth: node table, gradient sums, and the current level."""

    def __init__(self, k: int, cuts, hist_ptrs: np.ndarray, max_depth: int, p: SplitParams,
                 scale_g: float, scale_h: float):
        self.k, self.cuts, self.hist_ptrs = k, cuts, hist_ptrs
        self.max_depth, self.p = max_depth, p
        self.scale_g, self.scale_h = scale_g, scale_h
        self.left, self.right, self.parent = [-1], [-1], [-1]
        self.feature, self.default_left = [0], [False]
        self.threshold, self.loss_change = [0.0], [0.0]
        self.totals: list = [None]
        self.depth = 0
        self.level_nodes: list[int] = [0]
        self.pending: SplitBatch | None = None
        self.done = False
        self.request = LevelRequest(None, np.array([0], np.int64), np.zeros(0, np.int64),
                                    np.zeros(0, np.int64), keep=max_depth > 1,
                                    start=(k, scale_g, scale_h))
        self.eval_seconds = 0.0

    def _add_child(self, parent: int, tot) -> int:
        node = len(self.left)
        for arr, v in ((self.left, -1), (self.right, -1), (self.parent, parent),
                       (self.feature, 0), (self.default_left, False), (self.threshold, 0.0),
                       (self.loss_change, 0.0)):
            arr.append(v)
        self.totals.append(tot)
        return node

    def advance(self, merged: np.ndarray) -> None:
        """Consume the merged histograms [len(request.nodes), S, 2] of the current request."""
        t = time.perf_counter()
        req = self.request
        by_node = dict(zip(req.nodes.tolist(), merged))
        if self.totals[0] is None:
            self.totals[0] = merged[0, self.hist_ptrs[0]:self.hist_ptrs[1]].sum(axis=0)
        hist = np.stack([by_node[n] for n in self.level_nodes])
        totals = np.stack([self.totals[n] for n in self.level_nodes])
        cand = evaluate(hist, totals, self.hist_ptrs, self.scale_g, self.scale_h, self.p)
        ok = np.flatnonzero(cand.splittable(self.p))
        if self.depth == self.max_depth or ok.size == 0:
            self.pending, self.done = None, True
            self.eval_seconds += time.perf_counter() - t
            return
        cuts = self.cuts
        split_nodes, lefts, rights = [], [], []
        for i in ok:
            n, f, b = self.level_nodes[i], int(cand.feature[i]), int(cand.split_bin[i])
            self.feature[n], self.default_left[n] = f, bool(cand.default_left[i])
            self.loss_change[n] = float(cand.gain[i])
            self.threshold[n] = float(cuts.values[cuts.ptrs[f] + b] if b >= 0
                                      else cuts.min_values[f])
            left = self._add_child(n, cand.left[i])
            right = self._add_child(n, cand.right[i])
            self.left[n], self.right[n] = left, right
            split_nodes.append(n)
            lefts.append(left)
            rights.append(right)
        self.pending = SplitBatch(
            node=np.array(split_nodes, dtype=np.int64),
            feature=cand.feature[ok].astype(np.int64),
            split_bin=cand.split_bin[ok].astype(np.int64),
            default_left=cand.default_left[ok].copy(),
            left=np.array(lefts, dtype=np.int64), right=np.array(rights, dtype=np.int64))
        self.level_nodes = [c for pair in zip(lefts, rights) for c in pair]
        self.depth += 1
        if self.depth == self.max_depth:       # children are leaves: no histograms needed
            self.done = True
        else:
            left_smaller = cand.left[ok, 1] <= cand.right[ok, 1]
            self.request = LevelRequest(
                splits=self.pending,
                small=np.where(left_smaller, self.pending.left, self.pending.right),
                large=np.where(left_smaller, self.pending.right, self.pending.left),
                parent_slot=np.array([req.nodes.tolist().index(n) for n in split_nodes],
                                     dtype=np.int64),
                keep=self.depth + 1 < self.max_depth)
            self.pending = None
        self.eval_seconds += time.perf_counter() - t

    def finish_request(self) -> FinishRequest:
        leaves, values = self._leaf_values()
        return FinishRequest(self.k, self.pending, leaves, values[leaves].astype(np.float64))

    def _leaf_values(self):
        tot = np.array(self.totals, dtype=np.int64)
        g, h = tot[:, 0] / self.scale_g, tot[:, 1] / self.scale_h
        weight = (leaf_weights(g, h, self.p) * self.p.eta).astype(np.float32)
        leaves = np.flatnonzero(np.array(self.left) == -1).astype(np.int64)
        return leaves, weight

    def tree(self) -> Tree:
        leaves, weight = self._leaf_values()
        threshold = np.array(self.threshold, dtype=np.float32)
        threshold[leaves] = weight[leaves]
        tot = np.array(self.totals, dtype=np.int64)
        return Tree(
            left=np.array(self.left, dtype=np.int32), right=np.array(self.right, dtype=np.int32),
            parent=np.array(self.parent, dtype=np.int32),
            feature=np.array(self.feature, dtype=np.int32), threshold=threshold,
            default_left=np.array(self.default_left, dtype=np.bool_), base_weight=weight,
            loss_change=np.array(self.loss_change, dtype=np.float32),
            sum_hessian=(tot[:, 1] / self.scale_h).astype(np.float32))


def grow_tree(seam, growth: Growth, timers: dict) -> Tree:
    """Drive one tree's growth over a seam; the shards' margins get its leaf values."""
    while not growth.done:
        growth.advance(seam.level(growth.request))
    seam.finish(growth.finish_request())
    timers["split_evaluation"] += growth.eval_seconds
    return growth.tree()
