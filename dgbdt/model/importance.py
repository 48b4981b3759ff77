"""Feature importance of a model's trees (Booster.get_score, XGBoost's importance types)."""
from __future__ import annotations

import numpy as np

IMPORTANCE_TYPES = ("weight", "gain", "cover", "total_gain", "total_cover")


def feature_importance(trees, n_features: int, feature_names, importance_type: str = "weight"
                       ) -> dict[str, float]:
    """Per used feature (by name; f0, f1, ... without names): weight = its split count;
    total_gain / total_cover = the sums of its splits' loss change / hessian sum; gain / cover
    = those sums over the count. Features never used are left out (as XGBoost)."""
    if importance_type not in IMPORTANCE_TYPES:
        raise ValueError(f"importance_type must be one of {IMPORTANCE_TYPES}; got "
                         f"{importance_type!r}")
    count = np.zeros(n_features)
    gain = np.zeros(n_features)
    cover = np.zeros(n_features)
    for t in trees:
        inner = ~t.is_leaf()
        f = t.feature[inner]
        np.add.at(count, f, 1)
        np.add.at(gain, f, t.loss_change[inner].astype(np.float64))
        np.add.at(cover, f, t.sum_hessian[inner].astype(np.float64))
    names = feature_names or [f"f{i}" for i in range(n_features)]
    value = {"weight": count, "total_gain": gain, "total_cover": cover,
             "gain": np.divide(gain, count, out=np.zeros_like(gain), where=count > 0),
             "cover": np.divide(cover, count, out=np.zeros_like(cover), where=count > 0)}
    v = value[importance_type]
    return {names[i]: float(v[i]) for i in np.flatnonzero(count)}
