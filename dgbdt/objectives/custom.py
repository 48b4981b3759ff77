"""Custom objectives (XGBoost's ``obj=``): the user's function gives the gradients.

``obj(preds, dtrain) -> (grad, hess)``: ``preds`` are the current margins of every training
row (raw, before the objective's transform: ``[n]``, or ``[n, K]`` with several outputs), as an
array of the training data's device (numpy, or cupy on a GPU), in the Dataset's row order;
``dtrain`` is the training Dataset (``get_label()``, ``get_weight()``). ``grad`` and ``hess``
have the shape of ``preds`` (numpy or cupy); sample weights are the function's to apply, as in
XGBoost. The configured objective still gives the intercept (``base_score``, 0.5 unless set:
XGBoost's default with a custom objective) and the prediction transform.

The gradients enter the same fixed-point quantization as built-in ones (dgbdt.kernels.fixedpoint), so a
custom function that computes a built-in objective's gradients gives that objective's model.

On Dask (dgbdt.dask.train(..., obj=)) the function runs on each worker over the rows that
worker holds (``preds`` and ``dtrain``: ``LocalRows``, that worker's labels and weights), as
xgboost.dask runs it per worker; an elementwise gradient gives the same model as in-process.
"""
from __future__ import annotations

import numpy as np

from ..kernels.arrays import array_module


class LocalRows:
    """The training rows a worker holds (its shards'), as a custom objective's ``dtrain`` on
    Dask: ``get_label()``, ``get_weight()``, ``num_row``, in the order of the shards' margins."""

    def __init__(self, shards):
        xp = array_module(shards[0].label)
        self.label = xp.concatenate([s.label for s in shards])
        self.weight = None if shards[0].weight is None else \
            xp.concatenate([s.weight for s in shards])

    @property
    def num_row(self) -> int:
        return int(self.label.shape[0])

    def get_label(self):
        return self.label

    def get_weight(self):
        return self.weight if self.weight is not None else np.zeros(0)


def objective_on(objective, fn, shards):
    """The objective a worker trains with: ``objective`` (an Objective, with its parameters;
    or a name, with their defaults), or it with the user's gradient function ``fn`` over the
    worker's own rows (dgbdt.dask with obj=)."""
    from .registry import get_objective
    base = get_objective(objective) if isinstance(objective, str) else objective
    return base if fn is None else CustomObjective(base, fn, LocalRows(shards))


class CustomObjective:
    """The configured objective with the user's gradient function (see the module docstring).
    Everything but the gradients is the configured objective's."""

    #: the gradients are the user's: custom_metric then gets raw margins, as XGBoost's does
    #: (built-in objectives, Cox and ranking included, give it their transformed predictions)
    user_gradients = True

    def __init__(self, base, fn, dtrain):
        if not callable(fn):
            raise TypeError(f"obj must be a callable (preds, dtrain) -> (grad, hess); got "
                            f"{type(fn).__name__}")
        self.base, self.fn, self.dtrain = base, fn, dtrain

    def __getattr__(self, name):
        return getattr(self.base, name)

    def seam_gradients(self, seam):
        """Every shard's gradients from one call of the function on all rows; returns the
        (max |g|, max h) per output that set the fixed-point scale."""
        margins = seam.margins()
        n, K = margins.shape
        preds = margins[:, 0] if K == 1 else margins
        out = self.fn(preds.copy(), self.dtrain)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("obj must return a pair (grad, hess)")
        xp = array_module(margins)
        g, h = (xp.ascontiguousarray(xp.asarray(a, dtype=np.float64)) for a in out)
        for what, a in (("grad", g), ("hess", h)):
            if a.size != n * K:
                raise ValueError(f"obj returned {what} of {a.size} values; expected {n * K} "
                                 f"(the shape of preds: {tuple(preds.shape)})")
            if not bool(xp.isfinite(a).all()):
                raise ValueError(f"obj returned a non-finite {what} (NaN or inf)")
        return seam.set_gradients(g.reshape(n, K), h.reshape(n, K))
