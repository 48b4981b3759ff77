"""Loss-guided growth (``grow_policy="lossguide"``): the leaf with the largest loss change
splits next, as XGBoost's hist updater and LightGBM's leaf-wise trees grow.

The same state machine protocol as depth-wise growth (dgbdt.tree.grower): the grower sees only
merged histograms and answers each with the next request, so every seam (in-process, the
collective ranks) grows these trees unchanged. XGBoost's driver, measured against its trees:

* a priority queue of candidate splits, the largest float32 loss change first, ties to the
  smaller node id; a node enters it when its best split is splittable (gain above 1e-6 and
  gamma, both children with hessian);
* popping an entry when the tree already has ``max_leaves`` leaves discards it (so the tree
  ends); otherwise the node splits (children numbered next, left then right) and the tree
  has one more leaf;
* the children are evaluated (their histograms built) only when they could split in turn:
  ``depth + 1 < max_depth`` (``max_depth = 0``: no limit) and fewer than ``max_leaves``
  leaves (0: no limit). Splits whose children are not evaluated are carried to the shards
  with the next request (or the tree's finish), so a request may apply several.

One node is expanded a request. Its smaller child (by hessian sum) gets its histogram from
the rows; the other is the parent's merged histogram minus it (exact integers), so the grower
keeps the merged histogram of every queued leaf (S x 2 int64 each: 115 KB at 28 features x
256 bins) and the shards keep nothing between requests. Building both children from rows
instead cost far more histogram time (docs/benchmarks-archive.md#figures-behind-code-choices).
"""
from __future__ import annotations

import heapq
import time

import numpy as np

from ..backends.device import to_host
from .split import SplitBatch
from .exact_split import exact_threshold
from .grower import Growth, LevelRequest, pack_sets
from .split import evaluate


def node_capacity(max_depth: int, max_leaves: int) -> int:
    """Node ids a loss-guided tree can use: 2 max_leaves - 1 (a binary tree's nodes), at most
    a depth-limited tree's 2^(max_depth + 1) - 1."""
    caps = [2 ** (max_depth + 1)] if max_depth > 0 else []
    caps += [2 * max_leaves] if max_leaves > 0 else []
    if not caps:
        raise ValueError('grow_policy="lossguide" needs max_leaves > 0 or max_depth > 0')
    return min(caps)


def max_requests(max_depth: int, max_leaves: int) -> int:
    """Histogram requests a loss-guided tree makes at most (graph mode submits that many
    hops a tree): the root's, and one per split whose children are evaluated, i.e. a split
    leaving fewer than max_leaves leaves (at most max_leaves - 2 of them) of a node above depth
    max_depth - 1 (at most 2^(max_depth - 1) - 1 of them)."""
    caps = [max(1, max_leaves - 1)] if max_leaves > 0 else []
    caps += [2 ** (max_depth - 1)] if max_depth > 0 else []
    if not caps:
        raise ValueError('grow_policy="lossguide" needs max_leaves > 0 or max_depth > 0')
    return min(caps)


class LossguideGrowth(Growth):
    """One tree grown leaf-wise (see the module docstring)."""

    NODE_ARRAYS = {**Growth.NODE_ARRAYS, "node_depth": 0}

    def __init__(self, k: int, cuts, hist_ptrs: np.ndarray, max_depth: int, max_leaves: int,
                 p, scale_g: float, scale_h: float, columns=None):
        cap = node_capacity(max_depth, max_leaves)
        # the depth given to Growth only bounds its first capacity (its table grows as needed)
        super().__init__(k, cuts, hist_ptrs, max(1, int(np.ceil(np.log2(cap))) - 1), p,
                         scale_g, scale_h, columns)
        self.max_depth, self.max_leaves = max_depth, max_leaves
        self.node_depth = np.zeros(len(self.left), np.int64)
        self.n_leaves = 1
        self._queue: list = []          # (-gain32, node, candidate fields)
        self._carried: list = []        # splits applied with the next request / the finish
        self._hist: dict = {}           # merged histograms [S, 2] of the queued leaves
        self._expanded = -1             # the node whose children the request asks for
        self.request = LevelRequest(None, np.array([0], np.int64), np.zeros(0, np.int64),
                                    np.zeros(0, np.int64), keep=False,
                                    start=(k, scale_g, scale_h))

    def advance(self, merged) -> None:
        """Evaluate the requested nodes (the root, or the last split's children), queue their
        splits, and expand the best queued node whose children need histograms."""
        t = time.perf_counter()
        req = self.request
        if not self.have_root_totals:
            self.totals[0] = to_host(
                merged[0, self.hist_ptrs[0]:self.hist_ptrs[1]].sum(axis=0)).astype(np.int64)
            self.have_root_totals = True
            self._queue_candidates(req.small, merged)
        else:       # the smaller child from rows, its sibling = parent - smaller (exact)
            parent = self._expanded
            left, right = int(self.left[parent]), int(self.right[parent])
            small = merged[0]
            large = self._hist.pop(parent) - small
            pair = (small, large) if int(req.small[0]) == left else (large, small)
            self._queue_candidates(np.array([left, right], np.int64), np.stack(pair))
        self._expand()
        self.eval_seconds += time.perf_counter() - t

    def _queue_candidates(self, nodes: np.ndarray, merged) -> None:
        """Evaluate nodes' merged histograms [m, S, 2]; queue the splittable ones, keeping
        their histograms for their children's."""
        hist = merged
        self.level_nodes, self.depth = nodes, int(self.node_depth[nodes[0]])
        if self.columns is not None:
            hist = self.columns.apply(hist, self.depth, nodes)
        if self.paths is not None:
            hist = self._interaction_mask(hist)
        bounds = None if self.lower is None else (self.lower[nodes], self.upper[nodes])
        cand = evaluate(hist, self.totals[nodes], self.hist_ptrs, self.scale_g, self.scale_h,
                        self.p, bounds, self.categorical)
        for i in np.flatnonzero(cand.splittable(self.p)).tolist():
            cats = None if cand.is_cat is None or not cand.is_cat[i] else cand.cats[i].copy()
            entry = (-float(np.float32(cand.gain[i])), int(nodes[i]),
                     (float(cand.gain[i]), int(cand.feature[i]), int(cand.split_bin[i]),
                      bool(cand.default_left[i]), cand.left[i].copy(), cand.right[i].copy(),
                      cats))
            heapq.heappush(self._queue, entry)
            self._hist[int(nodes[i])] = merged[i]

    def _expand(self) -> None:
        while self._queue:
            _, node, c = heapq.heappop(self._queue)
            if self.max_leaves and self.n_leaves >= self.max_leaves:
                self._queue.clear()             # every later pop is discarded too
                break
            left = self._split(node, *c)
            if self._children_valid(node):
                lsum, rsum = c[4], c[5]
                smaller = left if lsum[1] <= rsum[1] else left + 1
                self._expanded = node
                self.request = LevelRequest(splits=self._take_carried(),
                                            small=np.array([smaller], np.int64),
                                            large=np.zeros(0, np.int64),
                                            parent_slot=np.zeros(0, np.int64), keep=False)
                return
            self._hist.pop(node, None)
        self._hist.clear()
        self.pending, self.done = self._take_carried(), True

    def _children_valid(self, node: int) -> bool:
        """XGBoost's IsChildValid, after the split: may the children split in turn?"""
        if self.max_depth and self.node_depth[node] + 1 >= self.max_depth:
            return False
        return not (self.max_leaves and self.n_leaves >= self.max_leaves)

    def _split(self, node: int, gain, f, b, dleft, lsum, rsum, cats=None) -> int:
        """Record node's split; its children's ids (left, left + 1) are the next two."""
        cuts = self.cuts
        self.feature[node], self.default_left[node] = f, dleft
        self.loss_change[node] = gain
        self.threshold[node] = (cuts.values[cuts.ptrs[f] + b] if b >= 0 else cuts.min_values[f])
        if self.exact:          # the node's adjacent values (dgbdt.tree.exact_split)
            self.threshold[node] = exact_threshold(cuts, self.hist_ptrs, self._hist[node], f, b,
                                                   self.threshold[node])
        self._reserve(self.n_nodes + 2)
        left, right = self.n_nodes, self.n_nodes + 1
        self.n_nodes += 2
        self.n_leaves += 1
        self.left[node], self.right[node] = left, right
        self.parent[left] = self.parent[right] = node
        self.totals[left], self.totals[right] = lsum, rsum
        self.node_depth[left] = self.node_depth[right] = self.node_depth[node] + 1
        nd, fa = np.array([node]), np.array([f])
        if self.lower is not None:
            self._bound_children(nd, fa, np.array([left]), np.array([right]), lsum[None],
                                 rsum[None])
        if self.paths is not None:
            self.paths[left] = self.paths[right] = self.paths[node] | {f}
        is_cat = set_ = None
        if self.categorical is not None:       # every batch carries the set columns then
            is_cat = np.array([cats is not None])
            set_ = pack_sets(np.zeros((1, self.categorical[1]), np.uint8) if cats is None
                             else cats[None])
            if cats is not None:
                self.split_cats[node] = np.flatnonzero(cats).astype(np.int32)
        self._carried.append(SplitBatch(node=nd, feature=fa, split_bin=np.array([b]),
                                        default_left=np.array([dleft]),
                                        left=np.array([left]), right=np.array([right]),
                                        is_cat=is_cat, cats=set_))
        return left

    def _take_carried(self) -> SplitBatch | None:
        """The splits not yet sent to the shards, as one batch."""
        if not self._carried:
            return None
        s = self._carried
        self._carried = []
        cat = (lambda a: np.concatenate([getattr(x, a) for x in s]))
        return SplitBatch(node=cat("node").astype(np.int64), feature=cat("feature").astype(np.int64),
                          split_bin=cat("split_bin").astype(np.int64),
                          default_left=cat("default_left").astype(np.bool_),
                          left=cat("left").astype(np.int64), right=cat("right").astype(np.int64),
                          is_cat=None if self.categorical is None else cat("is_cat"),
                          cats=None if self.categorical is None else cat("cats"))
