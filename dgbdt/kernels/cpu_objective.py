"""CPU kernels (numba) for objective gradients: one fused, parallel pass over the rows.

The math is documented on the objectives (dgbdt.objectives.registry); each kernel writes g and h
(float64 [n, K]) for margins m [n, K], labels y [n] and weights w [n] (has_w False: all 1);
``a`` is the objective's one parameter (Objective.kernel_param: a slope, a power, ...).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .twins import serial_twin

HESS_FLOOR = 1e-16


@njit(cache=True, nogil=True, parallel=True)
def squared_error(m, y, w, has_w, a, g, h):
    """g = m - y, h = 1, times w."""
    for i in prange(m.shape[0]):
        wi = w[i] if has_w else 1.0
        g[i, 0] = (m[i, 0] - y[i]) * wi
        h[i, 0] = wi


@njit(cache=True, nogil=True, parallel=True)
def logistic(m, y, w, has_w, a, g, h):
    """p = sigmoid(m) (stable for any finite m), g = p - y, h = max(p (1 - p), 1e-16), times w
    (times a = scale_pos_weight where y == 1)."""
    for i in prange(m.shape[0]):
        x = m[i, 0]
        if x >= 0.0:
            p = 1.0 / (1.0 + np.exp(-x))
        else:
            e = np.exp(x)
            p = e / (1.0 + e)
        wi = w[i] if has_w else 1.0
        if y[i] == 1.0:
            wi *= a
        g[i, 0] = (p - y[i]) * wi
        h[i, 0] = max(p * (1.0 - p), HESS_FLOOR) * wi


@njit(cache=True, nogil=True, parallel=True)
def softmax(m, y, w, has_w, a, g, h):
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


@njit(cache=True, nogil=True, parallel=True)
def squared_log_error(m, y, w, has_w, a, g, h):
    """m floored at -1 + 1e-6; g = (log1p(m) - log1p(y)) / (m + 1),
    h = max((log1p(y) - log1p(m) + 1) / (m + 1)^2, 1e-6), times w."""
    for i in prange(m.shape[0]):
        p = max(m[i, 0], -1.0 + 1e-6)
        wi = w[i] if has_w else 1.0
        d = np.log1p(p) - np.log1p(y[i])
        g[i, 0] = d / (p + 1.0) * wi
        h[i, 0] = max((1.0 - d) / ((p + 1.0) * (p + 1.0)), 1e-6) * wi


@njit(cache=True, nogil=True, parallel=True)
def pseudo_huber(m, y, w, has_w, a, g, h):
    """z = m - y, s = sqrt(1 + (z/a)^2): g = z / s, h = a^2 / ((a^2 + z^2) s), times w."""
    a2 = a * a
    for i in prange(m.shape[0]):
        z = m[i, 0] - y[i]
        sq = np.sqrt(1.0 + z * z / a2)
        wi = w[i] if has_w else 1.0
        g[i, 0] = z / sq * wi
        h[i, 0] = a2 / ((a2 + z * z) * sq) * wi


@njit(cache=True, nogil=True, parallel=True)
def poisson(m, y, w, has_w, a, g, h):
    """g = exp(m) - y, h = exp(m + a) (a = max_delta_step), times w."""
    for i in prange(m.shape[0]):
        wi = w[i] if has_w else 1.0
        g[i, 0] = (np.exp(m[i, 0]) - y[i]) * wi
        h[i, 0] = np.exp(m[i, 0] + a) * wi


@njit(cache=True, nogil=True, parallel=True)
def gamma_regression(m, y, w, has_w, a, g, h):
    """g = 1 - y exp(-m), h = y exp(-m), times w."""
    for i in prange(m.shape[0]):
        wi = w[i] if has_w else 1.0
        r = y[i] / np.exp(m[i, 0])
        g[i, 0] = (1.0 - r) * wi
        h[i, 0] = r * wi


@njit(cache=True, nogil=True, parallel=True)
def tweedie(m, y, w, has_w, a, g, h):
    """a = the variance power: g = -y exp((1 - a) m) + exp((2 - a) m),
    h = -y (1 - a) exp((1 - a) m) + (2 - a) exp((2 - a) m), times w."""
    for i in prange(m.shape[0]):
        wi = w[i] if has_w else 1.0
        e1 = np.exp((1.0 - a) * m[i, 0])
        e2 = np.exp((2.0 - a) * m[i, 0])
        g[i, 0] = (-y[i] * e1 + e2) * wi
        h[i, 0] = (-y[i] * (1.0 - a) * e1 + (2.0 - a) * e2) * wi


FLT_MIN = 1.1754943508222875e-38


@njit(cache=True, nogil=True, parallel=True)
def hinge(m, y, w, has_w, a, g, h):
    """s = 2y - 1: where m s < 1, g = -s w and h = w; else g = 0 and h = FLT_MIN (unweighted,
    XGBoost's)."""
    for i in prange(m.shape[0]):
        wi = w[i] if has_w else 1.0
        s = 2.0 * y[i] - 1.0
        if m[i, 0] * s < 1.0:
            g[i, 0] = -s * wi
            h[i, 0] = wi
        else:
            g[i, 0] = 0.0
            h[i, 0] = FLT_MIN


@njit(cache=True, nogil=True, parallel=True)
def absolute_error(m, y, w, has_w, a, g, h):
    """g = sign(m - y) (0 where equal), h = 1, times w."""
    for i in prange(m.shape[0]):
        wi = w[i] if has_w else 1.0
        d = m[i, 0] - y[i]
        g[i, 0] = (1.0 if d > 0 else (-1.0 if d < 0 else 0.0)) * wi
        h[i, 0] = wi


@njit(cache=True, nogil=True, parallel=True)
def quantile(m, y, w, has_w, a, g, h):
    """a = alpha: g = 1 - a where m >= y, else -a; h = 1; times w."""
    for i in prange(m.shape[0]):
        wi = w[i] if has_w else 1.0
        g[i, 0] = ((1.0 - a) if m[i, 0] >= y[i] else -a) * wi
        h[i, 0] = wi


@njit(parallel=True, cache=True, nogil=True)
def quantiles(m, y, w, has_w, alphas, g, h):
    """Several quantiles, one margin column each: column k as ``quantile`` at alphas[k]."""
    for i in prange(m.shape[0]):
        wi = w[i] if has_w else 1.0
        for k in range(m.shape[1]):
            a = alphas[k]
            g[i, k] = ((1.0 - a) if m[i, k] >= y[i] else -a) * wi
            h[i, k] = wi


@njit(cache=True, nogil=True)
def cox(order, m, y, w, has_w, g, h):
    """survival:cox (XGBoost's CoxRegression with Breslow's ties): ``order`` sorts the rows by
    |y| (stable); one pass in that order accumulates the risk sets in float64, as XGBoost's."""
    n = order.shape[0]
    exp_p_sum = 0.0
    for i in range(n):
        exp_p_sum += np.exp(m[order[i], 0])
    r_k = 0.0
    s_k = 0.0
    last_exp_p = 0.0
    last_abs_y = 0.0
    accumulated = 0.0
    for i in range(n):
        ind = order[i]
        p = m[ind, 0]
        exp_p = np.exp(p)
        wi = w[ind] if has_w else 1.0
        yi = y[ind]
        abs_y = abs(yi)
        accumulated += last_exp_p
        if last_abs_y < abs_y:
            exp_p_sum -= accumulated
            accumulated = 0.0
        if yi > 0:
            r_k += 1.0 / exp_p_sum
            s_k += 1.0 / (exp_p_sum * exp_p_sum)
        g[ind, 0] = (exp_p * r_k - (1.0 if yi > 0 else 0.0)) * wi
        h[ind, 0] = (exp_p * r_k - exp_p * exp_p * s_k) * wi
        last_abs_y = abs_y
        last_exp_p = exp_p


# callers on one numba thread run the serial builds (dgbdt.kernels.twins): elementwise
# kernels, the same values either way
(squared_error, logistic, softmax, squared_log_error, pseudo_huber, poisson, gamma_regression,
 tweedie, hinge, absolute_error, quantile, quantiles) = map(serial_twin, (
    squared_error, logistic, softmax, squared_log_error, pseudo_huber, poisson,
    gamma_regression, tweedie, hinge, absolute_error, quantile, quantiles))


@njit(cache=True, nogil=True, parallel=True)
def _abs_maxima_chunks(g, h, out):
    """out[c, 0, k] / out[c, 1, k]: max |g[i, k]| / max |h[i, k]| over chunk c's rows (the
    rows cut into out.shape[0] ranges); NaN where the chunk's column holds one (numpy's max).
    Each chunk writes its own slots: the same values for any thread count."""
    n, K, C = g.shape[0], g.shape[1], out.shape[0]
    for c in prange(C):
        lo, hi = c * n // C, (c + 1) * n // C
        for k in range(K):
            mg, mh, ng, nh = 0.0, 0.0, False, False
            for i in range(lo, hi):
                a, b = abs(g[i, k]), abs(h[i, k])
                if a > mg:
                    mg = a
                elif a != a:
                    ng = True
                if b > mh:
                    mh = b
                elif b != b:
                    nh = True
            out[c, 0, k] = np.nan if ng else mg
            out[c, 1, k] = np.nan if nh else mh


_abs_maxima_chunks = serial_twin(_abs_maxima_chunks)


def column_abs_maxima(g, h):
    """(max_i |g[i, k]|, max_i |h[i, k]|) per column k of float64 [n, K] arrays, as numpy's
    ``np.abs(x).max(axis=0)`` gives them (NaN if a column holds one; 0 for n = 0), in one
    parallel pass without temporaries (they were two numpy passes and two n x K copies a
    round)."""
    n, K = g.shape
    if n == 0:
        return np.zeros(K), np.zeros(K)
    out = np.empty((max(1, min(64, n // 8192)), 2, K))
    _abs_maxima_chunks(g, h, out)
    mx = out.max(axis=0)
    return mx[0], mx[1]
