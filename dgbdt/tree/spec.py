"""What every tree of a training shares, and which grower grows it: depth-wise
(dgbdt.tree.grower) or leaf-wise (dgbdt.tree.lossguide)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .device_grower import MAX_DEPTH as DEVICE_MAX_DEPTH
from .grower import Growth
from .lossguide import LossguideGrowth, max_requests, node_capacity
from .split import SplitParams


@dataclass
class GrowthSpec:
    """What every tree of a training shares (small, picklable: Dask tasks start trees too)."""

    cuts: object
    hist_ptrs: np.ndarray
    max_depth: int
    p: SplitParams
    sampling: object = None     # dgbdt.engine.sampling.Sampling, or None
    policy: str = "depthwise"   # grow_policy: "depthwise" or "lossguide"
    max_leaves: int = 0         # lossguide's leaf limit (0: none)
    linear: object = None       # dgbdt.kernels.linear_math.LinearSpec: piecewise-linear trees
    parallel: int = 1           # num_parallel_tree: trees a round for each output (a forest)
    approx_bins: int = 0        # tree_method="approx": max_bin of each tree's sketch (0: hist)
    #: multi_strategy="multi_output_tree": the targets of the round's one vector-leaf tree
    #: (dgbdt.tree.multi_target); 0: a tree an output
    targets: int = 0
    #: tree_method="exact": thresholds between the node's adjacent values (dgbdt.tree.exact_split)
    exact: bool = False

    def draw(self, epoch: int, j: int) -> int:
        """The sampling draw of round ``epoch``'s parallel tree j: the round itself for a
        single tree (the bytes of every model without a forest are unchanged), else one draw
        a tree, distinct over the training (epoch * parallel + j)."""
        return epoch if self.parallel == 1 else epoch * self.parallel + j

    def forest_trees(self) -> "GrowthSpec":
        """The spec each parallel tree grows with: eta / parallel (XGBoost's forest learning
        rate: the P trees of a round together take one eta step)."""
        if self.parallel == 1:
            return self
        return dataclasses.replace(self, p=dataclasses.replace(self.p, eta=self.p.eta /
                                                               self.parallel))

    def columns(self, k: int, epoch: int):
        """The column sample of round ``epoch``'s tree of class k (None: every feature)."""
        if self.sampling is None or not self.sampling.columns:
            return None
        from .columns import ColumnMask
        return ColumnMask(self.sampling, self.hist_ptrs, epoch, k)

    def max_requests(self) -> int:
        """Histogram requests (task hops in graph mode) a tree makes at most: one a level
        depth-wise, one a split whose children are evaluated leaf-wise (lossguide)."""
        if self.policy == "lossguide":
            return max_requests(self.max_depth, self.max_leaves)
        return self.max_depth

    def start_vector(self, scale_g, scale_h, epoch: int = 0) -> Growth:
        """A new vector-leaf tree of every target, with the targets' fixed-point scales
        (float64 [T] each; dgbdt.tree.multi_target)."""
        from .multi_target import VectorGrowth
        return VectorGrowth(self.cuts, self.hist_ptrs, self.max_depth, self.p, scale_g,
                            scale_h, self.columns(0, epoch), self.max_leaves)

    def start(self, k: int, scale_g: float, scale_h: float, epoch: int = 0) -> Growth:
        """A new tree of output class k with this round's fixed-point scales."""
        if self.linear is not None:
            from .linear_growth import LinearGrowth, LinearLossguideGrowth
            if self.policy == "lossguide":
                return LinearLossguideGrowth(k, self.cuts, self.hist_ptrs, self.max_depth,
                                             self.max_leaves, self.p, scale_g, scale_h,
                                             self.linear, self.columns(k, epoch))
            return LinearGrowth(k, self.cuts, self.hist_ptrs, self.max_depth, self.p, scale_g,
                                scale_h, self.linear, self.columns(k, epoch))
        if self.policy == "lossguide":
            growth = LossguideGrowth(k, self.cuts, self.hist_ptrs, self.max_depth,
                                     self.max_leaves, self.p, scale_g, scale_h,
                                     self.columns(k, epoch))
        else:
            growth = Growth(k, self.cuts, self.hist_ptrs, self.max_depth, self.p, scale_g,
                            scale_h, self.columns(k, epoch), self.max_leaves)
        growth.exact = self.exact
        return growth


def max_nodes(p: dict, n_rows: int) -> int:
    """Node ids a tree of these (normalized) parameters can use over ``n_rows`` training rows
    (all of them, on every worker: node ids are the tree's): what shards size their per-node
    row segments by. A split needs a nonzero hessian sum, so at least one row, on each side:
    a tree has at most n_rows leaves and 2 n_rows - 1 nodes, whatever its depth (max_depth=30
    on 300 rows: 599 nodes, not 2^31). Not for depth-wise trees the device may grow
    (dgbdt.tree.device_grower: up to MAX_DEPTH, 2^17 nodes at most): their fixed-shape levels
    use every id up to the sentinel."""
    if p.get("grow_policy") == "lossguide":
        cap = node_capacity(p["max_depth"], p["max_leaves"])
    elif p["max_depth"] <= DEVICE_MAX_DEPTH:
        return 2 ** (p["max_depth"] + 1)
    else:
        cap = 2 ** (p["max_depth"] + 1)
    return int(min(cap, max(2 * int(n_rows), 1)))
