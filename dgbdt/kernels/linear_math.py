"""Piecewise-linear leaves (GBDT-PL, Shi, Li & Li 2019): the math, in one place.

Notation. A tree node holds rows i with gradients g_i, hessians h_i (the objective's, at the
current margins) and raw features x_i. Regressors are used normalized,

    x~_f = (x_f - c_f) / s_f,    c_f = (min_f + max_f) / 2,   s_f = 2^ceil(log2((max_f - min_f) / 2)),

min/max the exact per-feature extremes of the training rows (an order-free reduction), so
|x~_f| <= 1 on every training row and the division is exact; a missing value has x~_f = 0.

Linear leaf. A leaf with regressor set S (|S| = d <= max_linear_features) predicts
w . z(x), z = (1, x~_S). Its second-order objective (XGBoost's, with linear leaves) is

    L(w) = sum_i g_i (w . z_i) + 1/2 sum_i h_i (w . z_i)^2 + 1/2 w^T Lambda w,
    Lambda = diag(lambda, linear_lambda, ..., linear_lambda),

(``lambda`` on the constant as for constant leaves, so a leaf without regressors is XGBoost's
leaf), minimized by  w* = -(Z^T H Z + Lambda)^-1 Z^T g  with value  -1/2 score,

    score = b^T A^-1 b,    A = sum_i h_i z_i z_i^T + Lambda,    b = sum_i g_i z_i.

For S = {} this is G^2 / (H + lambda), XGBoost's score. A split changes the loss by
score(L) + score(R) - score(node) (the 1/2 left out, as in XGBoost). ``ridge_solve`` solves
A w = -b by a Cholesky factorization that drops a regressor whose pivot falls below 1e-9 of
its diagonal (collinear or constant on the node's rows): its coefficient is 0, the others are
the ridge fit without it. Deterministic: the same floats in, the same floats out.

Split finding (half-additive, the paper's Sec. 3.3). The child of a node keeps the node's
regressors and adds the split feature f (incremental feature selection) while |S| < the cap.
Fitting every candidate's full model would need sums of h z z^T over |S| + 1 regressors per
bin; instead a candidate is scored in the basis

    u = (1, p~, x~_f),   p~ = p / s_p,   p = v . x~_S  (the node's slope part, below),

a 3-regressor model (2 when f cannot join S: u = (1, p~); p~ is left out at the root, where
S = {}). So each histogram bin carries 9 fixed-point sums (``PAYLOAD``): g, h, g p~, h p~,
h p~^2, g x~, h x~, h p~ x~, h x~^2, and for a candidate split left = prefix sums of bins,
right = feature total - left; A and b of each side are read off them (``basis_system``).
The chosen split's half-additive fit (c, k1, k2) gives each child its slope part
p_child = k1 p~ + k2 x~_f, i.e. v_child = k1 v / s_p (+ k2 on f). s_p is a power of two
>= sum |v_j|, so |p~| <= 1 and every payload sum is bounded by max|g| or max h: the
round's fixed-point scales of g and h (dgbdt.kernels.fixedpoint) hold them too.

Leaf fitting. Once the tree's structure is fixed every leaf gets the full ridge fit on its
rows in the basis (1, x~_S): one pass sums h z z^T and g z per leaf (fixed-point integers,
(d+1)(d+2) numbers), and ``fit_leaf`` solves it in float64. Leaf coefficients are stored
times eta.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

#: payload entries of a linear histogram slot (fixed-point sums over the slot's rows)
G, H, GP, HP, HPP, GX, HX, HPX, HXX = range(9)
PAYLOAD = 9
#: a regressor is dropped when its Cholesky pivot is below this fraction of its diagonal
DROP = 1e-9


@njit(cache=True, nogil=True)
def ridge_solve(A, b, n, w, want_w, L, keep, y):
    """score = b^T A^-1 b over the first n entries (A symmetric, n <= A.shape[0]); with
    ``want_w`` also w = -A^-1 b into w[:n]. A pivot below DROP times its diagonal drops
    that variable (w = 0 there). A is not modified; L [>= n, >= n], keep, y [>= n] are
    scratch (the kernels pass theirs: no allocation in their loops)."""
    score = 0.0
    for i in range(n):
        keep[i] = False
        y[i] = 0.0
        d = A[i, i]
        for k in range(i):
            if keep[k]:
                d -= L[i, k] * L[i, k]
        if not (d > DROP * A[i, i]) or not (A[i, i] > 0.0):
            continue
        keep[i] = True
        r = np.sqrt(d)
        L[i, i] = r
        for j in range(i + 1, n):
            s = A[j, i]
            for k in range(i):
                if keep[k]:
                    s -= L[j, k] * L[i, k]
            L[j, i] = s / r
        s = b[i]
        for k in range(i):
            if keep[k]:
                s -= L[i, k] * y[k]
        y[i] = s / r
        score += y[i] * y[i]
    if want_w:
        for i in range(n - 1, -1, -1):
            if not keep[i]:
                w[i] = 0.0
                continue
            s = y[i]
            for k in range(i + 1, n):
                if keep[k]:
                    s -= L[k, i] * w[k]
            w[i] = s / L[i, i]
        for i in range(n):
            w[i] = -w[i]
    return score


@njit(cache=True, nogil=True)
def basis_system(s, inv_sg, inv_sh, lam0, lam1, use_p, use_x, A, b):
    """A and b of the half-additive basis (1, [p~], [x~]) from one side's 9 fixed-point sums
    ``s``; returns the basis size n (A, b filled in their first n entries)."""
    n = 1
    A[0, 0] = s[H] * inv_sh + lam0
    b[0] = s[G] * inv_sg
    ip = -1
    if use_p:
        ip = n
        A[n, n] = s[HPP] * inv_sh + lam1
        A[0, n] = s[HP] * inv_sh
        A[n, 0] = A[0, n]
        b[n] = s[GP] * inv_sg
        n += 1
    if use_x:
        A[n, n] = s[HXX] * inv_sh + lam1
        A[0, n] = s[HX] * inv_sh
        A[n, 0] = A[0, n]
        if ip >= 0:
            A[ip, n] = s[HPX] * inv_sh
            A[n, ip] = A[ip, n]
        b[n] = s[GX] * inv_sg
        n += 1
    return n


@njit(cache=True, nogil=True)
def side_score(s, inv_sg, inv_sh, lam0, lam1, use_p, use_x, A, b, w, L, keep, y):
    """score = b^T A^-1 b of one side in the half-additive basis (0 when its H <= 0);
    A .. y: 3-wide scratch."""
    if s[H] <= 0:
        return 0.0
    n = basis_system(s, inv_sg, inv_sh, lam0, lam1, use_p, use_x, A, b)
    return ridge_solve(A, b, n, w, False, L, keep, y)


@njit(cache=True, nogil=True)
def side_score3(s, inv_sg, inv_sh, lam0, lam1, use_p, use_x):
    """side_score in scalars (the split scan's inner call: no arrays, no loops): the same
    factorization, drops and operation order as basis_system + ridge_solve, so the same
    float64 score bit for bit (tests check it)."""
    if s[H] <= 0:
        return 0.0
    a00 = s[H] * inv_sh + lam0
    b0 = s[G] * inv_sg
    score = 0.0
    y0 = 0.0
    r0 = 0.0
    k0 = a00 > DROP * a00 and a00 > 0.0
    if k0:
        r0 = np.sqrt(a00)
        y0 = b0 / r0
        score += y0 * y0
    l10 = 0.0
    y1 = 0.0
    if use_p:
        a11 = s[HPP] * inv_sh + lam1
        a01 = s[HP] * inv_sh
        d1 = a11
        if k0:
            l10 = a01 / r0
            d1 -= l10 * l10
        if d1 > DROP * a11 and a11 > 0.0:
            r1 = np.sqrt(d1)
            ip = l10 * y0 if k0 else 0.0
            y1 = (s[GP] * inv_sg - ip) / r1
            score += y1 * y1
            if use_x:
                l21num = s[HPX] * inv_sh
                l20 = 0.0
                if k0:
                    l20 = (s[HX] * inv_sh) / r0
                    l21num -= l20 * l10
                l21 = l21num / r1
                return score + _third(s, inv_sg, inv_sh, lam1, k0, l20, y0, True, l21, y1)
        elif use_x:
            l20 = (s[HX] * inv_sh) / r0 if k0 else 0.0
            return score + _third(s, inv_sg, inv_sh, lam1, k0, l20, y0, False, 0.0, 0.0)
        return score
    if use_x:
        l20 = (s[HX] * inv_sh) / r0 if k0 else 0.0
        return score + _third(s, inv_sg, inv_sh, lam1, k0, l20, y0, False, 0.0, 0.0)
    return score


@njit(cache=True, nogil=True, inline="always")
def _third(s, inv_sg, inv_sh, lam1, k0, l20, y0, k1, l21, y1):
    """The x~ variable's step of side_score3 (after the constant and, if kept, p~)."""
    a22 = s[HXX] * inv_sh + lam1
    d2 = a22
    sub = s[GX] * inv_sg
    if k0:
        d2 -= l20 * l20
        sub -= l20 * y0
    if k1:
        d2 -= l21 * l21
        sub -= l21 * y1
    if d2 > DROP * a22 and a22 > 0.0:
        y2 = sub / np.sqrt(d2)
        return y2 * y2
    return 0.0


def _scratch(n: int):
    return (np.zeros((n, n)), np.zeros(n), np.zeros(n), np.zeros((n, n)),
            np.zeros(n, np.bool_), np.zeros(n))


def solve(A, b, n: int | None = None):
    """(score, w) of the ridge system A w = -b (host use: tests, references)."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    n = A.shape[0] if n is None else n
    _, _, w, L, keep, y = _scratch(max(n, 1))
    score = ridge_solve(A, b, n, w, True, L, keep, y)
    return score, w[:n]


def half_additive_fit(s, inv_sg, inv_sh, lam0, lam1, use_p, use_x) -> np.ndarray:
    """(c, k1, k2) of one side's half-additive fit (k1 = 0 without p~, k2 = 0 without x~)."""
    A, b, w, L, keep, y = _scratch(3)
    s = np.ascontiguousarray(s, dtype=np.int64)
    n = basis_system(s, inv_sg, inv_sh, lam0, lam1, bool(use_p), bool(use_x), A, b)
    ridge_solve(A, b, n, w, True, L, keep, y)
    out = np.zeros(3)
    out[0] = w[0]
    i = 1
    if use_p:
        out[1] = w[i]
        i += 1
    if use_x:
        out[2] = w[i]
    return out


def fit_leaf(sums, d: int, inv_sg: float, inv_sh: float, lam0: float, lam1: float,
             min_child_weight: float) -> np.ndarray:
    """w* (float64 [d + 1]) of a leaf from its fixed-point sums [D + 1, D + 2] (entries
    [:d+1, :d+1] sum h z z^T, column D + 1 sums g z); zeros when its H is below
    min_child_weight or not positive, as a constant leaf."""
    D = sums.shape[0] - 1
    A = sums[:d + 1, :d + 1].astype(np.float64) * inv_sh
    h = A[0, 0]
    if h < min_child_weight or h <= 0.0:
        return np.zeros(d + 1)
    A[0, 0] += lam0
    A[np.arange(1, d + 1), np.arange(1, d + 1)] += lam1
    b = sums[:d + 1, D + 1].astype(np.float64) * inv_sg
    return solve(A, b)[1]


def power_of_two_at_least(x: float) -> float:
    """The smallest power of two >= x (1.0 for x <= 0 or not finite)."""
    if not np.isfinite(x) or x <= 0.0:
        return 1.0
    m, e = np.frexp(x)
    return float(np.ldexp(1.0, int(e) - (1 if m == 0.5 else 0)))


@dataclass(frozen=True)
class LinearSpec:
    """What every linear tree of a training shares (small: sent with the requests)."""

    max_features: int          # max_linear_features: the cap on |S|
    lam: float                 # linear_lambda, the ridge on the slopes
    center: np.ndarray         # float64 [F]: c_f
    scale: np.ndarray          # float64 [F]: s_f (a power of two)
    regressor: np.ndarray      # bool [F]: may become a regressor (numerical, not constant)

    @property
    def inv_scale(self) -> np.ndarray:
        return 1.0 / self.scale

    @classmethod
    def from_data(cls, X, max_features: int, lam: float, categorical=None) -> "LinearSpec":
        """The normalization of the rows X (float32 [n, F], host): exact per-feature min and
        max (NaN skipped), so the same for any partitioning of the rows."""
        F = X.shape[1]
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                lo = np.nanmin(X, axis=0).astype(np.float64) if X.shape[0] else np.full(F, np.nan)
                hi = np.nanmax(X, axis=0).astype(np.float64) if X.shape[0] else np.full(F, np.nan)
        return cls.from_range(lo, hi, max_features, lam, categorical)

    @classmethod
    def from_range(cls, lo, hi, max_features: int, lam: float, categorical=None):
        lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
        ok = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
        center = np.where(ok, (lo + hi) / 2.0, 0.0)
        scale = np.array([power_of_two_at_least((b - a) / 2.0) if k else 1.0
                          for a, b, k in zip(lo, hi, ok)], dtype=np.float64)
        if categorical is not None:
            ok &= ~np.asarray(categorical, dtype=bool)
        return cls(int(max_features), float(lam), center, scale, ok)


def slope_bound(v: np.ndarray) -> float:
    """s_p: the power of two >= sum |v| (|p~| <= 1 on every training row), the sum taken in
    order (as the device grower's kernels take it: kernels.cpu_linear_fit.abs_sum)."""
    s = 0.0
    for x in np.abs(np.asarray(v, dtype=np.float64)).tolist():
        s += x
    return power_of_two_at_least(s)
