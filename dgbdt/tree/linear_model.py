"""Prediction with linear leaves (dgbdt.tree.linear): the flat arrays the kernel reads, and
prediction's entry point. (Their JSON and its validation are dgbdt.tree.model's.)

A tree's ``linear`` maps each leaf node to ``{"features": int32 [d], "coefs": float64 [d + 1],
"centers": float64 [d], "scales": float64 [d]}``; the leaf's value for row x is
``coefs[0] + sum_t coefs[t + 1] * (x[features[t]] - centers[t]) / scales[t]``, a missing value's
term left out, computed in that order in float64 (as the training added it to the margins).
"""
from __future__ import annotations

import numpy as np

from ..arrays import array_module, is_device_array, to_host
from ..backend import backend_of


def linear_arrays(trees: list, n_nodes: int) -> dict:
    """The linear leaves of concatenated trees for kernels.cpu_linear.predict_linear: per
    node ``lin_begin`` / ``lin_size`` (-1: not a linear leaf) into flat ``lin_coef``,
    ``lin_feat``, ``lin_center``, ``lin_inv_scale`` (entry begin: the constant)."""
    begin = np.zeros(n_nodes, np.int64)
    size = np.full(n_nodes, -1, np.int64)
    coef, feat, center, inv = [], [], [], []
    at, base = 0, 0
    for t in trees:
        for node, m in sorted((t.linear or {}).items()):
            d = len(m["features"])
            begin[base + node], size[base + node] = at, d
            coef.append(np.asarray(m["coefs"], np.float64))
            feat.append(np.concatenate([[0], m["features"]]).astype(np.int64))
            center.append(np.concatenate([[0.0], m["centers"]]))
            inv.append(np.concatenate([[1.0], 1.0 / np.asarray(m["scales"], np.float64)]))
            at += d + 1
        base += t.n_nodes
    cat = (lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt))
    return {"lin_begin": begin, "lin_size": size, "lin_coef": cat(coef, np.float64),
            "lin_feat": cat(feat, np.int64), "lin_center": cat(center, np.float64),
            "lin_inv_scale": cat(inv, np.float64)}



def add_linear_margins(X, cat, ptrs, cls, out, leaves) -> None:
    """dgbdt.booster.add_tree_margins of trees with linear leaves (``cat``: their concatenated
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
