"""CPU kernels (numba) for piecewise-linear leaves; the math is dgbdt.kernels.linear_math's docstring.

Arrays only. Shared conventions (beyond dgbdt.kernels.cpu_tree's):

* ``raw`` float32 [n, F]: the shard's raw feature values (the pages keep only bins);
  ``center``, ``inv_scale`` float64 [F] normalize them: x~ = (x - center) * inv_scale, with
  x~ = 0 for a missing value or a feature that may not be a regressor (``xmask`` False).
* Linear histograms are int64 [m, S, 9]: per slot the fixed-point sums of
  (g, h, g p~, h p~, h p~^2, g x~, h x~, h p~ x~, h x~^2) (dgbdt.kernels.linear_math.PAYLOAD), each
  summand rounded once (rint(value * scale), scale the round's power of two for g or h), so
  every sum is exact in any order.
* A node's slope part is given by ``reg_feat`` int64 [m, D] (its regressors, -1 padded),
  ``reg_coef`` float64 [m, D] and ``inv_sp`` float64 [m]: p~ = inv_sp * sum_t coef_t x~_t.
* A linear leaf's value is coef_0 + sum_t coef_t x~_t (terms of missing values left out),
  computed in that order in float64 by training (``add_linear_leaves``) and prediction
  (``predict_linear``) alike, so the training margins equal the model's predictions.

Parallelism: the loops are serial ``nogil`` numba functions over a slice of the work (a
thread's slice of every node's rows, a node, a leaf's chunk, a block of rows), run by a
thread pool (``_run``: a call a thread, each taking every step-th task) on numba's thread
count. Every task writes its own output, so the result does not depend on scheduling; and
serial functions compile much faster than numba's parallel loops (CI compiles them cold;
docs/benchmarks-archive.md#figures-behind-code-choices).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit

from .linear_math import GP, GX, HP, HPP, HPX, HX, HXX, side_score3
from .cpu_data import read_symbol
from .cpu_tree import ROW_BLOCK, tree_depths


@njit(cache=True, nogil=True, inline="always")
def _xt(raw, r, f, xmask, center, inv_scale):
    if not xmask[f]:
        return 0.0
    x = raw[r, f]
    if np.isnan(x):
        return 0.0
    return (x - center[f]) * inv_scale[f]


_pools: dict = {}


def _threads() -> int:
    return max(1, numba.get_num_threads())


def _run(fn, n_tasks: int, *args) -> None:
    """Tasks 0 .. n_tasks - 1 on a pool of numba's thread count: ``fn(start, step, n_tasks,
    *args)`` runs tasks start, start + step, ... (one call a thread: a Python call and its
    argument unboxing cost too much a task:
    docs/benchmarks-archive.md#figures-behind-code-choices)."""
    n = min(_threads(), n_tasks)
    if n <= 1:
        fn(0, 1, n_tasks, *args)
        return
    pool = _pools.get(n)
    if pool is None:
        pool = _pools[n] = ThreadPoolExecutor(n, thread_name_prefix="dgbdt-linear")
    for f in [pool.submit(fn, t, n, n_tasks, *args) for t in range(n)]:
        f.result()


def linear_histograms(words, bits, n_features, hist_ptrs, rows, g, h, grad, raw, center,
                      inv_scale, xmask, seg_begin, seg_end, reg_feat, reg_coef, inv_sp, sg, sh,
                      n_slots, n_threads, p_only=False):
    """Linear histograms [m, S, 9] of the nodes whose rows are
    ``rows[seg_begin[j]:seg_end[j]]``; with ``p_only`` only the entries that depend on the
    node's p~ (GP, HP, HPP, HPX; the others 0), for a node whose other entries are its
    parent's minus its sibling's.

    g, h float64 [n] (class k's gradients), grad int64 [n, 2] (their fixed-point values,
    the plain histograms' summands: entries 0 and 1 are the plain histogram). As
    kernels.cpu_tree.build_histograms: ``n_threads`` slices of every node's segment, each
    row read once (its p~, then every feature's symbol and raw value) into a private
    histogram per slice; the private copies are summed (exact: integers). Callers bound
    n_threads * m * n_slots * 9 int64 by passing nodes in batches.
    """
    m = seg_begin.shape[0]
    private = np.zeros((n_threads, m * n_slots * 9), dtype=np.int64)
    _run(_hist_slices, n_threads, words, bits, n_features, hist_ptrs, rows, g, h,
         grad, raw, center, inv_scale, xmask, seg_begin, seg_end, reg_feat, reg_coef, inv_sp,
         sg, sh, n_slots, private, bool(p_only))
    return private.sum(axis=0).reshape(m, n_slots, 9)


@njit(cache=True, nogil=True)
def _hist_slices(start, step, n_threads, words, bits, n_features, hist_ptrs, rows, g, h, grad,
                 raw, center, inv_scale, xmask, seg_begin, seg_end, reg_feat, reg_coef, inv_sp,
                 sg, sh, n_slots, private, p_only):
    for t in range(start, n_threads, step):
        _hist_slice(t, n_threads, words, bits, n_features, hist_ptrs, rows, g, h, grad, raw,
                    center, inv_scale, xmask, seg_begin, seg_end, reg_feat, reg_coef, inv_sp,
                    sg, sh, n_slots, private, p_only)


#: rows a block of _hist_slice: their values are gathered into small buffers first
_ROW_BLOCK = 64


@njit(cache=True, nogil=True)
def _hist_slice(t, n_threads, words, bits, n_features, hist_ptrs, rows, g, h, grad, raw,
                center, inv_scale, xmask, seg_begin, seg_end, reg_feat, reg_coef, inv_sp, sg,
                sh, n_slots, private, p_only):
    """Slice t of every node's rows into private[t] (flat [m, n_slots, 9]; ``p_only``: the
    four p~ entries only). Rows go in blocks of _ROW_BLOCK: first each row's symbols, x~
    values, gradients and p~ are gathered into small buffers (a loop of independent loads,
    so a block's cache misses overlap: below the root a node's rows are scattered over the
    shard and each row's raw values, page bytes and gradients are misses of their own),
    then the block's summands go into the histogram from there (faster than row by row:
    docs/benchmarks-archive.md#figures-behind-code-choices). Indices are unsigned (no
    wraparound checks); g sg and h sh are formed first, which rounds the same as
    multiplying by the power of two last (exact either way)."""
    mask = np.uint64((1 << bits) - 1)
    nf = np.uint64(n_features)
    view = words.view(np.uint8)
    D = reg_feat.shape[1]
    out = private[t]
    ptrs = hist_ptrs.astype(np.uint64)
    nine = np.uint64(9)
    B = _ROW_BLOCK
    sym_b = np.empty((B, n_features), dtype=np.uint64)
    xt_b = np.empty((B, n_features), dtype=np.float64)
    row_b = np.empty((B, 3), dtype=np.float64)      # gs, hs, p~
    q_b = np.empty((B, 2), dtype=np.int64)          # the fixed-point g, h
    for j in range(seg_begin.shape[0]):
        b = seg_begin[j]
        length = seg_end[j] - b
        lo = b + (length * t) // n_threads
        hi = b + (length * (t + 1)) // n_threads
        off = np.uint64(j * n_slots * 9)
        for blo in range(lo, hi, B):
            nb = min(B, hi - blo)
            for i in range(nb):             # gather
                r = rows[blo + i]
                base = np.uint64(r) * nf
                for f in range(n_features):
                    uf = np.uint64(f)
                    if bits == 8:
                        sym_b[i, f] = np.uint64(view[base + uf])
                    else:
                        sym_b[i, f] = np.uint64(read_symbol(words, base + uf, bits, mask))
                    xt_b[i, f] = _xt(raw, r, f, xmask, center, inv_scale)
                acc = 0.0
                for k in range(D):
                    f = reg_feat[j, k]
                    if f < 0:
                        break
                    acc += reg_coef[j, k] * xt_b[i, f]
                row_b[i, 0] = g[r] * sg
                row_b[i, 1] = h[r] * sh
                row_b[i, 2] = acc * inv_sp[j]
                q_b[i, 0] = grad[r, 0]
                q_b[i, 1] = grad[r, 1]
            for i in range(nb):             # sum
                gs = row_b[i, 0]
                hs = row_b[i, 1]
                pt = row_b[i, 2]
                hps = hs * pt
                q0 = q_b[i, 0]
                q1 = q_b[i, 1]
                qgp = np.int64(np.rint(gs * pt))
                qhp = np.int64(np.rint(hps))
                qhpp = np.int64(np.rint(hps * pt))
                for f in range(n_features):
                    uf = np.uint64(f)
                    o = off + (ptrs[uf] + sym_b[i, f]) * nine
                    out[o + np.uint64(GP)] += qgp
                    out[o + np.uint64(HP)] += qhp
                    out[o + np.uint64(HPP)] += qhpp
                    xt = xt_b[i, f]
                    if p_only:
                        if xt != 0.0:
                            out[o + np.uint64(HPX)] += np.int64(np.rint(hps * xt))
                        continue
                    out[o] += q0
                    out[o + np.uint64(1)] += q1
                    if xt != 0.0:
                        hx = hs * xt
                        out[o + np.uint64(GX)] += np.int64(np.rint(gs * xt))
                        out[o + np.uint64(HX)] += np.int64(np.rint(hx))
                        out[o + np.uint64(HPX)] += np.int64(np.rint(hps * xt))
                        out[o + np.uint64(HXX)] += np.int64(np.rint(hx * xt))


def evaluate_linear_splits(hist, hist_ptrs, node_totals, addable, has_p, inv_sg, inv_sh, lam0,
                           lam1, min_child_weight):
    """Best split of each node by the half-additive linear gain (dgbdt.kernels.linear_math).

    hist int64 [m, S, 9] (the slots of features a node may not split on zeroed);
    node_totals int64 [m, 9]: each node's sums over one feature's slots before any zeroing
    (entries 0..4, the same for every feature, give the node's own score); addable bool [m, F]: whether feature f enters the candidate's basis
    as x~ (it may join the node's regressors); has_p bool [m]: whether p~ does (the node has
    regressors). Scans as kernels.cpu_split (forward: missing right; backward, when the
    feature has missing values in the node: missing left); a candidate needs both sides'
    hessian >= min_child_weight; ties keep the first candidate; the best starts at 0.
    Returns (gain float32 [m], feature int32 [m] (-1: none), split_bin int32 [m],
    default_left bool [m], left int64 [m, 9]); one node a task (``_node_best``).
    """
    m = hist.shape[0]
    best = (np.zeros(m, dtype=np.float32), np.full(m, -1, dtype=np.int32),
            np.zeros(m, dtype=np.int32), np.zeros(m, dtype=np.bool_),
            np.zeros((m, 9), dtype=np.int64))
    _run(_nodes_best, m, np.ascontiguousarray(hist), np.ascontiguousarray(hist_ptrs),
         np.ascontiguousarray(node_totals), np.ascontiguousarray(addable), np.ascontiguousarray(has_p), float(inv_sg),
         float(inv_sh), float(lam0), float(lam1), float(min_child_weight), *best)
    return best


@njit(cache=True, nogil=True)
def _nodes_best(start, step, m, hist, hist_ptrs, node_totals, addable, has_p, inv_sg, inv_sh,
                lam0, lam1, min_child_weight, best_gain, best_feat, best_bin, best_dleft,
                best_left):
    for j in range(start, m, step):
        _node_best(j, hist, hist_ptrs, node_totals, addable, has_p, inv_sg, inv_sh, lam0, lam1,
                   min_child_weight, best_gain, best_feat, best_bin, best_dleft, best_left)


@njit(cache=True, nogil=True)
def _node_best(j, hist, hist_ptrs, node_totals, addable, has_p, inv_sg, inv_sh, lam0, lam1,
               min_child_weight, best_gain, best_feat, best_bin, best_dleft, best_left):
    """evaluate_linear_splits for node j: its best candidate into the best_* arrays."""
    usep = has_p[j]
    n_features = hist_ptrs.shape[0] - 1
    tot = np.zeros(9, dtype=np.int64)
    lft = np.zeros(9, dtype=np.int64)
    rgt = np.zeros(9, dtype=np.int64)
    for c in range(9):
        tot[c] = node_totals[j, c]
    parent = side_score3(tot, inv_sg, inv_sh, lam0, lam1, usep, False)
    bg = np.float32(0.0)
    for f in range(n_features):
        p0 = hist_ptrs[f]
        nb = hist_ptrs[f + 1] - p0 - 1
        usex = addable[j, f]
        for c in range(9):
            tot[c] = 0
        for s in range(p0, p0 + nb + 1):
            for c in range(9):
                tot[c] += hist[j, s, c]
        missing = hist[j, p0 + nb, 0] != 0 or hist[j, p0 + nb, 1] != 0
        for direction in range(2 if missing else 1):
            for c in range(9):
                lft[c] = 0
                rgt[c] = 0
            for step in range(nb):
                # forward: bins 0..b left; backward: bins b+1..nb-1 right (b = i - 1)
                i = step if direction == 0 else nb - 1 - step
                empty = True
                if direction == 0:
                    for c in range(9):
                        v = hist[j, p0 + i, c]
                        empty &= v == 0
                        lft[c] += v
                        rgt[c] = tot[c] - lft[c]
                else:
                    for c in range(9):
                        v = hist[j, p0 + i, c]
                        empty &= v == 0
                        rgt[c] += v
                        lft[c] = tot[c] - rgt[c]
                if step > 0 and empty:    # the previous candidate's sides: the same gain
                    continue
                if lft[1] * inv_sh < min_child_weight or rgt[1] * inv_sh < min_child_weight:
                    continue
                gain = np.float32(side_score3(lft, inv_sg, inv_sh, lam0, lam1, usep, usex)
                                  + side_score3(rgt, inv_sg, inv_sh, lam0, lam1, usep, usex)
                                  - parent)
                if gain > bg:
                    bg = gain
                    best_feat[j] = f
                    best_bin[j] = i if direction == 0 else i - 1
                    best_dleft[j] = direction == 1
                    for c in range(9):
                        best_left[j, c] = lft[c]
    best_gain[j] = bg


@njit(cache=True, nogil=True)
def feature_totals(hist, hist_ptrs, features):
    """int64 [m, 9]: node j's sums over every slot of feature ``features[j]``."""
    m = hist.shape[0]
    out = np.zeros((m, 9), dtype=np.int64)
    for j in range(m):
        f = features[j]
        for s in range(hist_ptrs[f], hist_ptrs[f + 1]):
            for c in range(9):
                out[j, c] += hist[j, s, c]
    return out


def leaf_sums(rows, seg_begin, seg_end, raw, g, h, center, inv_scale, feats, sg, sh,
              n_chunks):
    """Fixed-point sums of each leaf's full ridge system: int64 [Lf, D + 1, D + 2], entries
    [:, :D+1, :D+1] sum rint(h z_a z_b sh), column D + 1 sums rint(g z_a sg), z = (1, x~ of
    the leaf's regressors ``feats`` [Lf, D], -1 padded; a missing value counts 0). Each leaf's
    segment in ``n_chunks`` slices, one task each (``_leaf_chunk``), summed after."""
    nl, D = seg_begin.shape[0], feats.shape[1]
    part = np.zeros((nl * n_chunks, D + 1, D + 2), dtype=np.int64)
    _run(_leaf_chunks, nl * n_chunks, n_chunks, rows, seg_begin, seg_end, raw, g, h, center,
         inv_scale, feats, sg, sh, part)
    out = part.reshape(nl, n_chunks, D + 1, D + 2).sum(axis=1)
    low = np.tril_indices(D + 1, -1)
    out[:, low[0], low[1]] = out[:, low[1], low[0]]
    return out


@njit(cache=True, nogil=True)
def _leaf_chunks(start, step, n_tasks, n_chunks, rows, seg_begin, seg_end, raw, g, h, center,
                 inv_scale, feats, sg, sh, part):
    for task in range(start, n_tasks, step):
        _leaf_chunk(task, n_chunks, rows, seg_begin, seg_end, raw, g, h, center, inv_scale,
                    feats, sg, sh, part)


@njit(cache=True, nogil=True)
def _leaf_chunk(task, n_chunks, rows, seg_begin, seg_end, raw, g, h, center, inv_scale, feats,
                sg, sh, part):
    """leaf_sums' slice ``task`` (leaf j = task // n_chunks) into part[task] (the upper
    triangle). Rows in blocks, their z, g and h gathered first (as _hist_slice)."""
    j, c = task // n_chunks, task % n_chunks
    length = seg_end[j] - seg_begin[j]
    lo = seg_begin[j] + (length * c) // n_chunks
    hi = seg_begin[j] + (length * (c + 1)) // n_chunks
    o = part[task]
    D = feats.shape[1]
    B = _ROW_BLOCK
    zb = np.zeros((B, D + 1))
    gb = np.empty(B)
    hb = np.empty(B)
    for blo in range(lo, hi, B):
        nb = min(B, hi - blo)
        for i in range(nb):                 # gather
            r = rows[blo + i]
            zb[i, 0] = 1.0
            for t in range(D):
                f = feats[j, t]
                zb[i, t + 1] = 0.0
                if f >= 0:
                    x = raw[r, f]
                    if not np.isnan(x):
                        zb[i, t + 1] = (x - center[f]) * inv_scale[f]
            gb[i] = g[r]
            hb[i] = h[r]
        for i in range(nb):                 # sum
            gr = gb[i]
            hr = hb[i]
            for a in range(D + 1):
                o[a, D + 1] += np.int64(np.rint(gr * zb[i, a] * sg))
                for b in range(a, D + 1):
                    o[a, b] += np.int64(np.rint(hr * zb[i, a] * zb[i, b] * sh))


@njit(cache=True, nogil=True, inline="always")
def _leaf_value(X, r, coef, feat, center, inv_scale, begin, size):
    v = coef[begin]
    for t in range(1, size + 1):
        x = X[r, feat[begin + t]]
        if not np.isnan(x):
            v += coef[begin + t] * ((x - center[begin + t]) * inv_scale[begin + t])
    return v


def add_linear_leaves(margin, k, rows, seg_begin, seg_end, raw, begin, size, coef, feat,
                      center, inv_scale):
    """margin[r, k] += the linear value of each row's leaf j (leaf j's model at
    coef[begin[j]:begin[j] + size[j] + 1], features/centers/inv_scales likewise, entry
    begin[j] being the constant); one leaf a task."""
    _run(_add_leaves, seg_begin.shape[0], margin, k, rows, seg_begin, seg_end, raw, begin, size,
         coef, feat, center, inv_scale)


@njit(cache=True, nogil=True)
def _add_leaves(start, step, n_leaves, margin, k, rows, seg_begin, seg_end, raw, begin, size,
                coef, feat, center, inv_scale):
    for j in range(start, n_leaves, step):
        _add_leaf(j, margin, k, rows, seg_begin, seg_end, raw, begin, size, coef, feat, center,
                  inv_scale)


@njit(cache=True, nogil=True)
def _add_leaf(j, margin, k, rows, seg_begin, seg_end, raw, begin, size, coef, feat, center,
              inv_scale):
    # the leaf's model in arrays of its own first: the compiler cannot tell the margins'
    # stores from the model's loads in the caller's arrays, so it reloaded the model after
    # every row's store (docs/benchmarks-archive.md#figures-behind-code-choices); the same
    # operations in the same order
    n = size[j] + 1
    b0 = begin[j]
    cl, fl = coef[b0:b0 + n].copy(), feat[b0:b0 + n].copy()
    cc, ci = center[b0:b0 + n].copy(), inv_scale[b0:b0 + n].copy()
    for idx in range(seg_begin[j], seg_end[j]):
        r = rows[idx]
        margin[r, k] += _leaf_value(raw, r, cl, fl, cc, ci, 0, n - 1)


#: rows a prediction task walks (ROW_BLOCK of them through a tree together)
PREDICT_BLOCK = 4096


def predict_linear(X, left, right, feature, threshold, default_left, lin_begin, lin_size,
                   coef, feat, center, inv_scale, tree_ptrs, tree_class, out, depth=None):
    """kernels.cpu_tree.predict_raw's walk (x < threshold left, NaN the default way) whose
    leaves are linear where ``lin_size[node] >= 0`` (the model at lin_begin[node]: see
    add_linear_leaves), constant (threshold as float64) elsewhere; blocks of rows a task.
    ``depth``: each tree's depth (cpu_tree.tree_depths; computed when not given)."""
    if depth is None:
        depth = tree_depths(left, right, tree_ptrs)
    n_blocks = (X.shape[0] + PREDICT_BLOCK - 1) // PREDICT_BLOCK
    _run(_predict_blocks, n_blocks, X, left, right, feature, threshold, default_left, lin_begin,
         lin_size, coef, feat, center, inv_scale, tree_ptrs, tree_class, depth, out)


@njit(cache=True, nogil=True)
def _predict_blocks(start, step, n_blocks, X, left, right, feature, threshold, default_left,
                    lin_begin, lin_size, coef, feat, center, inv_scale, tree_ptrs, tree_class,
                    depth, out):
    for b in range(start, n_blocks, step):
        _predict_block(b, X, left, right, feature, threshold, default_left, lin_begin,
                       lin_size, coef, feat, center, inv_scale, tree_ptrs, tree_class, depth,
                       out)


@njit(cache=True, nogil=True)
def _predict_block(b, X, left, right, feature, threshold, default_left, lin_begin, lin_size,
                   coef, feat, center, inv_scale, tree_ptrs, tree_class, depth, out):
    """Rows of block b, ROW_BLOCK at a time through each tree in turn: depth[t] branch-free steps
    (a row at a leaf stays there; cpu_tree.predict_raw's walk, which a row-at-a-time walk's
    mispredicted branches made slower), then each row's leaf value added to its margin.
    A row's trees are added in order, as before: the same sums. The walk is written out here
    as in predict_raw, not shared: a helper called from both (inlined or not) made the
    constant trees' predict slower (docs/benchmarks-archive.md#figures-behind-code-choices)."""
    n_trees = tree_ptrs.shape[0] - 1
    nodes = np.empty(ROW_BLOCK, dtype=np.int64)
    for r0 in range(b * PREDICT_BLOCK, min((b + 1) * PREDICT_BLOCK, X.shape[0]), ROW_BLOCK):
        m = min(ROW_BLOCK, X.shape[0] - r0)
        for t in range(n_trees):
            base = tree_ptrs[t]
            for j in range(m):
                nodes[j] = 0
            for _ in range(depth[t]):
                for j in range(m):
                    i = base + nodes[j]
                    lo = left[i]
                    x = X[r0 + j, feature[i] if lo != -1 else 0]
                    go = (x < threshold[i]) | (np.isnan(x) & default_left[i])
                    hi = right[i]
                    nxt = hi + np.int64(go) * (lo - hi)
                    nodes[j] = nodes[j] if lo == -1 else nxt
            c = tree_class[t]
            for j in range(m):
                i = base + nodes[j]
                if lin_size[i] >= 0:
                    v = _leaf_value(X, r0 + j, coef, feat, center, inv_scale, lin_begin[i],
                                    lin_size[i])
                else:
                    v = np.float64(threshold[i])
                out[r0 + j, c] += v
