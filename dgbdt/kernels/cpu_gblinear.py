"""One round of XGBoost's linear booster (``booster="gblinear"``): coordinate descent with an
elastic-net penalty on the weights, on the raw feature values.

The model's margin of row i for output k is ``b_k + sum_j x_ij W[j, k]`` (missing entries
absent). A round starts from the objective's gradients g and hessians h at the current margins
([n, K]; rows whose h < 0 take no part, as in XGBoost) and, for each output k:

1. the bias: ``db = float32(eta * -sum_i g_ik / sum_i h_ik)``, ``b_k += db``, then
   ``g_ik += h_ik db`` (the gradients as if the margins had moved: one Newton step);
2. each feature j the selector names, in its order: over the rows where x_ij is present,
   ``G = sum_i g_ik x_ij``, ``H = sum_i h_ik x_ij^2``; with the penalties denormalized by the
   sum of the instance weights S (XGBoost's: ``lambda' = float32(lambda S)``,
   ``alpha' = float32(alpha S)``), the step is (``coordinate_delta``) 0 when H < 1e-5, else
   with ``G' = G + lambda' w``, ``H' = H + lambda'``: ``max(-(G' + alpha') / H', -w)`` when
   ``w - G'/H' >= 0``, else ``min(-(G' - alpha') / H', -w)`` (the L1 step, which stops at 0);
   ``dw = float32(eta * step)``, ``w += dw`` (float32, XGBoost's weights), and
   ``g_ik += h_ik x_ij dw`` before the next feature.

Selectors (XGBoost's ``feature_selector``): ``cyclic`` 0..F-1; ``shuffle`` one permutation a
round; ``random`` F draws with replacement a round and output; ``greedy`` at each step the
feature whose univariate step is largest (from the gradients at that step); ``thrifty`` the
features sorted once a round by the size of their univariate step (descending; ties in
feature order). ``greedy`` and ``thrifty`` stop after ``top_k`` features (0: no limit), and,
as XGBoost's selectors do, after F - 1 of them. The random selectors draw from numpy's PCG64
seeded by (``seed``, round), so a training continued from a model draws what the whole
training would.

XGBoost's ``shotgun`` updater runs the features of a round in parallel threads that race on
the gradients; dgbdt runs them one after another in the selector's order, so ``shotgun`` is
deterministic and gives exactly ``coord_descent`` with the same selector (the outputs' updates
touch separate gradient columns, so XGBoost's feature-then-output order of shotgun and
output-then-feature order of coord_descent agree). XGBoost's shotgun with ``nthread=1`` is the
same computation. Sums run in float64 in row order (numba, one thread): the same bits on every
run.
"""
from __future__ import annotations

import numpy as np
from numba import njit

SELECTORS = ("cyclic", "shuffle", "random", "greedy", "thrifty")
UPDATERS = ("shotgun", "coord_descent")


@njit(cache=True, nogil=True)
def coordinate_delta(G, H, w, alpha, lam):
    """The elastic-net coordinate step of a weight w (module docstring, step 2)."""
    if H < 1e-5:
        return 0.0
    g2 = G + lam * w
    h2 = H + lam
    if w - g2 / h2 >= 0.0:
        return max(-(g2 + alpha) / h2, -w)
    return min(-(g2 - alpha) / h2, -w)


@njit(cache=True, nogil=True)
def _column_sums(indptr, indices, values, g, h, j, k):
    """(sum g_ik x_ij, sum h_ik x_ij^2) over column j's present rows."""
    G = 0.0
    H = 0.0
    for p in range(indptr[j], indptr[j + 1]):
        i = indices[p]
        v = values[p]
        G += g[i, k] * v
        H += h[i, k] * v * v
    return G, H


@njit(cache=True, nogil=True)
def _update_feature(indptr, indices, values, g, h, W, j, k, eta, alpha, lam):
    """One coordinate step of W[j, k] and the gradients it moves; returns dw."""
    G, H = _column_sums(indptr, indices, values, g, h, j, k)
    dw = np.float32(eta * coordinate_delta(G, H, np.float64(W[j, k]), alpha, lam))
    if dw == 0.0:
        return dw
    W[j, k] = np.float32(W[j, k] + dw)
    d = np.float64(dw)
    for p in range(indptr[j], indptr[j + 1]):
        i = indices[p]
        g[i, k] += h[i, k] * values[p] * d
    return dw


@njit(cache=True, nogil=True)
def _bias_step(g, h, bias, k, eta):
    """The bias of output k (module docstring, step 1)."""
    G = 0.0
    H = 0.0
    for i in range(g.shape[0]):
        G += g[i, k]
        H += h[i, k]
    if not H > 0.0:         # no hessian to step with (XGBoost divides by it: NaN)
        return
    db = np.float32(eta * (-G / H))
    bias[k] = np.float32(bias[k] + db)
    d = np.float64(db)
    if d != 0.0:
        for i in range(g.shape[0]):
            g[i, k] += h[i, k] * d


@njit(cache=True, nogil=True)
def _univariate_steps(indptr, indices, values, g, h, W, k, alpha, lam):
    """|float32 step| of every feature of output k alone, from the gradients as they are."""
    F = W.shape[0]
    out = np.empty(F, np.float64)
    for j in range(F):
        G, H = _column_sums(indptr, indices, values, g, h, j, k)
        out[j] = abs(np.float32(coordinate_delta(G, H, np.float64(W[j, k]), alpha, lam)))
    return out


@njit(cache=True, nogil=True)
def _greedy(indptr, indices, values, g, h, W, k, eta, alpha, lam, limit):
    """Up to ``limit`` steps of output k, each on the feature with the largest univariate
    step now (the first such feature on ties; feature 0 when every step is 0)."""
    for _ in range(limit):
        steps = _univariate_steps(indptr, indices, values, g, h, W, k, alpha, lam)
        best = 0
        top = 0.0
        for j in range(steps.shape[0]):
            if steps[j] > top:
                top = steps[j]
                best = j
        _update_feature(indptr, indices, values, g, h, W, best, k, eta, alpha, lam)


@njit(cache=True, nogil=True)
def _in_order(indptr, indices, values, g, h, W, order, k, eta, alpha, lam):
    for j in order:
        _update_feature(indptr, indices, values, g, h, W, j, k, eta, alpha, lam)


def linear_round(cols, g, h, weights, eta: float, alpha: float, lam: float, sum_weight: float,
                 selector: str = "cyclic", top_k: int = 0, seed: int = 0,
                 epoch: int = 0) -> None:
    """One round (module docstring) on ``weights`` (float32 [F + 1, K], the bias last) in
    place. ``cols``: the training rows as scipy CSC (missing entries absent or 0); ``g``,
    ``h``: float64 [n, K] gradients at the current margins (changed: they end as the
    round's residual gradients); ``alpha``, ``lam``: XGBoost's normalized penalties;
    ``sum_weight``: the training rows' sum of instance weights; ``epoch``: the round's index
    in the whole training (the random selectors' draws)."""
    F, K = weights.shape[0] - 1, weights.shape[1]
    skip = h < 0.0          # XGBoost leaves rows with a negative hessian out of every sum
    if skip.any():
        g[skip] = 0.0
        h[skip] = 0.0
    alpha_d = float(np.float32(alpha * sum_weight))
    lam_d = float(np.float32(lam * sum_weight))
    indptr = np.ascontiguousarray(cols.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(cols.indices, dtype=np.int64)
    values = np.ascontiguousarray(cols.data, dtype=np.float32)
    W, bias = weights[:F], weights[F]
    for k in range(K):
        _bias_step(g, h, bias, k, float(eta))
    rng = np.random.default_rng([int(seed), int(epoch)]) \
        if selector in ("shuffle", "random") else None
    limit = F - 1 if top_k <= 0 else min(int(top_k), F - 1)   # XGBoost's selectors' bound
    if selector == "thrifty":   # the order from the gradients after every bias step
        orders = [np.argsort(-_univariate_steps(indptr, indices, values, g, h, W, k, alpha_d,
                                                lam_d), kind="stable")[:limit]
                  for k in range(K)]
    elif selector == "shuffle":
        orders = [rng.permutation(F)] * K
    elif selector == "cyclic":
        orders = [np.arange(F)] * K
    for k in range(K):
        if selector == "greedy":
            _greedy(indptr, indices, values, g, h, W, k, float(eta), alpha_d, lam_d, limit)
            continue
        order = rng.integers(0, F, F) if selector == "random" else orders[k]
        _in_order(indptr, indices, values, g, h, W, np.asarray(order, np.int64), k,
                  float(eta), alpha_d, lam_d)
