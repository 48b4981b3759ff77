"""Turning user input (numpy, pandas; cupy, cuDF) into checked float32 matrices and float64 vectors.

GPU input stays on the GPU (dgbdt.data.device_input); host input stays on the host.

Every rejection says what was wrong and what to do; nothing here copies data that is already a
C-contiguous float32 matrix.
"""
from __future__ import annotations

import numpy as np

from ..kernels.arrays import array_module
from .checks import check_vector, checked_names
from .device_input import device_matrix, device_vector, first_inf, is_cudf
from .sparse import as_csr, densify, is_sparse


class InfiniteValueError(ValueError):
    """Features holding an infinite value (or a finite one beyond float32's range)."""


def _is_dataframe(obj) -> bool:
    return hasattr(obj, "columns") and hasattr(obj, "dtypes") and hasattr(obj, "iloc")


def check_frame_columns(df, enable_categorical: bool = False) -> list[str]:
    """The column names of a (pandas or dask) DataFrame whose columns are all numeric, or
    category columns where ``enable_categorical`` (dgbdt.data.categorical)."""
    import pandas as pd

    from .categorical import refuse_categories

    names = [str(c) for c in df.columns]
    cats = [n for n, dt in zip(names, df.dtypes) if isinstance(dt, pd.CategoricalDtype)]
    refuse_categories(cats, enable_categorical)
    bad = []
    for name, dtype in zip(names, df.dtypes):
        if isinstance(dtype, pd.CategoricalDtype):
            continue
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
            bad.append(f"'{name}' ({dtype})")
    if bad:
        raise TypeError("data has non-numeric columns: " + ", ".join(bad)
                        + ". Convert them to numbers or drop them.")
    return names


def _frame_to_matrix(df) -> tuple[np.ndarray, list[str]]:
    names = check_frame_columns(df)
    # nullable extension dtypes (Int64, Float64, boolean): pd.NA becomes NaN = missing
    X = df.to_numpy(dtype=np.float32, na_value=np.nan)
    return X, names


def as_matrix(data, feature_names=None, allow_empty: bool = False
              ) -> tuple[np.ndarray, list[str] | None]:
    """A C-contiguous float32 [n, F] matrix and the feature names (or None).

    ``allow_empty``: accept zero rows (a Dask partition may be empty; a dataset may not).
    """
    names = None
    if is_sparse(data):
        data = densify(as_csr(data, allow_empty))
    on_device = is_cudf(data) or hasattr(data, "__cuda_array_interface__")
    if on_device:
        X, names = device_matrix(data)
    elif _is_dataframe(data):
        with np.errstate(over="ignore"):        # beyond float32: said below, with the value
            X, names = _frame_to_matrix(data)
    else:
        arr = np.asarray(data)
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                       or arr.dtype == np.bool_):
            raise TypeError(f"data must hold numbers; got an array of dtype {arr.dtype}. "
                            "Convert the columns to numbers first.")
        if np.iscomplexobj(arr):
            raise TypeError("data must hold real numbers; got complex values")
        if arr.ndim != 2:
            raise ValueError(f"data must be 2-D [n_rows, n_features]; got shape {arr.shape}"
                             + (" (one row: X.reshape(1, -1); one feature: X.reshape(-1, 1))"
                                if arr.ndim == 1 else ""))
        with np.errstate(over="ignore"):        # beyond float32: said below, with the value
            X = np.ascontiguousarray(arr, dtype=np.float32)
    if (X.shape[0] == 0 and not allow_empty) or X.shape[1] == 0:
        raise ValueError(f"data is empty (shape {X.shape}); need at least one row and one "
                         "feature")
    where = first_inf(X) if on_device else _first_inf(X)
    if where is not None:
        r, c = where
        col = names[c] if names else str(c)
        given = _given_value(data, r, c)
        if given is not None and np.isfinite(given):
            # a finite float64 beyond float32's range becomes inf when features are stored
            raise InfiniteValueError(f"data holds {given!r} at row {r}, feature {col}: beyond "
                                     "the float32 range that features are stored in (|x| <= "
                                     "3.4e38); scale the feature, or use NaN (missing)")
        raise InfiniteValueError(f"data contains infinite values (first at row {r}, feature "
                                 f"{col}); replace them with NaN (missing) or a finite value")
    return X, checked_names(feature_names if feature_names is not None else names, X.shape[1])


def _given_value(data, r: int, c: int):
    """The user's value at (r, c) before the float32 conversion, as a float (None where it
    cannot be read cheaply: device or sparse input)."""
    try:
        if _is_dataframe(data):
            return float(data.iloc[r, c])
        a = np.asarray(data)
        return float(a[r, c]) if a.ndim == 2 else None
    except (TypeError, ValueError, IndexError):
        return None


def as_features(data, feature_names=None, feature_types=None, enable_categorical: bool = False,
                allow_empty: bool = False, check: bool = True):
    """as_matrix with categorical features (dgbdt.data.categorical): (X, names, types,
    categories). ``types``: each feature's XGBoost type name, or None when all are numerical
    and none was named; ``categories``: per feature the category values of a pandas category
    column (None for the others), or None when the data has no category column. With
    ``check``, category codes are checked (whole numbers in [0, MAX_CATEGORIES), NaN missing;
    prediction takes any value, as XGBoost: one outside a split's set goes left)."""
    from . import categorical as C

    frame_cat = cats = None
    host_frame = _is_dataframe(data) and not is_cudf(data)
    if host_frame and any(C.category_columns(data)):
        X, cats = C.frame_codes(data, enable_categorical)
        frame_cat = [c is not None for c in cats]
        names = [str(c) for c in data.columns] if feature_names is None else feature_names
        X, names = as_matrix(X, names, allow_empty)
    elif is_cudf(data) and data.ndim == 2 and \
            any(str(t) == "category" for t in data.dtypes):
        C.refuse_categories([str(n) for n, t in zip(data.columns, data.dtypes)
                             if str(t) == "category"], enable_categorical)
        # cuDF category columns: their codes on the device (dgbdt.data.device_input), the
        # categories kept as a pandas frame's are
        cats = C.cudf_categories(data)
        frame_cat = [c is not None for c in cats]
        X, names = as_matrix(data, feature_names, allow_empty)
    else:
        X, names = as_matrix(data, feature_names, allow_empty)
    types = C.resolve_types(feature_types, X.shape[1], frame_cat)
    mask = C.mask_of(types)
    if check:
        C.check_codes(X, mask, names)
    return X, names, types, cats


def is_nan_missing(missing) -> bool:
    """Whether ``missing`` (XGBoost's missing-value marker) is NaN (or None): nothing to mark."""
    return missing is None or (isinstance(missing, (float, np.floating)) and np.isnan(missing))


def mark_missing(X, missing):
    """X with every value equal to ``missing`` (compared in float32, as XGBoost compares it)
    made NaN, dgbdt's missing value: a new matrix (X is the caller's and is never changed);
    X itself when ``missing`` is NaN. Dense (numpy, cupy) or sparse (CSR: stored entries
    equal to it become missing too, as XGBoost reads them)."""
    if is_nan_missing(missing):
        return X
    if isinstance(missing, bool) or not isinstance(missing, (int, float, np.integer,
                                                              np.floating)) \
            or not np.isfinite(missing):
        raise ValueError(f"missing must be a finite number or NaN; got {missing!r}")
    m = np.float32(missing)
    if is_sparse(X):          # CSR (dgbdt.data.sparse)
        X = X.copy()
        X.data[X.data == m] = np.nan
        return X
    xp = array_module(X)
    return xp.where(X == m, xp.float32(np.nan), X)


def _first_inf(X):
    inf = np.isinf(X)
    if not inf.any():
        return None
    r, c = np.argwhere(inf)[0]
    return int(r), int(c)


def as_vector(values, what: str, n: int, device: bool = False):
    """A finite float64 [n] vector (labels, weights): numpy, or cupy when the input is on a GPU
    or ``device`` asks for it (the data is on a GPU)."""
    if is_cudf(values) or hasattr(values, "__cuda_array_interface__") or device:
        return device_vector(values, what, n)
    if _is_dataframe(values):
        if values.shape[1] != 1:
            raise ValueError(f"{what} must be 1-D; got a DataFrame with {values.shape[1]} columns")
        values = values.iloc[:, 0]
    if hasattr(values, "dtype") and hasattr(values, "to_numpy") and hasattr(values, "isna"):
        # a pandas Series: nullable dtypes (Int32, Float32, boolean) by value, NA as NaN (which
        # the check below rejects with its row)
        import pandas as pd
        if isinstance(values.dtype, pd.CategoricalDtype):
            raise TypeError(f"{what} must hold numbers; got dtype category (pass the values, "
                            f"e.g. {what}.astype(float), or use a classifier for class labels)")
        if pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(
                values.dtype):
            values = values.to_numpy(dtype=np.float64, na_value=np.nan)
    arr = np.asarray(values)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{what} must hold numbers; got dtype {arr.dtype}")
    return check_vector(arr.astype(np.float64), what, n, np)


def inplace_input(data):
    """``data`` as XGBoost's inplace_predict reads it: a list or tuple as a numpy array, a
    pandas Series as a one-column frame, an object (or float16) array as float32 (None is
    missing); a numpy array of other non-numbers (bytes, strings, complex) is a ValueError,
    as XGBoost's."""
    if isinstance(data, (list, tuple)):
        data = np.array(data)
    if hasattr(data, "to_frame") and hasattr(data, "iloc") and not is_cudf(data):
        return data.to_frame()
    if isinstance(data, np.ndarray):
        if data.dtype.hasobject or data.dtype == np.float16:
            return data.astype(np.float32)
        if data.dtype.kind not in "biuf":
            raise ValueError(f"data of dtype {data.dtype} cannot be predicted on: it must "
                             "hold numbers (convert it, e.g. X.astype(np.float32))")
    return data
