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


import numpy as np

from ..backends.array_ops import arange
from ..kernels.arrays import to_host
from ..kernels.pages import Page, use_columns
from ..tree.split import SplitBatch


def merged_maxima(parts, xp):
    """(max |g|, max h) per class over shards' Shard.compute_gradients(wait=False): host
    pairs, or a GPU's [2, K] device arrays of the float64 maxima's bits (one host wait for
    them all; non-negative floats order as their bits)."""
    if isinstance(parts[0], tuple):
        return np.max([p[0] for p in parts], axis=0), np.max([p[1] for p in parts], axis=0)
    # on the host: a [2, K] array a shard (CuPy's stack and max compile at a first fit)
    mx = np.max([to_host(p) for p in parts], axis=0).view(np.float64)
    return mx[0], mx[1]


class Shard:
    """Training state of one partition (see module docstring).

    ``backend`` (dgbdt.backends.device) says where the arrays live and runs the kernels: the numba CPU
    backend (numpy) or the CUDA backend (cupy on one GPU). This class is the same for both.
    """

    #: the rows' query ids (int64, host) for the rank:* objectives, or None
    qid = None
    #: the rows' raw feature values (float32 [n, F]) for linear trees, or None: pages keep
    #: bins only, and linear leaves regress on the values (dgbdt.kernels.linear_math)
    raw = None
    #: a streamed page's raw rows on the host (float32 [n, F]) on a GPU: dgbdt.data.page_stream
    #: copies them into a device slot with the page, ``raw`` for the visit; else None
    raw_stream = None
    #: a vector-leaf tree's fixed-point gradients, int64 [T, n, 2] (target t's (g, h) at
    #: [t]), while one grows (Shard.start_tree with k = None); else None
    grad_targets = None
    #: whether a GPU may keep a feature-major copy of the page to route rows from
    #: (dgbdt.backends.cuda_routes): not for a streamed page, nor a shard made for one round
    route_columns = True
    #: the CPU backend's (page, its columns or None) for the partition (backends.cpu)
    columns = None

    def __init__(self, page: Page, n_bins: np.ndarray, label, weight, margin, max_nodes: int,
                 backend=None, hist_ptrs=None):
        if backend is None:
            from ..backends.cpu import CPU
            backend = CPU
        be = self.be = backend
        xp = be.xp
        n = page.n_rows
        self.page = page
        self.route_columns = not page.streamed
        self.n_bins = be.asarray(n_bins, dtype=np.int64)
        # each feature's first histogram slot (its bins, then its missing slot): an ELLPACK
        # page's symbols are slots (dgbdt.data.sparse)
        if hist_ptrs is None:     # (a shard of the same layout's, passed: no host wait)
            nb = to_host(n_bins).astype(np.int64)
            hist_ptrs = np.concatenate([[0], np.cumsum(nb + 1)])
        self.hist_ptrs = be.asarray(hist_ptrs, dtype=np.int64)
        self.label = be.asarray(label, dtype=np.float64)
        self.weight = None if weight is None else be.asarray(weight, dtype=np.float64)
        self.margin = be.asarray(margin, dtype=np.float64)  # [n, K]
        self.g = None
        self.h = None
        self.grad = xp.zeros((n, 2), dtype=np.int64)
        self.rows = arange(n, np.int32, xp)
        self.scratch_l = None
        self.scratch_r = None
        self.route = None        # the CUDA backend's row-order partition (cuda_routes.RowRoute)
        self.begin = xp.zeros(max_nodes, dtype=np.int64)
        self.end = xp.zeros(max_nodes, dtype=np.int64)
        self.level_hist = None   # this shard's partials of the last level
        self.timers = {"partition": 0.0, "histograms": 0.0, "leaf_update": 0.0}

    def columns_wanted(self) -> bool:
        """Whether a backend may make this shard's page's feature-major copy to route rows
        from (dgbdt.backends.cuda_routes, backends.cpu): a dense page in memory (not streamed,
        ELLPACK or memory-mapped) with rows, the shard allowing it (``route_columns``) and
        ``DGBDT_ROUTE_COLUMNS`` not 0."""
        p = self.page
        return (use_columns() and self.route_columns and self.n_rows > 0 and not p.streamed
                and not p.ell and not isinstance(p.words, np.memmap))

    @property
    def n_rows(self) -> int:
        return self.page.n_rows

    def requantized(self, page: Page, n_bins, hist_ptrs) -> None:
        """The rows' new page, quantized with other cuts (tree_method="approx",
        dgbdt.engine.approx), and those cuts' layout."""
        be = self.be
        self.page = page
        self.n_bins = be.asarray(n_bins, dtype=np.int64)
        self.hist_ptrs = be.asarray(hist_ptrs, dtype=np.int64)
        self.level_hist = None

    def compute_gradients(self, objective, wait: bool = True, maxima=None):
        """Float gradients of every class; returns (max |g|, max h) per class for the scale
        (``wait=False``: a GPU returns them as a device array: merged_maxima; ``maxima``: a
        zeroed one to post them into, shared by a seam's shards)."""
        if self.g is None:
            self.g, self.h = self.be.xp.empty_like(self.margin), self.be.xp.empty_like(self.margin)
        return self.be.gradients(objective, self.margin, self.label, self.weight, self.g, self.h,
                                 wait, maxima)

    def start_tree(self, k: int | None, scale_g, scale_h, consts=None) -> None:
        """Fixed-point gradients of class k; every row back in the root's segment
        (``consts``: the tree's constants on the device, dgbdt.backends.cuda.tree_consts).
        ``k = None``: a vector-leaf tree's (dgbdt.tree.multi_target): every target's
        gradients, with the scales [T] of each, into ``grad_targets``."""
        if k is None:
            self.be.start_vector_tree(self, scale_g, scale_h)
            return
        self.grad_targets = None
        self.be.start_tree(self, k, scale_g, scale_h, consts)

    def level_step(self, req, hist_ptrs: np.ndarray):
        """One level of a tree (dgbdt.tree.grower.LevelRequest) on this shard.

        Partition the rows by the previous level's splits, build the smaller children's
        histograms from rows, derive their siblings from the stored parent partials, keep the
        level's partials if another level follows, and return them ([small + large, S, 2]).
        """
        be = self.be
        if req.start is not None:
            self.start_tree(*req.start)
        if req.splits is not None:
            t = be.clock()
            be.apply_splits(self, req.splits)
            self.timers["partition"] += be.clock() - t
        t = be.clock()
        out = be.level_histograms(self, req, hist_ptrs)
        self.level_hist = out if req.keep else None
        self.timers["histograms"] += be.clock() - t
        return out

    def finish(self, fin) -> None:
        """Apply the last splits and add the leaf values to class fin.k's margins."""
        be = self.be
        if fin.splits is not None and fin.linear is None and fin.k is not None:
            t = be.clock()          # the partition and the leaf update in one pass
            be.split_add_leaves(self, fin.k, fin.splits, fin.leaves, fin.values)
            self.timers["leaf_update"] += be.clock() - t
            return
        if fin.splits is not None:
            t = be.clock()
            be.apply_splits(self, fin.splits)
            self.timers["partition"] += be.clock() - t
        t = be.clock()
        if fin.linear is not None:
            be.add_linear_leaves(self, fin)
        elif fin.k is None:     # a vector-leaf tree: values [leaves, T], target t's column t
            for t in range(fin.values.shape[1]):
                be.add_leaves(self, t, fin.leaves, np.ascontiguousarray(fin.values[:, t]))
        else:
            be.add_leaves(self, fin.k, fin.leaves, fin.values)
        self.timers["leaf_update"] += be.clock() - t

    def linear_leaf_sums(self, req):
        """Apply the last splits; this shard's part of each leaf's ridge sums (a linear
        tree's LeafSumRequest)."""
        be = self.be
        if req.splits is not None:
            t = be.clock()
            be.apply_splits(self, req.splits)
            self.timers["partition"] += be.clock() - t
        t = be.clock()
        out = be.linear_leaf_sums(self, req)
        self.timers["leaf_update"] += be.clock() - t
        return out

    def histograms(self, nodes: np.ndarray, hist_ptrs: np.ndarray):
        """int64 [len(nodes), n_slots, 2]: this shard's part of the nodes' histograms."""
        return self.be.histograms(self, nodes, hist_ptrs)

    def apply_splits(self, s: SplitBatch) -> None:
        """Partition each split node's segment into its children's segments."""
        self.be.apply_splits(self, s)

    def add_leaves(self, k: int, nodes: np.ndarray, values: np.ndarray) -> None:
        """margin[:, k] += value of each row's leaf."""
        self.be.add_leaves(self, k, nodes, values)
