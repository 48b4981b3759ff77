"""CPU kernel (numba) for the split evaluation of vector-leaf trees (XGBoost's
``multi_strategy="multi_output_tree"``; dgbdt.tree.multi_target holds the math).

A node's histogram has T targets: int64 ``[m, S, 2T]``, slot s of target t holding the
fixed-point sums ``(G_t, H_t)`` at ``[.., s, 2t]`` and ``[.., s, 2t + 1]`` (scales
``1 / inv_sg[t]``, ``1 / inv_sh[t]``). A candidate's loss change is the sum over the targets
of the single-target terms at the float32 weights, as XGBoost 3.2's HistMultiEvaluator::

    w_t = float32(CalcWeight(G_t, H_t))       (0 when H_t < min_child_weight or H_t <= 0)
    score(side) = sum_t -w_t * T_alpha(G_t)    (= T_alpha(G_t)^2 / (H_t + lambda) unclipped)
    loss_chg = float32(score(L) + score(R) - score(parent))

Candidates are scanned as the single-target kernel scans them (forward: missing right; backward,
when some target has missing values: missing left), a strictly larger loss change replacing the
best, so ties keep the first feature and scan. There is no per-candidate min_child_weight test
(XGBoost's multi-target evaluator has none: a target whose side is too light gets weight 0,
hence no score); an empty bin (every target's g = h = 0) repeats the previous candidate and is
skipped.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from .cpu_split import combine_ranges, leaf_weight, threshold_l1


@njit(cache=True, nogil=True, inline="always")
def _score(sums, inv_sg, inv_sh, lam, alpha, max_delta_step, min_child_weight):
    """sum_t -float32(w_t) * T_alpha(G_t) of fixed-point sums [2T] (module doc)."""
    out = 0.0
    for t in range(inv_sg.shape[0]):
        g = sums[2 * t] * inv_sg[t]
        h = sums[2 * t + 1] * inv_sh[t]
        w = np.float64(np.float32(leaf_weight(g, h, lam, alpha, max_delta_step,
                                              min_child_weight)))
        out += -w * threshold_l1(g, alpha)
    return out


@njit(cache=True, nogil=True, inline="always")
def _empty(hist, j, s, T2):
    for c in range(T2):
        if hist[j, s, c] != 0:
            return False
    return True


@njit(cache=True, nogil=True)
def node_scores(totals, inv_sg, inv_sh, lam, alpha, max_delta_step, min_child_weight):
    """score(parent) of each node's fixed-point totals [m, 2T] (module doc)."""
    out = np.zeros(totals.shape[0])
    for j in range(totals.shape[0]):
        out[j] = _score(totals[j], inv_sg, inv_sh, lam, alpha, max_delta_step,
                        min_child_weight)
    return out


def evaluate_multi_splits(hist, hist_ptrs, totals, inv_sg, inv_sh, lam, alpha, max_delta_step,
                          min_child_weight):
    """Best split of each node of a T-target histogram [m, S, 2T] with totals [m, 2T].

    Returns (gain float32 [m], feature int32 [m] (-1: none), split_bin int32 [m],
    default_left bool [m], left int64 [m, 2T]); a node's features are cut into ranges
    evaluated at once and combined in feature order by the scan's rule (strictly larger),
    so the result does not depend on the thread count.
    """
    m = hist.shape[0]
    n_features = hist_ptrs.shape[0] - 1
    n_ranges = max(1, min(n_features, (4 * numba.get_num_threads()) // max(m, 1),
                          n_features // 16))
    return _evaluate(np.ascontiguousarray(hist), np.ascontiguousarray(hist_ptrs, np.int64),
                     np.ascontiguousarray(totals, np.int64),
                     np.ascontiguousarray(inv_sg, np.float64),
                     np.ascontiguousarray(inv_sh, np.float64), float(lam), float(alpha),
                     float(max_delta_step), float(min_child_weight), n_ranges)


@njit(cache=True, nogil=True, parallel=True)
def _evaluate(hist, hist_ptrs, totals, inv_sg, inv_sh, lam, alpha, max_delta_step,
              min_child_weight, n_ranges):
    m = hist.shape[0]
    T2 = hist.shape[2]
    n_features = hist_ptrs.shape[0] - 1
    tasks = m * n_ranges
    t_gain = np.zeros(tasks, np.float32)
    t_feat = np.full(tasks, -1, np.int32)
    t_bin = np.zeros(tasks, np.int32)
    t_dleft = np.zeros(tasks, np.bool_)
    t_left = np.zeros((tasks, T2), np.int64)
    parents = node_scores(totals, inv_sg, inv_sh, lam, alpha, max_delta_step, min_child_weight)
    for task in prange(tasks):
        j = task // n_ranges
        c = task % n_ranges
        fa = (n_features * c) // n_ranges
        fb = (n_features * (c + 1)) // n_ranges
        tot = totals[j]
        parent = parents[j]
        acc = np.zeros(T2, np.int64)
        other = np.zeros(T2, np.int64)
        bg = np.float32(0.0)
        for f in range(fa, fb):
            p0 = hist_ptrs[f]
            nb = hist_ptrs[f + 1] - p0 - 1
            for scan in range(2):       # 0: missing right (forward), 1: missing left
                if scan == 1 and _empty(hist, j, p0 + nb, T2):
                    break
                acc[:] = 0
                for step in range(nb):
                    b = step if scan == 0 else nb - 1 - step
                    if _empty(hist, j, p0 + b, T2):
                        continue        # the previous candidate again (module doc)
                    for q in range(T2):
                        acc[q] += hist[j, p0 + b, q]
                        other[q] = tot[q] - acc[q]
                    gain = np.float32(
                        _score(acc, inv_sg, inv_sh, lam, alpha, max_delta_step,
                               min_child_weight)
                        + _score(other, inv_sg, inv_sh, lam, alpha, max_delta_step,
                                 min_child_weight) - parent)
                    if gain > bg:
                        bg = gain
                        t_feat[task] = f
                        if scan == 0:
                            t_bin[task] = b
                            t_dleft[task] = False
                            t_left[task, :] = acc
                        else:
                            t_bin[task] = b - 1
                            t_dleft[task] = True
                            t_left[task, :] = other
        t_gain[task] = bg
    best_gain = np.zeros(m, np.float32)
    best_feat = np.full(m, -1, np.int32)
    best_bin = np.zeros(m, np.int32)
    best_dleft = np.zeros(m, np.bool_)
    best_left = np.zeros((m, T2), np.int64)
    combine_ranges(m, n_ranges, t_gain, t_feat, t_bin, t_dleft, t_left,
                   best_gain, best_feat, best_bin, best_dleft, best_left)
    return best_gain, best_feat, best_bin, best_dleft, best_left
