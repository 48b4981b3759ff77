"""CPU kernels (numba) for piecewise-linear leaves; the math is dgbdt.tree.linear's docstring.

Arrays only. Shared conventions (beyond dgbdt.kernels.cpu_tree's):

* ``raw`` float32 [n, F]: the shard's raw feature values (the pages keep only bins);
  ``center``, ``inv_scale`` float64 [F] normalize them: x~ = (x - center) * inv_scale, with
  x~ = 0 for a missing value or a feature that may not be a regressor (``xmask`` False).
* Linear histograms are int64 [m, S, 9]: per slot the fixed-point sums of
  (g, h, g p~, h p~, h p~^2, g x~, h x~, h p~ x~, h x~^2) (dgbdt.tree.linear.PAYLOAD), each
  summand rounded once (rint(value * scale), scale the round's power of two for g or h), so
  every sum is exact in any order.
* A node's slope part is given by ``reg_feat`` int64 [m, D] (its regressors, -1 padded),
  ``reg_coef`` float64 [m, D] and ``inv_sp`` float64 [m]: p~ = inv_sp * sum_t coef_t x~_t.
* A linear leaf's value is coef_0 + sum_t coef_t x~_t (terms of missing values left out),
  computed in that order in float64 by training (``add_linear_leaves``) and prediction
  (``predict_linear``) alike, so the training margins equal the model's predictions.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..tree.linear import GP, GX, HP, HPP, HPX, HX, HXX, side_score
from .cpu_data import read_symbol


@njit(cache=True, nogil=True, inline="always")
def _xt(raw, r, f, xmask, center, inv_scale):
    if not xmask[f]:
        return 0.0
    x = raw[r, f]
    if np.isnan(x):
        return 0.0
    return (x - center[f]) * inv_scale[f]


@njit(cache=True, nogil=True, parallel=True)
def linear_histograms(words, bits, n_features, hist_ptrs, rows, g, h, grad, raw, center,
                      inv_scale, xmask, seg_begin, seg_end, reg_feat, reg_coef, inv_sp, sg, sh,
                      n_slots):
    """Linear histograms of the nodes whose rows are ``rows[seg_begin[j]:seg_end[j]]``.

    g, h float64 [n] (class k's gradients), grad int64 [n, 2] (their fixed-point values,
    the plain histograms' summands: entries 0 and 1 are the plain histogram). Pass 1 computes
    each row's p~ and its three p-only summands; pass 2 runs one task per (node, feature),
    each owning its slots of the output (no private copies, no merge).
    """
    m = seg_begin.shape[0]
    n = rows.shape[0]
    ptil = np.zeros(n)
    pq = np.zeros((n, 3), dtype=np.int64)
    D = reg_feat.shape[1]
    for j in range(m):
        for idx in prange(seg_begin[j], seg_end[j]):
            r = rows[idx]
            acc = 0.0
            for t in range(D):
                f = reg_feat[j, t]
                if f < 0:
                    break
                acc += reg_coef[j, t] * _xt(raw, r, f, xmask, center, inv_scale)
            pt = acc * inv_sp[j]
            ptil[r] = pt
            pq[r, 0] = np.int64(np.rint(g[r] * pt * sg))
            pq[r, 1] = np.int64(np.rint(h[r] * pt * sh))
            pq[r, 2] = np.int64(np.rint(h[r] * pt * pt * sh))
    out = np.zeros((m, n_slots, 9), dtype=np.int64)
    mask = np.uint64((1 << bits) - 1)
    nf = np.uint64(n_features)
    view = words.view(np.uint8)
    for task in prange(m * n_features):
        j = task // n_features
        f = task % n_features
        uf = np.uint64(f)
        p0 = hist_ptrs[f]
        for idx in range(seg_begin[j], seg_end[j]):
            r = rows[idx]
            i = np.uint64(r) * nf + uf
            if bits == 8:
                sym = np.int64(view[i])
            else:
                sym = read_symbol(words, i, bits, mask)
            o = out[j, p0 + sym]
            o[0] += grad[r, 0]
            o[1] += grad[r, 1]
            o[GP] += pq[r, 0]
            o[HP] += pq[r, 1]
            o[HPP] += pq[r, 2]
            xt = _xt(raw, r, f, xmask, center, inv_scale)
            if xt != 0.0:
                gr = g[r]
                hr = h[r]
                o[GX] += np.int64(np.rint(gr * xt * sg))
                o[HX] += np.int64(np.rint(hr * xt * sh))
                o[HPX] += np.int64(np.rint(hr * ptil[r] * xt * sh))
                o[HXX] += np.int64(np.rint(hr * xt * xt * sh))
    return out


@njit(cache=True, nogil=True, parallel=True)
def evaluate_linear_splits(hist, hist_ptrs, addable, has_p, inv_sg, inv_sh, lam0, lam1,
                           min_child_weight):
    """Best split of each node by the half-additive linear gain (dgbdt.tree.linear).

    hist int64 [m, S, 9]; addable bool [m, F]: whether feature f enters the candidate's basis
    as x~ (it may join the node's regressors); has_p bool [m]: whether p~ does (the node has
    regressors). Scans as kernels.cpu_split (forward: missing right; backward, when the
    feature has missing values in the node: missing left); a candidate needs both sides'
    hessian >= min_child_weight; ties keep the first candidate; the best starts at 0.
    Returns (gain float32 [m], feature int32 [m] (-1: none), split_bin int32 [m],
    default_left bool [m], left int64 [m, 9]).
    """
    m = hist.shape[0]
    n_features = hist_ptrs.shape[0] - 1
    best_gain = np.zeros(m, dtype=np.float32)
    best_feat = np.full(m, -1, dtype=np.int32)
    best_bin = np.zeros(m, dtype=np.int32)
    best_dleft = np.zeros(m, dtype=np.bool_)
    best_left = np.zeros((m, 9), dtype=np.int64)
    for j in prange(m):
        A = np.zeros((3, 3))
        bv = np.zeros(3)
        w = np.zeros(3)
        L = np.zeros((3, 3))
        keep = np.zeros(3, dtype=np.bool_)
        y = np.zeros(3)
        tot = np.zeros(9, dtype=np.int64)
        lft = np.zeros(9, dtype=np.int64)
        rgt = np.zeros(9, dtype=np.int64)
        for s in range(hist_ptrs[0], hist_ptrs[1]):
            for c in range(9):
                tot[c] += hist[j, s, c]
        usep = has_p[j]
        parent = side_score(tot, inv_sg, inv_sh, lam0, lam1, usep, False, A, bv, w, L, keep, y)
        bg = np.float32(0.0)
        for f in range(n_features):
            p0 = hist_ptrs[f]
            nb = hist_ptrs[f + 1] - p0 - 1
            usex = addable[j, f]
            for c in range(9):
                tot[c] = 0
                lft[c] = 0
            for s in range(p0, p0 + nb + 1):
                for c in range(9):
                    tot[c] += hist[j, s, c]
            for b in range(nb):
                for c in range(9):
                    lft[c] += hist[j, p0 + b, c]
                    rgt[c] = tot[c] - lft[c]
                if lft[1] * inv_sh >= min_child_weight and rgt[1] * inv_sh >= min_child_weight:
                    gain = np.float32(
                        side_score(lft, inv_sg, inv_sh, lam0, lam1, usep, usex, A, bv, w, L,
                                   keep, y)
                        + side_score(rgt, inv_sg, inv_sh, lam0, lam1, usep, usex, A, bv, w, L,
                                     keep, y)
                        - parent)
                    if gain > bg:
                        bg = gain
                        best_feat[j] = f
                        best_bin[j] = b
                        best_dleft[j] = False
                        for c in range(9):
                            best_left[j, c] = lft[c]
            if hist[j, p0 + nb, 0] == 0 and hist[j, p0 + nb, 1] == 0:
                continue
            for c in range(9):
                rgt[c] = 0
            for i in range(nb - 1, -1, -1):
                for c in range(9):
                    rgt[c] += hist[j, p0 + i, c]
                    lft[c] = tot[c] - rgt[c]
                if lft[1] * inv_sh >= min_child_weight and rgt[1] * inv_sh >= min_child_weight:
                    gain = np.float32(
                        side_score(lft, inv_sg, inv_sh, lam0, lam1, usep, usex, A, bv, w, L,
                                   keep, y)
                        + side_score(rgt, inv_sg, inv_sh, lam0, lam1, usep, usex, A, bv, w, L,
                                     keep, y)
                        - parent)
                    if gain > bg:
                        bg = gain
                        best_feat[j] = f
                        best_bin[j] = i - 1
                        best_dleft[j] = True
                        for c in range(9):
                            best_left[j, c] = lft[c]
        best_gain[j] = bg
    return best_gain, best_feat, best_bin, best_dleft, best_left


@njit(cache=True, nogil=True, parallel=True)
def feature_totals(hist, hist_ptrs, features):
    """int64 [m, 9]: node j's sums over every slot of feature ``features[j]``."""
    m = hist.shape[0]
    out = np.zeros((m, 9), dtype=np.int64)
    for j in prange(m):
        f = features[j]
        for s in range(hist_ptrs[f], hist_ptrs[f + 1]):
            for c in range(9):
                out[j, c] += hist[j, s, c]
    return out


@njit(cache=True, nogil=True, parallel=True)
def leaf_sums(rows, seg_begin, seg_end, raw, g, h, center, inv_scale, feats, sg, sh,
              n_chunks):
    """Fixed-point sums of each leaf's full ridge system: int64 [Lf, D + 1, D + 2], entries
    [:, :D+1, :D+1] sum rint(h z_a z_b sh), column D + 1 sums rint(g z_a sg), z = (1, x~ of
    the leaf's regressors ``feats`` [Lf, D], -1 padded; a missing value counts 0)."""
    nl = seg_begin.shape[0]
    D = feats.shape[1]
    part = np.zeros((nl * n_chunks, D + 1, D + 2), dtype=np.int64)
    for task in prange(nl * n_chunks):
        j = task // n_chunks
        c = task % n_chunks
        length = seg_end[j] - seg_begin[j]
        lo = seg_begin[j] + (length * c) // n_chunks
        hi = seg_begin[j] + (length * (c + 1)) // n_chunks
        z = np.zeros(D + 1)
        z[0] = 1.0
        o = part[task]
        for idx in range(lo, hi):
            r = rows[idx]
            for t in range(D):
                f = feats[j, t]
                z[t + 1] = 0.0
                if f >= 0:
                    x = raw[r, f]
                    if not np.isnan(x):
                        z[t + 1] = (x - center[f]) * inv_scale[f]
            gr = g[r]
            hr = h[r]
            for a in range(D + 1):
                o[a, D + 1] += np.int64(np.rint(gr * z[a] * sg))
                for b in range(a, D + 1):
                    o[a, b] += np.int64(np.rint(hr * z[a] * z[b] * sh))
    out = np.zeros((nl, D + 1, D + 2), dtype=np.int64)
    for task in range(nl * n_chunks):
        out[task // n_chunks] += part[task]
    for j in range(nl):
        for a in range(D + 1):
            for b in range(a):
                out[j, a, b] = out[j, b, a]
    return out


@njit(cache=True, nogil=True, inline="always")
def _leaf_value(X, r, coef, feat, center, inv_scale, begin, size):
    v = coef[begin]
    for t in range(1, size + 1):
        x = X[r, feat[begin + t]]
        if not np.isnan(x):
            v += coef[begin + t] * ((x - center[begin + t]) * inv_scale[begin + t])
    return v


@njit(cache=True, nogil=True, parallel=True)
def add_linear_leaves(margin, k, rows, seg_begin, seg_end, raw, begin, size, coef, feat,
                      center, inv_scale):
    """margin[r, k] += the linear value of each row's leaf j (leaf j's model at
    coef[begin[j]:begin[j] + size[j] + 1], features/centers/inv_scales likewise, entry
    begin[j] being the constant)."""
    for j in prange(seg_begin.shape[0]):
        for idx in range(seg_begin[j], seg_end[j]):
            r = rows[idx]
            margin[r, k] += _leaf_value(raw, r, coef, feat, center, inv_scale, begin[j],
                                        size[j])


@njit(cache=True, nogil=True, parallel=True)
def predict_linear(X, left, right, feature, threshold, default_left, lin_begin, lin_size,
                   coef, feat, center, inv_scale, tree_ptrs, tree_class, out):
    """kernels.cpu_tree.predict_raw's walk (x < threshold left, NaN the default way) whose
    leaves are linear where ``lin_size[node] >= 0`` (the model at lin_begin[node]: see
    add_linear_leaves), constant (threshold as float64) elsewhere."""
    n_rows = X.shape[0]
    n_trees = tree_ptrs.shape[0] - 1
    for r in prange(n_rows):
        for t in range(n_trees):
            base = tree_ptrs[t]
            node = 0
            while left[base + node] != -1:
                i = base + node
                x = X[r, feature[i]]
                if x < threshold[i] or (np.isnan(x) and default_left[i]):
                    node = left[i]
                else:
                    node = right[i]
            i = base + node
            if lin_size[i] >= 0:
                v = _leaf_value(X, r, coef, feat, center, inv_scale, lin_begin[i],
                                lin_size[i])
            else:
                v = np.float64(threshold[i])
            out[r, tree_class[t]] += v
