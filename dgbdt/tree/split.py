"""Split evaluation: XGBoost's second-order gain on merged integer histograms.

For a node with gradient sum G and hessian sum H (dequantized from the fixed-point histogram sums:
G = sum q_g / scale_g), the regularized objective of a leaf with weight w is

    G w + 1/2 (H + lambda) w^2 + alpha |w|,

minimized by  w* = -T_alpha(G) / (H + lambda),  T_alpha(G) = sign(G) max(|G| - alpha, 0),
with |w*| clipped to max_delta_step when that is positive. The node's structure score is

    score(G, H) = T_alpha(G)^2 / (H + lambda)                       (max_delta_step = 0)
    score(G, H) = -(2 G w* + (H + lambda) w*^2)                      (otherwise)

(XGBoost's evaluator has no alpha term in the second form, and neither do we). Splitting a node into L and R changes the loss by

    loss_chg = score(G_L, H_L) + score(G_R, H_R) - score(G, H)

(the factor 1/2 and gamma are left out as in XGBoost; gamma is compared with loss_chg directly).
Candidates put the bins 0..b of a feature left; missing values go right (forward scan) or, when
the node has missing values of that feature, left (backward scan). A candidate needs
H_L, H_R >= min_child_weight; a node is split on its best candidate when
loss_chg > 1e-6 and loss_chg >= gamma (min_split_loss) and both children have H > 0.
Leaf values are eta * w*. The loop form is kernels/cpu_split.py.

Categorical features (their bins are category codes) split by a set of categories going right,
one-hot or partition-based as XGBoost (kernels/cpu_categorical.py). Their best candidate and
the numerical features' compete on the float32 gain: the larger wins, an equal gain goes to the
smaller feature index (XGBoost's SplitEntry::NeedReplace).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backends.device import array_module, backend_of

MIN_GAIN = 1e-6  # XGBoost's kRtEps: a split must gain more than this


@dataclass(frozen=True)
class SplitParams:
    """The parameters split evaluation and leaf values depend on."""

    eta: float
    lam: float
    alpha: float
    gamma: float
    min_child_weight: float
    max_delta_step: float
    #: per-feature monotone constraint (-1, 0, 1), or None without any (see ``evaluate``)
    monotone: tuple | None = None
    #: interaction constraints: groups of feature indices (dgbdt.tree.constraints), or None
    interactions: tuple | None = None
    #: categorical features with fewer categories split one-hot (XGBoost's UseOneHot)
    max_cat_to_onehot: int = 4
    #: most categories a partition-based split enumerates on one side
    max_cat_threshold: int = 64

    @classmethod
    def from_params(cls, p: dict) -> "SplitParams":
        mono = p.get("monotone_constraints")
        if isinstance(mono, dict):
            raise ValueError("monotone_constraints by feature name must be resolved against "
                             "the data's feature names first (dgbdt.tree.constraints.resolve)")
        inter = p.get("interaction_constraints")
        if inter and any(isinstance(f, str) for g in inter for f in g):
            raise ValueError("interaction_constraints by feature name must be resolved "
                             "against the data's feature names first (dgbdt.tree.constraints)")
        return cls(eta=p["eta"], lam=p["lambda"], alpha=p["alpha"], gamma=p["gamma"],
                   min_child_weight=p["min_child_weight"], max_delta_step=p["max_delta_step"],
                   monotone=tuple(int(c) for c in mono) if mono and any(mono) else None,
                   interactions=tuple(tuple(g) for g in inter) if inter else None,
                   max_cat_to_onehot=int(p.get("max_cat_to_onehot", 4)),
                   max_cat_threshold=int(p.get("max_cat_threshold", 64)))


@dataclass
class SplitCandidates:
    """Best split of each evaluated node; ``feature == -1`` where none gains."""

    gain: np.ndarray          # float32 [m]
    feature: np.ndarray       # int32 [m]
    split_bin: np.ndarray     # int32 [m]
    default_left: np.ndarray  # bool [m]
    left: np.ndarray          # int64 [m, 2] fixed-point (G, H) of the left child
    right: np.ndarray         # int64 [m, 2]
    is_cat: np.ndarray | None = None   # bool [m]: a categorical split (None: no such feature)
    cats: np.ndarray | None = None     # uint8 [m, W]: 1 for the categories going right

    def take(self, idx) -> "SplitCandidates":
        """The candidates of the nodes at ``idx`` (in that order)."""
        pick = (lambda a: None if a is None else a[idx])
        return SplitCandidates(*(pick(getattr(self, f)) for f in (
            "gain", "feature", "split_bin", "default_left", "left", "right", "is_cat", "cats")))

    def splittable(self, p: SplitParams) -> np.ndarray:
        """Mask of nodes worth splitting (gain above 1e-6 and gamma, both children nonempty)."""
        return splittable(self.gain, self.feature, self.left, self.right, p)


def splittable(gain, feature, left, right, p: SplitParams):
    """Whether each candidate splits its node (numpy or cupy arrays): the float32 gain is
    compared with 1e-6 and gamma rounded to float32, as numpy 2 compares a float32 array
    with a Python float."""
    f32 = np.float32
    return ((feature >= 0) & (gain > f32(MIN_GAIN)) & (gain >= f32(p.gamma))
            & (left[:, 1] != 0) & (right[:, 1] != 0))


def evaluate(hist: np.ndarray, totals: np.ndarray, hist_ptrs: np.ndarray, scale_g: float,
             scale_h: float, p: SplitParams, bounds=None, categorical=None) -> SplitCandidates:
    """Best split of every node from its merged histogram [m, S, 2] and totals [m, 2].

    The histogram may be on the host or a GPU (the backend of its array evaluates it there);
    the candidates come back as numpy arrays. With monotone constraints (``p.monotone``,
    XGBoost's semantics) ``bounds`` = (lower, upper) [m] are the nodes' weight bounds: every
    weight is clipped to them, gains are taken at the clipped weights, and a split on a
    feature with constraint c needs c (w_right - w_left) >= 0 (kernels.cpu_split).
    ``categorical``: (features int64, width) of the categorical features, or None.
    """
    be = backend_of(hist)
    if categorical is not None:
        return _evaluate_with_categories(be, hist, totals, hist_ptrs, scale_g, scale_h, p,
                                         *categorical, bounds=bounds)
    if p.monotone is not None:
        gain, feat, sbin, dleft, left = be.evaluate_splits_monotone(
            hist, totals, hist_ptrs, 1.0 / scale_g, 1.0 / scale_h, p, *bounds)
    else:
        gain, feat, sbin, dleft, left = be.evaluate_splits(
            hist, totals, hist_ptrs, 1.0 / scale_g, 1.0 / scale_h, p)
    return SplitCandidates(gain, feat, sbin, dleft, left, totals - left)


def _evaluate_with_categories(be, hist, totals, hist_ptrs, scale_g, scale_h, p, features,
                              width, bounds=None) -> SplitCandidates:
    """The numerical kernel on the histograms with the categorical features' slots zeroed
    (an all-zero feature never gains), the categorical kernel on those features; per node the
    larger gain wins, a tie the smaller feature."""
    slot_cat = np.zeros(int(hist_ptrs[-1]), dtype=bool)
    for f in features.tolist():
        slot_cat[hist_ptrs[f]:hist_ptrs[f + 1]] = True
    numeric = hist * array_module(hist).asarray((~slot_cat)[None, :, None].astype(hist.dtype))
    if p.monotone is not None:
        gain, feat, sbin, dleft, left = be.evaluate_splits_monotone(
            numeric, totals, hist_ptrs, 1.0 / scale_g, 1.0 / scale_h, p, *bounds)
    else:
        gain, feat, sbin, dleft, left = be.evaluate_splits(numeric, totals, hist_ptrs,
                                                           1.0 / scale_g, 1.0 / scale_h, p)
    cg, cf, cdl, cl, cats = be.evaluate_categorical(hist, totals, hist_ptrs, 1.0 / scale_g,
                                                    1.0 / scale_h, p, features, width,
                                                    bounds if p.monotone is not None else None)
    take = (cf >= 0) & ((feat < 0) | (cg > gain) | ((cg == gain) & (cf < feat)))
    left = np.where(take[:, None], cl, left)
    cats = cats * take[:, None].astype(np.uint8)
    return SplitCandidates(np.where(take, cg, gain), np.where(take, cf, feat),
                           np.where(take, 0, sbin).astype(np.int32), np.where(take, cdl, dleft),
                           left, totals - left, is_cat=take, cats=cats)


def leaf_weights(g, h, p: SplitParams):
    """w* for each (G, H) pair (before eta), float64: the vectorized form of
    kernels.cpu_split.leaf_weight (the same float64 operations, so the same values), on numpy
    or cupy arrays."""
    xp = array_module(g)
    g = xp.asarray(g, dtype=np.float64)
    h = xp.asarray(h, dtype=np.float64)
    t = xp.where(g > p.alpha, g - p.alpha, xp.where(g < -p.alpha, g + p.alpha, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -t / (h + p.lam)
    if p.max_delta_step != 0.0:
        w = xp.where(xp.abs(w) > p.max_delta_step,
                     xp.where(w > 0, p.max_delta_step, -p.max_delta_step), w)
    return xp.where((h < p.min_child_weight) | (h <= 0.0), 0.0, w)


@dataclass
class SplitBatch:
    """The split decisions of one level: small, sent to every shard."""

    node: np.ndarray          # int32 [m] nodes being split
    feature: np.ndarray       # int32 [m]
    split_bin: np.ndarray     # int32 [m]: left iff bin <= split_bin
    default_left: np.ndarray  # bool [m]: where missing values go
    left: np.ndarray          # int32 [m] left child ids
    right: np.ndarray         # int32 [m] right child ids
    packed: object = None     # optional int64 [6, m] of the six rows (a device-grown level's)
    #: categorical splits (CPU and GPU shards): bool [m], which splits are categorical, and uint8 [m, W/8]
    #: their sets as bits (np.packbits(..., bitorder="little"); a set bit: the category goes
    #: right; dgbdt.kernels.cpu_categorical); None: none
    is_cat: np.ndarray | None = None
    cats: np.ndarray | None = None
