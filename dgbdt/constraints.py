"""Monotone constraints (``monotone_constraints``, XGBoost's semantics): the prediction may
only rise (1), only fall (-1) or do either (0) as a feature grows, all else equal.

Given as XGBoost takes them: a tuple or list of -1/0/1 by feature position (shorter than the
features: the rest are 0), the string "(1,0,-1)", or a dict by feature name. The grower keeps
each node's weight bounds and the split evaluation enforces them (dgbdt.tree.split.evaluate).
"""
from __future__ import annotations

import re


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
