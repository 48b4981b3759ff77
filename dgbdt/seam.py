"""The seam between the boosting loop and where the data lives.

The grower and the boosting loop only ever call these methods. ``LocalSeam`` implements them over
shards in this process; the Dask seam implements the same methods over shards held by workers.
Partial results are integer (histograms) or exact reductions (max), so the sum over shards is the
same in any order and the model does not depend on how rows are partitioned.
"""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from .shard import Shard, SplitBatch


class TrainingSeam(Protocol):
    """What growing trees needs from the data, wherever it lives."""

    n_rows: int

    def compute_gradients(self, objective) -> tuple[np.ndarray, np.ndarray]:
        """Gradients on every shard; returns global (max |g|, max h) per output class."""

    def start_tree(self, k: int, scale_g: float, scale_h: float) -> None:
        """Quantize class k's gradients with the global scales; all rows to the root."""

    def build_histograms(self, nodes: np.ndarray) -> np.ndarray:
        """Merged int64 histograms [len(nodes), n_slots, 2] of the given nodes."""

    def apply_splits(self, splits: SplitBatch) -> None:
        """Send a level's split decisions to every shard."""

    def add_leaves(self, k: int, nodes: np.ndarray, values: np.ndarray) -> None:
        """Add the finished tree's leaf values to class k's margins on every shard."""


class LocalSeam:
    """The seam over shards in this process (one per page of an in-process Dataset)."""

    def __init__(self, shards: Sequence[Shard], hist_ptrs: np.ndarray):
        self.shards = list(shards)
        self.hist_ptrs = np.ascontiguousarray(hist_ptrs, dtype=np.int64)
        self.n_rows = sum(s.n_rows for s in self.shards)

    def compute_gradients(self, objective):
        parts = [s.compute_gradients(objective) for s in self.shards]
        return (np.max([p[0] for p in parts], axis=0), np.max([p[1] for p in parts], axis=0))

    def start_tree(self, k, scale_g, scale_h):
        for s in self.shards:
            s.start_tree(k, scale_g, scale_h)

    def build_histograms(self, nodes):
        nodes = np.asarray(nodes, dtype=np.int64)
        total = None
        for s in self.shards:
            part = s.histograms(nodes, self.hist_ptrs)
            total = part if total is None else total + part
        return total

    def apply_splits(self, splits):
        for s in self.shards:
            s.apply_splits(splits)

    def add_leaves(self, k, nodes, values):
        for s in self.shards:
            s.add_leaves(k, nodes, values)

    def margins(self) -> np.ndarray:
        """Current margins of all rows, in the dataset's row order (pages are row ranges)."""
        return np.concatenate([s.margin for s in self.shards], axis=0)
