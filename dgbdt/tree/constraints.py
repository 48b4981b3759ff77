"""Monotone and interaction constraints, XGBoost's semantics.

``monotone_constraints``: the prediction may only rise (1), only fall (-1) or do either (0) as
a feature grows, all else equal.

Given as XGBoost takes them: a tuple or list of -1/0/1 by feature position (shorter than the
features: the rest are 0), the string "(1,0,-1)", or a dict by feature name. The grower keeps
each node's weight bounds and the split evaluation enforces them (dgbdt.tree.split.evaluate).

``interaction_constraints``: groups of features allowed to interact; a node may split on any
feature at the root, below on the features of every group that holds all the features on its
path, and on those features themselves (``allowed_features``; measured against XGBoost's
trees). The grower zeroes the other features' histogram slots.
"""
from __future__ import annotations

import re

import numpy as np


def parse(value):
    """The parameter normalized (None, a tuple of ints, or a dict of name -> int); ValueError
    with what is wrong otherwise."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"\(\s*(-?\d+\s*(,\s*-?\d+\s*)*,?)?\)", text):
            raise ValueError(f"monotone_constraints string must look like '(1,0,-1)'; got "
                             f"{value!r}")
        value = tuple(int(t) for t in text.strip("()").split(",") if t.strip())
    if isinstance(value, dict):
        out = {}
        for name, c in value.items():
            if not isinstance(name, str):
                raise ValueError(f"monotone_constraints by name needs feature names (str) as "
                                 f"keys; got {name!r}")
            out[name] = _one(c)
        return out
    if isinstance(value, (list, tuple)):
        return tuple(_one(c) for c in value)
    raise ValueError(f"monotone_constraints must be a tuple/list of -1, 0, 1, a string like "
                     f"'(1,0,-1)' or a dict by feature name; got {type(value).__name__}")


def _one(c) -> int:
    if isinstance(c, bool) or c not in (-1, 0, 1):
        raise ValueError(f"a monotone constraint is -1, 0 or 1; got {c!r}")
    return int(c)


def resolve(spec, n_features: int, feature_names) -> tuple | None:
    """Per-feature constraints of the data (None when none constrains anything)."""
    if spec is None:
        return None
    if isinstance(spec, dict):
        if not feature_names:
            raise ValueError("monotone_constraints by feature name needs the data's feature "
                             "names (a DataFrame, or feature_names=); pass a tuple by position")
        unknown = sorted(set(spec) - set(feature_names))
        if unknown:
            raise ValueError(f"monotone_constraints names features the data does not have: "
                             f"{unknown}")
        out = tuple(spec.get(name, 0) for name in feature_names)
    else:
        if len(spec) > n_features:
            raise ValueError(f"monotone_constraints has {len(spec)} entries; the data has "
                             f"{n_features} features")
        out = tuple(spec) + (0,) * (n_features - len(spec))
    return out if any(out) else None


# -- interaction constraints ---------------------------------------------------------------------
def parse_interactions(value):
    """``interaction_constraints`` normalized: None, or a tuple of groups (tuples of feature
    indices or names), from a list of lists or its string form '[[0, 1], [2, 3]]'."""
    if value is None:
        return None
    if isinstance(value, str):
        import json
        try:
            value = json.loads(value.replace("'", '"'))
        except json.JSONDecodeError:
            raise ValueError(f"interaction_constraints string must look like '[[0, 1], "
                             f"[2, 3]]'; got {value!r}") from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(g, (list, tuple))
                                                       for g in value):
        raise ValueError("interaction_constraints must be a list of lists of feature indices "
                         "or names")
    out = []
    for g in value:
        for f in g:
            if isinstance(f, bool) or not isinstance(f, (int, str)) or \
                    (isinstance(f, int) and f < 0):
                raise ValueError(f"an interaction group holds feature indices (>= 0) or "
                                 f"names; got {f!r}")
        out.append(tuple(g))
    return tuple(out)


def resolve_interactions(spec, n_features: int, feature_names) -> tuple | None:
    """The groups as tuples of feature indices of the data (None without constraints)."""
    if not spec:
        return None
    index = {n: i for i, n in enumerate(feature_names or [])}
    out = []
    for g in spec:
        ids = []
        for f in g:
            if isinstance(f, str):
                if f not in index:
                    raise ValueError(f"interaction_constraints names a feature the data does "
                                     f"not have: {f!r}")
                f = index[f]
            if f >= n_features:
                raise ValueError(f"interaction_constraints: feature {f} is beyond the data's "
                                 f"{n_features} features")
            ids.append(int(f))
        out.append(tuple(sorted(set(ids))))
    return tuple(out)


def allowed_features(groups, path: frozenset, n_features: int) -> np.ndarray:
    """bool [F]: the features a node whose path used ``path`` may split on (XGBoost's
    semantics, measured): any at the root; below, those of every group that holds the whole
    path, and the path's own."""
    if not path:
        return np.ones(n_features, dtype=bool)
    ok = np.zeros(n_features, dtype=bool)
    ok[list(path)] = True
    for g in groups:
        if path.issubset(g):
            ok[list(g)] = True
    return ok
