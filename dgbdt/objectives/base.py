"""The base of the learning objectives (dgbdt.objectives.registry): the Objective class and the helpers
every objective uses; see dgbdt.objectives.registry for the contract."""
from __future__ import annotations

import numpy as np

from ..backends.device import array_module, to_host
from ..kernels.fixedpoint import ExactSum
from ..kernels import cpu_objective as _kernels

HESS_FLOOR = _kernels.HESS_FLOOR
"""Lower bound for every hessian entry (keeps leaf weights finite)."""

PROB_EPS = 1e-6
"""Probabilities used to build an intercept are clipped to [PROB_EPS, 1 - PROB_EPS]."""

# --------------------------------------------------------------------------- helpers
def sigmoid(m: np.ndarray) -> np.ndarray:
    """Numerically stable ``1 / (1 + exp(-m))`` (no overflow for any finite m); numpy or cupy."""
    xp = array_module(m)
    m = xp.asarray(m, dtype=np.float64)
    if xp is not np and m.ndim == 1:    # a kernel that ships built (CuPy's compile at first use)
        from ..kernels.gpu_metric import sigmoid as device_sigmoid
        return device_sigmoid(m)
    e = xp.exp(-xp.abs(m))  # in (0, 1]
    return xp.where(m >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))


def softmax(m: np.ndarray) -> np.ndarray:
    """Row-wise ``exp(m_k - max_j m_j) / sum_j exp(m_j - max_j m_j)`` for ``m [n, K]``."""
    xp = array_module(m)
    m = xp.asarray(m, dtype=np.float64)
    z = xp.exp(m - m.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _logit(p: np.ndarray | float) -> np.ndarray:
    """``log(p / (1 - p))``."""
    p = np.asarray(p, dtype=np.float64)
    return np.log(p) - np.log1p(-p)


def _as_margin(margin: np.ndarray, k: int | None = None) -> np.ndarray:
    """View ``margin`` as float64 ``[n, K]`` (a 1-D array is one column); numpy or cupy."""
    m = array_module(margin).asarray(margin, dtype=np.float64)
    if m.ndim == 1:
        m = m[:, None]
    if m.ndim != 2:
        raise ValueError(f"margin must be 1-D or 2-D, got shape {m.shape}")
    if k is not None and m.shape[1] != k:
        raise ValueError(f"margin has {m.shape[1]} columns, expected {k}")
    return m


def _as_labels(y: np.ndarray) -> np.ndarray:
    """float64 1-D labels (an [n, 1] column too), numpy or cupy as given."""
    y = array_module(y).asarray(y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {y.shape}")
    return y


def _as_weights(w: np.ndarray | None, n: int) -> np.ndarray | None:
    if w is None:
        return None
    w = array_module(w).asarray(w, dtype=np.float64).reshape(-1)
    if w.shape[0] != n:
        raise ValueError(f"weight has {w.shape[0]} rows, labels have {n}")
    return w


def label_witnesses(y) -> np.ndarray:
    """Up to four of the labels ``y`` (numpy or cupy, 1-D) as a host array: a non-finite one,
    the smallest and the largest finite one, and a finite one that is not an integer, each if
    there is one. Every rule of ``check_labels`` is a bound, integrality or finiteness of each
    label, so ``y`` breaks a rule iff one of its witnesses does. A device array is reduced on
    its GPU and only the witnesses (and their flags) come back: one copy of 7 numbers."""
    xp = array_module(y)
    y = xp.asarray(y, dtype=np.float64).reshape(-1)
    if y.shape[0] == 0:
        return np.zeros(0)
    if xp is not np:            # one kernel (gpu_checks), no CuPy reductions to compile
        from ..kernels.gpu_checks import label_scan
        bad, nonint, lo, hi = label_scan(xp.ascontiguousarray(y))
        pick = [] if bad is None else [float(y[bad])]
        if lo is not None:
            pick += [lo, hi]
        if nonint is not None:
            pick.append(float(y[nonint]))
        return np.array(pick, dtype=np.float64)
    finite = xp.isfinite(y)
    nonint = finite & (y != xp.floor(y))
    flags_values = xp.stack([
        (~finite).any(), finite.any(), nonint.any(),
        y[xp.argmin(finite)], xp.where(finite, y, np.inf).min(),
        xp.where(finite, y, -np.inf).max(), y[xp.argmax(nonint)]]).astype(np.float64)
    f = np.asarray(flags_values.get() if xp is not np else flags_values)
    pick = [f[3]] if f[0] else []
    if f[1]:
        pick += [f[4], f[5]]
    if f[2]:
        pick.append(f[6])
    return np.array(pick, dtype=np.float64)


def _first_bad_row(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def _need_num_class(num_class: int | None, name: str) -> int:
    if num_class is None or int(num_class) != num_class or int(num_class) < 1:
        raise ValueError(f"{name} requires num_class to be a positive integer, got {num_class!r}")
    return int(num_class)


# --------------------------------------------------------------------------- base class
class Objective:
    """Base class; one subclass per objective name.  Stateless: ``num_class``
    is passed to every method that needs it."""

    name: str = ""
    default_metric: str = ""
    #: the training parameters the objective reads, with XGBoost's defaults
    defaults: dict = {}
    #: the label's targets (columns); several: dgbdt.objectives.multi_target.MultiTarget
    num_target = 1

    def __init__(self, params: dict | None = None):
        self.params = {k: float(params[k]) if params and params.get(k) is not None else v
                       for k, v in self.defaults.items()}

    @property
    def kernel_param(self) -> float:
        """The one number its gradient kernels take besides the rows (a slope, a power...)."""
        return 0.0

    #: whether its CUDA kernel takes ``kernel_param`` (the kernels of #16's objectives do; the
    #: first three kept their arguments)
    cuda_takes_param = False

    def cuda_params(self, backend) -> tuple:
        """The CUDA kernel's arguments between the weights' flag and the row count:
        ``kernel_param`` as a float64 where ``cuda_takes_param``, else none."""
        return (np.float64(self.kernel_param),) if self.cuda_takes_param else ()

    def n_outputs(self, num_class: int | None) -> int:
        """Number of margin columns ``K``."""
        return 1

    def check_labels(self, y: np.ndarray, num_class: int | None = None) -> None:
        """Raise ``ValueError`` if any label is NaN/inf (subclasses add range rules)."""
        y = _as_labels(y)
        bad = ~np.isfinite(y)
        if bad.any():
            raise ValueError(
                f"label contains NaN or infinite values (first at row {_first_bad_row(bad)})"
            )

    def check_label_array(self, y, num_class: int | None = None) -> None:
        """``check_labels`` for host or device labels: host labels are checked whole; device
        labels through their ``label_witnesses`` (no copy of the labels to the host), and
        again whole on the host only when a witness fails, for the message's row number."""
        if array_module(y) is np or getattr(y, "ndim", 1) != 1:
            self.check_labels(to_host(y), num_class)
            return
        try:
            self.check_labels(label_witnesses(y), num_class)
        except ValueError:
            self.check_labels(to_host(y), num_class)    # raises, naming the first bad row
            raise

    def stats_on_device(self) -> bool:
        """Whether ``label_stats`` takes device (cupy) labels and weights: true for the
        implementations written with the labels' array module (DEVICE_LABEL_STATS); the others
        get host copies."""
        return type(self).label_stats in DEVICE_LABEL_STATS

    # -- intercept -------------------------------------------------------------
    def label_stats(self, y: np.ndarray, w: np.ndarray | None, num_class: int | None) -> np.ndarray:
        """Additive sufficient statistics for the intercept: ``[sum w*y, sum w]``.

        Summing the arrays of several partitions gives the statistics of their union. The sums
        are exact (dgbdt.kernels.fixedpoint.ExactSum), so permuting or partitioning rows gives bit-identical
        statistics.
        """
        y = _as_labels(y)
        w = _as_weights(w, y.shape[0])
        if w is None:
            return [ExactSum.of(y), ExactSum.of(np.array([float(y.shape[0])]))]
        return [ExactSum.of(w * y), ExactSum.of(w)]

    def base_margin_from_stats(self, stats: np.ndarray, num_class: int | None) -> np.ndarray:
        """Intercept ``[K]`` in margin space from (summed) ``label_stats``."""
        raise NotImplementedError

    def base_margin_from_labels(self, y: np.ndarray, w: np.ndarray | None, num_class: int | None) -> np.ndarray:
        """Intercept ``[K]`` in margin space, estimated from labels as XGBoost 3.x does."""
        return self.base_margin_from_stats(self.label_stats(y, w, num_class), num_class)

    def base_score_to_margin(self, base_score, num_class: int | None) -> np.ndarray:
        """User ``base_score`` -> margins ``[K]`` (identity by default): one number for every
        output, or a list of one per output (XGBoost 3's vector base_score)."""
        b = np.atleast_1d(np.asarray(base_score, dtype=np.float64))
        K = self.n_outputs(num_class)
        if b.ndim != 1 or b.size not in (1, K):
            raise ValueError(f"base_score has {b.size} values; the model has {K} output(s) "
                             "(pass one value, or one per output)")
        if not np.all(np.isfinite(b)):
            raise ValueError(f"base_score must be finite, got {base_score!r}")
        return np.full(K, b[0]) if b.size == 1 else b.copy()

    # -- training / prediction -------------------------------------------------
    _kernel = None  # the fused CPU kernel of dgbdt.kernels.cpu_objective computing (g, h)
    cuda_kernel = ""  # its twin in dgbdt/kernels/cuda/objective.cu

    def gradients(self, margin: np.ndarray, y: np.ndarray, w: np.ndarray | None, out=None):
        """``(g, h)``, each float64 ``[n, K]``, sample weights multiplied in.

        ``out``: optional preallocated ``(g, h)`` to write into (reused every round).
        """
        m = np.ascontiguousarray(_as_margin(margin))
        y = np.ascontiguousarray(_as_labels(y))
        if out is None:
            out = (np.empty_like(m), np.empty_like(m))
        has_w = w is not None
        w = _as_weights(w, y.shape[0]) if has_w else y
        type(self)._kernel(m, y, w, has_w, self.kernel_param, out[0], out[1])
        return out

    def model_params(self) -> dict:
        """The objective's parameters a model must keep to predict (Booster.objective_params;
        none for most objectives)."""
        return {}

    def margin_to_base_score(self, margin: np.ndarray) -> np.ndarray:
        """The inverse of ``base_score_to_margin`` (XGBoost's base_score of intercept margins;
        identity by default)."""
        return np.asarray(margin, dtype=np.float64)

    def metric_input(self, margin):
        """What metrics score (XGBoost's): the prediction; the margin itself by default."""
        return margin[:, 0]

    def transform(self, margin: np.ndarray) -> np.ndarray:
        """Margins ``[n, K]`` -> prediction (``[n]`` when ``K == 1``)."""
        return _as_margin(margin, 1)[:, 0].copy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


#: the ``label_stats`` implementations that take device arrays (see Objective.stats_on_device;
#: dgbdt.objectives.registry adds RegLogistic's)
DEVICE_LABEL_STATS = {Objective.label_stats}


def model_params(objective) -> dict:
    """``objective.model_params()`` of an Objective or a wrapper of one (dgbdt.objectives.custom)."""
    return getattr(objective, "model_params", dict)()


def _mean_from_stats(stats: np.ndarray) -> float:
    s = np.asarray(stats, dtype=np.float64)
    if not s[1] > 0:
        raise ValueError("cannot estimate base_score: the sum of sample weights is not positive")
    return float(s[0] / s[1])


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
