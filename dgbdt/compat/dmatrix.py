"""XGBoost's DMatrix family over dgbdt's Dataset (re-exported by dgbdt.compat.xgboost).

A DMatrix keeps its features as a dgbdt Dataset (or, for data with no rows or no features,
only their shape) and its meta info as XGBoost's MetaInfo keeps it: labels, weights, base
margins, label bounds, query group pointers and feature weights, set and read with XGBoost's
``set_info`` / ``set_float_info`` / ``set_uint_info`` / ``get_*_info`` and checked when set as
XGBoost checks them. The Dataset that trains, evaluates and predicts (``dataset``) is built
from both when asked for, where what XGBoost checks at training is checked (group sizes against
the rows, weights' count). Input is read as XGBoost's ``dispatch_data_backend`` reads it:
2-D shapes only, numbers only, object arrays as float32, other scipy.sparse kinds and unknown
objects converted to CSR with XGBoost's warning (a TypeError when that fails).
"""
from __future__ import annotations

import copy
import weakref

import numpy as np

from ..data.batches import BatchDataset
from ..data.dataset import Dataset
from ._common import (XGBoostError, _unsupported, positional_warned, refuse_categorical,
                      refuse_unsupported)
from .data_iter import DataIter, iter_batches
from ..data.categorical import InvalidCategoryError
from ..data.input import InfiniteValueError
from .input import (check_feature_names, check_feature_types, frame_feature_types, group_ptr,
                    host_array, read_features, saved_dataset, warn_unused_missing)

#: XGBoost's meta info fields (MetaInfo): float fields, then the unsigned one
FLOAT_FIELDS = ("label", "weight", "base_margin", "label_lower_bound", "label_upper_bound",
                "feature_weights")


def _present_csr(X):
    """The present (non-NaN) values of a dense or CSR matrix as a CSR matrix with XGBoost's
    index types (uint32 columns, uint64 row offsets)."""
    import scipy.sparse
    from ..data.sparse import is_sparse
    X = X.get() if hasattr(X, "get") else X
    if is_sparse(X):
        keep = ~np.isnan(X.data)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        counts = np.bincount(rows[keep], minlength=X.shape[0])
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint64)
        return scipy.sparse.csr_matrix(
            (X.data[keep], X.indices[keep].astype(np.uint32), indptr), shape=X.shape)
    present = ~np.isnan(X)
    indptr = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.uint64)
    return scipy.sparse.csr_matrix(
        (X[present], np.nonzero(present)[1].astype(np.uint32), indptr), shape=X.shape)


def _same_categorical(a, b) -> bool:
    """Whether two lists of feature types (or None) name the same categorical features."""
    from ..data.categorical import mask_of
    ma, mb = mask_of(a), mask_of(b)
    return (ma is None and mb is None) or (
        ma is not None and mb is not None and np.array_equal(ma, mb))


class DMatrix:
    """XGBoost's DMatrix: features (a dgbdt Dataset) with XGBoost's meta info (see the module
    docstring); a DataIter as data gives a BatchDataset (see DataIter)."""

    @positional_warned
    def __init__(self, data, label=None, *, weight=None, base_margin=None, missing=None,
                 silent=False, feature_names=None, feature_types=None, nthread=None,
                 group=None, qid=None, label_lower_bound=None, label_upper_bound=None,
                 feature_weights=None, enable_categorical=False, **kwargs):
        if group is not None and qid is not None:
            raise ValueError("Either one of `group` or `qid` should be None.")
        self._kw = kwargs
        self.missing = np.nan if missing is None else missing
        self._info: dict = {}
        self._ds = self._batches = self._invalid = self._frame_types = None
        if isinstance(data, DataIter):
            self._init_iter(data, label, weight, base_margin, missing, feature_names,
                            feature_types, enable_categorical, group, qid,
                            label_lower_bound, label_upper_bound, feature_weights)
            return
        if saved_dataset(data):
            warn_unused_missing(data, missing)
            self._set_base(Dataset.load_binary(data))      # saved by save_binary
            self._info_from(self._base)
        else:
            data, missing = read_features(data, missing)
            shape = getattr(data, "shape", None)
            if shape is not None and len(shape) == 2 and 0 in tuple(shape):
                self._set_base(None, tuple(int(s) for s in shape))  # XGBoost takes empty data
            else:
                if feature_names is not None and shape is not None:
                    feature_names = check_feature_names(feature_names, int(shape[1]))
                self._read(data, missing, feature_names, feature_types, enable_categorical)
                if self._base is not None and self._base.label is not None:   # a file's
                    self._info["label"] = self._base.label
        if feature_names is not None:
            self.feature_names = feature_names
        elif self._names is not None:
            self._names = check_feature_names(self._names, self.num_col())
        if feature_types is not None:
            self.feature_types = feature_types
        self.set_info(label=label, weight=weight, base_margin=base_margin, group=group,
                      qid=qid, label_lower_bound=label_lower_bound,
                      label_upper_bound=label_upper_bound, feature_weights=feature_weights)

    def _init_iter(self, it, label, weight, base_margin, missing, feature_names,
                   feature_types, enable_categorical, group, qid, lower, upper, fw):
        refuse_unsupported(group=group, qid=qid, feature_weights=fw,
                           enable_categorical=enable_categorical, feature_types=feature_types)
        if missing is not None and not (isinstance(missing, float) and np.isnan(missing)):
            _unsupported(f"missing={missing!r} with a DataIter",
                         "mark the batches' missing values NaN, or pass arrays")
        if lower is not None or upper is not None:
            refuse_unsupported(label_lower_bound=lower)
        if label is not None or weight is not None or base_margin is not None:
            raise ValueError("with a DataIter, labels, weights and base margins come with "
                             "each batch (input_data(data=..., label=...))")
        batches = iter_batches(it, enable_categorical)
        try:
            self._batches = BatchDataset(batches, feature_names=feature_names)
        except ValueError:
            seen = batches.seen
            if seen["done"] and seen["batches"] == 0:
                raise ValueError("the DataIter gave no batch: it must give at least 1 batch "
                                 "(next(input_data) calls input_data(data=..., label=...) "
                                 "and returns True)") from None
            if not seen["done"] or seen["rows"] or seen["columns"] is None:
                raise
            # every batch is empty: a DMatrix of no rows, as XGBoost's (it trains on it)
            self._batches = None
            self._set_base(None, (0, seen["columns"]))
            self._info["label"] = np.zeros(0, np.float64)
            return
        self._base, self._shape, self._types = None, None, feature_types

    def _read(self, data, missing, names, types, enable_categorical) -> None:
        """The features as a Dataset, with XGBoost's words for an infinite value; an invalid
        category code is an error when the matrix is first used (XGBoost finds it when it
        sketches the features), as is any use but its shape and meta info then."""
        frame_types = frame_feature_types(data)
        try:
            self._set_base(Dataset(data, missing=missing, feature_names=names,
                                   feature_types=types, enable_categorical=enable_categorical))
        except InfiniteValueError as e:
            raise ValueError(f"Input data contains `inf` or a value too large: {e}") from None
        except InvalidCategoryError as e:
            self._set_base(None, tuple(int(s) for s in data.shape))
            self._invalid = e
        self._frame_types = frame_types

    def _set_base(self, base, shape=None):
        self._base = base
        self._shape = shape if base is None else (base.num_row, base.num_col)
        self._names = None if base is None else base.feature_names
        self._types = None if base is None else base.feature_types

    def _info_from(self, d: Dataset) -> None:
        """Meta info of a loaded Dataset (save_binary's file)."""
        for name in ("label", "weight", "base_margin"):
            if getattr(d, name) is not None:
                self._set_field(name, getattr(d, name))
        if d.qid is not None:
            from ..data.queries import group_pointers
            self._set_field("group_ptr", group_pointers(d.qid)[0])

    # the Dataset dgbdt trains on, evaluates and predicts
    @property
    def dataset(self):
        """The features with the meta info as a dgbdt Dataset (built when first asked for
        after a change; what XGBoost checks at training is checked here)."""
        if self._batches is not None:
            return self._batches
        if self._ds is None:
            self._ds = self._build()
        return self._ds

    @property
    def __dgbdt_dataset__(self):
        return self.dataset

    def _build(self) -> Dataset:
        if self._invalid is not None:
            raise self._invalid
        if self._base is None:
            raise ValueError(f"data is empty (shape {self._shape}); need at least one row "
                             "and one feature")
        info, n, base = self._info, self.num_row(), self._base
        label = info.get("label")       # [n], or [n, T]: several targets (one output each)
        group = None
        if "group_ptr" in info:
            ptr = info["group_ptr"]
            if ptr.size and int(ptr[-1]) != n:
                raise XGBoostError(f"Invalid query group structure: the groups hold "
                                   f"{int(ptr[-1])} rows; the data has {n} rows")
            group = np.diff(ptr.astype(np.int64))
        weight = info.get("weight")
        if weight is not None and weight.size not in (n, 0 if group is None else group.size):
            raise XGBoostError(f"Size of weights must equal to number of rows (or of query "
                               f"groups): {weight.size} weights, {n} rows")
        types = self.feature_types      # XGBoost's names: a booster records a frame's
        d = Dataset(base.data, label=label, weight=weight, base_margin=info.get("base_margin"),
                    feature_names=self._names, feature_types=types, group=group,
                    label_lower_bound=info.get("label_lower_bound"),
                    label_upper_bound=info.get("label_upper_bound"),
                    enable_categorical=base.enable_categorical, max_bin=base.max_bin,
                    page_rows=base.page_rows)
        d.categories = base.categories
        if weight is None and _same_categorical(types, base.feature_types):
            # cuts and pages depend on the rows, their weights and the types only: a label
            # or margin set between trainings keeps them
            d._cuts, d._pages = base._cuts, base._pages
        return d

    def _changed(self) -> None:
        self._ds = None

    # shape and features
    def num_row(self) -> int:
        if self._batches is not None:
            return self._batches.num_row
        return self._shape[0]

    def num_col(self) -> int:
        if self._batches is not None:
            return self._batches.num_col
        return self._shape[1]

    def get_quantile_cut(self):
        """XGBoost's (indptr, values) of the cuts this matrix was quantized with: a
        QuantileDMatrix's own (its max_bin), a DMatrix's last training's (dgbdt.compat.cuts)."""
        from .cuts import quantile_cut
        d = self.__dgbdt_dataset__
        if getattr(self, "max_bin", None) is not None or isinstance(self, QuantileDMatrix):
            return quantile_cut(d.cuts(self.max_bin or 256))
        if not d._cuts:
            raise ValueError("this DMatrix has no cuts yet: train on it first (or make a "
                             "QuantileDMatrix, which quantizes when it is made)")
        return quantile_cut(list(d._cuts.values())[-1])

    def get_categories(self, export_to_arrow: bool = False):
        """XGBoost's: the category values a feature (dgbdt.compat.categories.Categories;
        ``empty()`` without categorical features)."""
        from .categories import categories_of
        return categories_of(self.feature_names, self.num_col(),
                             getattr(self.dataset, "categories", None), export_to_arrow)

    def num_nonmissing(self) -> int:
        """The number of present (non-missing) values."""
        return int(self.get_data().nnz)

    def get_data(self):
        """The features as a scipy CSR matrix of the present values (missing ones left out),
        as XGBoost's get_data."""
        import scipy.sparse
        if self._batches is not None:           # a DataIter's: its batches read again
            parts = [_present_csr(b.data) for _, _, b in self._batches.each_batch()]
            out = scipy.sparse.vstack(parts, format="csr")
            return scipy.sparse.csr_matrix(
                (out.data, out.indices.astype(np.uint32), out.indptr.astype(np.uint64)),
                shape=out.shape)
        if self._invalid is not None:
            raise self._invalid
        if self._base is None:
            return scipy.sparse.csr_matrix(self._shape, dtype=np.float32)
        return _present_csr(self._base.data)

    @property
    def feature_names(self):
        if self._batches is not None:
            return self._batches.feature_names
        return None if not self._names else list(self._names)

    @feature_names.setter
    def feature_names(self, names) -> None:
        self._names = None if names is None else check_feature_names(names, self.num_col())
        self._changed()

    @property
    def feature_types(self):
        """The types set, else a frame's columns' (XGBoost's names: frame_feature_types)."""
        if self._frame_types is not None:
            return list(self._frame_types)
        return None if not self._types else list(self._types)

    @feature_types.setter
    def feature_types(self, types) -> None:
        self._types = None if types is None else check_feature_types(types, self.num_col())
        self._frame_types = None
        self._changed()

    # meta info
    @positional_warned
    def set_info(self, *, label=None, weight=None, base_margin=None, group=None, qid=None,
                 label_lower_bound=None, label_upper_bound=None, feature_names=None,
                 feature_types=None, feature_weights=None) -> None:
        """Set meta info (XGBoost's DMatrix.set_info): the fields given, the others kept."""
        for field, v in (("label", label), ("weight", weight), ("base_margin", base_margin),
                         ("group", group), ("qid", qid),
                         ("label_lower_bound", label_lower_bound),
                         ("label_upper_bound", label_upper_bound),
                         ("feature_weights", feature_weights)):
            if v is not None:
                self._set_field(field, v)
        if feature_names is not None:
            self.feature_names = feature_names
        if feature_types is not None:
            self.feature_types = feature_types

    def _set_field(self, field: str, values) -> None:
        """One meta field, checked as XGBoost's MetaInfo::SetInfo checks it."""
        if self._batches is not None:
            _unsupported(f"setting {field} on a DataIter's DMatrix",
                         "pass it with each batch (input_data(...))")
        a = host_array(values)
        n = self.num_row()
        if field in ("group", "qid", "group_ptr"):
            self._info["group_ptr"] = group_ptr(field, a, n)
        elif field == "feature_weights":
            w = a.astype(np.float64).reshape(-1)
            if w.size == 0:                       # XGBoost: empty resets them
                self._info.pop("feature_weights", None)
            else:
                if w.size != self.num_col():
                    raise ValueError(f"feature_weights has {w.size} values; the data has "
                                     f"{self.num_col()} features")
                if not np.all(np.isfinite(w)) or np.any(w < 0):
                    raise XGBoostError("Feature weight must be greater than 0.")
                self._info["feature_weights"] = w
        elif field in ("label", "base_margin"):
            if a.ndim > 2:
                raise ValueError(f"Invalid shape: {a.shape} for {field}")
            v = np.ascontiguousarray(a, dtype=np.float64).reshape(-1)
            if (n == 0 and v.size) or (n and v.size % n):
                raise XGBoostError(f"Invalid size for `{field}`: {v.size} values for "
                                   f"{n} rows (a multiple of the rows is needed)")
            if field == "label" and not np.all(np.isfinite(v)):
                raise XGBoostError("Label contains NaN, infinity or a value too large.")
            # the values in C order, one row per sample (XGBoost's [n, k] layout)
            self._info[field] = v if n == 0 or v.size == n else v.reshape(n, -1)
        elif field == "weight":
            w = a.astype(np.float64).reshape(-1)
            if not np.all(np.isfinite(w)) or np.any(w < 0):
                raise XGBoostError("Weights must be positive values.")
            self._info["weight"] = w
        elif field in ("label_lower_bound", "label_upper_bound"):
            self._info[field] = a.astype(np.float64).reshape(-1)
        else:
            raise XGBoostError(f"Unknown key: {field}")
        self._changed()

    def set_float_info(self, field: str, data) -> None:
        """Set a field (label, weight, base_margin, label_lower_bound, label_upper_bound,
        feature_weights; group or qid too, as XGBoost's setters take any field)."""
        self._set_field(field, data)

    set_float_info_npy2d = set_uint_info = set_float_info

    def _get_info(self, field: str):
        if self._batches is not None:
            v = getattr(self._batches, field, None)
            return np.zeros(0, np.float32) if v is None else np.asarray(v, np.float32)
        if field == "qid":
            raise XGBoostError("Retrieving `qid` is not supported; use `group_ptr` instead.")
        if field == "group_ptr":
            return self._info.get("group_ptr", np.zeros(0, np.uint32)).copy()
        if field not in FLOAT_FIELDS:
            raise XGBoostError(f"Unknown key: {field}")
        v = self._info.get(field)
        return np.zeros(0, np.float32) if v is None else v.astype(np.float32)

    def get_float_info(self, field: str):
        """A field's values (float32; an empty array when it is not set)."""
        return self._get_info(field)

    def get_uint_info(self, field: str):
        """``group_ptr``: the query groups' row offsets (uint32; empty without groups)."""
        return self._get_info(field)

    def set_label(self, label) -> None:
        self._set_field("label", label)

    def set_weight(self, weight) -> None:
        self._set_field("weight", weight)

    def set_base_margin(self, margin) -> None:
        self._set_field("base_margin", margin)

    def set_group(self, group) -> None:
        self._set_field("group", group)

    def get_label(self):
        return self._get_info("label")

    def get_weight(self):
        return self._get_info("weight")

    def get_base_margin(self):
        return self._get_info("base_margin")

    def get_group(self):
        return np.diff(self._get_info("group_ptr"))

    def save_binary(self, fname, silent: bool = True) -> None:
        """Save the rows, meta info and quantization built so far (dgbdt's format;
        DMatrix("x.buffer") reads it). The rows are saved as the smaller of a dense matrix
        and a CSR matrix of the present values, chosen from the values alone: the same rows
        give the same file however they were given (dense with a missing value, CSR)."""
        d = copy.copy(self.dataset)
        if self.feature_types is not None:      # a frame's column types too, as XGBoost's
            d.feature_types = self.feature_types
        csr = self.get_data()
        n, f = csr.shape
        as_csr = csr.nnz * 8 + (n + 1) * 4 < n * f * 4
        if as_csr != d.sparse:
            if as_csr:
                d.data = csr.astype(np.float32)
                d.data.indices = d.data.indices.astype(np.int32)
                d.data.indptr = d.data.indptr.astype(np.int32)
            else:
                from ..data.sparse import densify
                d.data = densify(csr)
            d._pages = {}                 # pages follow the storage; cuts do not
        d.save_binary(fname)

    def slice(self, rindex, allow_groups: bool = False) -> "DMatrix":
        """A DMatrix of the rows ``rindex`` (positions, repeats allowed, as XGBoost reads
        them: as int32) with their meta info; feature weights, names and types kept. A
        DMatrix with query groups is sliced only with ``allow_groups`` (the groups are then
        dropped, as XGBoost drops them)."""
        if self._base is None:
            _unsupported("slicing an empty DMatrix or a DataIter's", "slice the arrays")
        if "group_ptr" in self._info and not allow_groups:
            raise XGBoostError("slice does not support group structure")
        rows = np.asarray(rindex, dtype=np.int32).reshape(-1)
        n = self.num_row()
        if rows.size and (rows.min() < 0 or rows.max() >= n):
            raise IndexError(f"slice: row indices must be in [0, {n}); got "
                             f"{int(rows.min())}..{int(rows.max())}")
        out = DMatrix.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out._ds = None
        base = self._base
        part = Dataset(base.data[rows], feature_names=base.feature_names,
                       feature_types=base.feature_types, missing=np.nan,
                       enable_categorical=base.enable_categorical)
        part.categories = base.categories
        out._base, out._shape = part, (int(rows.size), self.num_col())
        out._info = {}
        for k, v in self._info.items():
            if k in ("label", "base_margin", "label_lower_bound", "label_upper_bound") or (
                    k == "weight" and v.size == n):
                out._info[k] = v[rows]
            elif k == "feature_weights":
                out._info[k] = v
        return out


def with_feature_weights(params: dict, dtrain) -> dict:
    """The training parameters with the matrix's feature weights (XGBoost keeps them in the
    DMatrix; dgbdt's column sampling reads the ``feature_weights`` parameter), unless the
    parameters name their own."""
    fw = (getattr(dtrain, "_info", None) or {}).get("feature_weights")
    if fw is not None and np.asarray(fw).size and params.get("feature_weights") is None:
        params = dict(params, feature_weights=[float(w) for w in np.asarray(fw).ravel()])
    return params


class QuantileDMatrix(DMatrix):
    """XGBoost's QuantileDMatrix: the same as DMatrix here (dgbdt quantizes every training set
    itself; ``ref=`` and ``max_bin=`` are accepted: evaluation sets are binned with the training
    set's cuts, and max_bin is a training parameter)."""

    def __init__(self, data, label=None, *, ref=None, max_bin=None, **kwargs):
        meta = ("weight", "base_margin", "feature_names", "feature_types", "group", "qid",
                "label_lower_bound", "label_upper_bound", "feature_weights")
        if isinstance(data, DataIter) and (label is not None or any(
                kwargs.get(k) is not None for k in meta)):
            raise ValueError("If data iterator is used as input, data like label should be "
                             "specified as batch argument (input_data(data=..., label=..."
                             ") in the DataIter's next).")
        super().__init__(data, label=label, **kwargs)
        self.max_bin = max_bin
        #: XGBoost's weak reference to the training matrix whose cuts this one shares
        self.ref = None if ref is None else weakref.ref(ref)
        if ref is not None and ref.num_col() != self.num_col():    # XGBoost's check
            raise ValueError(f"this data has {self.num_col()} features but ref= (the "
                             f"training set) has {ref.num_col()} features.")
        w, ptr = self._info.get("weight"), self._info.get("group_ptr")
        n = self.num_row()
        if ref is None and w is not None and w.size != n and (
                ptr is None or w.size != ptr.size - 1):
            # XGBoost checks when it sketches, at construction (not with ref's cuts)
            raise XGBoostError(f"Invalid size of sample weight: {w.size} weights for {n} "
                               "rows (one weight a row, or a query group)")

    def get_quantile_cut(self):
        """The cuts of ref= (the training matrix) when it was given, as XGBoost quantizes
        with them (at this matrix's max_bin, else ref's, else 256); else its own."""
        if self.ref is None:
            return super().get_quantile_cut()
        ref = self.ref()
        if ref is None:
            raise ValueError("the reference matrix (ref=) of this QuantileDMatrix no longer "
                             "exists: keep it alive to read the cuts it gives")
        from .cuts import quantile_cut
        max_bin = self.max_bin or getattr(ref, "max_bin", None) or 256
        return quantile_cut(ref.__dgbdt_dataset__.cuts(max_bin))


class ExtMemQuantileDMatrix(QuantileDMatrix):
    """XGBoost's external-memory QuantileDMatrix: a DataIter's batches as bit-packed pages
    (dgbdt.BatchDataset; the pages stay in memory, or spill within device_memory_budget)."""

    def __init__(self, data, *, max_bin=None, ref=None, **kwargs):
        if not isinstance(data, DataIter):
            raise TypeError("ExtMemQuantileDMatrix reads a DataIter; use QuantileDMatrix for "
                            "arrays and frames")
        super().__init__(data, max_bin=max_bin, ref=ref, **kwargs)




def check_training_data(params, dtrain, xgb_model=None) -> None:
    """What XGBoost refuses before training on ``dtrain`` (``params`` as the user gave
    them): categorical features with tree_method="exact" or booster="gblinear"; a
    QuantileDMatrix (its rows are kept as bins) with another tree method than hist; a
    QuantileDMatrix made with a max_bin other than the training's (the params', else the
    continued model's)."""
    p = dict(params) if isinstance(params, (list, tuple)) else dict(params or {})
    if p.get("tree_method") == "exact" and float(p.get("colsample_bynode", 1.0)) < 1.0:
        raise XGBoostError("column sample by node is not yet supported by the exact tree "
                           "method (XGBoost's rule). Fix: tree_method=\"hist\" or \"approx\", "
                           "or colsample_bylevel / colsample_bytree")
    if not isinstance(dtrain, DMatrix) or dtrain.num_row() == 0:
        return
    method = p.get("tree_method")
    refuse_categorical(method, p.get("booster"), dtrain.dataset.feature_types)
    if not isinstance(dtrain, QuantileDMatrix):
        return
    if method not in (None, "hist", "auto", "gpu_hist"):
        raise ValueError(f"Only the `hist` tree method is supported for a QuantileDMatrix "
                         f"(its rows are kept as quantized bins); got tree_method="
                         f"{method!r}. Fix: tree_method=\"hist\", or a DMatrix")
    model = getattr(xgb_model, "config_params", None) or {}
    want = p.get("max_bin", model.get("max_bin"))
    if dtrain.max_bin is not None and want is not None and int(want) != int(dtrain.max_bin):
        source = "the parameters'" if "max_bin" in p else "the model's to continue"
        raise ValueError(f"Inconsistent `max_bin`: the QuantileDMatrix was made with max_bin="
                         f"{dtrain.max_bin} but the training uses {source}, {int(want)}; "
                         "max_bin must be consistent between a QuantileDMatrix and the "
                         "Booster it trains. Fix: the same max_bin for both")


def check_eval_refs(dtrain, evals) -> None:
    """XGBoost's rule for evaluation sets: a QuantileDMatrix other than ``dtrain`` must have
    been made with ref=dtrain (that very matrix), whose cuts it shares."""
    for d, _ in evals or []:
        if isinstance(d, QuantileDMatrix) and d is not dtrain and (
                d.ref is None or d.ref() is not dtrain):
            raise ValueError("Training dataset should be used as a reference when "
                             "constructing the `QuantileDMatrix` for evaluation: "
                             "QuantileDMatrix(X, y, ref=dtrain), or a DMatrix")
