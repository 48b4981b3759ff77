"""The CPU kernels of the learning-to-rank objectives (dgbdt.objectives.ranking): LambdaMART
gradients of every query group, XGBoost 3.x's arithmetic (src/objective/lambdarank_obj.{h,cc}),
one group per iteration of a parallel loop (a group's gradients depend on its rows only, so the
result does not depend on the thread count or on which groups a partition holds).

As XGBoost, the predictions are float32 (its ``predt``), a pair's gradient and hessian are
computed in float64 and rounded to float32, and each row accumulates its pairs in float32 in the
order XGBoost visits them; the group's normalization and weight are applied after.

The groups are cut into contiguous chunks of about equal rows, one per thread
(``lambda_gradients_threaded``; the kernel releases the GIL): each group is computed whole by
one thread into its own rows, so the result is the same for any thread count.

``method``: 0 ``topk`` (every pair with at least one of the model's top ``k`` rows), 1 ``mean``
(``k`` random partners with another label per row; the draws come from a counter-based hash of
(seed, round, query id, draw number), not from XGBoost's minstd_rand stream).
``loss``: 0 ``rank:ndcg`` (|delta NDCG|), 1 ``rank:pairwise`` (1), 2 ``rank:map`` (|delta AP|).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

_EPS64 = 1e-16
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: (ti, tj, li, lj) of ``lambda_gradients`` without position debiasing
NO_BIAS = (np.empty(0, np.float64),) * 4


@numba.njit(cache=True, inline="always")
def _mix(z):
    """splitmix64's finalizer: a bijective 64-bit mix."""
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True)
def pair_draw(seed, epoch, qid, counter, n):
    """The ``counter``-th partner draw of query ``qid`` in round ``epoch``: uniform in [0, n)."""
    h = _mix(np.uint64(seed))
    h = _mix(h ^ np.uint64(epoch))
    h = _mix(h ^ np.uint64(qid))
    h = _mix(h ^ np.uint64(counter))
    return np.int64(h % np.uint64(n))


@numba.njit(cache=True)
def discount_table(n):
    """float64 [n]: NDCG's position discounts ``1 / log2(i + 2)`` (the GPU kernel takes this
    table from here, so both use the same log2)."""
    discount = np.empty(n, dtype=np.float64)
    for i in range(n):
        discount[i] = 1.0 / np.log2(float(i) + 2.0)
    return discount


@numba.njit(cache=True, inline="always")
def _sigmoid32(x):
    """XGBoost's common::Sigmoid(float): float32 arithmetic."""
    x = min(-x, np.float32(88.7))
    denom = np.float32(np.exp(x)) + np.float32(1.0) + np.float32(1e-16)
    return np.float32(1.0) / denom


@numba.njit(cache=True, inline="always")
def _gain(y, exp_gain):
    if exp_gain:
        return float((np.uint32(1) << np.uint32(y)) - np.uint32(1))
    return float(y)


@numba.njit(cache=True)
def _group(loss, method, k, exp_gain, normalize, score_norm, seed, epoch, qid,
           p, y, g, h, discount, w, w_norm, ti, tj, li, lj):
    """One query's gradients into g, h (float32, zeroed here); p, y: its float32 predictions
    and labels; w (float32) its weight, w_norm the training's n_queries / sum of weights.

    ``ti``, ``tj`` (float64 [P], P = 0 when biased): the position-bias ratios t+ and t- of
    the first P positions (row order within the query); with P > 0 a pair whose two rows are
    both among those positions has its lambda and hessian divided by ``t+[high] t-[low]``
    (when both are >= 1e-16), and its cost ``log(1 / (1 - sigma)) |delta Z|`` is added to
    ``li[high] += cost / t-[low]`` and ``lj[low] += cost / t+[high]`` (float64 [cnt], zeroed
    here): XGBoost's LambdaGrad<unbiased> and CalcLambdaForGroup, eqs. 30-31 of Hu et al."""
    cnt = p.shape[0]
    n_pos = ti.shape[0]
    for i in range(cnt):
        g[i] = np.float32(0.0)
        h[i] = np.float32(0.0)
    if n_pos > 0:
        for i in range(cnt):
            li[i] = 0.0
            lj[i] = 0.0
    if cnt == 0:
        return
    rank = np.argsort(-p, kind="mergesort")          # stable, descending (ArgSort greater)
    ranked_y = np.empty(cnt, dtype=np.float32)
    for r in range(cnt):
        ranked_y[r] = y[rank[r]]
    inv_idcg = 0.0
    n_rel = np.empty(0, dtype=np.float64)
    acc = np.empty(0, dtype=np.float64)
    if loss == 0:
        by_label = np.argsort(-y, kind="mergesort")
        top = cnt if method == 1 else min(cnt, k)
        idcg = 0.0
        for i in range(top):
            idcg += discount[i] * _gain(y[by_label[i]], exp_gain)
        inv_idcg = 0.0 if idcg == 0.0 else 1.0 / idcg
    elif loss == 2:
        n_rel = np.empty(cnt, dtype=np.float64)
        acc = np.empty(cnt, dtype=np.float64)
        n_rel[0] = ranked_y[0]
        acc[0] = ranked_y[0] / 1.0
        for r in range(1, cnt):
            n_rel[r] = n_rel[r - 1] + ranked_y[r]
            acc[r] = acc[r - 1] + ranked_y[r] / float(r + 1)
    best = p[rank[0]]
    worst = p[rank[cnt - 1]]
    sum_lambda = 0.0

    if method == 0:
        n_first = min(cnt, k)
        n_pairs = 0
        for i in range(n_first):
            n_pairs += cnt - 1 - i
    else:
        n_pairs = 0
    # the pairs as (rank position i, rank position j), in XGBoost's order
    if method == 1:
        ysorted = np.argsort(-ranked_y, kind="mergesort")
        pi = np.empty(cnt * k, dtype=np.int64)
        pj = np.empty(cnt * k, dtype=np.int64)
        counter = 0
        i = 0
        while i < cnt:
            j = i + 1
            while j < cnt and ranked_y[ysorted[i]] == ranked_y[ysorted[j]]:
                j += 1
            n_lefts = i
            n_rights = cnt - j
            if n_lefts + n_rights > 0:
                for _ in range(k):
                    for pair_idx in range(i, j):
                        ridx = pair_draw(seed, epoch, qid, counter, n_lefts + n_rights)
                        counter += 1
                        if ridx >= n_lefts:
                            ridx = ridx - i + j
                        pi[n_pairs] = ysorted[pair_idx]
                        pj[n_pairs] = ysorted[ridx]
                        n_pairs += 1
            i = j
    else:
        pi = np.empty(n_pairs, dtype=np.int64)
        pj = np.empty(n_pairs, dtype=np.int64)
        t = 0
        for i in range(min(cnt, k)):
            for j in range(i + 1, cnt):
                pi[t] = i
                pj[t] = j
                t += 1

    for t in range(n_pairs):
        rank_high = pi[t]
        rank_low = pj[t]
        if ranked_y[rank_high] == ranked_y[rank_low]:
            continue
        if ranked_y[rank_high] < ranked_y[rank_low]:
            rank_high, rank_low = rank_low, rank_high
        idx_high = rank[rank_high]
        idx_low = rank[rank_low]
        y_high = ranked_y[rank_high]
        y_low = ranked_y[rank_low]
        s_high = p[idx_high]
        s_low = p[idx_low]
        delta_score = float(abs(s_high - s_low))
        sig = float(_sigmoid32(s_high - s_low))
        if loss == 0:
            gh = _gain(y_high, exp_gain)
            gl = _gain(y_low, exp_gain)
            dh = discount[rank_high]
            dl = discount[rank_low]
            delta = abs(((gh * dh + gl * dl) - (gl * dh + gh * dl)) * inv_idcg)
        elif loss == 1:
            delta = 1.0
        else:
            rh = rank_high
            rl = rank_low
            yh = y_high
            yl = y_low
            if rh > rl:
                rh, rl = rl, rh
                yh, yl = yl, yh
            r_h = float(rh) + 1.0
            r_l = float(rl) + 1.0
            n_total = n_rel[cnt - 1]
            m = n_rel[rl]
            nn = n_rel[rh]
            b = acc[rl - 1] - acc[rh]
            if yh < yl:
                delta = abs(((m / r_l - (nn + 1.0) / r_h) - b) / n_total)
            else:
                delta = abs(((nn / r_h - m / r_l) + b) / n_total)
        if score_norm and best != worst:
            delta /= (delta_score + 0.01)
        lam64 = (sig - 1.0) * delta
        hes64 = max(sig * (1.0 - sig), _EPS64) * delta * 2.0
        if n_pos > 0 and idx_high < n_pos and idx_low < n_pos:
            # the pair's cost -log(1 - sigma) |delta Z| (1 / 0 is inf in C: as XGBoost)
            tail = 1.0 - sig
            cost = (np.log(1.0 / tail) if tail != 0.0 else np.inf) * delta
            if tj[idx_low] >= _EPS64 and ti[idx_high] >= _EPS64:
                bias = ti[idx_high] * tj[idx_low]
                lam64 /= bias
                hes64 /= bias
            if tj[idx_low] >= _EPS64:
                li[idx_high] += cost / tj[idx_low]
            if ti[idx_high] >= _EPS64:
                lj[idx_low] += cost / ti[idx_high]
        lam = np.float32(lam64)
        hes = np.float32(hes64)
        g[idx_high] += lam
        h[idx_high] += hes
        g[idx_low] += -lam
        h[idx_low] += hes
        sum_lambda += -2.0 * float(lam)

    if normalize:
        norm = 1.0
        if method == 1:
            norm = 1.0 / float(k)
        elif sum_lambda > 0.0:
            norm = np.log2(1.0 + sum_lambda) / sum_lambda
        if norm != 1.0:
            for i in range(cnt):
                g[i] = np.float32(float(g[i]) * norm)
                h[i] = np.float32(float(h[i]) * norm)
    # XGBoost's gpair * w * w_norm: a float32 product, then one in double rounded to float32
    for i in range(cnt):
        g[i] = np.float32(float(g[i] * w) * w_norm)
        h[i] = np.float32(float(h[i] * w) * w_norm)


@numba.njit(cache=True, nogil=True)
def lambda_gradients(loss, method, k, exp_gain, normalize, score_norm, seed, epoch,
                     gptr, qids, pred, label, g, h, qw, w_norm, ti, tj, li, lj):
    """Every group's gradients: group ``q`` is rows ``gptr[q]:gptr[q + 1]`` with query id
    ``qids[q]`` and weight ``qw[q]`` (float32); ``pred``, ``label`` float32 [n]; writes
    float32 ``g``, ``h`` [n]. Position debiasing (``_group``): ``ti``, ``tj`` float64 [P]
    (P = 0: off) in, each row's cost sums ``li``, ``lj`` float64 [n if P else 0] out."""
    n_groups = gptr.shape[0] - 1
    longest = 0
    for q in range(n_groups):
        longest = max(longest, gptr[q + 1] - gptr[q])
    discount = discount_table(longest)
    for q in range(n_groups):
        a = gptr[q]
        b = gptr[q + 1]
        _group(loss, method, k, exp_gain, normalize, score_norm, seed, epoch, qids[q],
               pred[a:b], label[a:b], g[a:b], h[a:b], discount, qw[q], w_norm, ti, tj,
               li[a:b], lj[a:b])


def lambda_gradients_threaded(loss, method, k, exp_gain, normalize, score_norm, seed, epoch,
                              gptr, qids, pred, label, g, h, qw, w_norm, threads: int = 0,
                              bias=None):
    """``lambda_gradients`` over chunks of whole groups on ``threads`` threads (0: numba's
    thread count, the training's nthread). ``bias``: None, or (ti, tj, li, lj) of position
    debiasing (see ``lambda_gradients``)."""
    ti, tj, li, lj = NO_BIAS if bias is None else bias
    threads = threads or numba.get_num_threads()
    n_groups = gptr.shape[0] - 1
    if threads <= 1 or n_groups < 2 * threads or gptr[-1] < 65536:
        lambda_gradients(loss, method, k, exp_gain, normalize, score_norm, seed, epoch,
                         gptr, qids, pred, label, g, h, qw, w_norm, ti, tj, li, lj)
        return
    # chunk boundaries at groups, about equal rows each
    cuts = np.unique(np.searchsorted(gptr, np.linspace(0, gptr[-1], threads + 1)[1:-1]))
    edges = [0, *[int(c) for c in cuts if 0 < c < n_groups], n_groups]

    def run(a, b):
        lambda_gradients(loss, method, k, exp_gain, normalize, score_norm, seed, epoch,
                         gptr[a:b + 1], qids[a:b], pred, label, g, h, qw[a:b], w_norm,
                         ti, tj, li, lj)

    with ThreadPoolExecutor(max_workers=len(edges) - 1) as pool:
        for f in [pool.submit(run, a, b) for a, b in zip(edges, edges[1:]) if b > a]:
            f.result()
