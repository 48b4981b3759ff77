"""The backend contract: what the layers above may ask of a backend, and what it declares it can do.

A backend runs the operations that touch a shard's rows (gradients, histograms, row partitions,
leaf updates, split evaluation, prediction) for one kind of memory. ``CpuBackend``
(dgbdt.backends.cpu, numba on numpy) and ``CudaBackend`` (dgbdt.backends.cuda, CUDA C on cupy)
both implement ``Backend`` and compute the same integers (fixed-point histograms, row
partitions) and the same float64 split gains, so the CPU backend is the GPU backend's oracle.

Operations that only one backend has are *capabilities*: a backend declares them in its
``caps`` (a ``Capabilities``) and callers ask ``backend.caps.X``, never ``hasattr``. A
capability that is True promises the methods listed beside it in ``CAPABILITY_METHODS``;
tests/test_backend_contract.py checks both backends against this module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond the ``Backend`` protocol."""

    #: arrays live in GPU memory: work is queued on streams (host waits are explicit), small
    #: host arrays go up through pinned staging, pages may stream from host memory;
    #: ``free_bytes``: the device memory free to it
    device_memory: bool = False
    #: a depthwise tree grows on the device, the host learning only the finished tree
    #: (dgbdt.tree.device_grower's fused levels: ``advance_level``, ``leaf_values``,
    #: ``evaluate_splits_raw``, ``tree_consts``; ``tree_scales``: the constants from the
    #: round's device maxima, for trees replayed without a host wait)
    device_growth: bool = False
    #: a whole tree's launches can be captured once and replayed (CUDA graphs;
    #: dgbdt.tree.tree_graph)
    graph_capture: bool = False
    #: uniform row sampling of a shard whose rows are one run of global ids in one kernel
    #: (``apply_row_sample``; otherwise the array code of dgbdt.engine.sampling)
    row_sample_kernel: bool = False
    #: the sampled rounds' candidate rows drawn in one kernel (``row_candidates``;
    #: otherwise dgbdt.engine.sampled_rounds' array code)
    row_candidates_kernel: bool = False


#: the methods each capability promises, beside the protocol's
CAPABILITY_METHODS: dict[str, tuple[str, ...]] = {
    "device_memory": ("on_device", "free_bytes"),
    "device_growth": ("advance_level", "leaf_values", "evaluate_splits_raw", "tree_consts",
                      "tree_scales"),
    "graph_capture": (),
    "row_sample_kernel": ("apply_row_sample",),
    "row_candidates_kernel": ("row_candidates",),
}


@runtime_checkable
class Backend(Protocol):
    """The operations every backend implements (arrays: ``xp``'s; ``shard``: a
    dgbdt.engine.shard.Shard; ``s``: a dgbdt.tree.split.SplitBatch)."""

    name: str                 # "cpu" or "cuda": for messages and logs, not for branching
    xp: Any                   # the array module of its arrays (numpy, cupy)
    caps: Capabilities

    # -- arrays --------------------------------------------------------------------------------
    def clock(self) -> float: ...
    def asarray(self, a, dtype=None): ...
    def to_host(self, a) -> np.ndarray: ...
    def upload(self, a): ...

    # -- pages ---------------------------------------------------------------------------------
    def take_rows(self, page, rows): ...
    def row_symbols(self, page, rows): ...
    def pack_symbols(self, symbols, bits: int): ...
    def join_pages(self, pages): ...

    # -- a tree's growth -----------------------------------------------------------------------
    def gradients(self, objective, margin, label, weight, g, h, wait: bool = True,
                  maxima=None): ...
    def start_tree(self, shard, k: int, scale_g: float, scale_h: float, consts=None) -> None: ...
    def root_rows(self, shard) -> None: ...
    def histograms(self, shard, nodes: np.ndarray, hist_ptrs: np.ndarray): ...
    def level_histograms(self, shard, req, hist_ptrs: np.ndarray): ...
    def siblings(self, small, parents, parent_slot): ...
    def apply_splits(self, shard, s) -> None: ...
    def fold_tree(self, shard, table, values, k: int, steps: int) -> None: ...
    def add_leaves(self, shard, k: int, nodes: np.ndarray, values: np.ndarray) -> None: ...
    def split_add_leaves(self, shard, k: int, s, nodes: np.ndarray,
                         values: np.ndarray) -> None: ...

    # -- split evaluation ----------------------------------------------------------------------
    def evaluate_splits(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p): ...
    def evaluate_splits_monotone(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p, lower,
                                 upper): ...
    def evaluate_categorical(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p, features,
                             width, bounds=None): ...
    def evaluate_splits_device(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p): ...

    # -- piecewise-linear leaves (dgbdt.kernels.linear_math) --------------------------------
    def linear_histograms(self, shard, req, hist_ptrs): ...
    def linear_leaf_sums(self, shard, req): ...
    def add_linear_leaves(self, shard, fin) -> None: ...
    def evaluate_linear_splits(self, hist, hist_ptrs, node_totals, addable, has_p, inv_sg,
                               inv_sh, lam0, lam1, min_child_weight, on_host, consts): ...
    def linear_level(self, slots, regs, slopes, nreg, inv_sp, regressor): ...
    def linear_children(self, nodes, feat, lefts, rights, lsum, rsum, addable, sentinel, regs,
                        slopes, nreg, inv_sp, inv_sg, inv_sh, lam0, lam1, consts): ...
    def fit_linear_leaves(self, sums, leaves, nreg, sentinel, inv_sg, inv_sh, lam0, lam1,
                          min_child_weight, eta, coefs, consts): ...

    # -- prediction ----------------------------------------------------------------------------
    def predict_raw(self, X, cat, ptrs, classes, out, leaves) -> None: ...
    def predict_linear(self, X, cat, ptrs, classes, out) -> None: ...
