"""survival:aft, the accelerated failure time model (XGBoost's AFTObj; the paper "Survival
regression with accelerated failure time model in XGBoost", arXiv:2006.04920).

The model: ``log T = m + s Z``, ``m`` the margin, ``s = aft_loss_distribution_scale``, ``Z``
standard normal, logistic or extreme-value (``aft_loss_distribution``) with density ``f`` and
distribution function ``F``. A row's label is an interval ``[lo, hi]`` of the survival time
(Dataset ``label_lower_bound`` / ``label_upper_bound``): ``lo == hi`` an observed time,
``hi = inf`` right-censored, ``lo = 0`` left-censored, else interval-censored. With
``z = (log t - m) / s``, the negative log-likelihood is

* observed: ``-log(f(z) / (s t))``, ``g = f'(z) / (s f(z))``,
  ``h = -(f(z) f''(z) - f'(z)^2) / (s f(z))^2``;
* censored: ``-log(F(z_hi) - F(z_lo))`` (``F(z_hi) = 1`` if right-, ``F(z_lo) = 0`` if
  left-censored), ``g = (f(z_hi) - f(z_lo)) / (s D)``,
  ``h = -(D (f'(z_hi) - f'(z_lo)) - (f(z_hi) - f(z_lo))^2) / (s D)^2``, ``D = F(z_hi) -
  F(z_lo)``;

where a ratio is 0/0 or infinite because the prediction is far out (denominator < 1e-12),
XGBoost's limit for the censoring and the sign of ``z`` replaces it; ``g`` is clipped to
[-15, 15], ``h`` to [1e-16, 15], then both times the row's weight (XGBoost's constants,
dgbdt.kernels.cpu_survival). The loss inside the logarithm is floored at 1e-12.
Prediction: ``exp(m)``, a time. Intercept: XGBoost 3.2's default, ``base_score = 0.5`` (a
time: margin ``log 0.5``); no estimate from the labels.
"""
from __future__ import annotations

import numpy as np

from .backend import array_module, to_host
from .kernels import cpu_survival as _kernels
from .objective_base import Objective, _as_margin, _as_weights

DISTRIBUTIONS = ("normal", "logistic", "extreme")


def interval_labels(lower, upper, n: int):
    """The [n, 2] float64 label intervals of lower and upper bounds (numpy or cupy)."""
    xp = array_module(lower)
    lo = xp.asarray(lower, dtype=np.float64).reshape(-1)
    hi = xp.asarray(upper, dtype=np.float64).reshape(-1)
    if lo.shape[0] != n or hi.shape[0] != n:
        raise ValueError(f"label_lower_bound has {lo.shape[0]} rows and label_upper_bound "
                         f"{hi.shape[0]}; the data has {n}")
    return xp.ascontiguousarray(xp.stack([lo, hi], axis=1))


class AFT(Objective):
    """``survival:aft`` (see the module docstring for the math)."""

    name = "survival:aft"
    default_metric = "aft-nloglik"
    defaults = {"aft_loss_distribution": "normal", "aft_loss_distribution_scale": 1.0}
    #: its labels are intervals: Dataset label_lower_bound / label_upper_bound, [n, 2]
    interval_labels = True

    def __init__(self, params=None):
        params = params or {}
        dist = params.get("aft_loss_distribution") or "normal"
        if dist not in DISTRIBUTIONS:
            raise ValueError(f"aft_loss_distribution must be one of {DISTRIBUTIONS}; got "
                             f"{dist!r}")
        scale = params.get("aft_loss_distribution_scale")
        scale = 1.0 if scale is None else float(scale)
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"aft_loss_distribution_scale must be > 0; got {scale!r}")
        self.params = {"aft_loss_distribution": dist, "aft_loss_distribution_scale": scale}
        self.dist = DISTRIBUTIONS.index(dist)
        # XGBoost keeps the scale as a float32 parameter: the same number here
        self.sigma = float(np.float32(scale))

    @property
    def kernel_param(self):
        return self.sigma

    cuda_takes_param = True

    @property
    def cuda_kernel(self):
        return "aft_" + DISTRIBUTIONS[self.dist]

    def check_labels(self, y, num_class=None):
        y = np.asarray(to_host(y), dtype=np.float64)
        if y.ndim != 2 or y.shape[1] != 2:
            raise ValueError("survival:aft's labels are intervals: pass label_lower_bound and "
                             "label_upper_bound to the Dataset (XGBoost's set_float_info "
                             "names)")
        lo, hi = y[:, 0], y[:, 1]
        for bad, what in [(np.isnan(lo) | np.isnan(hi), "is NaN"),
                          (~np.isfinite(lo), "has an infinite label_lower_bound"),
                          (lo < 0, "has a negative label_lower_bound (times are >= 0; 0 "
                                   "means left-censored)"),
                          (hi < lo, "has label_upper_bound < label_lower_bound")]:
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"survival:aft: row {i} {what} (lower {lo[i]:g}, upper "
                                 f"{hi[i]:g}); an interval is 0 <= lower <= upper <= inf")

    def check_label_array(self, y, num_class=None):
        self.check_labels(y, num_class)

    def label_stats(self, y, w, num_class):
        return []

    def base_margin_from_stats(self, stats, num_class):
        return np.array([np.log(0.5)])

    def base_margin_from_labels(self, y, w, num_class):
        return np.array([np.log(0.5)])

    def base_score_to_margin(self, base_score, num_class):
        b = float(base_score)
        if not (np.isfinite(b) and b > 0):
            raise ValueError(f"base_score must be > 0 for {self.name} (a time; its margin is "
                             f"log(base_score)); got {base_score!r}")
        return np.array([np.log(b)])

    def margin_to_base_score(self, margin):
        return np.exp(np.asarray(margin, dtype=np.float64))

    def gradients(self, margin, y, w, out=None):
        m = np.ascontiguousarray(_as_margin(margin, 1))
        y = np.ascontiguousarray(np.asarray(y, dtype=np.float64))
        if y.ndim != 2 or y.shape[1] != 2 or y.shape[0] != m.shape[0]:
            raise ValueError(f"survival:aft needs label intervals [n, 2]; got shape {y.shape}")
        if out is None:
            out = (np.empty_like(m), np.empty_like(m))
        has_w = w is not None
        w = _as_weights(w, y.shape[0]) if has_w else m[:, 0]
        _kernels.aft(m, y, w, has_w, self.sigma, self.dist, out[0], out[1])
        return out

    def transform(self, margin):
        return array_module(margin).exp(_as_margin(margin, 1)[:, 0])

    def metric_input(self, margin):
        """The margins (XGBoost's AFT metrics read the untransformed prediction)."""
        return margin[:, 0]
