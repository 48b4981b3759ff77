"""survival:aft, the accelerated failure time model (XGBoost's AFTObj; the paper "Survival
regression with accelerated failure time model in XGBoost", arXiv:2006.04920).

The model: ``log T = m + s Z``, ``m`` the margin, ``s = aft_loss_distribution_scale``, ``Z``
standard normal, logistic or extreme-value (``aft_loss_distribution``) with density ``f`` and
distribution function ``F``. A row's label is an interval ``[lo, hi]`` of the survival time
(Dataset ``label_lower_bound`` / ``label_upper_bound``): ``lo == hi`` an observed time,
``hi = inf`` right-censored, ``lo <= 0`` left-censored (0, or ``-inf`` as XGBoost's demos
write it: any lower bound <= 0, as XGBoost reads it), else interval-censored. With
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

from ..backends.device import array_module, to_host
from ..kernels import cpu_objective, cpu_survival as _kernels
from ..kernels.cpu_survival import DISTRIBUTIONS
from ..kernels.fixedpoint import ExactSum
from .base import Objective, _as_labels, _as_margin, _as_weights, _stump
from .regression import _LogLink



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
                          (lo == np.inf, "has label_lower_bound inf"),
                          ((lo == hi) & (lo <= 0), "has an observed time (lower == upper) "
                                                   "<= 0; times are > 0"),
                          (hi < lo, "has label_upper_bound < label_lower_bound")]:
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"survival:aft: row {i} {what} (lower {lo[i]:g}, upper "
                                 f"{hi[i]:g}); an interval is lower <= upper <= inf, lower < "
                                 "inf, a lower bound <= 0 (-inf too) meaning left-censored")

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


class Cox(_LogLink):
    """``survival:cox``: Cox proportional hazards, labels the survival times with censored
    ones negative; the gradients of the partial likelihood (Breslow's ties) need every row,
    in the order of |y| (ties in row order), so they are computed over all the seam's rows at
    once (``seam_gradients``) as XGBoost's CoxRegression does. Prediction: the hazard ratio
    ``exp(m)``; intercept: XGBoost 3.2's one Newton step from margin 0 over all rows
    (measured; about 0 without weights)."""

    name = "survival:cox"
    default_metric = "cox-nloglik"

    def label_stats(self, y, w, num_class):
        raise ValueError("survival:cox's intercept needs every row in the order of the "
                         "survival times, not sums over partitions")

    def base_margin_from_labels(self, y, w, num_class):
        y = _as_labels(y)
        g, h = self.gradients(np.zeros((y.shape[0], 1)), y, w)
        return np.array([_stump(ExactSum.of(g[:, 0]), ExactSum.of(h[:, 0]))])

    def gradients(self, margin, y, w, out=None, order=None):
        """``order``: the rows sorted by |y| (stable), when the caller keeps it from round to
        round (the labels do not change; the sort is a large part of the work:
        docs/benchmarks-archive.md#figures-behind-code-choices)."""
        m = np.ascontiguousarray(_as_margin(margin))
        y = np.ascontiguousarray(_as_labels(y))
        if out is None:
            out = (np.empty_like(m), np.empty_like(m))
        if order is None:
            order = time_order(y)
        has_w = w is not None
        cpu_objective.cox(order, m, y, _as_weights(w, y.shape[0]) if has_w else y, has_w, *out)
        return out

    #: its intercept needs every row in dataset order (dgbdt.dask.train gathers them)
    needs_all_rows = True

    def seam_gradients(self, seam):
        """Gradients of all the seam's rows together (the risk sets span every shard), written
        into the shards; the (max |g|, max h) that set the fixed-point scale.

        The gradients are always computed on the host by the numba kernel (one sequential
        pass in the order of the times), also for GPU shards: their margins come to the host
        (8 bytes a row a round; the labels and weights once a training, ``_host_rows``) and
        the gradients go back (16 bytes a row), so a GPU training's gradients are the CPU's
        bit for bit.

        On Dask's collective seam the risk sets span every rank: each rank gathers every
        rank's (dataset index, label, margin, weight) rows (4 floats a row, once a round; on
        NCCL through the devices, then to the host), puts them in dataset order, computes the
        gradients of all rows as in-process (the same order, ties included, so the same
        numbers) and keeps its own rows'. Graph mode gathers every unit's ``seam_rows``
        through a task hop and calls ``gathered_gradients`` (dgbdt.dask.graph_gradients)."""
        from ..kernels.arrays import to_host
        from ..data.row_ids import global_ids
        shards = seam.shards
        comm = getattr(seam, "comm", None)
        ids = np.concatenate([global_ids(s, np) for s in shards])
        if comm is None and np.array_equal(ids, np.arange(ids.shape[0])):
            label, weight, order = _host_rows(seam)
            return _set_host_gradients(seam, *self.gradients(
                to_host(seam.margins()[:, 0]), label, weight, order=order))
        rows = self.seam_rows(seam)
        return self.gathered_gradients(seam, rows if comm is None else
                                       comm.allgather_rows(rows))

    def seam_rows(self, seam) -> np.ndarray:
        """The seam's rows as float64 [n, 4] on the host: (index in the dataset, label,
        margin, weight; 1 unweighted), what the holders of rows exchange each round."""
        from ..kernels.arrays import to_host
        from ..data.row_ids import global_ids
        ids = np.concatenate([global_ids(s, np) for s in seam.shards])
        label, weight, _ = _host_rows(seam)
        margin = to_host(seam.margins()[:, 0])
        return np.stack([ids.astype(np.float64), label, margin,
                         np.ones_like(label) if weight is None else weight], axis=1)

    def gathered_gradients(self, seam, rows) -> tuple:
        """The seam's rows' gradients from every holder's ``seam_rows`` (in any order, host
        or device): all rows put in dataset order on the host, their gradients computed as
        in-process, the seam's own kept (written into its shards, on their device); returns
        their (max |g|, max h)."""
        from ..kernels.arrays import to_host
        from ..data.row_ids import global_ids
        rows = to_host(rows)
        # the rows arrive in the same order every round of a training (rank or unit order):
        # their sorts, kept on the seam, are reused while the index column is the same
        kept = getattr(seam, "_cox_gathered", None)
        if kept is None or not np.array_equal(kept[0], rows[:, 0]):
            by_id = np.argsort(rows[:, 0], kind="stable")
            mine = np.concatenate([global_ids(s, np) for s in seam.shards]).astype(np.float64)
            at = np.searchsorted(rows[by_id, 0], mine)
            kept = seam._cox_gathered = (rows[:, 0].copy(), by_id, time_order(rows[by_id, 1]),
                                         at)
        _, by_id, order, at = kept
        rows = rows[by_id]
        weighted = seam.shards[0].weight is not None
        g, h = self.gradients(rows[:, 2], rows[:, 1], rows[:, 3] if weighted else None,
                              order=order)
        return _set_host_gradients(seam, g[at], h[at])


def time_order(y: np.ndarray) -> np.ndarray:
    """The rows in the order of their times |y|, ties in row order (XGBoost's stable sort)."""
    return np.argsort(np.abs(y), kind="stable")


def _host_rows(seam) -> tuple:
    """The seam's labels and weights (None unweighted) as float64 host arrays, in its rows'
    order, and the rows' time order: copied from GPU shards and sorted once a training (they
    do not change), kept on the seam."""
    from ..kernels.arrays import to_host
    cached = getattr(seam, "_cox_host_rows", None)
    if cached is None:
        shards = seam.shards
        label = np.concatenate([to_host(s.label) for s in shards]).astype(np.float64,
                                                                           copy=False)
        weight = None if shards[0].weight is None else np.concatenate(
            [to_host(s.weight) for s in shards]).astype(np.float64, copy=False)
        cached = seam._cox_host_rows = (label, weight, time_order(label))
    return cached


def _set_host_gradients(seam, g: np.ndarray, h: np.ndarray) -> tuple:
    """Host gradients [n, 1] of the seam's rows into its shards, on the shards' device (one
    host-to-device copy of each for GPU shards; none for CPU ones); returns (max |g|, max h)."""
    be = seam.shards[0].be
    return seam.set_gradients(be.asarray(g, dtype=np.float64), be.asarray(h, dtype=np.float64))
