"""The objectives added for issue #16 (dgbdt.objective lists them all): squared log error,
pseudo-Huber, the log-link count and positive-valued losses (Poisson, gamma, Tweedie), hinge,
and the quantile losses whose leaves are refreshed after each tree (absolute error, quantile)."""
from __future__ import annotations

import numpy as np

from .backend import array_module
from .fixedpoint import ExactSum
from .kernels import cpu_objective as _kernels
from .objective_base import (Objective, _as_labels, _as_margin, _as_weights, _first_bad_row,
                             _mean_from_stats)

# --------------------------------------------------------------------------- more regression
def _check_range(name: str, y, bad, must: str) -> None:
    if bad.any():
        raise ValueError(f"label must be {must} for {name}; got values in [{y.min():g}, "
                         f"{y.max():g}] (first bad at row {_first_bad_row(bad)})")


def _stump(g_sum: ExactSum, h_sum: ExactSum) -> float:
    """XGBoost's intercept for objectives without a closed form: one Newton step from margin
    0, ``-sum g / sum h`` over all rows (its FitStump)."""
    h = float(h_sum)
    if not h > 0:
        raise ValueError("cannot estimate base_score: the sum of hessians at margin 0 is not "
                         "positive; pass base_score")
    return -float(g_sum) / h


class SquaredLogError(Objective):
    """``reg:squaredlogerror``: loss ``0.5 (log1p(m) - log1p(y))^2`` on the prediction ``m``
    itself (no link), with ``m`` floored at ``-1 + 1e-6``:
    ``g = (log1p(m) - log1p(y)) / (m + 1)``,
    ``h = max((log1p(y) - log1p(m) + 1) / (m + 1)^2, 1e-6)``. Labels must be ``> -1``.
    Intercept: one Newton step from 0, ``sum w log1p(y) / sum w max(log1p(y) + 1, 1e-6)``.
    """

    name = "reg:squaredlogerror"
    default_metric = "rmsle"

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        _check_range(self.name, y, y <= -1.0, "> -1")

    def label_stats(self, y, w, num_class):
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        one = 1.0 if w is None else w
        lg = np.log1p(y)
        return [ExactSum.of(-lg * one), ExactSum.of(np.maximum(lg + 1.0, 1e-6) * one)]

    def base_margin_from_stats(self, stats, num_class):
        return np.array([_stump(*stats)])

    _kernel = _kernels.squared_log_error
    cuda_kernel = "squared_log_error"
    cuda_takes_param = True


class PseudoHuberError(Objective):
    """``reg:pseudohubererror``: loss ``d^2 (sqrt(1 + (z/d)^2) - 1)`` for ``z = m - y`` and
    ``d = huber_slope``: ``g = z / s``, ``h = d^2 / ((d^2 + z^2) s)`` with
    ``s = sqrt(1 + (z/d)^2)``. Intercept: one Newton step from 0 (the gradients at ``z = -y``).
    """

    name = "reg:pseudohubererror"
    default_metric = "mphe"
    defaults = {"huber_slope": 1.0}

    @property
    def kernel_param(self):
        return self.params["huber_slope"]

    def label_stats(self, y, w, num_class):
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        one = 1.0 if w is None else w
        d2 = self.params["huber_slope"] ** 2
        sq = np.sqrt(1.0 + y * y / d2)
        return [ExactSum.of(-y / sq * one), ExactSum.of(d2 / ((d2 + y * y) * sq) * one)]

    def base_margin_from_stats(self, stats, num_class):
        return np.array([_stump(*stats)])

    _kernel = _kernels.pseudo_huber
    cuda_kernel = "pseudo_huber"
    cuda_takes_param = True


class _LogLink(Objective):
    """Objectives predicting ``exp(m)``: the intercept is ``log`` of the weighted mean label
    (XGBoost 3.x), ``base_score`` is the prediction (> 0) and its margin ``log(base_score)``."""

    def base_margin_from_stats(self, stats, num_class):
        mean = _mean_from_stats(stats)
        if not mean > 0:
            raise ValueError(f"cannot estimate base_score for {self.name}: the weighted mean "
                             f"label is {mean:g}, not positive (its margin is log of it); "
                             "pass base_score")
        return np.array([np.log(mean)])

    def base_score_to_margin(self, base_score, num_class):
        b = float(base_score)
        if not (np.isfinite(b) and b > 0):
            raise ValueError(f"base_score must be > 0 for {self.name} (a prediction; its "
                             f"margin is log(base_score)); got {base_score!r}")
        return np.array([np.log(b)])

    def transform(self, margin):
        return array_module(margin).exp(_as_margin(margin, 1)[:, 0])

    def margin_to_base_score(self, margin):
        return np.exp(np.asarray(margin, dtype=np.float64))

    def metric_input(self, margin):
        return self.transform(margin)


class Poisson(_LogLink):
    """``count:poisson``: ``p = exp(m)``, ``g = p - y``, ``h = exp(m + max_delta_step)``;
    labels ``>= 0``. As in XGBoost, ``max_delta_step`` defaults to 0.7 with this objective,
    for the hessian and for the leaf values alike (dgbdt.params)."""

    name = "count:poisson"
    default_metric = "poisson-nloglik"
    defaults = {"max_delta_step": 0.7}

    @property
    def kernel_param(self):
        return self.params["max_delta_step"]

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        _check_range(self.name, y, y < 0.0, ">= 0")

    _kernel = _kernels.poisson
    cuda_kernel = "poisson"
    cuda_takes_param = True


class Gamma(_LogLink):
    """``reg:gamma``: ``g = 1 - y exp(-m)``, ``h = y exp(-m)``; labels ``> 0``."""

    name = "reg:gamma"
    default_metric = "gamma-deviance"

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        _check_range(self.name, y, y <= 0.0, "> 0")

    _kernel = _kernels.gamma_regression
    cuda_kernel = "gamma_regression"
    cuda_takes_param = True


class Tweedie(_LogLink):
    """``reg:tweedie`` with power ``r = tweedie_variance_power`` in (1, 2):
    ``g = -y exp((1 - r) m) + exp((2 - r) m)``,
    ``h = -y (1 - r) exp((1 - r) m) + (2 - r) exp((2 - r) m)``; labels ``>= 0``."""

    name = "reg:tweedie"
    defaults = {"tweedie_variance_power": 1.5}

    @property
    def default_metric(self):
        return f"tweedie-nloglik@{self.params['tweedie_variance_power']:g}"

    @property
    def kernel_param(self):
        return self.params["tweedie_variance_power"]

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        _check_range(self.name, y, y < 0.0, ">= 0")

    _kernel = _kernels.tweedie
    cuda_kernel = "tweedie"
    cuda_takes_param = True


class Hinge(Objective):
    """``binary:hinge``: with ``s = 2y - 1``, ``g = -s``, ``h = 1`` where ``m s < 1``, else
    ``g = 0`` and ``h`` the smallest normal float32 (XGBoost's, unweighted); labels in
    ``[0, 1]``. Prediction: 1 where ``m > 0``, else 0. Intercept (XGBoost 3.x): the
    prediction of one Newton step from 0, ``1`` if ``sum w s > 0`` else ``0``, as the margin.
    """

    name = "binary:hinge"
    default_metric = "error"

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        _check_range(self.name, y, (y < 0.0) | (y > 1.0), "in [0, 1]")

    def label_stats(self, y, w, num_class):
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        s = 2.0 * y - 1.0
        if w is None:
            return [ExactSum.of(s), ExactSum.of(np.array([float(y.shape[0])]))]
        return [ExactSum.of(w * s), ExactSum.of(w)]

    def base_margin_from_stats(self, stats, num_class):
        return np.array([1.0 if _mean_from_stats(stats) > 0 else 0.0])

    _kernel = _kernels.hinge
    cuda_kernel = "hinge"
    cuda_takes_param = True

    def transform(self, margin):
        m = _as_margin(margin, 1)[:, 0]
        return (m > 0).astype(np.float64)

    def metric_input(self, margin):
        return self.transform(margin)               # the 0/1 prediction


# --------------------------------------------------------------------------- quantile losses
class _QuantileLoss(Objective):
    """Losses whose leaves are refreshed after each tree (XGBoost's UpdateTreeLeaf): a leaf's
    value becomes ``eta`` times the ``alpha`` quantile (XGBoost's, exact: dgbdt.quantile) of
    the residuals ``y - m`` of its (sampled) rows, ``m`` the margins before the tree; the tree
    is grown on ``g``, ``h = w``. Intercept: the ``alpha`` quantile of the labels."""

    leaf_alpha = 0.5

    def label_stats(self, y, w, num_class):
        raise ValueError(f"{self.name}'s intercept is a quantile of all the labels, not a sum "
                         "over partitions (dgbdt.quantile finds it over partitions)")

    def base_margin_from_labels(self, y, w, num_class):
        from .quantile import local_quantiles
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        return local_quantiles(self.leaf_alpha, [y], None if w is None else [w])


class AbsoluteError(_QuantileLoss):
    """``reg:absoluteerror``: loss ``|m - y|``: ``g = sign(m - y)``, ``h = 1``; leaves are
    the median residual of their rows (see _QuantileLoss)."""

    name = "reg:absoluteerror"
    default_metric = "mae"

    _kernel = _kernels.absolute_error
    cuda_kernel = "absolute_error"
    cuda_takes_param = True


class QuantileError(_QuantileLoss):
    """``reg:quantileerror`` at ``alpha = quantile_alpha`` (the pinball loss): ``g = 1 -
    alpha`` where ``m >= y``, else ``-alpha``; ``h = 1``; leaves are the ``alpha`` quantile of
    their rows' residuals (see _QuantileLoss).

    ``quantile_alpha`` may list several quantiles ``a_1 .. a_K`` (XGBoost's): then the model
    has ``K`` outputs, as multi-class has, output ``k`` fits ``a_k`` (its column of the
    margins, its own trees: round r holds one tree per quantile, leaves refreshed to ``a_k``
    quantiles), the intercept is each ``a_k`` quantile of the labels, and the prediction is
    the margins ``[n, K]``."""

    name = "reg:quantileerror"
    default_metric = "quantile"
    defaults = {"quantile_alpha": 0.5}

    def __init__(self, params=None):
        a = (params or {}).get("quantile_alpha")
        self.alphas = (0.5,) if a is None else tuple(float(x) for x in np.atleast_1d(a))
        if not self.alphas:
            raise ValueError("quantile_alpha must hold at least one quantile")
        self.params = {"quantile_alpha": self.alphas[0] if len(self.alphas) == 1
                       else self.alphas}

    def n_outputs(self, num_class):
        return len(self.alphas)

    @property
    def leaf_alpha(self):
        return self.alphas[0]

    @property
    def leaf_alphas(self):
        """The quantile of each output's leaves (dgbdt.seam: tree k of a round)."""
        return self.alphas

    @property
    def kernel_param(self):
        return self.alphas[0]

    def model_params(self) -> dict:
        """What a model file must keep to rebuild the objective: the quantiles when there
        are several (they set the number of outputs)."""
        return {"quantile_alpha": list(self.alphas)} if len(self.alphas) > 1 else {}

    def base_margin_from_labels(self, y, w, num_class):
        from .quantile import local_quantiles
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        return np.array([local_quantiles(a, [y], None if w is None else [w])[0]
                         for a in self.alphas])

    def base_score_to_margin(self, base_score, num_class):
        return np.full(len(self.alphas), Objective.base_score_to_margin(
            self, base_score, num_class)[0])

    _kernel = _kernels.quantile
    cuda_takes_param = True

    @property
    def cuda_kernel(self):
        """One quantile: ``quantile`` (alpha its parameter); several: ``quantiles`` (column k
        at alphas[k], a device array: ``cuda_params``)."""
        return "quantile" if len(self.alphas) == 1 else "quantiles"

    def cuda_params(self, backend) -> tuple:
        if len(self.alphas) == 1:
            return super().cuda_params(backend)
        return (backend.asarray(np.array(self.alphas, dtype=np.float64)),)

    def gradients(self, margin, y, w, out=None):
        if len(self.alphas) == 1:
            return super().gradients(margin, y, w, out)
        m = np.ascontiguousarray(_as_margin(margin, len(self.alphas)))
        y = np.ascontiguousarray(_as_labels(y))
        if out is None:
            out = (np.empty_like(m), np.empty_like(m))
        has_w = w is not None
        w = _as_weights(w, y.shape[0]) if has_w else y
        _kernels.quantiles(m, y, w, has_w, np.array(self.alphas), out[0], out[1])
        return out

    def transform(self, margin):
        if len(self.alphas) == 1:
            return super().transform(margin)
        return _as_margin(margin, len(self.alphas)).copy()

    def metric_input(self, margin):
        return margin[:, 0] if len(self.alphas) == 1 else margin


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
        round (the labels do not change; the sort is a third of the work)."""
        m = np.ascontiguousarray(_as_margin(margin))
        y = np.ascontiguousarray(_as_labels(y))
        if out is None:
            out = (np.empty_like(m), np.empty_like(m))
        if order is None:
            order = time_order(y)
        has_w = w is not None
        _kernels.cox(order, m, y, _as_weights(w, y.shape[0]) if has_w else y, has_w, *out)
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
        from .arrays import to_host
        from .sampling import global_ids
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
        from .arrays import to_host
        from .sampling import global_ids
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
        from .arrays import to_host
        from .sampling import global_ids
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
    from .arrays import to_host
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
