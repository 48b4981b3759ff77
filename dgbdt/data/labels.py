"""Class labels of the classifiers: distinct classes, encoding to indices and back.

``label_targets`` reads a training label, one target or several (an [n, T] matrix).
Class labels arrive as whatever the user holds: numpy or cupy arrays, pandas Series (numbers,
strings, bool, category, nullable Int/Float/boolean), cuDF Series. ``label_values`` makes them
one 1-D array on the device where they live (cupy for cuDF/cupy input, numpy otherwise), so GPU
labels are encoded on the GPU; ``classes_`` is always a small host (numpy) array, as in
scikit-learn and XGBoost.

The per-partition helpers at the end run in Dask worker tasks (dgbdt.dask.sklearn maps them
over partitions): this module imports neither scikit-learn nor dask, so a worker unpickling
them loads neither (scikit-learn's import is slow on fresh workers:
docs/benchmarks-archive.md#figures-behind-code-choices).
"""
from __future__ import annotations

import numpy as np

from ..kernels import gpu_arrays
from .device_input import is_cudf


def _xp(a):
    if hasattr(a, "__cuda_array_interface__"):
        import cupy
        return cupy
    return np


def _missing(y, what: str) -> None:
    """Raise if a pandas/cuDF Series holds missing labels (NA, null, NaN)."""
    na = y.isna()
    if bool(na.any()):
        first = int(np.flatnonzero(na.to_numpy())[0]) if not is_cudf(na) else \
            int(na.to_cupy().nonzero()[0][0])
        raise ValueError(f"{what} has missing values (first at row {first}); drop those rows or "
                         "fill them before fitting")


def label_values(y, what: str = "y"):
    """y as a 1-D array on its device: cupy for cuDF/cupy, numpy for everything else.

    pandas nullable and category dtypes become their plain values; missing labels raise. A
    cuDF Series of strings comes to the host (cupy holds no strings).
    """
    if hasattr(y, "columns") and hasattr(y, "dtypes"):       # a one-column DataFrame
        if len(y.columns) != 1:
            raise ValueError(f"{what} must be 1-D; got a DataFrame with {len(y.columns)} columns")
        y = y[y.columns[0]]
    if is_cudf(y):
        _missing(y, what)
        if str(y.dtype) == "category":
            y = y.astype(y.cat.categories.dtype)
        if y.dtype.kind in "biuf":
            return y.to_cupy()
        return y.to_numpy()
    if hasattr(y, "isna") and hasattr(y, "to_numpy"):          # pandas Series
        _missing(y, what)
        dtype = getattr(y.dtype, "numpy_dtype", None)          # masked: Int32, boolean, ...
        if hasattr(y, "cat"):
            return np.asarray(y.to_numpy())
        return y.to_numpy(dtype=dtype) if dtype is not None else y.to_numpy()
    xp = _xp(y)
    arr = xp.asarray(y) if xp is not np else np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{what} must be 1-D class labels; got shape {tuple(arr.shape)}")
    if arr.dtype.kind == "f" and _has_nan(arr, xp):
        raise ValueError(f"{what} has missing values (first at row "
                         f"{int(xp.flatnonzero(xp.isnan(arr))[0])}); drop those rows or fill "
                         "them before fitting")
    return arr


def _has_nan(arr, xp) -> bool:
    """Whether a float label vector holds a NaN (a cupy float32/64 one by a kernel that ships
    compiled: dgbdt.kernels.gpu_checks.label_scan)."""
    if (xp is not np and arr.dtype in (np.float32, np.float64) and arr.flags.c_contiguous
            and arr.size):
        from ..kernels.gpu_checks import label_scan
        bad = label_scan(arr)[0]
        if bad is None:
            return False
    return bool(xp.isnan(arr).any())


def label_targets(values, what: str, n: int, device: bool = False):
    """A training label: a finite float64 [n] vector (dgbdt.data.input.as_vector), or for
    several targets (a 2-D array or a DataFrame of T > 1 columns: XGBoost's multi-target
    label) a finite C-contiguous float64 [n, T] matrix; cupy when the input or ``device`` is
    on a GPU, numpy otherwise."""
    from .input import as_vector
    cols = getattr(values, "shape", None)
    if cols is None and isinstance(values, (list, tuple)):      # a list of rows
        cols = np.shape(values)
    if cols is None or len(cols) != 2 or cols[1] == 1:
        return as_vector(values, what, n, device)
    if is_cudf(values):
        arr = values.astype("float64").to_cupy(na_value=np.nan)
    elif hasattr(values, "to_numpy") and hasattr(values, "columns"):       # pandas
        if any(str(t) == "category" for t in values.dtypes):
            raise TypeError(f"{what} must hold numbers; got a category column (pass the "
                            "values, e.g. .astype(float))")
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        xp = _xp(values)
        arr = xp.asarray(values) if xp is not np else np.asarray(values)
        if arr.dtype == object or arr.dtype.kind not in "biuf":
            raise TypeError(f"{what} must hold numbers; got dtype {arr.dtype}")
        arr = arr.astype(np.float64)
    if device and _xp(arr) is np:
        import cupy
        arr = cupy.asarray(arr)
    xp = _xp(arr)
    if arr.shape[0] != n:
        raise ValueError(f"{what} has {arr.shape[0]} rows but data has {n} rows")
    bad = ~xp.isfinite(arr)
    if bool(bad.any()):
        r, c = (int(v) for v in xp.argwhere(bad)[0])
        raise ValueError(f"{what} contains NaN or infinite values (first at row {r}, "
                         f"target {c})")
    return xp.ascontiguousarray(arr)


def multilabel_values(y, what: str = "y"):
    """A multi-label classifier's y: for a 2-D y of T > 1 columns (an array, a list of rows,
    a DataFrame) the float64 [n, T] matrix of its 0/1 indicators, on its device; None for
    any other y (one label a row). Values other than 0 and 1 raise."""
    shape = getattr(y, "shape", None)
    if shape is None and isinstance(y, (list, tuple)):
        shape = np.shape(y)
    if shape is None or len(shape) != 2 or shape[1] == 1:
        return None
    arr = label_targets(y, what, shape[0])
    xp = _xp(arr)
    bad = (arr != 0.0) & (arr != 1.0)
    if bool(bad.any()):
        r, c = (int(v) for v in xp.argwhere(bad)[0])
        raise ValueError(f"{what}: a 2-D y is multi-label (one 0/1 column per label); got "
                         f"{float(arr[r, c])!r} at row {r}, column {c}. For several "
                         "continuous targets use a regressor")
    return arr


def distinct(values) -> np.ndarray:
    """The sorted distinct labels, as a host array (computed on the labels' device: integer
    labels by dgbdt.kernels.gpu_checks' kernels, which ship compiled, others by a sort)."""
    xp = _xp(values)
    if xp is np:
        return np.unique(values)
    from ..kernels.gpu_checks import integer_classes
    u = integer_classes(values)
    return u if u is not None else xp.unique(values).get()


def encode(values, classes: np.ndarray):
    """Labels -> float64 indices into the sorted ``classes``, on the labels' device; labels not
    in ``classes`` raise."""
    xp = _xp(values)
    if xp is not np and classes.dtype.kind not in "biuf":
        values = values.get()
        xp = np
    if values.dtype.kind == "b" and classes.dtype.kind == "b":   # searchsorted has no bool
        values, classes = values.astype(np.int8), classes.astype(np.int8)
    if xp is not np:        # integer labels: one kernel (CuPy's below compile at first use)
        from ..kernels.gpu_checks import encode_integer_classes
        done = encode_integer_classes(values, classes)
        if done is not None and done[1] is None:
            return done[0]
    c = xp.asarray(classes)
    idx = xp.clip(xp.searchsorted(c, values), 0, len(classes) - 1)
    unknown = c[idx] != values
    if bool(unknown.any()):
        bad = values[unknown]
        bad = bad.get() if xp is not np else bad
        raise ValueError(f"labels {np.unique(bad)[:5].tolist()} were not seen in fit "
                         f"(classes_ = {classes.tolist()})")
    return idx.astype(np.float64)


def decode(idx, classes: np.ndarray):
    """Class indices -> labels; on the device of ``idx`` when the classes are numbers."""
    xp = _xp(idx)
    if xp is not np:
        if classes.dtype.kind in "biuf":
            return xp.asarray(classes)[idx]
        idx = idx.get()
    return classes[idx]


def host_values(obj):
    """A numpy array of any 1-D or 2-D result or label container (cupy, cuDF, pandas)."""
    if obj is None:
        return None
    if is_cudf(obj):
        obj = obj.to_pandas()
    if hasattr(obj, "__cuda_array_interface__"):
        return _xp(obj).asnumpy(obj)
    if hasattr(obj, "isna") and hasattr(obj, "to_numpy"):
        dtype = getattr(obj.dtype, "numpy_dtype", None)
        return obj.to_numpy(dtype=dtype) if dtype is not None else obj.to_numpy()
    return np.asarray(obj)


def proba_columns(p):
    """[n, n_classes] probabilities from the model's output (binary: [1 - p, p]); on the
    prediction's device."""
    xp = _xp(p)
    if p.ndim != 1:
        return p
    if xp is np:
        return np.stack([1.0 - p, p], axis=1)
    return gpu_arrays.proba_pair(p)       # a prebuilt kernel (CuPy's compile at first use)


def labels_from_prediction(p, classes: np.ndarray, softmax: bool):
    """Class labels from the model's (non-margin) output (on the GPU for numeric classes)."""
    xp = _xp(p)
    idx = p.astype(np.int64) if softmax else xp.argmax(proba_columns(p), axis=1)
    return decode(idx, classes)


# -- per partition, in Dask worker tasks ------------------------------------------------------
def series_like(s, values, name):
    """A Series of values with s's index, of s's library (pandas, or cuDF for cuDF input)."""
    if is_cudf(s):
        import cudf
        return cudf.Series(values, index=s.index, name=name)
    import pandas as pd
    return pd.Series(values, index=s.index, name=name)


def encode_partition(s, classes):
    """One partition's labels as class indices, on its device (cuDF stays cuDF)."""
    return series_like(s, encode(label_values(s), classes), s.name)


def encode_block(block, classes):
    """One dask array block's labels as class indices."""
    return encode(label_values(block), classes)


def labels_partition(p, classes, softmax):
    """One partition of predictions (a Series) as class labels."""
    values = p.to_cupy() if is_cudf(p) else p.to_numpy()
    return series_like(p, labels_from_prediction(values, classes, softmax), "prediction")


def part_distinct(s) -> np.ndarray:
    """A partition's sorted distinct labels on the host; missing labels raise here."""
    return distinct(label_values(s))


def merged_distinct(*parts) -> np.ndarray:
    """The sorted distinct labels of partitions' ``part_distinct`` arrays (host arrays)."""
    return distinct(np.concatenate([p for p in parts if p.shape[0]] or [np.zeros(0)]))
