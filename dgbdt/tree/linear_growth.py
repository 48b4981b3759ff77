"""Depth-wise growth of a piecewise-linear tree: Growth's state machine with linear leaves.

The math is dgbdt.kernels.linear_math's. What differs from constant-leaf growth (dgbdt.tree.grower):

* every node carries its regressors S (inherited from its parent, plus the split feature
  while |S| < max_linear_features) and its slope part v (the half-additive fit's, in
  normalized units), sent to the shards with the level's request (``LinearLevel``);
* histograms carry 9 fixed-point sums a slot (``PAYLOAD``). Depth-wise, the smaller child of
  each split is built from its rows; the larger child's g, h and x~ entries are its parent's
  partial minus its sibling's (exact), but its p~ entries depend on its own slope part, so a
  second, lighter pass over its rows sums those four (kernels.cpu_linear, ``p_only``);
* split evaluation scores candidates by the half-additive gain (kernels.cpu_linear, or
  kernels.gpu_linear on the device for GPU shards: the same splits);
* once the structure is final, one more pass over the rows sums each leaf's full ridge
  system (``LeafSumRequest``, merged over shards like histograms), the host solves each
  leaf's d + 1 coefficients in float64, and the shards add the linear leaves to their
  margins (``LeafModels``).

``LinearGrowth`` grows depth-wise (a level a request), ``LinearLossguideGrowth`` leaf-wise
(dgbdt.tree.lossguide's queue; both children of the expanded node from rows, a request);
``LinearNodes`` is what they share. Numerical features only take part as regressors;
monotone constraints, categorical features and alpha are refused before training starts
(dgbdt.train).
"""
from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np

from ..backends.device import array_module, backend_of, to_host
from .split import SplitBatch
from .grower import FinishRequest, Growth, LevelRequest
from .lossguide import LossguideGrowth
from ..kernels.linear_math import (
    GP, HP, HPP, HPX, PAYLOAD, LinearSpec, fit_leaf, half_additive_fit, slope_bound)
from .split import splittable


@dataclass
class LinearLevel:
    """What a shard needs beyond a LevelRequest to build a level's linear histograms."""

    k: int
    scale_g: float
    scale_h: float
    center: np.ndarray       # float64 [F]
    inv_scale: np.ndarray    # float64 [F]
    xmask: np.ndarray        # bool [F]: features that may be regressors
    reg_feat: np.ndarray     # int64 [m, D]: each node's regressors, -1 padded
    reg_coef: np.ndarray     # float64 [m, D]: its slope part v
    inv_sp: np.ndarray       # float64 [m]: 1 / s_p
    #: the tree's constants in device memory (a device-grown tree's: gpu.tree_consts), or
    #: None: GPU kernels then read the scales above, uploaded
    consts: object = None


@dataclass
class LeafSumRequest:
    """The last splits, then each leaf's fixed-point ridge sums (kernels.cpu_linear.leaf_sums)."""

    k: int
    splits: SplitBatch | None
    leaves: np.ndarray       # int64 [Lf]
    feats: np.ndarray        # int64 [Lf, D]: each leaf's regressors, -1 padded
    scale_g: float
    scale_h: float
    center: np.ndarray
    inv_scale: np.ndarray
    consts: object = None    # as LinearLevel.consts


@dataclass
class LeafModels:
    """Linear leaves, flat: leaf j's constant is coef[begin[j]], its size[j] terms follow
    (feat, center, inv_scale aligned with coef; entry begin[j] of those unused)."""

    begin: np.ndarray        # int64 [Lf]
    size: np.ndarray         # int64 [Lf]
    coef: np.ndarray         # float64
    feat: np.ndarray         # int64
    center: np.ndarray       # float64
    inv_scale: np.ndarray    # float64

    @classmethod
    def of(cls, feats: list, coefs: list, spec: LinearSpec) -> "LeafModels":
        size = np.array([len(f) for f in feats], dtype=np.int64)
        begin = np.concatenate([[0], np.cumsum(size + 1)[:-1]]).astype(np.int64)
        flat_f = np.concatenate([np.concatenate([[0], f]) for f in feats]).astype(np.int64)
        coef = np.concatenate(coefs).astype(np.float64)
        center = spec.center[flat_f]
        inv = spec.inv_scale[flat_f]
        return cls(begin, size, coef, flat_f, center, inv)


class LinearNodes:
    """The regressors and slope parts of a linear tree's nodes, the linear evaluation of
    their histograms, and the leaves' fit: what depth-wise and loss-guided growth share
    (a mixin over Growth's node table)."""

    def _init_linear(self, linear: LinearSpec) -> None:
        self.linear = linear
        self.regs: dict[int, np.ndarray] = {0: np.zeros(0, np.int64)}
        self.slopes: dict[int, np.ndarray] = {0: np.zeros(0)}
        self.leaf_models: dict[int, tuple] = {}

    def _request(self, splits, small, start=None, large=None, parent_slot=None,
                 keep=False) -> LevelRequest:
        """Histograms of ``small`` from their rows and of ``large`` (if any) as their
        parents' partials (``parent_slot``) minus their siblings' plus their own p~ entries,
        with every node's regressors (LinearLevel, rows in small + large order)."""
        empty = np.zeros(0, np.int64)
        small = np.asarray(small, np.int64)
        large = empty if large is None else np.asarray(large, np.int64)
        nodes = np.concatenate([small, large])
        D, m = self.linear.max_features, len(nodes)
        feat = np.full((m, D), -1, np.int64)
        coef = np.zeros((m, D))
        inv_sp = np.ones(m)
        for i, n in enumerate(nodes.tolist()):
            S, v = self.regs[n], self.slopes[n]
            feat[i, :len(S)], coef[i, :len(S)] = S, v
            inv_sp[i] = 1.0 / slope_bound(v)
        lv = LinearLevel(self.k, self.scale_g, self.scale_h, self.linear.center,
                         self.linear.inv_scale, self.linear.regressor, feat, coef, inv_sp)
        return LevelRequest(splits, small, large, empty if parent_slot is None
                            else np.asarray(parent_slot, np.int64), keep=keep, start=start,
                            linear=lv)

    def _addable(self, nodes) -> np.ndarray:
        """bool [m, F]: whether feature f enters node n's candidates as x~: a regressor
        feature already in S, or any regressor feature while |S| < the cap."""
        F = len(self.hist_ptrs) - 1
        out = np.zeros((len(nodes), F), dtype=bool)
        for i, n in enumerate(nodes.tolist()):
            S = self.regs[n]
            if len(S) < self.linear.max_features:
                out[i] = self.linear.regressor
            else:
                out[i, S] = self.linear.regressor[S]
        return out

    def _evaluate(self, merged, nodes, depth: int):
        """The best linear split of each node from its histogram [m, S, 9]: (gain, feature,
        bin, default_left, left [m, 9], right [m, 9], splittable mask, has_p, addable).
        The backend of the histograms' array searches them where they are: GPU shards'
        histograms stay on the device (kernels.gpu_linear, the CPU kernel's decisions bit for
        bit) and only the winners come to the host, where the fits run."""
        hist = merged
        # the nodes' own sums (any feature's slots: g, h and the p~ entries are the same in
        # each), taken before column sampling or constraints zero slots
        node_totals = merged[:, self.hist_ptrs[0]:self.hist_ptrs[1]].sum(axis=1)
        if not self.have_root_totals:
            self.totals[0] = to_host(node_totals[0, :2])
            self.have_root_totals = True
        if self.columns is not None:
            hist = self.columns.apply(hist, depth, nodes)
        if self.paths is not None:
            hist = self._interaction_mask(hist)
        addable = self._addable(nodes)
        has_p = np.array([len(self.regs[n]) > 0 for n in nodes.tolist()], dtype=bool)
        be, p = backend_of(hist), self.p
        gain, feat, sbin, dleft, left, right = be.evaluate_linear_splits(
            hist, self.hist_ptrs, node_totals, addable, has_p, 1.0 / self.scale_g,
            1.0 / self.scale_h, p.lam, self.linear.lam, p.min_child_weight)
        ok = splittable(gain, feat, left[:, :2], right[:, :2], p)
        return gain, feat, sbin, dleft, left, right, ok, has_p, addable

    def _fit_children(self, node: int, f: int, left: int, right: int, lsum, rsum,
                      use_p: bool, use_x: bool) -> None:
        """The children's regressors and slope parts from the split's half-additive fits."""
        inv_sg, inv_sh = 1.0 / self.scale_g, 1.0 / self.scale_h
        for child, sums in ((left, lsum), (right, rsum)):
            c = half_additive_fit(sums, inv_sg, inv_sh, self.p.lam, self.linear.lam, use_p,
                                  use_x)
            self.regs[child], self.slopes[child] = self._child_slopes(node, f, c, use_x)

    def _child_slopes(self, node: int, f: int, c: np.ndarray, use_x: bool):
        """(S, v) of a child whose half-additive fit is c = (const, k1, k2): v_child =
        k1 v / s_p, plus k2 on f (f joins S when it is not in it)."""
        S, v = self.regs[node], self.slopes[node]
        v = c[1] * v / slope_bound(v)
        if not use_x:
            return S, v
        at = np.flatnonzero(S == f)
        if at.size:
            v = v.copy()
            v[at[0]] += c[2]
            return S, v
        return np.concatenate([S, [f]]).astype(np.int64), np.concatenate([v, [c[2]]])

    # -- leaves --------------------------------------------------------------------------
    def leaf_sum_request(self, fin: FinishRequest) -> LeafSumRequest:
        D = self.linear.max_features
        feats = np.full((len(fin.leaves), D), -1, np.int64)
        for i, n in enumerate(fin.leaves.tolist()):
            S = self.regs[n]
            feats[i, :len(S)] = S
        return LeafSumRequest(self.k, fin.splits, fin.leaves, feats, self.scale_g, self.scale_h,
                              self.linear.center, self.linear.inv_scale)

    def fit_leaves(self, fin: FinishRequest, sums: np.ndarray) -> FinishRequest:
        """Each leaf's ridge fit (times eta) from its merged sums [Lf, D + 1, D + 2]; the
        request that adds the linear leaves to the shards' margins."""
        p, lin = self.p, self.linear
        sums = to_host(sums)        # GPU shards' sums: solved on the host
        feats, coefs = [], []
        for i, n in enumerate(fin.leaves.tolist()):
            S = self.regs[n]
            w = fit_leaf(sums[i], len(S), 1.0 / self.scale_g, 1.0 / self.scale_h, p.lam,
                         lin.lam, p.min_child_weight) * p.eta
            self.leaf_models[n] = (S.astype(np.int32), w, lin.center[S].copy(),
                                   lin.scale[S].copy())
            feats.append(S)
            coefs.append(w)
        models = LeafModels.of(feats, coefs, lin)
        values = np.array([c[0] for c in coefs], dtype=np.float64)
        return FinishRequest(fin.k, None, fin.leaves, values, linear=models)

    def tree(self):
        t = super().tree()
        for n, (S, w, center, scale) in self.leaf_models.items():
            t.threshold[n] = np.float32(w[0])
        t.linear = {int(n): {"features": S, "coefs": w, "centers": c, "scales": s}
                    for n, (S, w, c, s) in self.leaf_models.items()}
        return t


class LinearGrowth(LinearNodes, Growth):
    """One piecewise-linear tree grown depth-wise (see module docstring)."""

    def __init__(self, k: int, cuts, hist_ptrs: np.ndarray, max_depth: int, p, scale_g: float,
                 scale_h: float, linear: LinearSpec, columns=None):
        super().__init__(k, cuts, hist_ptrs, max_depth, p, scale_g, scale_h, columns)
        self._init_linear(linear)
        self.request = self._request(None, self.level_nodes, start=(k, scale_g, scale_h),
                                     keep=max_depth > 1)

    def advance(self, merged) -> None:
        """Consume the level's linear histograms [m, S, 9] (in the request's node order:
        smaller children, then larger)."""
        t = time.perf_counter()
        nodes = self.level_nodes        # GPU shards' sums stay on the device (``_evaluate``)
        slot = {n: i for i, n in enumerate(self.request.nodes.tolist())}
        order = np.array([slot[n] for n in nodes.tolist()], dtype=np.int64)
        hist = merged if np.array_equal(order, np.arange(len(order))) else \
            merged[array_module(merged).asarray(order)]
        gain, feat, sbin, dleft, left, right, ok, has_p, addable = self._evaluate(
            hist, nodes, self.depth)
        ok = np.flatnonzero(ok)
        if self.depth == self.max_depth or ok.size == 0:
            self.pending, self.done = None, True
            self.eval_seconds += time.perf_counter() - t
            return
        cuts, m = self.cuts, ok.size
        split_nodes = nodes[ok]
        f = feat[ok].astype(np.int64)
        b = sbin[ok].astype(np.int64)
        self.feature[split_nodes] = f
        self.default_left[split_nodes] = dleft[ok]
        self.loss_change[split_nodes] = gain[ok]
        self.threshold[split_nodes] = np.where(
            b >= 0, cuts.values[cuts.ptrs[f] + np.maximum(b, 0)], cuts.min_values[f])
        self._reserve(self.n_nodes + 2 * m)
        lefts = self.n_nodes + 2 * np.arange(m, dtype=np.int64)
        rights = lefts + 1
        self.n_nodes += 2 * m
        self.left[split_nodes], self.right[split_nodes] = lefts, rights
        self.parent[lefts], self.parent[rights] = split_nodes, split_nodes
        self.totals[lefts], self.totals[rights] = left[ok, :2], right[ok, :2]
        for i, node, feat_i, lft, rgt in zip(ok.tolist(), split_nodes.tolist(), f.tolist(),
                                             lefts.tolist(), rights.tolist()):
            if self.paths is not None:
                self.paths[lft] = self.paths[rgt] = self.paths[node] | {feat_i}
            self._fit_children(node, feat_i, lft, rgt, left[i], right[i], bool(has_p[i]),
                               bool(addable[i, feat_i]))
        self.pending = SplitBatch(node=split_nodes, feature=f, split_bin=b,
                                  default_left=dleft[ok].copy(), left=lefts, right=rights)
        self.level_nodes = np.stack([lefts, rights], axis=1).ravel()
        self.depth += 1
        if self.depth == self.max_depth:
            self.done = True
        else:
            left_smaller = left[ok, 1] <= right[ok, 1]
            self.request = self._request(
                self.pending, np.where(left_smaller, lefts, rights),
                large=np.where(left_smaller, rights, lefts),
                parent_slot=[slot[n] for n in split_nodes.tolist()],
                keep=self.depth + 1 < self.max_depth)
            self.pending = None
        self.eval_seconds += time.perf_counter() - t


class LinearLossguideGrowth(LinearNodes, LossguideGrowth):
    """One piecewise-linear tree grown leaf-wise: dgbdt.tree.lossguide's queue and limits;
    both children of an expanded node are built from rows (a request), as a linear level's
    nodes are."""

    def __init__(self, k: int, cuts, hist_ptrs: np.ndarray, max_depth: int, max_leaves: int,
                 p, scale_g: float, scale_h: float, linear: LinearSpec, columns=None):
        super().__init__(k, cuts, hist_ptrs, max_depth, max_leaves, p, scale_g, scale_h,
                         columns)
        self._init_linear(linear)
        self.request = self._request(None, np.array([0]), start=(k, scale_g, scale_h))

    def advance(self, merged) -> None:
        """Evaluate the requested nodes (the root, or the last split's children, left then
        right), queue their splits, expand the best queued node whose children need
        histograms."""
        t = time.perf_counter()
        nodes = self.request.small
        self.level_nodes, self.depth = nodes, int(self.node_depth[nodes[0]])
        gain, feat, sbin, dleft, left, right, ok, has_p, addable = self._evaluate(
            merged, nodes, self.depth)
        for i in np.flatnonzero(ok).tolist():
            f = int(feat[i])
            heapq.heappush(self._queue, (
                -float(np.float32(gain[i])), int(nodes[i]),
                (float(gain[i]), f, int(sbin[i]), bool(dleft[i]), left[i].copy(),
                 right[i].copy(), bool(has_p[i]), bool(addable[i, f]))))
        self._expand()
        self.eval_seconds += time.perf_counter() - t

    def _expand(self) -> None:
        while self._queue:
            _, node, (gain, f, b, dleft, lsum, rsum, use_p, use_x) = heapq.heappop(self._queue)
            if self.max_leaves and self.n_leaves >= self.max_leaves:
                self._queue.clear()             # every later pop is discarded too
                break
            left = self._split(node, gain, f, b, dleft, lsum[:2], rsum[:2])
            self._fit_children(node, f, left, left + 1, lsum, rsum, use_p, use_x)
            if self._children_valid(node):
                self.request = self._request(self._take_carried(), [left, left + 1])
                return
        self.pending, self.done = self._take_carried(), True


# -- a linear level's partials between holders of rows (the Dask seams) ---------------------
#: the entries of a linear slot that depend on the node's own p~ (kernels.cpu's p_only pass)
P_ENTRIES = np.array([GP, HP, HPP, HPX])


def level_payload(local, req: LevelRequest):
    """What one holder of rows (a collective rank, a graph-mode unit) contributes to a linear
    level's merge, flat int64 (a new array: the shards keep their own partials): its partials
    [small, S, 9] of the smaller children, then the p~ entries [large, S, 4] of the larger
    ones. The rest of a larger child is its merged parent minus its merged smaller sibling
    (``merged_level``), so those entries need not travel."""
    xp = array_module(local)
    ns = len(req.small)
    small = xp.ascontiguousarray(local[:ns]).reshape(-1)
    if not len(req.large):
        return small.copy()
    return xp.concatenate([small, local[ns:][:, :, P_ENTRIES].reshape(-1)])


def merged_level(total, req: LevelRequest, parents):
    """The merged level [small + large, S, 9] from the sum over holders of their
    ``level_payload``s, with ``parents`` the merged histograms of the previous level: a larger
    child's g, h and x~ entries are its parent's minus its smaller sibling's, its p~ entries
    the summed second pass. All exact integers, so the in-process seam's merge bit for bit."""
    xp = array_module(total)
    ns, nl = len(req.small), len(req.large)
    n_slots = total.shape[0] // (PAYLOAD * ns + len(P_ENTRIES) * nl)
    small = total[:ns * n_slots * PAYLOAD].reshape(ns, n_slots, PAYLOAD)
    if not nl:
        return small
    large = parents[xp.asarray(req.parent_slot)] - small
    large[:, :, P_ENTRIES] = total[ns * n_slots * PAYLOAD:].reshape(nl, n_slots, len(P_ENTRIES))
    return xp.concatenate([small, large])


__all__ = ["LeafModels", "LeafSumRequest", "LinearGrowth", "LinearLevel",
           "LinearLossguideGrowth", "LinearNodes", "PAYLOAD", "P_ENTRIES", "level_payload",
           "merged_level"]
