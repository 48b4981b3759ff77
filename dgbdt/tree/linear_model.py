"""Prediction with linear leaves (dgbdt.kernels.linear_math): the flat arrays the kernel reads, and
prediction's entry point. (Their JSON and its validation are dgbdt.tree.model's.)

A tree's ``linear`` maps each leaf node to ``{"features": int32 [d], "coefs": float64 [d + 1],
"centers": float64 [d], "scales": float64 [d]}``; the leaf's value for row x is
``coefs[0] + sum_t coefs[t + 1] * (x[features[t]] - centers[t]) / scales[t]``, a missing value's
term left out, computed in that order in float64 (as the training added it to the margins).
"""
from __future__ import annotations

import numpy as np

from ..kernels.arrays import array_module, is_device_array, to_host
from ..backends.device import backend_of


def linear_arrays(trees: list, n_nodes: int) -> dict:
    """The linear leaves of concatenated trees for kernels.cpu_linear.predict_linear: per
    node ``lin_begin`` / ``lin_size`` (-1: not a linear leaf) into flat ``lin_coef``,
    ``lin_feat``, ``lin_center``, ``lin_inv_scale`` (entry begin: the constant)."""
    begin = np.zeros(n_nodes, np.int64)
    size = np.full(n_nodes, -1, np.int64)
    # the leaves' arrays gathered in a loop, laid out with whole-array operations (a leaf at
    # a time was slow for large models, on every Dask worker's predict:
    # docs/benchmarks-archive.md#figures-behind-code-choices); the constant's slot holds
    # feature 0, center 0 and inverse scale 1
    nodes, parts = [], {k: [] for k in ("features", "coefs", "centers", "scales")}
    base = 0
    for t in trees:
        lin = t.linear or {}
        for node in sorted(lin):
            nodes.append(base + node)
            for k, v in parts.items():
                v.append(lin[node][k])
        base += t.n_nodes
    if not nodes:
        return {"lin_begin": begin, "lin_size": size, "lin_coef": np.zeros(0, np.float64),
                "lin_feat": np.zeros(0, np.int64), "lin_center": np.zeros(0, np.float64),
                "lin_inv_scale": np.zeros(0, np.float64)}
    d = np.array([len(f) for f in parts["features"]], np.int64)
    at = np.concatenate([[0], np.cumsum(d + 1)[:-1]])
    begin[nodes], size[nodes] = at, d
    terms = np.ones(int((d + 1).sum()), np.bool_)
    terms[at] = False                                   # each leaf's constant slot
    coef = np.concatenate(parts["coefs"]).astype(np.float64)
    feat = np.zeros(terms.shape[0], np.int64)
    feat[terms] = np.concatenate(parts["features"])
    center = np.zeros(terms.shape[0], np.float64)
    center[terms] = np.concatenate(parts["centers"])
    inv = np.ones(terms.shape[0], np.float64)
    inv[terms] = 1.0 / np.concatenate(parts["scales"]).astype(np.float64)
    return {"lin_begin": begin, "lin_size": size, "lin_coef": coef, "lin_feat": feat,
            "lin_center": center, "lin_inv_scale": inv}



def add_linear_margins(X, cat, ptrs, cls, out, leaves) -> None:
    """dgbdt.model.margins.add_tree_margins of trees with linear leaves (``cat``: their concatenated
    node arrays with ``linear_arrays``' entries): kernels.cpu_linear.predict_linear, the leaf
    values as the training computed them. Device rows (cupy) are predicted on their GPU
    (cuda/linear.cu predict_linear, the same walk and arithmetic); for their leaf ids
    (``leaves``) they are copied to the host and predicted there. Bit for bit the CPU's
    values either way."""
    if "is_cat" in cat:
        raise NotImplementedError("a model with both linear trees and categorical splits is "
                                  "not predicted yet (linear trees train on numerical "
                                  "features only)")
    if is_device_array(X) and is_device_array(out) and leaves is None:
        backend_of(X).predict_linear(X, cat, ptrs, cls, out)    # cuda/linear.cu
        return
    if is_device_array(X) or is_device_array(out):       # leaf ids: through the host
        xp = array_module(out)
        host_out = to_host(out).copy()
        host_leaves = None if leaves is None else to_host(leaves).copy()
        add_linear_margins(to_host(X), cat, ptrs, cls, host_out, host_leaves)
        out[...] = xp.asarray(host_out)
        if leaves is not None:
            leaves[...] = array_module(leaves).asarray(host_leaves)
        return
    if leaves is not None:       # leaf ids: the same walk as constant trees
        backend_of(X).predict_raw(X, cat, ptrs, cls, np.zeros_like(out), leaves)
    backend_of(X).predict_linear(np.ascontiguousarray(X, dtype=np.float32), cat, ptrs, cls,
                                 out)
