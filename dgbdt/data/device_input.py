"""GPU input: cupy arrays and cuDF DataFrames/Series as checked device matrices and vectors.

The device twins of dgbdt.data.input's host checks, with the same messages. Data stays on the
GPU: a cuDF frame becomes one float32 [n, F] cupy matrix (nullable columns' nulls -> NaN =
missing; category columns by their codes, nulls -> NaN: with enable_categorical they are native
categorical features, dgbdt.data.categorical.cudf_categories keeping their categories; without
it dgbdt.data.input.as_features refuses them, as pandas ones and XGBoost).
"""
from __future__ import annotations

import numpy as np

from ..kernels import gpu_arrays
from .checks import check_vector


def is_cudf(obj) -> bool:
    """Whether obj is a cuDF DataFrame or Series (without importing cudf)."""
    return type(obj).__module__.split(".")[0] == "cudf"


def _cudf_column(col):
    """One cuDF column as a float32 Series whose nulls are NaN-able (codes for categories)."""
    import cudf
    from cudf.api.types import is_bool_dtype, is_numeric_dtype
    dtype = col.dtype
    if isinstance(dtype, cudf.CategoricalDtype) or str(dtype) == "category":
        codes = col.cat.codes.astype("float32")
        return codes.where(~col.isna())
    if not (is_numeric_dtype(dtype) or is_bool_dtype(dtype)):
        raise TypeError(f"data has non-numeric columns: '{col.name}' ({dtype}). Convert them to "
                        "numbers or drop them.")
    return col.astype("float32")


def cudf_to_matrix(df):
    """(cupy float32 [n, F] C-contiguous, column names) of a cuDF DataFrame."""
    import cupy
    import cudf
    names = [str(c) for c in df.columns]
    conv = cudf.DataFrame({i: _cudf_column(df[c]) for i, c in enumerate(df.columns)})
    if conv.shape[1] == 0:
        return cupy.zeros((len(df), 0), dtype=cupy.float32), names
    X = conv.to_cupy(dtype=np.float32, na_value=np.nan)
    return cupy.ascontiguousarray(X), names


def device_matrix(data):
    """(cupy float32 [n, F] C-contiguous, names or None) of a cupy array or cuDF DataFrame."""
    import cupy
    if is_cudf(data):
        if data.ndim == 1:
            raise ValueError("data must be 2-D [n_rows, n_features]; got a cuDF Series (use "
                             "series.to_frame() for a single feature)")
        return cudf_to_matrix(data)
    arr = cupy.asarray(data)
    if not (arr.dtype.kind in "biuf"):
        raise TypeError(f"data must hold numbers; got an array of dtype {arr.dtype}. "
                        "Convert the columns to numbers first.")
    if arr.ndim != 2:
        raise ValueError(f"data must be 2-D [n_rows, n_features]; got shape {arr.shape}"
                         + (" (use X.reshape(-1, 1) for a single feature)"
                            if arr.ndim == 1 else ""))
    return cupy.ascontiguousarray(arr, dtype=cupy.float32), None


def first_inf(X):
    """(row, column) of the first infinite value of a C-contiguous float32/float64 device
    matrix, or None (one kernel, one sync)."""
    from ..kernels.gpu_checks import first_inf_index
    flat = first_inf_index(X)
    return None if flat is None else divmod(flat, X.shape[1])


def device_vector(values, what: str, n: int):
    """A finite float64 [n] cupy vector from a cupy array or cuDF Series/one-column frame."""
    import cupy
    if is_cudf(values):
        if values.ndim == 2:
            if values.shape[1] != 1:
                raise ValueError(f"{what} must be 1-D; got a DataFrame with {values.shape[1]} "
                                 "columns")
            values = values.iloc[:, 0]
        if str(values.dtype) == "category":
            raise TypeError(f"{what} must hold numbers; got dtype category (pass the values, "
                            f"e.g. {what}.astype(float), or use a classifier for class labels)")
        if values.dtype.kind not in "biuf":
            raise TypeError(f"{what} must hold numbers; got dtype {values.dtype}")
        arr = values.astype("float64").to_cupy(na_value=np.nan)
    else:
        arr = cupy.asarray(values)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{what} must hold numbers; got dtype {arr.dtype}")
        arr = gpu_arrays.to_f64(arr)      # a prebuilt cast (CuPy's astype compiles)
    return check_vector(arr, what, n, cupy)
