"""Column sampling as a mask on histograms: the features a tree may split on, drawn by
dgbdt.engine.sampling.Sampling (colsample_bytree, _bylevel, _bynode) from (seed, round, class, depth,
node), never from the data's layout."""
from __future__ import annotations

import numpy as np

from ..kernels.arrays import array_module


class ColumnMask:
    """The features a tree may split on, level by level and node by node (see the module
    docstring); ``apply(hist, depth, nodes)`` returns the histograms with the other features'
    slots zeroed."""

    def __init__(self, sampling, hist_ptrs: np.ndarray, epoch: int, k: int):
        self.s, self.epoch, self.k = sampling, epoch, k
        hp = np.asarray(hist_ptrs, dtype=np.int64)
        F = hp.shape[0] - 1
        self.slot_feature = np.repeat(np.arange(F), np.diff(hp))
        self.tree = sampling.tree_features(F, epoch, k)
        self._slot_dev = None

    def apply(self, hist, depth: int, nodes):
        xp = array_module(hist)
        level = self.s.level_features(self.tree, self.epoch, self.k, depth)
        feats = self.s.node_features(level, self.epoch, self.k, nodes, xp)
        if self._slot_dev is None or array_module(self._slot_dev) is not xp:
            self._slot_dev = xp.asarray(self.slot_feature)
        slots = feats[:, self._slot_dev]                      # [m, S]
        return hist * slots[:, :, None].astype(hist.dtype)
