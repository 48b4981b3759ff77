"""Margins from trees: where a training's or a prediction's margins start (the intercept, a
row's base_margin, a prior model's trees) and the sum of the trees' leaf values added to them.

The margin of row x for output k is base_margin[k] (or the row's own) + sum over the trees t of
class k of s_t * leaf_t(x), s_t a dart tree's weight (1 otherwise).
"""
from __future__ import annotations

import dataclasses
import threading

import numpy as np

from ..backends.array_ops import repeat_row
from ..backends.device import array_module, backend_of
from ..data.sparse import dense_chunks, densify, is_sparse
from ..tree.linear_model import add_linear_margins, linear_arrays
from ..tree.model import Tree, category_arrays


def scaled_tree(tree: Tree, s: float) -> Tree:
    """A copy of ``tree`` whose leaf values are s times its own (a dart tree's weight, or a
    weight's change); its split nodes are the same."""
    leaf = tree.left < 0
    if tree.vector is not None:
        return dataclasses.replace(tree, vector=np.where(leaf[:, None], tree.vector * s,
                                                         tree.vector).astype(np.float32))
    return dataclasses.replace(tree, threshold=np.where(leaf, tree.threshold * s,
                                                        tree.threshold))


def initial_margins(intercept, n: int, base_margin, xp):
    """[n, K] float64 margins before any tree, arrays of ``xp``: a copy of the rows'
    base_margin ([n] or [n, K]) if given, else the intercept [K] on every row."""
    K = len(intercept)
    if base_margin is None:
        return repeat_row(xp.asarray(intercept, dtype=np.float64), n)
    m = xp.array(base_margin, dtype=np.float64, copy=True)
    m = m.reshape(n, -1) if m.ndim == 1 else m
    if m.shape[1] != K:
        raise ValueError(f"base_margin has {m.shape[1]} columns; the objective has {K} "
                         "outputs")
    return m


class MarginStart:
    """Where a training's margins start, for some rows X (and their base_margin, if given):
    the intercept for a new model; for continued training (``xgb_model``), the prior model's
    margins: the rows' base_margin or its intercept, plus its trees (a dgbdt Booster). ``len()`` is the number of
    outputs. Sent to Dask workers with the training's tasks."""

    def __init__(self, intercept, prior=None, row_offsets=None):
        self.intercept = np.asarray(intercept, dtype=np.float64).ravel()
        self.prior = prior.snapshot() if prior is not None else None
        # the dataset-order index of each partition's first row (row sampling's draws)
        self.row_offsets = None if row_offsets is None else [int(o) for o in row_offsets]

    def __len__(self) -> int:
        return int(self.intercept.shape[0])

    def of(self, X, base_margin=None, xp=None):
        """[n, K] float64 starting margins of the rows X, as arrays of ``xp`` (default: X's)."""
        n = X.shape[0]
        xs = array_module(X)
        m = initial_margins(self.intercept, n, base_margin, xs)
        if self.prior is not None and self.prior.trees and n:
            self.prior.predict_margin_trees(X, list(range(len(self.prior.trees))), m)
        return m if xp is None or xp is xs else xp.asarray(m)


def add_tree_margins(X: np.ndarray, trees: list[Tree], classes: list[int], out: np.ndarray,
                     leaves: np.ndarray | None = None) -> None:
    """out[r, classes[t]] += leaf value of row r in trees[t] (raw-value traversal); with
    ``leaves`` also record each row's leaf id per tree."""
    if not trees:
        return
    if is_sparse(X):        # sparse rows: dense a chunk at a time (dgbdt.data.sparse)
        for a, b in dense_chunks(*X.shape):
            add_tree_margins(densify(X, a, b), trees, classes, out[a:b],
                             None if leaves is None else leaves[a:b])
        return
    if any(t.vector is not None for t in trees):     # vector leaves: T trees each
        from ..tree.multi_target import expand_vector_trees
        trees, classes, first = expand_vector_trees(trees, classes)
        if leaves is not None:      # a vector tree's leaf: its first per-target tree's
            every = array_module(leaves).zeros((leaves.shape[0], len(trees)), leaves.dtype)
            add_tree_margins(X, trees, classes, out, every)
            leaves[...] = every[:, first]
            return
    cat, ptrs, cls = _concatenated(trees, classes)
    if "lin_size" in cat:        # piecewise-linear trees (dgbdt.kernels.linear_math)
        add_linear_margins(X, cat, ptrs, cls, out, leaves)
        return
    backend_of(X).predict_raw(X, cat, ptrs, cls, out, leaves)


_CONCAT_KEEP = 4
_concat_cache: list = []        # (trees, classes, (cat, ptrs, classes array)), newest first
_concat_lock = threading.Lock()


def _concatenated(trees: list[Tree], classes: list[int]) -> tuple:
    """The node arrays of ``trees`` back to back, their offsets and classes, as predict_raw
    reads them. Kept for the last few lists of the same tree objects: concatenating (and, on
    a GPU, packing and uploading, which the backend keeps in ``cat``) many trees cost a
    predict call more than the traversal of many rows
    (docs/benchmarks-archive.md#figures-behind-code-choices). Trees are not changed once
    grown; a list is matched by identity."""
    key = tuple(int(c) for c in classes)
    with _concat_lock:
        for entry in _concat_cache:
            if entry[1] == key and len(entry[0]) == len(trees) and all(
                    a is b for a, b in zip(entry[0], trees)):
                return entry[2]
    ptrs = np.zeros(len(trees) + 1, dtype=np.int64)
    ptrs[1:] = np.cumsum([t.n_nodes for t in trees])
    cat = {a: np.concatenate([getattr(t, a) for t in trees])
           for a in ("left", "right", "feature", "threshold", "default_left")}
    if any(t.categories for t in trees):
        cat.update(category_arrays(trees, int(ptrs[-1])))
    if any(t.linear for t in trees):
        cat.update(linear_arrays(trees, int(ptrs[-1])))
    made = (cat, ptrs, np.array(key, dtype=np.int64))
    with _concat_lock:
        _concat_cache.insert(0, (tuple(trees), key, made))
        del _concat_cache[_CONCAT_KEEP:]
    return made
