"""``booster="dart"``: dropouts meet boosted trees (Rashmi & Gilad-Bachrach, 2015), as XGBoost's.

Every tree i of the model has a weight w_i (1 for a tree of ``booster="gbtree"``); a model's
margin is base + sum_i w_i f_i(x). Each round, before the new trees grow:

* **the drop**: with probability ``skip_drop`` nothing is dropped; else each tree i is dropped
  with probability ``rate_drop`` (``sample_type="uniform"``) or
  ``rate_drop * n * w_i / sum_j w_j`` (``"weighted"``); with ``one_drop`` and none dropped,
  one tree is (uniformly, or in proportion to w_i). The draws are dgbdt's counter-based
  uniforms of (seed, round, tree index): the same on every worker, for any partitioning;
* the round's gradients are taken at the margins without the dropped set D (the training
  rows' margins lose sum_{i in D} w_i f_i);
* **the normalization** of the k = |D| dropped trees and the round's m new trees, with
  lr = eta / m (XGBoost's NormalizeTrees): for ``normalize_type="tree"`` the new trees weigh
  1 / (k + lr) and each dropped tree's weight is multiplied by k / (k + lr); for ``"forest"``
  both are 1 / (1 + lr) (times w_i for the dropped). Without a drop the new trees weigh 1.

The new trees' leaves already hold eta times their Newton values, as gbtree's do. Predictions
of a dart model always use every tree at its weight (XGBoost's ``training=False``).
"""
from __future__ import annotations

import numpy as np

from .sampling import uniform

_DROP_STREAM = 7_000_003     # the drop's draws: apart from the row and column samples'


class Dropout:
    """A training's dart parameters and its draws."""

    def __init__(self, p: dict):
        self.rate_drop = float(p["rate_drop"])
        self.skip_drop = float(p["skip_drop"])
        self.one_drop = bool(p["one_drop"])
        self.weighted = p["sample_type"] == "weighted"
        self.forest = p["normalize_type"] == "forest"
        self.seed = int(p["seed"])

    @classmethod
    def from_params(cls, p: dict) -> "Dropout | None":
        return cls(p) if p.get("booster") == "dart" else None

    def _u(self, epoch: int, ids: np.ndarray) -> np.ndarray:
        return uniform(np, self.seed, _DROP_STREAM, epoch, ids)

    def dropped(self, epoch: int, weights: list[float]) -> list[int]:
        """Round ``epoch``'s dropped trees (indices into the model's trees, ascending)."""
        n = len(weights)
        if n == 0:
            return []
        # id n: the skip's draw; ids n + 1, n + 2: one_drop's
        u = self._u(epoch, np.arange(n + 3, dtype=np.int64))
        if self.skip_drop > 0 and u[n] < self.skip_drop:
            return []
        w = np.asarray(weights, dtype=np.float64)
        if self.weighted:
            p = self.rate_drop * n * w / w.sum()
        else:
            p = np.full(n, self.rate_drop)
        out = np.flatnonzero(u[:n] < p)
        if out.size == 0 and self.one_drop:
            if self.weighted:
                cdf = np.cumsum(w) / w.sum()
                out = np.array([min(int(np.searchsorted(cdf, u[n + 1], side="right")),
                                    n - 1)])
            else:
                out = np.array([min(int(u[n + 2] * n), n - 1)])
        return out.tolist()

    def normalize(self, eta: float, n_new: int, n_dropped: int) -> tuple[float, float]:
        """(the dropped trees' weight factor, the new trees' weight) after a round that
        dropped ``n_dropped`` trees and grew ``n_new`` (module doc)."""
        if n_dropped == 0:
            return 1.0, 1.0
        lr = eta / n_new
        if self.forest:
            f = 1.0 / (1.0 + lr)
            return f, f
        return n_dropped / (n_dropped + lr), 1.0 / (n_dropped + lr)


def dart_round(dropout: Dropout, booster, seam, epoch: int, grow, eta: float) -> list[tuple]:
    """One dart round: the drop, ``grow()`` (the round's new trees, appended to the model
    and added to the training rows' margins at weight 1 by the seam), the normalization.
    Returns the round's margin change for the eval sets' margins as (tree index, weight
    change) pairs; the training rows' margins get the same change through ``seam.add_trees``."""
    weights = booster.tree_weights
    drop = dropout.dropped(epoch, weights)
    if drop:
        seam.add_trees([booster.trees[i] for i in drop], [booster.tree_class[i] for i in drop],
                       [-weights[i] for i in drop])
    first = len(booster.trees)
    grow()
    new = list(range(first, len(booster.trees)))
    factor, w_new = dropout.normalize(eta, len(new), len(drop))
    change = [(i, w_new) for i in new]
    for i in drop:
        change.append((i, weights[i] * (factor - 1.0)))
    weights.extend([w_new] * len(new))
    if drop:      # the training rows: the dropped trees back at their new weights
        for i in drop:
            weights[i] *= factor
        adds = [(i, w_new - 1.0) for i in new] + [(i, weights[i]) for i in drop]
        seam.add_trees([booster.trees[i] for i, _ in adds],
                       [booster.tree_class[i] for i, _ in adds], [s for _, s in adds])
    return change
