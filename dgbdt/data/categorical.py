"""Categorical features: which features are categorical, their codes, and their category values.

A categorical feature's value is a category *code*, a whole number ``0 <= code <
MAX_CATEGORIES`` (NaN: missing). Which features are categorical, as XGBoost decides it:

* a pandas ``category`` column, when ``enable_categorical=True`` (without it such a column is an
  error saying to pass it, as XGBoost's DMatrix says). Its code is the position of the row's
  value in the column's categories (pandas' ``cat.codes``; -1, a missing value, is NaN), and
  the categories themselves are kept: the model records them and predicting re-codes a frame's
  values to the training's codes by value (XGBoost 3's re-coding), so a frame whose categories
  are ordered differently, or are a subset, predicts the same;
* ``feature_types`` (XGBoost's names: ``"c"`` categorical, ``"q"``/``"float"``/``"int"``/``"i"``
  numerical), one per feature, for arrays that already hold codes.

A feature's bins are its codes: feature f with largest code ``c_max`` (over all the training
rows) has the ``c_max + 1`` bins 0..c_max (dgbdt.data.quantize), whatever max_bin says; codes
are limited to ``MAX_CATEGORIES`` (histograms hold a slot per code).
"""
from __future__ import annotations

import numpy as np

#: codes must be below this (a histogram slot per code; XGBoost's own limit is 2^24)
MAX_CATEGORIES = 1 << 16

#: XGBoost's feature type names
NUMERIC_TYPES = ("q", "float", "int", "i")
CATEGORICAL_TYPE = "c"


class CategoryDtypeError(TypeError, ValueError):
    """A category column without enable_categorical=True (a ValueError as XGBoost's, and a
    TypeError as dgbdt's other column-type errors)."""


def is_category(dtype) -> bool:
    import pandas as pd
    return isinstance(dtype, pd.CategoricalDtype)


def category_columns(df) -> list[bool]:
    """Whether each column of a (pandas or dask) DataFrame has a category dtype."""
    return [is_category(dt) for dt in df.dtypes]


def refuse_categories(names, enable_categorical: bool) -> None:
    """The error XGBoost gives for category columns without enable_categorical=True."""
    if names and not enable_categorical:
        cols = ", ".join(f"'{n}'" for n in names)
        raise CategoryDtypeError(
            f"data has category columns ({cols}): pass enable_categorical=True to split on "
            "them natively (as XGBoost requires), or pass their codes (df[col].cat.codes) "
            "as numbers")


def resolve_types(feature_types, n_features: int, frame_categorical=None) -> list[str] | None:
    """Each feature's type ("c" or a numerical name), or None when no feature is categorical
    and none was named. ``frame_categorical``: which columns of a frame have a category
    dtype (those are "c"; naming one of them numerical is an error)."""
    if feature_types is None:
        if frame_categorical is None or not any(frame_categorical):
            return None
        return [CATEGORICAL_TYPE if c else "q" for c in frame_categorical]
    if isinstance(feature_types, str) or not hasattr(feature_types, "__len__"):
        raise ValueError(f"feature_types must be a list of {n_features} type names ('c' or "
                         f"'q'); got {feature_types!r}")
    types = [str(t) for t in feature_types]
    if len(types) != n_features:
        raise ValueError(f"feature_types has {len(types)} entries but data has {n_features} "
                         "features")
    bad = sorted({t for t in types if t != CATEGORICAL_TYPE and t not in NUMERIC_TYPES})
    if bad:
        raise ValueError(f"feature_types: unknown type(s) {bad}; use 'c' (categorical) or "
                         "'q' / 'float' / 'int' (numerical)")
    if frame_categorical is not None:
        clash = [i for i, (t, c) in enumerate(zip(types, frame_categorical))
                 if c and t != CATEGORICAL_TYPE]
        if clash:
            raise ValueError(f"feature_types says feature {clash[0]} is numerical "
                             f"({types[clash[0]]!r}) but its column has a category dtype")
    return types


def mask_of(types) -> np.ndarray | None:
    """bool [F]: the categorical features (None when there are none)."""
    if types is None:
        return None
    m = np.array([t == CATEGORICAL_TYPE for t in types], dtype=bool)
    return m if m.any() else None


def category_values(categories, name: str) -> list:
    """A column's categories as JSON values (str, int or float), for the model."""
    vals = list(categories)
    out = []
    for v in vals:
        if isinstance(v, (bool, np.bool_)):
            out.append(bool(v))
        elif isinstance(v, (int, np.integer)):
            out.append(int(v))
        elif isinstance(v, (float, np.floating)):
            out.append(float(v))
        elif isinstance(v, str):
            out.append(v)
        else:
            raise TypeError(f"column '{name}': categories of type {type(v).__name__} are not "
                            "supported; use string or number categories")
    return out


def frame_codes(df, enable_categorical: bool):
    """(float32 [n, F] with category codes, the category values of each column or None) of a
    pandas DataFrame; the numerical columns as their float32 values."""
    import pandas as pd

    names = [str(c) for c in df.columns]
    is_cat = category_columns(df)
    refuse_categories([n for n, c in zip(names, is_cat) if c], enable_categorical)
    X = np.empty((len(df), len(names)), dtype=np.float32)
    cats = []
    for j, (name, c) in enumerate(zip(names, is_cat)):
        col = df.iloc[:, j]
        if c:
            codes = col.cat.codes.to_numpy()
            X[:, j] = np.where(codes < 0, np.nan, codes.astype(np.float32))
            cats.append(category_values(col.cat.categories, name))
        else:
            if not (pd.api.types.is_numeric_dtype(col.dtype)
                    or pd.api.types.is_bool_dtype(col.dtype)):
                raise TypeError(f"data has non-numeric columns: '{name}' ({col.dtype}). "
                                "Convert them to numbers or drop them.")
            X[:, j] = col.to_numpy(dtype=np.float32, na_value=np.nan)
            cats.append(None)
    return X, cats


def cudf_categories(df) -> list:
    """The category values of each category column of a cuDF DataFrame (None for the
    others), as frame_codes keeps a pandas frame's; the codes themselves stay on the device
    (dgbdt.data.device_input.cudf_to_matrix)."""
    out = []
    for name, dt in zip(df.columns, df.dtypes):
        out.append(category_values(df[name].cat.categories.to_pandas(), str(name))
                   if str(dt) == "category" else None)
    return out


class InvalidCategoryError(ValueError):
    """A categorical feature's value that is not a valid category code."""


def check_codes(X, mask, names=None) -> None:
    """Every value of a categorical feature is NaN or a whole number in [0, MAX_CATEGORIES)
    (host or device X: one reduction a feature where X is)."""
    if mask is None or X.shape[0] == 0:
        return
    from ..kernels.arrays import array_module
    xp = array_module(X)
    for f in np.flatnonzero(mask):
        col = X[:, f]
        v = col[~xp.isnan(col)]
        bad = (v < 0) | (v >= MAX_CATEGORIES) | (v != xp.floor(v))
        if bool(bad.any()):
            name = names[f] if names else str(f)
            raise InvalidCategoryError(f"categorical feature {name}: invalid category code "
                                       f"{float(v[bad][0])!r}; codes are whole numbers in "
                                       f"[0, {MAX_CATEGORIES}) (NaN = missing)")


def recode(X, mask, have, want, names=None) -> np.ndarray:
    """X with the codes of each categorical feature f that has both category lists
    (``have[f]``: the categories X's codes index, ``want[f]``: the model's) mapped to the
    positions of the same values in ``want[f]``; a value ``want`` lacks is an error (as
    XGBoost). Returns X itself when nothing changes."""
    if mask is None or have is None or want is None:
        return X
    from ..kernels.arrays import array_module
    xp = array_module(X)            # host or device rows: the lookups run where X is
    out = X
    for f in np.flatnonzero(mask):
        if have[f] is None or want[f] is None or list(have[f]) == list(want[f]):
            continue
        index = {v: i for i, v in enumerate(want[f])}
        missing = [v for v in have[f] if v not in index]
        table = np.array([index.get(v, -1) for v in have[f]], dtype=np.float32)
        col = X[:, f]
        ok = ~xp.isnan(col)
        codes = col[ok].astype(np.int64)
        if missing:
            used = xp.isin(codes, xp.asarray([i for i, v in enumerate(have[f])
                                              if v not in index], dtype=np.int64))
            if bool(used.any()):
                name = names[f] if names else str(f)
                first = int(codes[used][0])
                raise ValueError(f"feature '{name}': category {have[f][first]!r} is "
                                 "not among the training data's categories (XGBoost refuses "
                                 "it too); map it to a known category or to NaN (missing)")
        if out is X:
            out = xp.array(X, dtype=np.float32, copy=True)
        new = xp.full(col.shape, np.nan, dtype=np.float32)
        new[ok] = xp.asarray(table)[codes]
        out[:, f] = new
    return out
