"""CPU kernels (numba) for categorical features: their split search and prediction.

A categorical split sends the rows whose category is in the split's *set* right and the other
categories left (XGBoost's ``common::Decision``: "go left if it is not the matching
category"); missing values go the default way. Feature f's bins are its codes 0..nb-1
(dgbdt.data.quantize), its histogram slot ``hist_ptrs[f] + nb`` holds the missing rows.

Split search (XGBoost's HistEvaluator, src/tree/hist/evaluate_splits.h), for a node with sums
(G, H) and the gain of the numerical kernel (dgbdt.kernels.cpu_split):

* ``nb < max_cat_to_onehot`` (one-hot): for each category i in order, the set {i} with missing
  left (right = bin i, default left), then with missing right (right = bin i + missing);
* otherwise (partition-based): the categories sorted, stably, by their weight
  ``float32(w*(G_i, H_i))`` ascending; with ``n = min(max_cat_threshold, nb)``, a forward scan
  puts the first k sorted categories right and missing left (k = 1..n-1), then a backward scan
  puts the last k sorted categories left and the rest, missing included, right (k = 1..n-1,
  set: the first nb - k sorted categories).

A candidate needs both sides' hessian >= min_child_weight; it replaces the node's best when its
float32 gain is strictly larger, so ties keep the first in (feature, scan) order, as XGBoost.
Under monotone constraints (``bounded``) every weight is clipped to the node's bounds and the
gains are taken at the clipped weights, and a feature with constraint c needs
c (w_right - w_left) >= 0: XGBoost's TreeEvaluator, as kernels.cpu_split's monotone kernel.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .cpu_split import clip_weight, gain_at, leaf_weight, node_gain


@njit(cache=True, nogil=True)
def _gain(lg, lh, tg, th, inv_sg, inv_sh, lam, alpha, mds, mcw, parent, bounded, lo, hi, c):
    """float32 loss change of left (lg, lh) / right (total - left) fixed-point sums, or -1 when
    a side's hessian is below min_child_weight (or, bounded, the constraint c fails)."""
    hl = lh * inv_sh
    hr = (th - lh) * inv_sh
    if hl < mcw or hr < mcw:
        return np.float32(-1.0)
    gl, gr = lg * inv_sg, (tg - lg) * inv_sg
    if not bounded:
        return np.float32(node_gain(gl, hl, lam, alpha, mds, mcw)
                          + node_gain(gr, hr, lam, alpha, mds, mcw) - parent)
    wl = clip_weight(leaf_weight(gl, hl, lam, alpha, mds, mcw), lo, hi)
    wr = clip_weight(leaf_weight(gr, hr, lam, alpha, mds, mcw), lo, hi)
    if (c > 0 and wl > wr) or (c < 0 and wl < wr):
        return np.float32(-1.0)
    return np.float32(gain_at(gl, hl, lam, wl) + gain_at(gr, hr, lam, wr) - parent)


@njit(cache=True, nogil=True, parallel=True)
def evaluate_categorical(hist, hist_ptrs, totals, inv_sg, inv_sh, lam, alpha, max_delta_step,
                         min_child_weight, features, max_cat_to_onehot, max_cat_threshold,
                         width, bounded, monotone, lower, upper):
    """Best categorical split of each node over the categorical ``features`` (ascending);
    ``bounded``: monotone constraints (``monotone`` int8 [F], the nodes' weight bounds
    ``lower``/``upper`` [m]).

    Returns (gain float32 [m], feature int32 [m] (-1: none), default_left bool [m],
    left int64 [m, 2], cats uint8 [m, width]: 1 for the categories going right).
    """
    m = hist.shape[0]
    best_gain = np.zeros(m, dtype=np.float32)
    best_feat = np.full(m, -1, dtype=np.int32)
    best_dleft = np.zeros(m, dtype=np.bool_)
    best_left = np.zeros((m, 2), dtype=np.int64)
    best_cats = np.zeros((m, width), dtype=np.uint8)
    for j in prange(m):
        tg = totals[j, 0]
        th = totals[j, 1]
        lo, hi = lower[j], upper[j]
        if bounded:
            pw = clip_weight(leaf_weight(tg * inv_sg, th * inv_sh, lam, alpha, max_delta_step,
                                      min_child_weight), lo, hi)
            parent = gain_at(tg * inv_sg, th * inv_sh, lam, pw)
        else:
            parent = node_gain(tg * inv_sg, th * inv_sh, lam, alpha, max_delta_step,
                               min_child_weight)
        bg = np.float32(0.0)
        for fi in range(features.shape[0]):
            f = features[fi]
            c = monotone[f]
            p0 = hist_ptrs[f]
            nb = hist_ptrs[f + 1] - p0 - 1
            mg = hist[j, p0 + nb, 0]
            mh = hist[j, p0 + nb, 1]
            # (kind, a, b): kind 0 one-hot category a; 1 sorted prefix [0, a) right
            kind, arg, found, dleft = -1, 0, False, False
            lg_best, lh_best = np.int64(0), np.int64(0)
            order = np.arange(nb)
            if nb < max_cat_to_onehot:
                for i in range(nb):
                    for missing_left in (True, False):
                        rg = hist[j, p0 + i, 0]
                        rh = hist[j, p0 + i, 1]
                        if not missing_left:
                            rg += mg
                            rh += mh
                        gain = _gain(tg - rg, th - rh, tg, th, inv_sg, inv_sh, lam, alpha,
                                     max_delta_step, min_child_weight, parent, bounded, lo, hi, c)
                        if gain > bg:
                            bg, found, kind, arg, dleft = gain, True, 0, i, missing_left
                            lg_best, lh_best = tg - rg, th - rh
            else:
                key = np.empty(nb, dtype=np.float32)
                for i in range(nb):
                    key[i] = np.float32(leaf_weight(hist[j, p0 + i, 0] * inv_sg,
                                                    hist[j, p0 + i, 1] * inv_sh, lam, alpha,
                                                    max_delta_step, min_child_weight))
                order = np.argsort(key, kind="mergesort")
                n = min(max_cat_threshold, nb)
                rg, rh = np.int64(0), np.int64(0)
                for k in range(n - 1):               # forward: sorted prefix right
                    rg += hist[j, p0 + order[k], 0]
                    rh += hist[j, p0 + order[k], 1]
                    gain = _gain(tg - rg, th - rh, tg, th, inv_sg, inv_sh, lam, alpha,
                                 max_delta_step, min_child_weight, parent, bounded, lo, hi, c)
                    if gain > bg:
                        bg, found, kind, arg, dleft = gain, True, 1, k + 1, True
                        lg_best, lh_best = tg - rg, th - rh
                lg, lh = np.int64(0), np.int64(0)
                for k in range(n - 1):               # backward: sorted suffix left
                    lg += hist[j, p0 + order[nb - 1 - k], 0]
                    lh += hist[j, p0 + order[nb - 1 - k], 1]
                    gain = _gain(lg, lh, tg, th, inv_sg, inv_sh, lam, alpha,
                                 max_delta_step, min_child_weight, parent, bounded, lo, hi, c)
                    if gain > bg:
                        bg, found, kind, arg, dleft = gain, True, 1, nb - 1 - k, False
                        lg_best, lh_best = lg, lh
            if found:
                best_feat[j] = f
                best_dleft[j] = dleft
                best_left[j, 0] = lg_best
                best_left[j, 1] = lh_best
                best_cats[j, :] = 0
                if kind == 0:
                    best_cats[j, arg] = 1
                else:
                    for k in range(arg):
                        best_cats[j, order[k]] = 1
        best_gain[j] = bg
    return best_gain, best_feat, best_dleft, best_left, best_cats


@njit(cache=True, nogil=True, inline="always")
def goes_left_cat(x, dleft, cats, begin, size):
    """XGBoost's decision at a categorical node for the raw value x: NaN the default way; a
    value outside [0, 2^24 - 1) or at/after the node's set size, or not in the set, left."""
    if np.isnan(x):
        return dleft
    if x < 0 or x >= 16777216.0 - 1.0:
        return True
    c = np.int64(x)
    if c >= size:
        return True
    return cats[begin + c] == 0


@njit(cache=True, nogil=True, parallel=True)
def predict_raw_cat(X, left, right, feature, threshold, default_left, leaf_value, is_cat,
                    cat_begin, cat_size, cats, tree_ptrs, tree_class, out, leaf_out, want_leaf):
    """dgbdt.kernels.cpu_tree.predict_raw for trees with categorical splits: a node with
    ``is_cat`` sends x right iff ``cats[cat_begin + x]`` (its set as one byte per code up to
    ``cat_size``), NaN the default way; the others x < threshold left. A row at a time."""
    n_rows = X.shape[0]
    n_trees = tree_ptrs.shape[0] - 1
    for r in prange(n_rows):
        for t in range(n_trees):
            base = tree_ptrs[t]
            node = 0
            while left[base + node] != -1:
                i = base + node
                x = X[r, feature[i]]
                if is_cat[i]:
                    go = goes_left_cat(x, default_left[i], cats, cat_begin[i], cat_size[i])
                elif np.isnan(x):
                    go = default_left[i]
                else:
                    go = x < threshold[i]
                node = left[i] if go else right[i]
            out[r, tree_class[t]] += leaf_value[base + node]
            if want_leaf:
                leaf_out[r, t] = node
