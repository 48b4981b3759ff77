"""Row and column sampling (XGBoost's ``subsample`` and ``colsample_by{tree,level,node}``),
deterministic by construction.

Every draw is a counter-based hash, never a generator's state: whether row i is in round r's
sample is ``u(seed, r, i) < subsample``, with i the row's index in the dataset's order (its
global index, whatever page, partition or worker holds it); a feature's draw for a tree, a
level or a node hashes (seed, round, output class, level or node id, feature). So the sample —
and the model — is the same for any partitioning, worker count, mode and device.

The hash is SplitMix64's finalizer over a mix of the counters (uint64 arithmetic wraps the same
in numpy and cupy); its top 53 bits give a uniform float in [0, 1).

Rows out of the sample get zero gradients for the round: they add nothing to any histogram or
node sum, and still receive the tree's leaf values (as in XGBoost). Features out of a node's
sample have their histogram slots zeroed for that node's evaluation only (a copy: the stored
histograms that siblings are derived from are untouched): with no left sums and no missing
values a zeroed feature never gains, so it is never chosen.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.row_ids import first_id, global_ids

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_K1, _K2, _K3 = np.uint64(0xD1B54A32D192ED03), np.uint64(0xABC98388FB8FAC03), \
    np.uint64(0x8CB92BA72F3D8DD7)


def _mix(xp, x):
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def draw_key(seed: int, a: int, b: int) -> np.uint64:
    """The key the draws u(seed, a, b, id) hash with the id (uint64 arithmetic wraps)."""
    with np.errstate(over="ignore"):
        return np.uint64(np.uint64(seed) * _K1 + np.uint64(a) * _K2 + np.uint64(b) * _K3
                         + _GOLDEN)


def uniform(xp, seed: int, a: int, b: int, ids):
    """u(seed, a, b, id) in [0, 1) for an integer array of ids (numpy or cupy)."""
    with np.errstate(over="ignore"):
        z = _mix(xp, xp.asarray(ids).astype(np.uint64) + draw_key(seed, a, b))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


@dataclass(frozen=True)
class Sampling:
    """The sampling parameters of a training (all 1.0: no sampling)."""

    seed: int = 0
    subsample: float = 1.0
    bytree: float = 1.0
    bylevel: float = 1.0
    bynode: float = 1.0
    method: str = "uniform"     # of the rows: "uniform" or "gradient_based"
    #: feature_weights: column draws in proportion to them (None: uniform)
    weights: tuple | None = None

    @classmethod
    def from_params(cls, p: dict) -> "Sampling | None":
        w = p.get("feature_weights")
        s = cls(int(p["seed"]), float(p["subsample"]), float(p["colsample_bytree"]),
                float(p["colsample_bylevel"]), float(p["colsample_bynode"]),
                str(p.get("sampling_method") or "uniform"),
                None if w is None else tuple(float(x) for x in w))
        return None if (s.subsample, s.bytree, s.bylevel, s.bynode) == (1.0,) * 4 else s

    @property
    def by_gradient(self) -> bool:
        """Whether rows are sampled by their gradients (dgbdt.engine.gradient_sampling): a global
        threshold, so the seam samples (dgbdt.engine.gradient_sampling.sample_rows), not each shard
        alone."""
        return self.method == "gradient_based" and self.subsample < 1.0

    @property
    def columns(self) -> bool:
        return (self.bytree, self.bylevel, self.bynode) != (1.0, 1.0, 1.0)

    # -- rows --------------------------------------------------------------------------------
    def apply_rows(self, shard, epoch: int) -> None:
        """Zero the gradients of the shard's rows outside round ``epoch``'s sample."""
        if self.subsample >= 1.0 or self.by_gradient:
            return
        be, id0 = shard.be, first_id(shard)
        if id0 is not None and be.caps.row_sample_kernel:      # one kernel (a GPU)
            be.apply_row_sample(shard.g, shard.h, id0, draw_key(self.seed, 0, epoch),
                                rate=self.subsample)
            return
        xp = be.xp
        ids = global_ids(shard, xp)
        keep = (uniform(xp, self.seed, 0, epoch, ids) < self.subsample)
        keep = keep.astype(np.float64)[:, None]
        shard.g *= keep
        shard.h *= keep

    # -- columns -----------------------------------------------------------------------------
    def _keys(self, xp, u):
        """The draws as sampling keys: the smallest keys are kept. Uniform: the draws
        themselves. Weighted (feature_weights w): 1 - (1 - u)^(1 / w), Efraimidis and
        Spirakis's keys, so the kept features are a weighted draw without replacement; a
        feature of weight 0 gets key 1 + u, after every weighted one (keys < 1) and before the
        features not allowed at all (2): kept only when the count asks for more features than
        have weight."""
        if self.weights is None:
            return u
        w = xp.asarray(self.weights, dtype=np.float64)
        with np.errstate(divide="ignore"):
            keys = 1.0 - (1.0 - u) ** (1.0 / xp.where(w > 0, w, 1.0))
        return xp.where(w > 0, keys, 1.0 + u)

    def _check_width(self, n_features: int) -> None:
        if self.weights is not None and len(self.weights) != n_features:
            raise ValueError(f"feature_weights has {len(self.weights)} weights; the data has "
                             f"{n_features} features (one weight a feature)")

    def tree_features(self, n_features: int, epoch: int, k: int) -> np.ndarray:
        """bool [F]: the features of round ``epoch``'s tree of class k."""
        self._check_width(n_features)
        return _pick(np.ones(n_features, dtype=bool), self.bytree,
                     self._keys(np, uniform(np, self.seed, 1 + k, epoch,
                                            np.arange(n_features))))

    def level_features(self, tree: np.ndarray, epoch: int, k: int, depth: int) -> np.ndarray:
        return _pick(tree, self.bylevel,
                     self._keys(np, uniform(np, self.seed, 1_000_003 + 7919 * k + depth,
                                            epoch, np.arange(tree.shape[0]))))

    def node_features(self, level: np.ndarray, epoch: int, k: int, nodes, xp):
        """bool [m, F]: each node's features (nodes: int ids, numpy or cupy)."""
        F = level.shape[0]
        lv = xp.asarray(level)
        if self.bynode >= 1.0:
            return xp.broadcast_to(lv, (nodes.shape[0], F))
        nodes = xp.asarray(nodes).astype(np.uint64)
        ids = nodes[:, None] * np.uint64(F) + xp.arange(F, dtype=np.uint64)[None, :]
        u = xp.where(lv[None, :], self._keys(xp, uniform(xp, self.seed, 2_000_003 + k, epoch,
                                                         ids)), 2.0)
        n_keep = _count(int(level.sum()), self.bynode)
        kth = xp.sort(u, axis=1)[:, n_keep - 1:n_keep]
        return (u <= kth) & lv[None, :]


def _count(n: int, rate: float) -> int:
    return max(1, int(round(rate * n))) if n else 0


def _pick(allowed: np.ndarray, rate: float, u: np.ndarray) -> np.ndarray:
    """The ``round(rate * |allowed|)`` allowed features of smallest draw (at least one)."""
    if rate >= 1.0:
        return allowed.copy()
    u = np.where(allowed, u, 2.0)
    n_keep = _count(int(allowed.sum()), rate)
    out = np.zeros_like(allowed)
    out[np.argsort(u, kind="stable")[:n_keep]] = True
    return out & allowed


