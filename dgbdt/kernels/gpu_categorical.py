"""The CUDA backend's parts for what the host grower asks of GPU shards beyond depth-wise
numerical trees: categorical splits applied to rows, and split searches the device kernels do
not have (categorical sets, monotone bounds).

* ``apply_splits``: cuda/tree.cu's ``partition_scatter_cat`` partitions each split node's rows;
  a categorical split sends a row right iff its symbol's bit is set in the split's set (uint8
  bits, np.packbits(..., bitorder="little"); dgbdt.tree.split.SplitBatch), the missing symbol the
  default way, as the CPU's kernels/cpu_tree.py. The symbol of a category code is the code
  (dgbdt.data.quantize), so a code outside the set, unseen in the node, goes left.
* ``evaluate_categorical``: cuda/categorical.cu searches each (categorical feature, node) on
  the device, cpu_categorical's candidates in its order with the same float64 arithmetic
  (cuda/gain.cuh), finding a partition scan's categories by repeated block-wide minima
  instead of a sort; ``_pick`` then takes each node's best feature and builds its set.
  DGBDT_CATEGORICAL_SEARCH=host runs the CPU kernel on a host copy instead.
* ``evaluate_splits_monotone``: the merged histograms (exact int64 sums) are copied to the
  host and searched by the CPU kernel (kernels/cpu_split): the same integers into the same
  float64 operations, so the same decisions as training on the CPU, bit for bit.

Functions here take arrays (cupy on the device, numpy on the host), not training objects.
"""
from __future__ import annotations

import os

import numpy as np

from . import cpu_categorical, cpu_split
from .launch import _i32


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
                          cat_bytes, ell, hist_ptrs) -> None:
    """Launch cuda/tree.cu's partition_scatter_cat (pass 1 of the partition; the CUDA
    backend's apply_splits runs pass 2, partition_finish, as for numerical splits)."""
    kernel("tree", "partition_scatter_cat")(
        grid, block,
        (words, _i32(bits), np.uint32(mask), _i32(n_features), n_bins, rows, scratch, begin,
         end, split, _i32(m), tile_ptr, counts, is_cat_d, cats_d, _i32(cat_bytes), _i32(ell),
         hist_ptrs))


def search_setting() -> str:
    """DGBDT_CATEGORICAL_SEARCH: where GPU histograms' categorical splits are searched:
    "device" (the default: cuda/categorical.cu) or "host" (the CPU kernel on a host copy; the
    same decisions, a check of the device kernel and a baseline for its speed)."""
    value = os.environ.get("DGBDT_CATEGORICAL_SEARCH", "device") or "device"
    if value not in ("device", "host"):
        raise ValueError(f"DGBDT_CATEGORICAL_SEARCH must be 'device' or 'host'; got {value!r}")
    return value


def evaluate_categorical(kernel, upload, hist, totals, hist_ptrs, inv_sg, inv_sh, p, features,
                         width, bounds=None):
    """The best categorical split of each node of device histograms [m, S, 2], as
    kernels/cpu_categorical.evaluate_categorical returns it (numpy: gain, feature,
    default_left, left, cats): cuda/categorical.cu searches every (feature, node) on the
    device; here each node's best feature is picked (the first of the largest gain, as the
    CPU's running best) and its set built. ``kernel``/``upload``: the CUDA backend's."""
    if search_setting() == "host":
        return evaluate_categorical_host(hist, totals, hist_ptrs, inv_sg, inv_sh, p, features,
                                         width, bounds)
    import cupy as cp
    hp = np.asarray(hist_ptrs, dtype=np.int64)
    features = np.asarray(features, dtype=np.int64)
    hist = cp.ascontiguousarray(hist)
    m, S = int(hist.shape[0]), int(hist.shape[1])
    nc = len(features)
    nbs = hp[features + 1] - hp[features] - 1
    sel_width = max(1, min(int(p.max_cat_threshold), int(nbs.max())) - 1)
    res = cp.empty((m, nc, 6), dtype=cp.int64)
    sel = cp.zeros((m, nc, 2, sel_width), dtype=cp.int32)
    if m == 0:
        return _pick(np.zeros((0, nc, 6), np.int64), None, features, nbs, width)
    bounded = bounds is not None
    mono = np.asarray(p.monotone if bounded else np.zeros(len(hp) - 1), dtype=np.int32)
    lower, upper = ((np.asarray(to_numpy(b), np.float64) for b in bounds) if bounded
                    else (np.zeros(m), np.zeros(m)))
    kernel("categorical", "evaluate_categorical")(
        (nc, m), (256,),
        (hist, _i32(S), cp.asarray(hp), upload(np.asarray(to_numpy(totals), np.int64)),
         upload(np.array([0.0, 0.0, inv_sg, inv_sh, 0.0])), np.float64(p.lam),
         np.float64(p.alpha), np.float64(p.max_delta_step), np.float64(p.min_child_weight),
         upload(features), _i32(nc), _i32(p.max_cat_to_onehot), _i32(p.max_cat_threshold),
         _i32(bounded), upload(mono), upload(lower), upload(upper),
         cp.empty((m, S), dtype=cp.uint64), _i32(sel_width), res, sel))
    return _pick(cp.asnumpy(res), cp.asnumpy(sel), features, nbs, width)


def _pick(res, sel, features, nbs, width):
    """Each node's best over the features' candidates res [m, nc, 6] (cuda/categorical.cu's
    rows) in feature order, strictly larger gains replacing; its set as uint8 [m, width]
    (1: goes right) from the visiting orders sel [m, nc, 2, :]."""
    m, nc = res.shape[0], res.shape[1]
    gain = np.zeros(m, np.float32)
    which = np.full(m, -1, np.int64)
    for fi in range(nc):
        g = (res[:, fi, 0] & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
        take = (res[:, fi, 1] >= 0) & (g > gain)
        gain = np.where(take, g, gain)
        which = np.where(take, fi, which)
    feat = np.full(m, -1, np.int32)
    dleft = np.zeros(m, np.bool_)
    left = np.zeros((m, 2), np.int64)
    cats = np.zeros((m, width), np.uint8)
    for j in np.flatnonzero(which >= 0).tolist():
        fi = int(which[j])
        _, kind, arg, dl, lg, lh = res[j, fi].tolist()
        feat[j], dleft[j], left[j] = features[fi], dl != 0, (lg, lh)
        if kind == 0:                      # one-hot: {arg}
            cats[j, arg] = 1
        elif kind == 1:                    # the first arg sorted categories go right
            cats[j, sel[j, fi, 0, :arg]] = 1
        else:                              # all but the last arg sorted ones go right
            cats[j, :nbs[fi]] = 1
            cats[j, sel[j, fi, 1, :arg]] = 0
    return gain, feat, dleft, left, cats


def evaluate_categorical_host(hist, totals, hist_ptrs, inv_sg, inv_sh, p, features, width,
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
