"""CPU kernels (numba) for objective gradients: one fused, parallel pass over the rows.

The math is documented on the objectives (dgbdt.objective); each kernel writes g and h
(float64 [n, K]) for margins m [n, K], labels y [n] and weights w [n] (has_w False: all 1).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

HESS_FLOOR = 1e-16


@njit(cache=True, nogil=True, parallel=True)
def squared_error(m, y, w, has_w, g, h):
    """g = m - y, h = 1, times w."""
    for i in prange(m.shape[0]):
        wi = w[i] if has_w else 1.0
        g[i, 0] = (m[i, 0] - y[i]) * wi
        h[i, 0] = wi


@njit(cache=True, nogil=True, parallel=True)
def logistic(m, y, w, has_w, g, h):
    """p = sigmoid(m) (stable for any finite m), g = p - y, h = max(p (1 - p), 1e-16), times w."""
    for i in prange(m.shape[0]):
        x = m[i, 0]
        if x >= 0.0:
            p = 1.0 / (1.0 + np.exp(-x))
        else:
            e = np.exp(x)
            p = e / (1.0 + e)
        wi = w[i] if has_w else 1.0
        g[i, 0] = (p - y[i]) * wi
        h[i, 0] = max(p * (1.0 - p), HESS_FLOOR) * wi


@njit(cache=True, nogil=True, parallel=True)
def softmax(m, y, w, has_w, g, h):
    """p = softmax(m) per row, g_k = p_k - [y == k], h_k = max(2 p_k (1 - p_k), 1e-16), times w."""
    K = m.shape[1]
    for i in prange(m.shape[0]):
        top = m[i, 0]
        for k in range(1, K):
            top = max(top, m[i, k])
        total = 0.0
        for k in range(K):
            total += np.exp(m[i, k] - top)
        wi = w[i] if has_w else 1.0
        label = int(y[i])
        for k in range(K):
            p = np.exp(m[i, k] - top) / total
            g[i, k] = (p - (1.0 if k == label else 0.0)) * wi
            h[i, k] = max(2.0 * p * (1.0 - p), HESS_FLOOR) * wi
