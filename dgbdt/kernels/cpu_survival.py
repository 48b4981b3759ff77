"""survival:aft's gradients and loss (XGBoost's src/common/survival_util.h and
probability_distribution.h, the same formulas and constants; dgbdt.objectives.survival states the
math). ``dist``: 0 normal, 1 logistic, 2 extreme; ``s`` = aft_loss_distribution_scale. Labels are
intervals ``[lower, upper]`` ([n, 2]): lower == upper uncensored, upper = inf right-censored,
lower <= 0 left-censored, else interval-censored. The twin kernels for GPUs are aft_* in
dgbdt/kernels/cuda/objective.cu."""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

#: the AFT distributions by ``dist`` index (aft_loss_distribution's names)
DISTRIBUTIONS = ("normal", "logistic", "extreme")
MIN_GRADIENT = -15.0
MAX_GRADIENT = 15.0
MIN_HESSIAN = 1e-16     # no row gets a zero hessian
MAX_HESSIAN = 15.0
EPS = 1e-12             # a denominator (or a likelihood) floored there
_SQRT_2PI = math.sqrt(2.0 * 3.14159265358979323846)

_jit = dict(cache=True, nogil=True, error_model="numpy")

UNCENSORED, RIGHT, LEFT, INTERVAL = 0, 1, 2, 3


@njit(**_jit)
def pdf(z, dist):
    if dist == 0:
        return math.exp(-z * z / 2.0) / _SQRT_2PI
    w = math.exp(z)
    if dist == 1:
        if math.isinf(w) or math.isinf(w * w):
            return 0.0
        return w / ((1.0 + w) * (1.0 + w))
    return 0.0 if math.isinf(w) else w * math.exp(-w)


@njit(**_jit)
def cdf(z, dist):
    if dist == 0:
        return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
    w = math.exp(z)
    if dist == 1:
        return 1.0 if math.isinf(w) else w / (1.0 + w)
    return 1.0 - math.exp(-w)


@njit(**_jit)
def grad_pdf(z, dist):
    if dist == 0:
        return -z * pdf(z, dist)
    w = math.exp(z)
    if math.isinf(w):
        return 0.0
    if dist == 1:
        return pdf(z, dist) * (1.0 - w) / (1.0 + w)
    return (1.0 - w) * pdf(z, dist)


@njit(**_jit)
def hess_pdf(z, dist):
    if dist == 0:
        return (z * z - 1.0) * pdf(z, dist)
    w = math.exp(z)
    if math.isinf(w) or math.isinf(w * w):
        return 0.0
    if dist == 1:
        return pdf(z, dist) * (w * w - 4.0 * w + 1.0) / ((1.0 + w) * (1.0 + w))
    return (w * w - 3.0 * w + 1.0) * pdf(z, dist)


@njit(**_jit)
def _clip(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


@njit(**_jit)
def limit_grad(censor, sign, s, dist):
    """The gradient where the prediction is so far out that the ratio is 0/0 or inf."""
    if dist == 0:
        if censor == RIGHT:
            return MIN_GRADIENT if sign else 0.0
        if censor == LEFT:
            return 0.0 if sign else MAX_GRADIENT
        return MIN_GRADIENT if sign else MAX_GRADIENT
    if dist == 1:
        if censor == RIGHT:
            return -1.0 / s if sign else 0.0
        if censor == LEFT:
            return 0.0 if sign else 1.0 / s
        return -1.0 / s if sign else 1.0 / s
    if censor == RIGHT:
        return MIN_GRADIENT if sign else 0.0
    if censor == LEFT:
        return 0.0 if sign else 1.0 / s
    return MIN_GRADIENT if sign else 1.0 / s


@njit(**_jit)
def limit_hess(censor, sign, s, dist):
    if dist == 0:
        if censor == RIGHT:
            return 1.0 / (s * s) if sign else MIN_HESSIAN
        if censor == LEFT:
            return MIN_HESSIAN if sign else 1.0 / (s * s)
        return 1.0 / (s * s)
    if dist == 1:
        return MIN_HESSIAN
    if censor == LEFT:
        return MIN_HESSIAN
    return MAX_HESSIAN if sign else MIN_HESSIAN


@njit(**_jit)
def grad_hess(lo, hi, pred, s, dist):
    """(g, h) of one row, unweighted: XGBoost's AFTLoss::Gradient and ::Hessian."""
    log_lo = math.log(lo) if lo > 0.0 else -np.inf
    if lo == hi:
        z = (log_lo - pred) / s
        p = pdf(z, dist)
        gp = grad_pdf(z, dist)
        hp = hess_pdf(z, dist)
        censor = UNCENSORED
        g_num, g_den = gp, s * p
        h_num, h_den = -(p * hp - gp * gp), s * s * p * p
        sign = z > 0.0
    else:
        z_u = 0.0
        z_l = 0.0
        censor = INTERVAL
        if math.isinf(hi):
            pdf_u, cdf_u, gpdf_u = 0.0, 1.0, 0.0
            censor = RIGHT
        else:
            z_u = (math.log(hi) - pred) / s
            pdf_u, cdf_u, gpdf_u = pdf(z_u, dist), cdf(z_u, dist), grad_pdf(z_u, dist)
        if lo <= 0.0:
            pdf_l, cdf_l, gpdf_l = 0.0, 0.0, 0.0
            censor = LEFT
        else:
            z_l = (log_lo - pred) / s
            pdf_l, cdf_l, gpdf_l = pdf(z_l, dist), cdf(z_l, dist), grad_pdf(z_l, dist)
        sign = z_u > 0.0 or z_l > 0.0
        cdf_diff = cdf_u - cdf_l
        pdf_diff = pdf_u - pdf_l
        g_num, g_den = pdf_diff, s * cdf_diff
        h_num = -(cdf_diff * (gpdf_u - gpdf_l) - pdf_diff * pdf_diff)
        h_den = (s * cdf_diff) * (s * cdf_diff)
    g = g_num / g_den
    if g_den < EPS and (math.isnan(g) or math.isinf(g)):
        g = limit_grad(censor, sign, s, dist)
    h = h_num / h_den
    if h_den < EPS and (math.isnan(h) or math.isinf(h)):
        h = limit_hess(censor, sign, s, dist)
    return _clip(g, MIN_GRADIENT, MAX_GRADIENT), _clip(h, MIN_HESSIAN, MAX_HESSIAN)


@njit(parallel=True, **_jit)
def aft(m, y, w, has_w, s, dist, g, h):
    """Every row's (g, h) times its weight; y [n, 2] the label intervals."""
    for i in prange(m.shape[0]):
        wi = w[i] if has_w else 1.0
        gi, hi = grad_hess(y[i, 0], y[i, 1], m[i, 0], s, dist)
        g[i, 0] = gi * wi
        h[i, 0] = hi * wi


@njit(**_jit)
def loss(lo, hi, pred, s, dist):
    """The negative log-likelihood of one row (XGBoost's AFTLoss::Loss)."""
    if lo == hi:
        z = (math.log(lo) - pred) / s
        return -math.log(max(pdf(z, dist) / (s * lo), EPS))
    cdf_u = 1.0 if math.isinf(hi) else cdf((math.log(hi) - pred) / s, dist)
    cdf_l = 0.0 if lo <= 0.0 else cdf((math.log(lo) - pred) / s, dist)
    return -math.log(max(cdf_u - cdf_l, EPS))


@njit(parallel=True, **_jit)
def aft_loss(y, m, s, dist, out):
    for i in prange(m.shape[0]):
        out[i] = loss(y[i, 0], y[i, 1], m[i], s, dist)
