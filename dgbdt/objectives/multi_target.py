"""Multi-target objectives: a label of T targets ``y [n, T]``, one model output per target
(XGBoost's ``multi_strategy="one_output_per_tree"``: each round grows one tree per target;
with ``"multi_output_tree"`` one vector-leaf tree for all, dgbdt.tree.multi_target, from the
same [n, T] gradients).

The losses that XGBoost applies element-wise (squared error, squared log error, pseudo-Huber,
the logistic family, Poisson, gamma, Tweedie, hinge) are sums over the targets of the
single-target loss, so target ``t``'s margins ``m[:, t]`` get the single-target gradients of
``y[:, t]`` with the row's weight ``w_i``; the intercept is the single-target one of each
column (XGBoost 3 fits ``base_score`` per target), and the prediction is ``[n, T]``.
``MultiTarget`` wraps the single-target objective; ``get_objective`` makes it when the
parameters say ``num_target > 1`` (dgbdt.engine.setup reads it from the label's shape).
"""
from __future__ import annotations

import numpy as np

from ..backends.device import array_module

#: the objectives that take a label of several targets (element-wise losses whose kernels
#: read one margin column: they run over the n*T entries of the flattened arrays)
MULTI_TARGET = frozenset({
    "reg:squarederror", "reg:squaredlogerror", "reg:pseudohubererror", "reg:logistic",
    "binary:logistic", "binary:logitraw", "count:poisson", "reg:gamma", "reg:tweedie",
    "binary:hinge"})


def check_multi_target(name: str, num_target: int) -> None:
    """Refuse a multi-target label for an objective that has no per-target form here."""
    if num_target > 1 and name not in MULTI_TARGET:
        raise NotImplementedError(
            f"objective {name!r} with a label of {num_target} targets (a 2-D label) is not "
            f"implemented in dgbdt. Multi-target labels train with: "
            f"{', '.join(sorted(MULTI_TARGET))}; or fit one model per target column")


class MultiTarget:
    """A single-target objective ``base`` applied to each of ``num_target`` label columns
    (module docstring). Everything not about the targets is ``base``'s."""

    def __init__(self, base, num_target: int):
        check_multi_target(base.name, num_target)
        self.single, self.num_target = base, int(num_target)
        self._wrep = (None, None)       # (weights, weights repeated T times), kept a round

    def __getattr__(self, name):
        if name.startswith("__") or name == "single":     # unpickling: single not set yet
            raise AttributeError(name)
        return getattr(self.single, name)

    def __repr__(self) -> str:
        return f"MultiTarget({self.single!r}, num_target={self.num_target})"

    def n_outputs(self, num_class) -> int:
        return self.num_target

    def model_params(self) -> dict:
        """What a model file keeps to rebuild it: the number of targets (its outputs)."""
        return {**self.single.model_params(), "num_target": self.num_target}

    # -- labels ---------------------------------------------------------------------------
    def _columns(self, y):
        xp = array_module(y)
        y = xp.asarray(y, dtype=np.float64)
        if y.ndim != 2 or y.shape[1] != self.num_target:
            raise ValueError(f"label must have shape [n, {self.num_target}] (one column per "
                             f"target); got {tuple(y.shape)}")
        return y

    def check_labels(self, y, num_class=None) -> None:
        """The single-target rules on each target's column."""
        self._each_column(self.single.check_labels, y, num_class)

    def check_label_array(self, y, num_class=None) -> None:
        self._each_column(self.single.check_label_array, y, num_class)

    def _each_column(self, check, y, num_class) -> None:
        y = self._columns(y)
        for t in range(self.num_target):
            try:
                check(y[:, t], num_class)
            except ValueError as e:
                raise ValueError(f"target {t} (label column {t}): {e}") from None

    # -- intercept ------------------------------------------------------------------------
    def stats_on_device(self) -> bool:
        return self.single.stats_on_device()

    def label_stats(self, y, w, num_class):
        """Each target's single-target statistics, one after another (additive over
        partitions as theirs are)."""
        y = self._columns(y)
        out = []
        for t in range(self.num_target):
            out += list(self.single.label_stats(y[:, t], w, num_class))
        return out

    def base_margin_from_stats(self, stats, num_class) -> np.ndarray:
        s = len(stats) // self.num_target
        return np.array([self.single.base_margin_from_stats(stats[t * s:(t + 1) * s],
                                                          num_class)[0]
                         for t in range(self.num_target)])

    def base_margin_from_labels(self, y, w, num_class) -> np.ndarray:
        y = self._columns(y)
        return np.array([self.single.base_margin_from_labels(y[:, t], w, num_class)[0]
                         for t in range(self.num_target)])

    def base_score_to_margin(self, base_score, num_class) -> np.ndarray:
        """One base_score for every target, or a list of one per target."""
        b = np.atleast_1d(np.asarray(base_score, dtype=np.float64))
        if b.size == 1:
            b = np.repeat(b, self.num_target)
        if b.ndim != 1 or b.size != self.num_target:
            raise ValueError(f"base_score has {b.size} values; the label has "
                             f"{self.num_target} targets (pass one value, or one per target)")
        return np.array([self.single.base_score_to_margin(float(v), num_class)[0] for v in b])

    # -- gradients and predictions --------------------------------------------------------
    def repeated_weights(self, w):
        """The row weights [n] as the flattened entries' [n*T] (entry i*T + t is row i's)."""
        if w is None:
            return None
        if self._wrep[0] is not w:
            self._wrep = (w, array_module(w).repeat(w, self.num_target))
        return self._wrep[1]

    def gradients(self, margin, y, w, out=None):
        """``(g, h)`` [n, T]: the base kernel over the n*T flattened entries."""
        xp = array_module(margin)
        m = xp.ascontiguousarray(xp.asarray(margin, dtype=np.float64))
        n, T = m.shape[0], self.num_target
        y = xp.ascontiguousarray(self._columns(y))
        if out is None:
            out = (xp.empty_like(m), xp.empty_like(m))
        # the kernel writes flat views of out (a copy back where out is not C-contiguous)
        flat = [a.reshape(n * T, 1) if a.flags.c_contiguous else xp.empty((n * T, 1))
                for a in out]
        self.single.gradients(m.reshape(n * T, 1), y.reshape(n * T), self.repeated_weights(w),
                            out=tuple(flat))
        for a, f in zip(out, flat):
            if not a.flags.c_contiguous:
                a[...] = f.reshape(n, T)
        return out

    def _flat(self, fn, margin):
        xp = array_module(margin)
        m = xp.asarray(margin, dtype=np.float64)
        return fn(m.reshape(-1, 1)).reshape(m.shape[0], self.num_target)

    def transform(self, margin):
        """Margins [n, T] -> each target's prediction, [n, T]."""
        return self._flat(self.single.transform, margin)

    def metric_input(self, margin):
        return self._flat(self.single.metric_input, margin)

    def margin_to_base_score(self, margin):
        return self.single.margin_to_base_score(margin)
