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

Categorical features (cuts.categorical) split by a set of categories going right: the
request's SplitBatch carries each split's set as bits, the Tree keeps it (dgbdt.tree.split).

Because the state machine only ever sees merged histograms, the same code grows trees
in-process (``grow_tree`` below drives it over a seam) and inside Dask tasks (dgbdt.dask
submits a tree's levels as a graph, ``advance`` running in the task that merges a level).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..backends.device import array_module, backend_of, to_host
from .exact_split import exact_threshold
from .split import SplitBatch
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
    #: linear trees: the nodes' regressors (dgbdt.tree.linear_growth.LinearLevel), else None
    linear: object = None

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
    #: linear leaves (dgbdt.tree.linear_growth.LeafModels) replacing ``values``, or None
    linear: object = None


class Growth:
    """One tree in growth: node table, gradient sums, and the current level.

    The node table is a set of arrays filled a level at a time with vectorized numpy: the host
    work per level does not grow with the number of nodes in Python loops (it sits between GPU
    levels). They start small and double when a split needs room (``_reserve``), so a tree's
    memory follows the nodes it grows, not the 2^(d+1) a depth-d tree could have (max_depth=30
    on 300 rows grows a few hundred nodes; 2^31 preallocated would be 16 GiB an array).
    """

    #: the node table's arrays (``_reserve`` grows them all), and the fill of new entries
    NODE_ARRAYS = {"left": -1, "right": -1, "parent": -1, "feature": 0, "default_left": False,
                   "threshold": 0.0, "loss_change": 0.0, "totals": 0, "lower": -np.inf,
                   "upper": np.inf}
    #: 127 nodes: a tree of the default max_depth=6 grows none (each growth was a tenth of
    #: its tree's host work on small data)
    FIRST_CAPACITY = 128
    #: tree_method="exact": thresholds between the node's adjacent values (GrowthSpec.start)
    exact = False

    def __init__(self, k: int, cuts, hist_ptrs: np.ndarray, max_depth: int, p: SplitParams,
                 scale_g: float, scale_h: float, columns=None, max_leaves: int = 0):
        self.k, self.cuts, self.hist_ptrs = k, cuts, hist_ptrs
        # XGBoost caps depth-wise trees with max_leaves too: a level's nodes split in id
        # order while the tree has fewer leaves (its driver's depth-wise queue)
        self.max_leaves, self.n_leaves = max_leaves, 1
        self.columns = columns
        self.max_depth, self.p = max_depth, p
        self.scale_g, self.scale_h = scale_g, scale_h
        cap = min(2 ** (max_depth + 1), self.FIRST_CAPACITY)
        self.n_nodes = 1
        self.left = np.full(cap, -1, np.int64)
        self.right = np.full(cap, -1, np.int64)
        self.parent = np.full(cap, -1, np.int64)
        self.feature = np.zeros(cap, np.int64)
        self.default_left = np.zeros(cap, np.bool_)
        self.threshold = np.zeros(cap, np.float64)
        self.loss_change = np.zeros(cap, np.float64)
        self.totals = np.zeros((cap, 2), np.int64)
        # monotone constraints: each node's weight bounds (XGBoost's TreeEvaluator)
        self.lower = np.full(cap, -np.inf) if p.monotone is not None else None
        self.upper = np.full(cap, np.inf) if p.monotone is not None else None
        # interaction constraints: the features on each node's path
        self.paths = {0: frozenset()} if p.interactions is not None else None
        # categorical features: (features, set width) for split evaluation, and each
        # categorical split's set of categories going right
        self.categorical = categorical_spec(cuts)
        self.split_cats: dict[int, np.ndarray] = {}
        self._slot_feature = None
        self.have_root_totals = False
        self.depth = 0
        self.level_nodes = np.array([0], np.int64)
        self.pending: SplitBatch | None = None
        self.done = False
        self.request = LevelRequest(None, np.array([0], np.int64), np.zeros(0, np.int64),
                                    np.zeros(0, np.int64), keep=max_depth > 1,
                                    start=(k, scale_g, scale_h))
        self.eval_seconds = 0.0

    def _reserve(self, n: int) -> None:
        """Room for ``n`` nodes in every node-table array: doubled (amortized O(1) a node)."""
        cap = len(self.left)
        if n <= cap:
            return
        while cap < n:
            cap *= 2
        for name, fill in self.NODE_ARRAYS.items():
            a = getattr(self, name, None)
            if a is None:
                continue
            grown = np.full((cap,) + a.shape[1:], fill, a.dtype)
            grown[:len(a)] = a
            setattr(self, name, grown)

    def advance(self, merged: np.ndarray) -> None:
        """Consume the merged histograms [len(request.nodes), S, 2] of the current request."""
        t = time.perf_counter()
        req = self.request
        if not self.have_root_totals:   # the root's sums: all slots of feature 0 (any feature)
            self.totals[0] = to_host(
                merged[0, self.hist_ptrs[0]:self.hist_ptrs[1]].sum(axis=0)).astype(np.int64)
            self.have_root_totals = True
        req_nodes = req.nodes
        slot = {n: i for i, n in enumerate(req_nodes.tolist())}
        order = [slot[n] for n in self.level_nodes.tolist()]
        in_request_order = len(order) == len(req_nodes)
        if in_request_order:                # the request's order: the candidates are
            hist, ids = merged, np.asarray(req_nodes, dtype=np.int64)  # permuted, not the
            if order == list(range(len(order))):    # histograms (megabytes a node when
                order = None                        # wide)
            else:
                order = np.array(order, dtype=np.int64)
        else:
            hist = merged[backend_of(merged).upload(np.array(order, dtype=np.int64))]
            ids, order = self.level_nodes, None
        if self.columns is not None:       # features outside the sample: slots zeroed (a copy)
            hist = self.columns.apply(hist, self.depth, ids)
        if self.paths is not None:         # features the nodes' paths forbid: slots zeroed
            hist = self._interaction_mask(hist, ids)
        cand = self._evaluate(hist, ids)
        # ok: the splitting nodes' positions in the level, in level order; sel: their
        # candidates' (and histograms') positions (the request's order)
        split_mask = cand.splittable(self.p)
        ok = np.flatnonzero(split_mask if order is None else split_mask[order])
        if self.max_leaves:             # the level's first nodes (ids ascending) that fit
            ok = ok[:max(0, self.max_leaves - self.n_leaves)]
            self.n_leaves += ok.size
        sel = ok if order is None else order[ok]
        if self.depth == self.max_depth or ok.size == 0:
            self.pending, self.done = None, True
            self.eval_seconds += time.perf_counter() - t
            return
        cuts, m = self.cuts, ok.size
        nodes = self.level_nodes[ok]
        f = cand.feature[sel].astype(np.int64)
        b = cand.split_bin[sel].astype(np.int64)
        self.feature[nodes] = f
        self.default_left[nodes] = cand.default_left[sel]
        self.loss_change[nodes] = cand.gain[sel]
        self.threshold[nodes] = np.where(b >= 0, cuts.values[cuts.ptrs[f] + np.maximum(b, 0)],
                                         cuts.min_values[f])
        if self.exact:                      # the node's adjacent values (exact_split)
            for i, node, fi, bi in zip(sel.tolist(), nodes.tolist(), f.tolist(), b.tolist()):
                self.threshold[node] = exact_threshold(cuts, self.hist_ptrs, hist[i], fi, bi,
                                                       self.threshold[node])
        # children numbered in order, left then right (as XGBoost numbers them)
        self._reserve(self.n_nodes + 2 * m)
        lefts = self.n_nodes + 2 * np.arange(m, dtype=np.int64)
        rights = lefts + 1
        self.n_nodes += 2 * m
        self.left[nodes], self.right[nodes] = lefts, rights
        self.parent[lefts], self.parent[rights] = nodes, nodes
        lsum, rsum = cand.left[sel], cand.right[sel]
        self.totals[lefts], self.totals[rights] = lsum, rsum
        if self.lower is not None:
            self._bound_children(nodes, f, lefts, rights, lsum, rsum)
        if self.paths is not None:
            for node, feat, lft, rgt in zip(nodes.tolist(), f.tolist(), lefts.tolist(),
                                            rights.tolist()):
                self.paths[lft] = self.paths[rgt] = self.paths[node] | {feat}
        is_cat = cats = None
        if cand.is_cat is not None:
            is_cat, cats = cand.is_cat[sel].copy(), cand.cats[sel]
            for node, i in zip(nodes[is_cat].tolist(), np.flatnonzero(is_cat).tolist()):
                self.split_cats[node] = np.flatnonzero(cats[i]).astype(np.int32)
            cats = pack_sets(cats)
        self.pending = SplitBatch(node=nodes, feature=f, split_bin=b,
                                  default_left=cand.default_left[sel],
                                  left=lefts, right=rights, is_cat=is_cat, cats=cats)
        self.level_nodes = np.empty(2 * m, np.int64)       # lefts[0], rights[0], ...
        self.level_nodes[0::2], self.level_nodes[1::2] = lefts, rights
        self.depth += 1
        if self.depth == self.max_depth:       # children are leaves: no histograms needed
            self.done = True
        else:
            left_smaller = lsum[:, 1] <= rsum[:, 1]
            self.request = LevelRequest(
                splits=self.pending,
                small=np.where(left_smaller, lefts, rights),
                large=np.where(left_smaller, rights, lefts),
                parent_slot=(sel if in_request_order       # sel: the nodes' slots there
                             else np.array([slot[n] for n in nodes.tolist()], dtype=np.int64)),
                keep=self.depth + 1 < self.max_depth)
            self.pending = None
        self.eval_seconds += time.perf_counter() - t

    def _evaluate(self, hist, ids):
        """The best split candidates of the nodes ``ids`` from their histograms."""
        bounds = None if self.lower is None else (self.lower[ids], self.upper[ids])
        return evaluate(hist, self.totals[ids], self.hist_ptrs, self.scale_g,
                        self.scale_h, self.p, bounds, self.categorical)

    def _bound_children(self, nodes, features, lefts, rights, left_sums, right_sums) -> None:
        """XGBoost's AddSplit: the children inherit the node's bounds; on a constrained
        feature the midpoint of the children's (clipped) weights becomes the upper bound of
        the child that must stay lower and the lower bound of the other."""
        lo, hi = self.lower[nodes], self.upper[nodes]
        wl = np.clip(self._weights(left_sums), lo, hi)
        wr = np.clip(self._weights(right_sums), lo, hi)
        mid = (wl + wr) / 2.0
        c = np.asarray(self.p.monotone, dtype=np.int64)[features]
        # c > 0: the left child stays below mid, the right above; c < 0 the other way round
        self.lower[lefts] = np.where(c < 0, mid, lo)
        self.upper[lefts] = np.where(c > 0, mid, hi)
        self.lower[rights] = np.where(c > 0, mid, lo)
        self.upper[rights] = np.where(c < 0, mid, hi)

    def _interaction_mask(self, hist, nodes=None):
        """hist with the slots of features each of ``nodes`` (hist's; default the level's)
        may not split on zeroed (a copy; dgbdt.tree.constraints.allowed_features)."""
        nodes = self.level_nodes if nodes is None else nodes
        from .constraints import allowed_features
        n_features = len(self.hist_ptrs) - 1
        if self._slot_feature is None:
            self._slot_feature = np.repeat(np.arange(n_features), np.diff(self.hist_ptrs))
        ok = np.stack([allowed_features(self.p.interactions, self.paths[n], n_features)
                       for n in np.asarray(nodes).tolist()])
        keep = ok[:, self._slot_feature]                             # [m, S]
        xp = array_module(hist)
        return hist * xp.asarray(keep[:, :, None].astype(hist.dtype))

    def _weights(self, sums):
        """w* (before eta) of fixed-point (G, H) sums [m, 2]."""
        return leaf_weights(sums[:, 0] / self.scale_g, sums[:, 1] / self.scale_h, self.p)

    def finish_request(self) -> FinishRequest:
        leaves, values = self._leaf_values()
        return FinishRequest(self.k, self.pending, leaves, values[leaves].astype(np.float64))

    def _leaf_values(self):
        n = self.n_nodes
        weight = node_weights(self.totals[:n], self.scale_g, self.scale_h, self.p,
                              self._bounds(n))
        leaves = np.flatnonzero(self.left[:n] == -1).astype(np.int64)
        return leaves, weight

    def _bounds(self, n: int):
        return None if self.lower is None else (self.lower[:n], self.upper[:n])

    #: leaf values that replace the Newton ones (grow_tree's quantile refresh), or None
    leaf_values = None

    def tree(self) -> Tree:
        n = self.n_nodes
        t = make_tree(self.left[:n], self.right[:n], self.parent[:n], self.feature[:n],
                      self.threshold[:n], self.default_left[:n], self.loss_change[:n],
                      self.totals[:n], self.scale_g, self.scale_h, self.p, self._bounds(n),
                      self.split_cats)
        if self.leaf_values is not None:       # the leaves' values only (XGBoost keeps the
            leaves = t.left == -1              # nodes' Newton base_weight)
            t.threshold[leaves] = self.leaf_values[:n][leaves]
        return t


def newton_weights(totals, scale_g: float, scale_h: float, p: SplitParams, bounds=None):
    """w* of every node from its fixed-point sums [n, 2], float64 (numpy or cupy: one
    elementwise operation at a time, so the same float64 roundings on either); with
    monotone constraints clipped to the node's ``bounds`` (lower, upper)."""
    g, h = totals[:, 0] / scale_g, totals[:, 1] / scale_h
    w = leaf_weights(g, h, p)
    if bounds is not None:
        w = np.clip(w, bounds[0], bounds[1])
    return w


def node_weights(totals, scale_g: float, scale_h: float, p: SplitParams, bounds=None):
    """eta * w* of every node (newton_weights) as float32: the value each would have as a
    leaf."""
    return (newton_weights(totals, scale_g, scale_h, p, bounds) * p.eta).astype(np.float32)


def pack_sets(cats: np.ndarray) -> np.ndarray:
    """Category sets uint8 [m, W] (1: goes right) as bits uint8 [m, ceil(W / 8)], what
    shards read (8x less to send)."""
    return np.packbits(cats, axis=1, bitorder="little")


def categorical_spec(cuts):
    """(categorical features int64, widest feature's bins) for split evaluation, or None
    without categorical features."""
    feats = cuts.categorical_features() if getattr(cuts, "categorical", None) is not None \
        else np.zeros(0, np.int64)
    if not feats.size:
        return None
    return feats, int(cuts.n_bins()[feats].max())


def make_tree(left, right, parent, feature, threshold, default_left, loss_change, totals,
              scale_g: float, scale_h: float, p: SplitParams, bounds=None,
              categories=None) -> Tree:
    """The Tree of a grown node table (host arrays of its n nodes): leaves hold their value
    in ``threshold`` (XGBoost's split_conditions); ``categories``: node -> the categories a
    categorical split sends right (its threshold is 0)."""
    w = newton_weights(totals, scale_g, scale_h, p, bounds)
    leaves = np.flatnonzero(left == -1)
    threshold = threshold.astype(np.float32)
    threshold[leaves] = (w[leaves] * p.eta).astype(np.float32)
    # XGBoost's base_weights (hist, approx): a leaf's eta * w*, an inner node's and the
    # root's w* without eta (its pruner makes eta * w* the value of a node it turns into a
    # leaf). (Its exact method leaves eta out of every node's.)
    weight = threshold.copy()
    weight[left != -1] = w[left != -1]
    weight[0] = w[0]
    cats = {int(n): np.asarray(c, np.int32) for n, c in (categories or {}).items()}
    for n in cats:
        threshold[n] = 0.0
    return Tree(
        left=left.astype(np.int32), right=right.astype(np.int32),
        parent=parent.astype(np.int32), feature=feature.astype(np.int32), threshold=threshold,
        default_left=default_left.astype(np.bool_), base_weight=weight,
        loss_change=loss_change.astype(np.float32),
        sum_hessian=(totals[:, 1] / scale_h).astype(np.float32), categories=cats or None)


def finish_tree(seam, growth, leaf_alpha: float | None = None) -> None:
    """A grown tree's end on the seam: the last splits applied and the leaves' values added
    to the margins (linear leaves fitted on their rows first; quantile leaves refreshed)."""
    fin = growth.finish_request()
    if getattr(growth, "linear", None) is not None:     # linear leaves: fitted on their rows
        fin = growth.fit_leaves(fin, seam.leaf_sums(growth.leaf_sum_request(fin)))
    if leaf_alpha is not None:
        fin = refresh_leaves(growth, fin, seam.leaf_quantiles(fin, leaf_alpha))
    seam.finish(fin)


def grow_tree(seam, growth: Growth, timers: dict, leaf_alpha: float | None = None,
              lazy: bool = False):
    """Drive one tree's growth over a seam; the shards' margins get its leaf values.
    ``leaf_alpha``: the objective refreshes its leaves to that quantile of their rows'
    residuals (dgbdt.objectives.regression._QuantileLoss), asked of the seam once the rows are in their
    leaves. ``lazy``: a device-grown tree comes back as a PendingTree (dgbdt.tree.
    device_grower), the host not waiting for it (other growths return their Tree)."""
    while not growth.done:
        growth.advance(seam.level(growth.request))
    finish_tree(seam, growth, leaf_alpha)
    timers["split_evaluation"] += growth.eval_seconds
    if lazy and hasattr(growth, "pending_tree"):
        return growth.pending_tree(seam.settle_later())
    t = time.perf_counter()
    seam.settle()
    tree = growth.tree()
    # a device-grown tree is where the host first waits for the tree's GPU work
    timers["device_wait"] = timers.get("device_wait", 0.0) + time.perf_counter() - t
    return tree


def refresh_leaves(growth: Growth, fin: FinishRequest, values: np.ndarray) -> FinishRequest:
    """The quantile losses' leaves: each leaf's value ``eta * values[i]`` (float32, as the
    tree keeps it) replaces the Newton one in the tree and in the request the shards add to
    their margins (whose rows already went through ``fin``'s splits: none left to apply)."""
    growth.leaf_values = np.zeros(growth.n_nodes, np.float32)
    growth.leaf_values[fin.leaves] = (values * growth.p.eta).astype(np.float32)
    return FinishRequest(fin.k, None, fin.leaves,
                         growth.leaf_values[fin.leaves].astype(np.float64))
