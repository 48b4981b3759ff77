"""A shard: one partition's training state, and the operations the boosting loop runs on it.

A shard holds one bit-packed page and its labels, weights and current margins. Everything else
the loop needs is derived per round or per tree:

* gradients (float64, from margins and labels, then fixed-point int64 for the tree in growth);
* the row order of the tree in growth: ``rows`` is a permutation of the shard's rows in which every
  node's rows form a contiguous segment ``rows[begin[node]:end[node]]``; splitting a node
  partitions its segment stably (ThunderGBM), so no per-row node id and no tree traversal are
  needed, and leaf values reach the margins through the segments.

These functions are the unit of work of every seam: the in-process seam calls them in a loop, the
Dask seam calls them inside tasks on the worker that holds the shard.
"""
from __future__ import annotations

from dataclasses import dataclass

import time

import numba
import numpy as np

from .data.pages import Page
from .kernels import cpu_tree


@dataclass
class SplitBatch:
    """The split decisions of one level: small, sent to every shard."""

    node: np.ndarray          # int32 [m] nodes being split
    feature: np.ndarray       # int32 [m]
    split_bin: np.ndarray     # int32 [m]: left iff bin <= split_bin
    default_left: np.ndarray  # bool [m]: where missing values go
    left: np.ndarray          # int32 [m] left child ids
    right: np.ndarray         # int32 [m] right child ids


class Shard:
    """Training state of one partition (see module docstring)."""

    def __init__(self, page: Page, n_bins: np.ndarray, label: np.ndarray,
                 weight: np.ndarray | None, margin: np.ndarray, max_nodes: int):
        n = page.n_rows
        self.page = page
        self.n_bins = np.ascontiguousarray(n_bins, dtype=np.int64)
        self.label = label
        self.weight = weight
        self.margin = np.ascontiguousarray(margin, dtype=np.float64)  # [n, K]
        self.g: np.ndarray | None = None
        self.h: np.ndarray | None = None
        self.grad = np.zeros((n, 2), dtype=np.int64)
        self.rows = np.arange(n, dtype=np.int32)
        self.scratch_l = np.empty(n, dtype=np.int32)
        self.scratch_r = np.empty(n, dtype=np.int32)
        self.begin = np.zeros(max_nodes, dtype=np.int64)
        self.end = np.zeros(max_nodes, dtype=np.int64)
        self.level_hist: np.ndarray | None = None   # this shard's partials of the last level
        self.timers = {"partition": 0.0, "histograms": 0.0, "leaf_update": 0.0}

    @property
    def n_rows(self) -> int:
        return self.page.n_rows

    def compute_gradients(self, objective) -> tuple[np.ndarray, np.ndarray]:
        """Float gradients of every class; returns (max |g|, max h) per class for the scale."""
        if self.g is None:
            self.g, self.h = np.empty_like(self.margin), np.empty_like(self.margin)
        objective.gradients(self.margin, self.label, self.weight, out=(self.g, self.h))
        if self.n_rows == 0:
            k = self.margin.shape[1]
            return np.zeros(k), np.zeros(k)
        return np.abs(self.g).max(axis=0), np.abs(self.h).max(axis=0)

    def start_tree(self, k: int, scale_g: float, scale_h: float) -> None:
        """Fixed-point gradients of class k; every row back in the root's segment."""
        cpu_tree.quantize_gradients(self.g, self.h, k, scale_g, scale_h, self.grad)
        self.rows[:] = np.arange(self.n_rows, dtype=np.int32)
        self.begin[0] = 0
        self.end[0] = self.n_rows

    def level_step(self, req, hist_ptrs: np.ndarray) -> np.ndarray:
        """One level of a tree (dgbdt.tree.grower.LevelRequest) on this shard.

        Partition the rows by the previous level's splits, build the smaller children's
        histograms from rows, derive their siblings from the stored parent partials, keep the
        level's partials if another level follows, and return them ([small + large, S, 2]).
        """
        if req.start is not None:
            self.start_tree(*req.start)
        if req.splits is not None:
            t = time.perf_counter()
            self.apply_splits(req.splits)
            self.timers["partition"] += time.perf_counter() - t
        t = time.perf_counter()
        small = self.histograms(req.small, hist_ptrs)
        if req.large.size:
            out = np.concatenate([small, self.level_hist[req.parent_slot] - small])
        else:
            out = small
        self.level_hist = out if req.keep else None
        self.timers["histograms"] += time.perf_counter() - t
        return out

    def finish(self, fin) -> None:
        """Apply the last splits and add the leaf values to class fin.k's margins."""
        if fin.splits is not None:
            t = time.perf_counter()
            self.apply_splits(fin.splits)
            self.timers["partition"] += time.perf_counter() - t
        t = time.perf_counter()
        self.add_leaves(fin.k, fin.leaves, fin.values)
        self.timers["leaf_update"] += time.perf_counter() - t

    def histograms(self, nodes: np.ndarray, hist_ptrs: np.ndarray) -> np.ndarray:
        """int64 [len(nodes), n_slots, 2]: this shard's part of the nodes' histograms."""
        p = self.page
        return cpu_tree.build_histograms(
            p.words, p.bits, p.n_features, hist_ptrs, self.rows, self.grad,
            self.begin[nodes], self.end[nodes], int(hist_ptrs[-1]), numba.get_num_threads())

    def apply_splits(self, s: SplitBatch) -> None:
        """Partition each split node's segment into its children's segments."""
        p = self.page
        b, e = self.begin[s.node], self.end[s.node]
        n_left = cpu_tree.partition_rows(
            p.words, p.bits, p.n_features, self.n_bins, self.rows, self.scratch_l,
            self.scratch_r, b, e, s.feature, s.split_bin, s.default_left,
            max(1, min(numba.get_num_threads() * 4, self.n_rows // 4096)))
        self.begin[s.left], self.end[s.left] = b, b + n_left
        self.begin[s.right], self.end[s.right] = b + n_left, e

    def add_leaves(self, k: int, nodes: np.ndarray, values: np.ndarray) -> None:
        """margin[:, k] += value of each row's leaf."""
        cpu_tree.add_leaf_values(self.margin, k, self.rows, self.begin[nodes], self.end[nodes],
                                 values)
