"""CPU kernel (numba) for split evaluation over merged integer histograms.

The math lives in dgbdt.tree.split's docstring; this is its loop form. For each node and each
feature the kernel scans the bins twice, as XGBoost's hist evaluator does:

* forward, missing values go right: left = bins 0..b, right = node - left, b = 0..nb-1;
* backward, only when the node has missing values of the feature, missing go left:
  right = bins b+1..nb-1, left = node - right, b = nb-2..-1 (b = -1: every present value right).

A candidate is valid when both sides have hessian >= min_child_weight. Its loss change, rounded to
float32 as XGBoost does, replaces the node's best only when strictly larger, so ties keep the
first candidate in (feature, forward, backward) order. The best starts at 0: a split must gain.

An empty bin (g = h = 0) changes nothing: its candidate has the same sums as the one before it in
the scan, hence the same gain, which cannot be strictly larger; and a first candidate with an
empty side gains exactly 0 (its sides' scores are 0 and the parent's). So the kernel scores
every bin, without a branch on emptiness, and chooses what a scan of the filled bins would.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .threads import kernel_threads, serial_below
from .twins import serial_twin


@njit(cache=True, nogil=True, inline="always")
def threshold_l1(g, alpha):
    """Soft threshold of the gradient sum by the L1 penalty alpha."""
    if g > alpha:
        return g - alpha
    if g < -alpha:
        return g + alpha
    return 0.0


@njit(cache=True, nogil=True)
def leaf_weight(g, h, lam, alpha, max_delta_step, min_child_weight):
    """w* = -T_alpha(G) / (H + lambda), clipped to +-max_delta_step when that is > 0."""
    if h < min_child_weight or h <= 0.0:
        return 0.0
    w = -threshold_l1(g, alpha) / (h + lam)
    if max_delta_step != 0.0 and abs(w) > max_delta_step:
        w = max_delta_step if w > 0 else -max_delta_step
    return w


@njit(cache=True, nogil=True)
def node_gain(g, h, lam, alpha, max_delta_step, min_child_weight):
    """Structure score of a node: T_alpha(G)^2 / (H + lambda), or, with max_delta_step,
    -(2 G w + (H + lambda) w^2) at the clipped weight w (XGBoost's split evaluator; it leaves
    the alpha term out there). 0 for an empty node."""
    if h <= 0.0:
        return 0.0
    if max_delta_step == 0.0:
        t = threshold_l1(g, alpha)
        return t * t / (h + lam)
    w = leaf_weight(g, h, lam, alpha, max_delta_step, min_child_weight)
    return -(2.0 * g * w + (h + lam) * w * w)


def evaluate_splits(hist, hist_ptrs, totals, inv_sg, inv_sh, lam, alpha, max_delta_step,
                    min_child_weight, serial_slots=None):
    """Best split of each node. hist int64 [m, S, 2]; totals int64 [m, 2] (node sums).

    Returns (gain float32 [m], feature int32 [m] (-1: none), split_bin int32 [m],
    default_left bool [m], left int64 [m, 2]).

    Each node's features are scanned in up to ``4 * threads / m`` ranges at once (a level of
    few nodes and many features: wide or sparse data, whose root would be one thread's work);
    the ranges' bests are combined in feature order, replacing only on a strictly larger gain,
    which is the scan's rule, so the result is the one-range scan's for any thread count.
    Levels of fewer than ``serial_slots`` slots (default SERIAL_SLOTS) run on one thread.
    """
    m = hist.shape[0]
    n_features = hist_ptrs.shape[0] - 1
    threads = serial_below(m * hist.shape[1],
                           SERIAL_SLOTS if serial_slots is None else serial_slots)
    n_ranges = max(1, min(n_features, (4 * threads) // max(m, 1), n_features // 64))
    with kernel_threads(threads):
        return _evaluate_ranges(hist, hist_ptrs, totals, inv_sg, inv_sh, lam, alpha,
                                max_delta_step, min_child_weight, n_ranges)


#: levels of fewer histogram slots (nodes x slots) are evaluated on one thread: waking the
#: pool costs more than their scan (kernels.threads.serial_below)
SERIAL_SLOTS = 1 << 15
#: the same where the pool just ran the level's histograms (a shard of SERIAL_ROWS rows or
#: more, backends.cpu): its threads are awake, and a serial scan of 2-4 nodes (a root of 28
#: features x 256 bins stays serial) leaves them time to fall asleep before the next
#: partition wakes them (2-core machine, 50k x 28: 5 % of the fit; issue 47)
WARM_SERIAL_SLOTS = 1 << 13


@njit(cache=True, nogil=True)
def _split_results(n):
    """n best splits, none found yet: gain 0, feature -1, bin, default left, left (G, H)."""
    return (np.zeros(n, dtype=np.float32), np.full(n, -1, dtype=np.int32),
            np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.bool_),
            np.zeros((n, 2), dtype=np.int64))


@njit(cache=True, nogil=True, inline="always")
def combine_ranges(m, n_ranges, t_gain, t_feat, t_bin, t_dleft, t_left,
                   best_gain, best_feat, best_bin, best_dleft, best_left):
    """Node j's best split over its n_ranges feature ranges' bests (task t = j * n_ranges + c),
    in feature order, a strictly larger gain replacing; the left sums are t_left's row (2
    columns, or 2 a target). Serial: m * n_ranges comparisons cost less than waking the
    threads again."""
    for j in range(m):
        for c in range(n_ranges):
            t = j * n_ranges + c
            if t_feat[t] >= 0 and t_gain[t] > best_gain[j]:
                best_gain[j] = t_gain[t]
                best_feat[j] = t_feat[t]
                best_bin[j] = t_bin[t]
                best_dleft[j] = t_dleft[t]
                for c2 in range(t_left.shape[1]):    # not a slice copy: its shape check's
                    best_left[j, c2] = t_left[t, c2]     # message alone compiles for ~1 s


@njit(cache=True, nogil=True, inline="always")
def _scan_gains(sg, sh, tg, th, inv_sg, inv_sh, n, parent, lam, alpha, max_delta_step,
                min_child_weight, plain, gain):
    """gain[b] = float32(score(left b) + score(right b) - parent) for b < n, 0 where a side's
    hessian is below min_child_weight; the left sums (sg, sh) are fixed-point, the node's
    (tg, th). ``plain`` (alpha = max_delta_step = 0): node_gain's G^2 / (H + lambda) written
    out (the same operations, so the same values) as a loop without calls, which the
    compiler vectorizes. The sides' float sums are made here, from the integers, so the scan
    before stores two arrays, not six."""
    if plain:
        for b in range(n):
            gl = sg[b] * inv_sg
            hl = sh[b] * inv_sh
            gr = (tg - sg[b]) * inv_sg
            hr = (th - sh[b]) * inv_sh
            a = gl * gl / (hl + lam) if hl > 0.0 else 0.0
            r = gr * gr / (hr + lam) if hr > 0.0 else 0.0
            ok = hl >= min_child_weight and hr >= min_child_weight
            gain[b] = np.float32(a + r - parent) if ok else np.float32(0.0)
        return
    for b in range(n):
        gl = sg[b] * inv_sg
        hl = sh[b] * inv_sh
        gr = (tg - sg[b]) * inv_sg
        hr = (th - sh[b]) * inv_sh
        if hl >= min_child_weight and hr >= min_child_weight:
            gain[b] = np.float32(
                node_gain(gl, hl, lam, alpha, max_delta_step, min_child_weight)
                + node_gain(gr, hr, lam, alpha, max_delta_step, min_child_weight)
                - parent)
        else:
            gain[b] = np.float32(0.0)


@njit(cache=True, nogil=True, parallel=True)
def _evaluate_ranges(hist, hist_ptrs, totals, inv_sg, inv_sh, lam, alpha, max_delta_step,
                     min_child_weight, n_ranges):
    """evaluate_splits with node j's features cut into ``n_ranges`` ranges, one task each.

    A feature's scan in three loops: the candidates' sums (prefix sums, in order), their
    gains (_scan_gains: independent, vectorized), the first strictly largest. An empty bin
    is a candidate here too: equal to the one before it, it cannot be strictly larger
    (module docstring), so the choice is the skipping scan's."""
    m = hist.shape[0]
    n_features = hist_ptrs.shape[0] - 1
    tasks = m * n_ranges
    t_gain, t_feat, t_bin, t_dleft, t_left = _split_results(tasks)
    wide = 1
    for f in range(n_features):
        wide = max(wide, hist_ptrs[f + 1] - hist_ptrs[f])
    plain = alpha == 0.0 and max_delta_step == 0.0
    for task in prange(tasks):
        j = task // n_ranges
        c = task % n_ranges
        fa = (n_features * c) // n_ranges
        fb = (n_features * (c + 1)) // n_ranges
        tg = totals[j, 0]
        th = totals[j, 1]
        parent = node_gain(tg * inv_sg, th * inv_sh, lam, alpha, max_delta_step, min_child_weight)
        sg = np.empty(wide, dtype=np.int64)      # the candidates' left (G, H) sums
        sh = np.empty(wide, dtype=np.int64)
        gain = np.empty(wide, dtype=np.float32)
        # the task's best in locals, stored once at its end
        bg = np.float32(0.0)
        bf = -1
        bb = 0
        bd = False
        blg = np.int64(0)
        blh = np.int64(0)
        for f in range(fa, fb):
            p0 = hist_ptrs[f]
            nb = hist_ptrs[f + 1] - p0 - 1
            for back in range(2):   # one _scan_gains site: compiled (inlined) once
                if back == 0:       # forward: missing values right
                    lg = np.int64(0)
                    lh = np.int64(0)
                    for b in range(nb):
                        lg += hist[j, p0 + b, 0]
                        lh += hist[j, p0 + b, 1]
                        sg[b] = lg
                        sh[b] = lh
                else:               # backward, missing values left: candidate i (bins
                    if hist[j, p0 + nb, 0] == 0 and hist[j, p0 + nb, 1] == 0:
                        break       # i.. right) at q = nb - 1 - i, in scan order
                    rg = np.int64(0)
                    rh = np.int64(0)
                    for i in range(nb - 1, -1, -1):
                        rg += hist[j, p0 + i, 0]
                        rh += hist[j, p0 + i, 1]
                        q = nb - 1 - i
                        sg[q] = tg - rg
                        sh[q] = th - rh
                _scan_gains(sg, sh, tg, th, inv_sg, inv_sh, nb, parent, lam, alpha,
                            max_delta_step, min_child_weight, plain, gain)
                for q in range(nb):
                    if gain[q] > bg:
                        bg = gain[q]
                        bf = f
                        bb = q if back == 0 else nb - 2 - q
                        bd = back == 1
                        blg = sg[q]
                        blh = sh[q]
        t_gain[task] = bg
        t_feat[task] = bf
        t_bin[task] = bb
        t_dleft[task] = bd
        t_left[task, 0] = blg
        t_left[task, 1] = blh
    best_gain, best_feat, best_bin, best_dleft, best_left = _split_results(m)
    combine_ranges(m, n_ranges, t_gain, t_feat, t_bin, t_dleft, t_left,
                   best_gain, best_feat, best_bin, best_dleft, best_left)
    return best_gain, best_feat, best_bin, best_dleft, best_left


# a one-thread caller (a one-thread Dask worker, a level below SERIAL_SLOTS) runs and compiles
# the serial build only (dgbdt.kernels.twins): a task writes its own t_* entries, no reduction
_evaluate_ranges = serial_twin(_evaluate_ranges)


@njit(cache=True, nogil=True)
def clip_weight(w, lo, hi):
    return lo if w < lo else (hi if w > hi else w)


@njit(cache=True, nogil=True)
def gain_at(g, h, lam, w):
    """-(2 G w + (H + lambda) w^2): XGBoost's gain of a node at weight w (0 when empty)."""
    if h <= 0.0:
        return 0.0
    return -(2.0 * g * w + (h + lam) * w * w)


@njit(cache=True, nogil=True, parallel=True)
def evaluate_splits_monotone(hist, hist_ptrs, totals, inv_sg, inv_sh, lam, alpha, max_delta_step,
                             min_child_weight, monotone, lower, upper):
    """evaluate_splits under monotone constraints (XGBoost's TreeEvaluator): every weight is
    clipped to the node's bounds [lower[j], upper[j]], every gain is taken at the clipped
    weight, and a candidate on a feature with constraint c is kept only where
    c (w_right - w_left) >= 0."""
    m = hist.shape[0]
    n_features = hist_ptrs.shape[0] - 1
    best_gain, best_feat, best_bin, best_dleft, best_left = _split_results(m)
    for j in prange(m):
        tg = totals[j, 0]
        th = totals[j, 1]
        lo, hi = lower[j], upper[j]
        pw = clip_weight(leaf_weight(tg * inv_sg, th * inv_sh, lam, alpha, max_delta_step,
                                  min_child_weight), lo, hi)
        parent = gain_at(tg * inv_sg, th * inv_sh, lam, pw)
        bg = np.float32(0.0)
        for f in range(n_features):
            c = monotone[f]
            p0 = hist_ptrs[f]
            nb = hist_ptrs[f + 1] - p0 - 1
            for scan in range(2):       # 0: missing right (forward), 1: missing left
                if scan == 1 and hist[j, p0 + nb, 0] == 0 and hist[j, p0 + nb, 1] == 0:
                    break
                acc_g = np.int64(0)
                acc_h = np.int64(0)
                for step in range(nb):
                    b = step if scan == 0 else nb - 1 - step
                    acc_g += hist[j, p0 + b, 0]
                    acc_h += hist[j, p0 + b, 1]
                    if scan == 0:
                        lg, lh = acc_g, acc_h
                    else:
                        lg, lh = tg - acc_g, th - acc_h
                    gl, hl = lg * inv_sg, lh * inv_sh
                    gr, hr = (tg - lg) * inv_sg, (th - lh) * inv_sh
                    if hl < min_child_weight or hr < min_child_weight:
                        continue
                    wl = clip_weight(leaf_weight(gl, hl, lam, alpha, max_delta_step,
                                              min_child_weight), lo, hi)
                    wr = clip_weight(leaf_weight(gr, hr, lam, alpha, max_delta_step,
                                              min_child_weight), lo, hi)
                    if (c > 0 and wl > wr) or (c < 0 and wl < wr):
                        continue
                    gain = np.float32(gain_at(gl, hl, lam, wl) + gain_at(gr, hr, lam, wr)
                                      - parent)
                    if gain > bg:
                        bg = gain
                        best_feat[j] = f
                        best_bin[j] = b if scan == 0 else b - 1
                        best_dleft[j] = scan == 1
                        best_left[j, 0] = lg
                        best_left[j, 1] = lh
        best_gain[j] = bg
    return best_gain, best_feat, best_bin, best_dleft, best_left
