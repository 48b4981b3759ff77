"""A DMatrix's input as XGBoost reads it (its ``dispatch_data_backend``): 2-D shapes only,
numbers only, object arrays as float32, other scipy.sparse kinds and unknown objects as CSR
with XGBoost's warning; feature names and types checked as XGBoost checks them; query groups
as XGBoost's group_ptr; save_binary's files recognised by their content."""
from __future__ import annotations

import os
import warnings

import numpy as np

from ._common import XGBoostError

FEATURE_TYPES = ("int", "float", "i", "q", "c")   # XGBoost's feature type names


def warn_unused_missing(data, missing) -> None:
    """XGBoost's warning for a ``missing`` value the input kind does not use (files)."""
    if missing is not None and not np.isnan(missing):
        warnings.warn("`missing` is not used for current input data type:" + str(type(data)),
                      UserWarning, stacklevel=3)


def check_data_shape(data) -> None:
    if hasattr(data, "shape") and len(data.shape) != 2:
        raise ValueError("Please reshape the input data into 2-dimensional matrix.")


def numbers(arr: np.ndarray) -> np.ndarray:
    """A numpy matrix as XGBoost reads it: object arrays as float32 (None is missing),
    strings and other non-numbers refused (XGBoost's array interface refuses them)."""
    if arr.dtype.hasobject:
        return np.asarray(arr.astype(np.float32))
    if arr.dtype.kind not in "biuf":
        raise XGBoostError(f"data of dtype {arr.dtype} is not supported: a DMatrix holds "
                           "numbers (convert the columns to numbers first)")
    return arr


def is_frame_like(data) -> bool:
    """pandas / cuDF frames and series, and GPU arrays: read by dgbdt's Dataset itself."""
    from ..data.device_input import is_cudf
    return (is_cudf(data) or hasattr(data, "__cuda_array_interface__")
            or (hasattr(data, "columns") and hasattr(data, "iloc"))
            or (hasattr(data, "to_frame") and hasattr(data, "iloc")))


def read_features(data, missing):
    """``data`` as dgbdt's Dataset reads it, by XGBoost's rules for what a DMatrix takes."""
    if isinstance(data, (str, os.PathLike)):
        warn_unused_missing(data, missing)        # XGBoost's file readers ignore it
        return data, np.nan
    missing = np.nan if missing is None else missing
    if not (hasattr(data, "to_frame") and hasattr(data, "iloc")):    # not a pandas Series
        check_data_shape(data)
    from ..data.sparse import is_sparse
    if is_sparse(data):
        kind = type(data).__name__
        if type(data).__module__.startswith("scipy") and not kind.startswith(
                ("csr_", "csc_", "coo_")):
            # XGBoost reads CSR, CSC and COO; other kinds (dok, lil, ...) it converts
            warnings.warn(f"Unknown data type: {type(data)}, trying to convert it to "
                          "csr_matrix", UserWarning, stacklevel=3)
            data = data.tocsr()
        return data, missing
    if hasattr(data, "to_frame") and hasattr(data, "iloc"):     # a pandas Series: a column
        return data.to_frame(), missing
    if is_frame_like(data):
        return data, missing
    if isinstance(data, (list, tuple)) or hasattr(data, "__array_interface__") \
            or hasattr(data, "__array__"):
        arr = np.asarray(data)
        check_data_shape(arr)
        return numbers(arr), missing
    warnings.warn(f"Unknown data type: {type(data)}, trying to convert it to csr_matrix",
                  UserWarning, stacklevel=3)
    try:
        import scipy.sparse
        return scipy.sparse.csr_matrix(data), missing
    except Exception:           # as XGBoost: any failure to convert is "not supported"
        raise TypeError("Not supported type for data." + str(type(data))) from None


def frame_feature_types(data) -> list | None:
    """XGBoost's type of each column of a pandas DataFrame: "c" for a category, "i" for a
    bool, "int" for an integer and "float" for other numbers, nullable, pyarrow and sparse
    dtypes by their values' type (XGBoost warns that sparse columns are made dense, and so
    does this); None for other data."""
    from ..data.device_input import is_cudf
    if not (hasattr(data, "columns") and hasattr(data, "dtypes") and hasattr(data, "iloc")) \
            or is_cudf(data):
        return None
    import pandas as pd
    types, sparse = [], False
    for dt in data.dtypes:
        if isinstance(dt, pd.SparseDtype):
            sparse, dt = True, dt.subtype
        if isinstance(dt, pd.CategoricalDtype) or "dictionary<" in str(dt):
            types.append("c")
        elif pd.api.types.is_bool_dtype(dt):
            types.append("i")
        elif pd.api.types.is_integer_dtype(dt):
            types.append("int")
        else:
            types.append("float")
    if sparse:
        warnings.warn("Sparse arrays from pandas are converted into dense.", UserWarning,
                      stacklevel=4)
    return types


def host_array(values) -> np.ndarray:
    """A meta field's values (numpy, list, pandas, cupy, cuDF) as a host numpy array."""
    if hasattr(values, "to_cupy"):                 # cuDF
        values = values.to_cupy()
    if hasattr(values, "__cuda_array_interface__"):
        return values.get()
    if hasattr(values, "to_numpy") and hasattr(values, "dtype"):
        # a pandas Series, nullable, sparse or category dtype too (as XGBoost: by value)
        try:
            return values.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            raise TypeError(f"meta info must hold numbers; got a Series of dtype "
                            f"{values.dtype} whose values are not numbers") from None
    if hasattr(values, "to_numpy"):                # a DataFrame
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    return np.asarray(values)


def check_names(names, n_features: int, what: str = "feature names") -> list:
    """XGBoost's _validate_feature_info: a sequence of strings, one per feature."""
    if not isinstance(names, (str, list, tuple, np.ndarray)) and not hasattr(names, "__iter__"):
        raise TypeError(f"Expecting a sequence of strings for {what}, got: {type(names)}")
    names = list(names)
    if len(names) != n_features and n_features != 0:
        raise ValueError(f"{what} must have the same length as the number of data columns, "
                         f"expected {n_features}, got {len(names)}")
    return names


def check_feature_names(names, n_features: int) -> list:
    names = check_names(names, n_features)
    if len(names) != len(set(names)):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"feature_names must be unique. Duplicates found: {dup}")
    # XGBoost's rule: these symbols would break its text dumps and feature maps
    if not all(isinstance(f, str) and not any(s in f for s in "[]<") for f in names):
        raise ValueError("feature_names must be string, and may not contain [, ] or <")
    return names


def check_feature_types(types, n_features: int) -> list:
    types = check_names(types, n_features, "feature types")
    if any(t not in FEATURE_TYPES for t in types):
        raise XGBoostError("All feature_types must be one of {int, float, i, q, c}.")
    return types


def group_ptr(field: str, a: np.ndarray, n: int) -> np.ndarray:
    """XGBoost's group_ptr (uint32 row offsets) from group sizes or sorted query ids."""
    a = a.reshape(-1)
    if a.size and (not np.issubdtype(a.dtype, np.number) or np.any(a != np.floor(a))
                   or np.any(a < 0)):
        raise ValueError(f"{field} must hold integers >= 0")
    a = a.astype(np.int64)
    if field == "group":
        return np.concatenate([[0], np.cumsum(a)]).astype(np.uint32)
    if field == "group_ptr":
        return a.astype(np.uint32)
    if a.size != n or np.any(a[1:] < a[:-1]):
        raise XGBoostError("`qid` must be sorted in non-decreasing order along with data, "
                           f"one per row ({a.size} ids for {n} rows)")
    starts = np.flatnonzero(np.concatenate([[True], a[1:] != a[:-1]])) if a.size else []
    return np.append(starts, a.size).astype(np.uint32)


def saved_dataset(data) -> bool:
    """Whether ``data`` names a file save_binary wrote (an .npz archive: a zip), whatever its
    name, as XGBoost's DMatrix(path) reads its own binary files."""
    if not isinstance(data, (str, os.PathLike)) or "?" in str(data):
        return False
    try:
        with open(data, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:
        return False
