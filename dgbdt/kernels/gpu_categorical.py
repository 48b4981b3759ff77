"""The CUDA backend's parts for what the host grower asks of GPU shards beyond depth-wise
numerical trees: categorical splits applied to rows, and split searches the device kernels do
not have (categorical sets, monotone bounds).

* ``apply_splits``: cuda/tree.cu's ``partition_scatter_cat`` partitions each split node's rows;
  a categorical split sends a row right iff its symbol's bit is set in the split's set (uint8
  bits, np.packbits(..., bitorder="little"); dgbdt.shard.SplitBatch), the missing symbol the
  default way, as the CPU's kernels/cpu_tree.py. The symbol of a category code is the code
  (dgbdt.data.quantize), so a code outside the set, unseen in the node, goes left.
* ``evaluate_categorical`` and ``evaluate_splits_monotone``: the merged histograms (exact
  int64 sums) are copied to the host and searched by the CPU kernels (kernels/cpu_categorical,
  kernels/cpu_split): the same integers into the same float64 operations, so the same
  decisions as training on the CPU, bit for bit.

Functions here take arrays (cupy on the device, numpy on the host), not training objects.
"""
from __future__ import annotations

import numpy as np

from . import cpu_categorical, cpu_split


def _i32(x) -> np.int32:
    return np.int32(x)


def split_rows(be, is_cat, cats, packed_rows):
    """(is_cat uint8 [m], cats uint8 [m, W/8]) of a SplitBatch's categorical splits on the
    device, for ``partition_scatter_cat`` (``packed_rows``: the batch's m)."""
    m = int(packed_rows)
    flag = np.ascontiguousarray(np.asarray(is_cat, dtype=np.uint8).reshape(m))
    sets = np.ascontiguousarray(np.asarray(cats, dtype=np.uint8).reshape(m, -1))
    if sets.shape[1] == 0:
        sets = np.zeros((m, 1), np.uint8)
    return be.upload(flag), be.upload(sets), sets.shape[1]


def partition_scatter_cat(kernel, grid, block, words, bits, mask, n_features, n_bins, rows,
                          scratch, begin, end, split, m, tile_ptr, counts, is_cat_d, cats_d,
                          cat_bytes) -> None:
    """Launch cuda/tree.cu's partition_scatter_cat (pass 1 of the partition; the CUDA
    backend's apply_splits runs pass 2, partition_finish, as for numerical splits)."""
    kernel("tree", "partition_scatter_cat")(
        grid, block,
        (words, _i32(bits), np.uint32(mask), _i32(n_features), n_bins, rows, scratch, begin,
         end, split, _i32(m), tile_ptr, counts, is_cat_d, cats_d, _i32(cat_bytes)))


def evaluate_categorical(hist, totals, hist_ptrs, inv_sg, inv_sh, p, features, width,
                         bounds=None):
    """The best categorical split of each node of device histograms [m, S, 2]: the CPU
    kernel (kernels/cpu_categorical.evaluate_categorical) on a host copy of the categorical
    features' slots. Returns numpy arrays (gain, feature, default_left, left, cats)."""
    import cupy as cp
    hp = np.asarray(hist_ptrs, dtype=np.int64)
    features = np.asarray(features, dtype=np.int64)
    # only the categorical features' slots travel: renumber them 0..len(features) - 1
    widths = hp[features + 1] - hp[features]
    sub_ptrs = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    idx = np.concatenate([np.arange(hp[f], hp[f + 1]) for f in features.tolist()])
    host = cp.asnumpy(cp.ascontiguousarray(hist[:, cp.asarray(idx)]))
    m = host.shape[0]
    if bounds is None:
        mono = np.zeros(len(features), np.int8)
        lower, upper = np.full(m, -np.inf), np.full(m, np.inf)
    else:
        mono = np.asarray(p.monotone, dtype=np.int8)[features]
        lower, upper = (np.asarray(to_numpy(b), np.float64) for b in bounds)
    gain, feat, dleft, left, cats = cpu_categorical.evaluate_categorical(
        host, sub_ptrs, np.asarray(to_numpy(totals), np.int64), inv_sg, inv_sh, p.lam, p.alpha,
        p.max_delta_step, p.min_child_weight, np.arange(len(features), dtype=np.int64),
        p.max_cat_to_onehot, p.max_cat_threshold, width, bounds is not None, mono, lower, upper)
    feat = np.where(feat >= 0, features[np.maximum(feat, 0)], -1).astype(np.int32)
    return gain, feat, dleft, left, cats


def evaluate_splits_monotone(hist, totals, hist_ptrs, inv_sg, inv_sh, p, lower, upper):
    """evaluate_splits under monotone constraints for device histograms: the CPU kernel
    (kernels/cpu_split.evaluate_splits_monotone) on a host copy. Returns numpy arrays."""
    import cupy as cp
    return cpu_split.evaluate_splits_monotone(
        cp.asnumpy(cp.ascontiguousarray(hist)), np.asarray(hist_ptrs, np.int64),
        np.asarray(to_numpy(totals), np.int64), inv_sg, inv_sh, p.lam, p.alpha,
        p.max_delta_step, p.min_child_weight, np.asarray(p.monotone, dtype=np.int8),
        np.asarray(to_numpy(lower), np.float64), np.asarray(to_numpy(upper), np.float64))


def to_numpy(a):
    """A host copy of a numpy or cupy array."""
    return a.get() if hasattr(a, "__cuda_array_interface__") else np.asarray(a)
