"""The objectives by name (get_objective): gradients, hessians, intercepts and output transforms.

Every objective works in *margin space*: the booster's raw output is a float64
array ``m`` of shape ``[n, K]`` (``K = 1`` except for multi-class, where
``K = num_class``).  An objective supplies

* ``gradients(m, y, w)`` -> ``(g, h)``, the first and second derivative of the
  per-row loss with respect to each margin column, multiplied by the sample
  weight ``w_i`` (``w=None`` means all ones);
* ``base_margin_from_labels(y, w, num_class)`` -> the intercept (``[K]``,
  margin space) that XGBoost 3.x estimates when ``base_score`` is not given;
* ``base_score_to_margin(b, num_class)`` -> margins for a user ``base_score``;
* ``transform(m)`` -> the user-facing prediction.

The intercept is a function of per-label weighted sums only, so it is also
exposed as ``label_stats`` (additive over data partitions: sum the arrays from
each partition) followed by ``base_margin_from_stats``.

Numerical constants follow XGBoost: hessians are floored at ``1e-16``; class
probabilities used for the intercept are clipped to ``[1e-6, 1 - 1e-6]``.
"""

from __future__ import annotations

from .base import HESS_FLOOR, PROB_EPS, Objective, sigmoid, softmax
from .classification import (
    BinaryLogistic, BinaryLogitRaw, Hinge, MultiSoftmax, MultiSoftprob, RegLogistic)
from .ranking import MAP as RankMAP, NDCG as RankNDCG, Pairwise as RankPairwise
from .regression import (
    AbsoluteError, Gamma, Poisson, PseudoHuberError, QuantileError, SquaredError,
    SquaredLogError, Tweedie)
from .survival import AFT, Cox

__all__ = [
    "Objective",
    "SquaredError",
    "RegLogistic",
    "BinaryLogistic",
    "BinaryLogitRaw",
    "MultiSoftprob",
    "MultiSoftmax",
    "SquaredLogError",
    "PseudoHuberError",
    "Poisson",
    "Gamma",
    "Tweedie",
    "Hinge",
    "AbsoluteError",
    "QuantileError",
    "Cox",
    "AFT",
    "RankNDCG",
    "RankPairwise",
    "RankMAP",
    "OBJECTIVES",
    "get_objective",
    "sigmoid",
    "softmax",
    "HESS_FLOOR",
    "PROB_EPS",
]



# --------------------------------------------------------------------------- registry
_REGISTRY: dict[str, type[Objective]] = {
    cls.name: cls
    for cls in (SquaredError, RegLogistic, BinaryLogistic, BinaryLogitRaw, MultiSoftprob,
                MultiSoftmax, SquaredLogError, PseudoHuberError, Poisson, Gamma, Tweedie, Hinge,
                AbsoluteError, QuantileError, Cox, AFT, RankNDCG, RankPairwise, RankMAP)
}
OBJECTIVES: tuple[str, ...] = tuple(_REGISTRY)


def get_objective(name: str, params: dict | None = None) -> Objective:
    """Instantiate the objective called ``name`` (e.g. ``"binary:logistic"``), reading its
    own parameters (``huber_slope``, ``tweedie_variance_power``, ``scale_pos_weight``,
    ``max_delta_step``, the ``lambdarank_*`` ones) from ``params`` (their defaults
    without); with ``num_target`` > 1 (a label of several targets) its multi-target form
    (dgbdt.objectives.multi_target)."""
    try:
        obj = _REGISTRY[name](params)
    except (KeyError, TypeError):
        raise ValueError(f"unknown objective {name!r}; supported: {', '.join(OBJECTIVES)}") from None
    T = (params or {}).get("num_target")
    if T is not None and int(T) > 1:      # a label of several targets: one output each
        from .multi_target import MultiTarget
        return MultiTarget(obj, int(T))
    return obj
