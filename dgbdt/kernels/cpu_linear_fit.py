"""The small solves of a device-grown linear tree (dgbdt.tree.linear_device), batched: each
splitting slot's two half-additive fits and its children's regressors, and every leaf's ridge
fit. The specification of cuda/linear_grow.cu (one thread a slot or leaf there, one loop
iteration here): tree.linear's ``basis_system`` and ``ridge_solve`` and the host grower's
(dgbdt.tree.linear_growth) arithmetic, in its order, so the same floats bit for bit.

A node's slope part v (float64 [d], its regressors S = regs[node, :d]) becomes its child's

    v_child = (k1 v_j) / s_p  for each j,   plus k2 on f (appended to S when f is not in it),

with (c, k1, k2) the child's half-additive fit in the basis (1, [p~], [x~_f]) and
s_p = ``pow2_at_least(abs_sum(v))``, the power of two >= sum_j |v_j| (summed in order).
A leaf with d regressors solves the ridge system of its sums [D + 1, D + 2] (``fit_leaf``):
A = sums[:d+1, :d+1] / s_h + diag(lambda, linear_lambda, ...), b = sums[:d+1, D+1] / s_g, its
coefficients w = -A^-1 b times eta (zeros when its H is below min_child_weight or not
positive).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .linear_math import basis_system, ridge_solve


@njit(cache=True, nogil=True)
def abs_sum(v, n):
    """sum_j |v[j]| over the first n entries, in order."""
    s = 0.0
    for j in range(n):
        s += abs(v[j])
    return s


@njit(cache=True, nogil=True)
def pow2_at_least(x):
    """The smallest power of two >= x (1.0 for x <= 0 or not finite)."""
    if not (x > 0.0) or not math.isfinite(x):
        return 1.0
    m, e = math.frexp(x)
    if m == 0.5:
        e -= 1
    return math.ldexp(1.0, e)


@njit(cache=True, nogil=True)
def level_inputs(slots, regs, slopes, nreg, inv_sp, regressor, reg_feat, reg_coef, isp,
                 addable, has_p):
    """A level's slots' rows of the node tables (reg_feat, reg_coef [W, D], isp [W]) and what
    the split search needs of them: addable [W, F] (x~_f enters the candidates: f may be a
    regressor and |S| < D, or f is in S) and has_p [W] (|S| > 0)."""
    D, F = regs.shape[1], regressor.shape[0]
    for i in range(slots.shape[0]):
        node = slots[i]
        d = nreg[node]
        for t in range(D):
            reg_feat[i, t] = regs[node, t]
            reg_coef[i, t] = slopes[node, t]
        isp[i] = inv_sp[node]
        has_p[i] = d > 0
        for f in range(F):
            a = regressor[f] and d < D
            if regressor[f] and not a:
                for t in range(d):
                    if regs[node, t] == f:
                        a = True
            addable[i, f] = a


@njit(cache=True, nogil=True)
def linear_children(nodes, feat, lefts, rights, lsum, rsum, addable, sentinel, regs, slopes,
                    nreg, inv_sp, inv_sg, inv_sh, lam0, lam1):
    """For each slot i whose node nodes[i] splits (not the sentinel) on feat[i]: the
    half-additive fits of its children lefts[i] (sums lsum[i], 9 int64) and rights[i]
    (rsum[i]) and their rows of regs, slopes, nreg and inv_sp (= 1 / s_p of the child's v),
    from its node's rows; p~ in the basis when the node has regressors, x~ when
    addable[i, feat[i]]."""
    D = regs.shape[1]
    A = np.zeros((3, 3))
    b = np.zeros(3)
    w = np.zeros(3)
    L = np.zeros((3, 3))
    keep = np.zeros(3, np.bool_)
    y = np.zeros(3)
    for i in range(nodes.shape[0]):
        node = nodes[i]
        if node == sentinel:
            continue
        f = feat[i]
        d = nreg[node]
        use_p = d > 0
        use_x = bool(addable[i, f])
        sb = pow2_at_least(abs_sum(slopes[node], d))
        for side in range(2):
            child = lefts[i] if side == 0 else rights[i]
            s = lsum[i] if side == 0 else rsum[i]
            n = basis_system(s, inv_sg, inv_sh, lam0, lam1, use_p, use_x, A, b)
            ridge_solve(A, b, n, w, True, L, keep, y)
            k1 = w[1] if use_p else 0.0
            k2 = w[n - 1] if use_x else 0.0
            at = -1
            for j in range(d):
                regs[child, j] = regs[node, j]
                slopes[child, j] = k1 * slopes[node, j] / sb
                if regs[node, j] == f:
                    at = j
            dd = d
            if use_x:
                if at >= 0:
                    slopes[child, at] += k2
                else:
                    regs[child, d] = f
                    slopes[child, d] = k2
                    dd = d + 1
            for j in range(dd, D):
                regs[child, j] = -1
                slopes[child, j] = 0.0
            nreg[child] = dd
            inv_sp[child] = 1.0 / pow2_at_least(abs_sum(slopes[child], dd))


@njit(cache=True, nogil=True)
def fit_leaves(sums, leaves, nreg, sentinel, inv_sg, inv_sh, lam0, lam1, min_child_weight,
               eta, coefs):
    """coefs[j, :d + 1] = eta * the ridge fit of leaf slot j (node leaves[j], d = nreg of it)
    from its sums [D + 1, D + 2]; zeros for the sentinel and for leaves below
    min_child_weight (coefs: float64 [m, D + 1], written whole)."""
    D = sums.shape[1] - 1
    A = np.zeros((D + 1, D + 1))
    b = np.zeros(D + 1)
    w = np.zeros(D + 1)
    L = np.zeros((D + 1, D + 1))
    keep = np.zeros(D + 1, np.bool_)
    y = np.zeros(D + 1)
    for j in range(leaves.shape[0]):
        for t in range(D + 1):
            coefs[j, t] = 0.0
        node = leaves[j]
        if node == sentinel:
            continue
        d = nreg[node]
        h = np.float64(sums[j, 0, 0]) * inv_sh
        if h < min_child_weight or h <= 0.0:
            continue
        for a in range(d + 1):
            for c in range(d + 1):
                A[a, c] = np.float64(sums[j, a, c]) * inv_sh
            b[a] = np.float64(sums[j, a, D + 1]) * inv_sg
        A[0, 0] += lam0
        for a in range(1, d + 1):
            A[a, a] += lam1
        ridge_solve(A, b, d + 1, w, True, L, keep, y)
        for t in range(d + 1):
            coefs[j, t] = w[t] * eta


__all__ = ["abs_sum", "fit_leaves", "level_inputs", "linear_children", "pow2_at_least"]
