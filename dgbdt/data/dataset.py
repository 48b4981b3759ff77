"""Dataset: in-memory training data, checked once, quantized into bit-packed pages on demand.

A Dataset keeps its features as a float32 matrix (prediction and evaluation traverse trees on
raw values, as XGBoost does) and builds, when training needs them, the quantile cuts (a merged
sketch of its pages' summaries: the same cuts for any page split) and one bit-packed page per
row range of ``page_rows`` rows: the in-process analogue of Dask partitions.
"""
from __future__ import annotations

import os

import numpy as np

from ..backends.device import array_module, backend_of, is_device_array
from .device_input import is_cudf
from .input import as_features, as_vector, is_nan_missing, mark_missing
from .labels import label_targets
from ..kernels.pages import Page, pack
from .quantize import Cuts, cuts_from_summaries, quantize
from .sketch import Summaries, default_max_keys, summarize_weighted, weight_scale
from .sketch_device import summarize_weighted_device


class Dataset:
    """Training or evaluation data for dgbdt.train and Booster.predict.

    Sparse matrices (scipy.sparse, cupyx) are read with absent entries as missing values and
    kept as CSR; each page is ELLPACK (a row's present entries) when that is smaller than dense
    (dgbdt.data.sparse), so memory follows the stored entries. Same model as the dense matrix.

    Parameters
    ----------
    data : array or DataFrame
        2-D numpy/cupy array, pandas/cuDF DataFrame of numbers (NaN or null = missing).
        GPU input stays on the GPU (labels, weights and base_margin move there too), is
        sketched and quantized there, and trains there unless device="cpu" is asked for.
    label, weight : array, optional
        1-D arrays of length n_rows (weights >= 0, not all zero); a label may be [n_rows, T]
        (a 2-D array or DataFrame: T targets, one model output each).
    base_margin : array, optional
        Initial margins, shape [n_rows] or [n_rows, n_outputs]; replaces base_score.
    feature_names : list of str, optional
        Names of the columns (default: a DataFrame's columns, else none).
    max_bin : int, optional
        Bins per feature for quantization; None = the training parameter max_bin (256).
    page_rows : int, optional
        Rows per page (default: one page). Results never depend on it.
    label_column : int or str, optional
        With a file path as data (``"train.txt?format=libsvm"``,
        ``"train.csv?format=csv&label_column=0"``, ``"train.parquet"``; dgbdt.data.files),
        the label's column (a position for CSV, a name for parquet).
    feature_types : list of str, optional
        XGBoost's type of each feature: ``"c"`` categorical (the column holds category codes,
        whole numbers >= 0, NaN missing), ``"q"`` (or ``"float"``, ``"int"``) numerical.
        pandas ``category`` columns are categorical without it. See dgbdt.data.categorical.
    enable_categorical : bool
        Accept pandas ``category`` columns (their codes, split natively); without it such a
        column is an error, as in XGBoost. Categorical features train on the CPU.
    qid : array, optional
        Query ids of the rows (integers), for the rank:* objectives and ranking metrics; the
        rows of a query must be contiguous and the ids sorted (non-decreasing), as XGBoost
        requires (dgbdt.data.queries).
    group : array, optional
        Query sizes instead of ``qid`` (XGBoost's ``group``): query ``q`` is the next
        ``group[q]`` rows.
    missing : float, optional
        The value that marks a missing entry besides NaN (XGBoost's ``missing``; default NaN):
        entries equal to it (compared in float32) are missing, in sparse input the stored
        ones too. A category column's missing value may not be negative (codes are checked
        first); use NaN there.
    """

    #: XGBoost's feature types ("c": categorical) or None, and the category values of each
    #: pandas category column (dgbdt.data.categorical); class defaults for subclasses
    feature_types = None
    categories = None
    missing = np.nan
    qid = None
    label_lower_bound = label_upper_bound = None

    def __init__(self, data, label=None, weight=None, base_margin=None, feature_names=None,
                 max_bin: int | None = None, *, page_rows: int | None = None,
                 label_column=None, feature_types=None, enable_categorical: bool = False,
                 qid=None, group=None, label_lower_bound=None, label_upper_bound=None,
                 missing: float = np.nan):
        if isinstance(data, (str, os.PathLike)):     # a file (dgbdt.data.files)
            from .files import read_uri
            data, file_label, _ = read_uri(os.fspath(data), label_column)
            if label is None:
                label = file_label
        from .sparse import is_sparse, sparse_features
        if is_sparse(data) and not _names_categorical(feature_types):
            self.data, names, self.feature_types, self.categories = sparse_features(
                data, feature_names, feature_types)
            self.data = mark_missing(self.data, missing)
        else:       # dense input; sparse with categorical features: densified
            self.data, names, self.feature_types, self.categories = as_features(
                data, feature_names, feature_types, enable_categorical,
                check=is_nan_missing(missing))
            if not is_nan_missing(missing):     # then the category codes' checks
                from .categorical import check_codes, mask_of
                self.data = mark_missing(self.data, missing)
                check_codes(self.data, mask_of(self.feature_types), names)
        self.missing = missing
        self.enable_categorical = bool(enable_categorical)
        n = self.data.shape[0]
        dev = self.on_device
        xp = array_module(self.data)
        self.feature_names = names
        self.label = None if label is None else label_targets(label, "label", n, dev)
        from .queries import per_row_weights, query_ids
        self.qid = query_ids(qid, group, n)
        weight = per_row_weights(weight, self.qid, n)
        self.weight = None if weight is None else as_vector(weight, "weight", n, dev)
        if self.weight is not None:
            if bool(xp.any(self.weight < 0)):
                i = int(xp.flatnonzero(self.weight < 0)[0])
                raise ValueError(f"weight must be >= 0; row {i} has weight {float(self.weight[i])}")
            if not bool(xp.any(self.weight > 0)):
                raise ValueError("weight: all sample weights are zero; at least one must be > 0")
        self.label_lower_bound = self.label_upper_bound = None
        self.set_label_bounds(label_lower_bound, label_upper_bound)
        self.base_margin = None
        if base_margin is not None:
            if is_cudf(base_margin):             # a cuDF Series or DataFrame
                base_margin = base_margin.to_cupy()
            elif hasattr(base_margin, "to_numpy"):  # pandas
                base_margin = base_margin.to_numpy(dtype=np.float64, na_value=np.nan)
            bm = xp.asarray(base_margin, dtype=np.float64)
            if bm.ndim == 1:
                bm = bm[:, None]
            if bm.ndim != 2 or bm.shape[0] != n:
                raise ValueError(f"base_margin must have shape [{n}] or [{n}, n_outputs]; "
                                 f"got {tuple(base_margin.shape)}")
            if not bool(xp.all(xp.isfinite(bm))):
                raise ValueError("base_margin contains NaN or infinite values")
            self.base_margin = xp.ascontiguousarray(bm)
        if max_bin is not None and (isinstance(max_bin, bool) or not isinstance(
                max_bin, (int, np.integer)) or not 2 <= max_bin <= 65535):
            raise ValueError(f"max_bin must be an integer in [2, 65535]; got {max_bin!r}")
        self.max_bin = None if max_bin is None else int(max_bin)
        if page_rows is not None and (not isinstance(page_rows, (int, np.integer))
                                      or page_rows < 1):
            raise ValueError(f"page_rows must be a positive integer; got {page_rows!r}")
        self.page_rows = int(page_rows) if page_rows else max(n, 1)
        self._cuts: dict[int, Cuts] = {}
        self._pages: dict[tuple, list[Page]] = {}

    def device_hint(self):
        """An array of the rows' kind, for the training's device (dgbdt.backends.device.
        resolve_device)."""
        return self.data

    @property
    def on_device(self) -> bool:
        """Whether the data lives on a GPU (cupy / cuDF / cupyx.scipy.sparse input)."""
        return is_device_array(self.data)

    # what a training asks of every dataset kind (dgbdt.engine.setup; DaskDataset has them too)
    @property
    def has_label(self) -> bool:
        return self.label is not None

    @property
    def num_target(self) -> int:
        """The label's targets (its columns; 1 for a 1-D label or none)."""
        return 1 if self.label is None or self.label.ndim == 1 else int(self.label.shape[1])

    @property
    def has_intervals(self) -> bool:
        """Whether survival:aft's label bounds are both set."""
        return self.label_lower_bound is not None and self.label_upper_bound is not None

    @property
    def has_qid(self) -> bool:
        return self.qid is not None

    @property
    def sparse(self) -> bool:
        """Whether the rows are kept as a sparse (CSR) matrix (dgbdt.data.sparse)."""
        from .sparse import is_sparse
        return is_sparse(self.data)

    def rows(self, start: int = 0, stop: int | None = None):
        """Rows [start, stop) as a dense float32 matrix (sparse rows densified, absent NaN)."""
        if self.sparse:
            from .sparse import densify
            return densify(self.data, start, stop)
        return self.data[start:stop]

    @property
    def num_row(self) -> int:
        return int(self.data.shape[0])

    @property
    def num_col(self) -> int:
        return int(self.data.shape[1])

    def set_label_bounds(self, lower=None, upper=None) -> None:
        """survival:aft's label intervals (XGBoost's label_lower_bound / label_upper_bound):
        float64 [n] each (upper may be inf: right-censored); either may be given alone and
        the other later (set_float_info)."""
        n = self.data.shape[0]
        xp = array_module(self.data)
        for name, v in (("label_lower_bound", lower), ("label_upper_bound", upper)):
            if v is None:
                continue
            if hasattr(v, "to_numpy"):
                v = v.to_numpy(dtype=np.float64, na_value=np.nan)
            a = xp.asarray(v, dtype=np.float64).reshape(-1)
            if a.shape[0] != n:
                raise ValueError(f"{name} has {a.shape[0]} values; the data has {n} rows")
            setattr(self, name, a)

    def set_float_info(self, field: str, data) -> None:
        """XGBoost's DMatrix.set_float_info for the label bounds, labels and weights."""
        if field in ("label_lower_bound", "label_upper_bound"):
            self.set_label_bounds(**{field.split("_")[-2]: data})
        elif field in ("label", "weight"):
            read = label_targets if field == "label" else as_vector
            setattr(self, field, read(data, field, self.num_row, self.on_device))
        else:
            raise ValueError(f"set_float_info: field {field!r}; dgbdt sets label, weight, "
                             "label_lower_bound and label_upper_bound")

    def get_float_info(self, field: str):
        """XGBoost's DMatrix.get_float_info (an empty array for a field not set)."""
        if field not in ("label", "weight", "label_lower_bound", "label_upper_bound"):
            raise ValueError(f"get_float_info: field {field!r}; dgbdt has label, weight, "
                             "label_lower_bound and label_upper_bound")
        v = getattr(self, field)
        return np.zeros(0) if v is None else v

    def get_label(self):
        """The labels (XGBoost's DMatrix.get_label, for custom objectives)."""
        return self.label

    def get_weight(self):
        """The sample weights, or an empty array without them (as XGBoost)."""
        return self.weight if self.weight is not None else np.zeros(0)

    def slice(self, rows) -> "Dataset":
        """A Dataset of some rows (an index array or mask): features, labels, weights and base
        margins taken alike."""
        take = (lambda a: None if a is None else a[rows])
        d = type(self)(self.data[rows], label=take(self.label), weight=take(self.weight),
                       base_margin=take(self.base_margin), feature_names=self.feature_names,
                       feature_types=self.feature_types, qid=take(self.qid),
                       label_lower_bound=take(self.label_lower_bound),
                       label_upper_bound=take(self.label_upper_bound))
        d.categories = self.categories
        return d

    @property
    def categorical(self):
        """bool [F]: the categorical features, or None (dgbdt.data.categorical)."""
        from .categorical import mask_of
        return mask_of(self.feature_types)

    def save_binary(self, path) -> None:
        """Save the rows with the quantization built so far (cuts, host pages): loading it
        with ``Dataset.load_binary`` skips the sketch and the packing (dgbdt.data.binary)."""
        from .binary import save
        save(self, path)

    @classmethod
    def load_binary(cls, path) -> "Dataset":
        """A Dataset saved by ``save_binary``, with its quantization."""
        from .binary import load
        return load(path, cls)

    def row_ranges(self) -> list[tuple[int, int]]:
        """The (start, stop) row range of each page."""
        n, step = self.num_row, self.page_rows
        return [(a, min(a + step, n)) for a in range(0, n, step)] or [(0, 0)]

    def resolve_max_bin(self, param_max_bin: int) -> int:
        if self.max_bin is not None and self.max_bin != param_max_bin:
            raise ValueError(f"Dataset was built with max_bin={self.max_bin} but the training "
                             f"parameters say max_bin={param_max_bin}; set one of them only")
        return self.max_bin or param_max_bin

    def cuts(self, max_bin: int, backend=None) -> Cuts:
        """Quantile cuts from the merged sketch of every page's summary (cached per max_bin).

        Host rows sketched for a CUDA ``backend`` are copied to the GPU a chunk at a time and
        sketched there (the same summaries bit for bit, dgbdt.data.sketch_device)."""
        if max_bin not in self._cuts:
            max_keys = default_max_keys(max_bin)
            scale = None
            if self.weight is not None:
                scale = weight_scale(float(self.weight.max()), self.num_row)
            merged: Summaries | None = None
            for a, b in self._sketch_ranges(backend):
                w = None if self.weight is None else self.weight[a:b]
                s = self._summarize(a, b, w, scale, max_keys, backend)
                merged = s if merged is None else merged.merge(s, max_keys)
            self._cuts[max_bin] = cuts_from_summaries(merged, max_bin, self.categorical)
        return self._cuts[max_bin]

    def _sketch_ranges(self, backend) -> list[tuple[int, int]]:
        if self.sparse:         # the stored entries in one summary (memory of the entries)
            return [(0, self.num_row)]
        if self.on_device or not _uploads(backend):
            return self.row_ranges()
        step = upload_rows(self.num_col)
        return [(a, min(a + step, self.num_row)) for a in range(0, self.num_row, step)] \
            or [(0, 0)]

    def _summarize(self, a, b, w, scale, max_keys, backend) -> Summaries:
        if self.sparse:         # feature by feature, stored entries only (dgbdt.data.sparse)
            from .sparse import summarize_csr
            return summarize_csr(self.data[a:b], w, scale, max_keys,
                                 backend if _uploads(backend) else None)
        if self.on_device:
            return summarize_weighted_device(self.data[a:b], w, scale, max_keys)
        if _uploads(backend):
            with backend.device:
                return summarize_weighted_device(
                    backend.xp.asarray(self.data[a:b]),
                    None if w is None else backend.xp.asarray(w), scale, max_keys)
        return summarize_weighted(self.data[a:b], w, scale, max_keys)

    def pages(self, cuts: Cuts, max_bin: int, backend=None, dense: bool = False) -> list[Page]:
        """One bit-packed page per row range, quantized with ``cuts``; cached per max_bin and
        per place they were built (the data's GPU, host memory, or the GPU that quantized host
        rows: that GPU's memory stays taken while the Dataset lives, as an XGBoost DMatrix's).
        ``dense``: dense pages even for sparse rows (kernels that read every feature of a row:
        linear trees)."""
        where = "data" if self.on_device else (
            f"cuda:{backend.ordinal}" if _uploads(backend) else "cpu")
        if dense and self.sparse:
            where += "+dense"
        key = (max_bin, where)
        if key not in self._pages:
            self._pages[key] = [self.build_page(a, b, cuts, backend, dense)
                                for a, b in self.row_ranges()]
        return self._pages[key]

    def build_page(self, start: int, stop: int, cuts: Cuts, backend=None,
                   dense: bool = False) -> Page:
        """The bit-packed page of rows [start, stop), where the data lives (not cached); host
        rows for a CUDA ``backend`` are quantized on the GPU a chunk at a time. Sparse rows
        give the smaller of an ELLPACK and a dense page (dgbdt.data.sparse), or with ``dense``
        a dense one."""
        if self.sparse:
            from .sparse import page_of
            return page_of(self.data[start:stop], cuts, backend, dense)
        if self.on_device:
            return backend_of(self.data).quantize_pack(self.data[start:stop], cuts)
        if _uploads(backend):
            return quantize_on_device(self.data[start:stop], cuts, backend)
        return pack(quantize(self.data[start:stop], cuts))


def _names_categorical(feature_types) -> bool:
    """Whether XGBoost feature types name a categorical feature (sparse rows with one are
    densified: the category codes' checks read dense columns)."""
    return feature_types is not None and any(str(t) == "c" for t in feature_types)


UPLOAD_BYTES = 256 << 20     # raw rows copied to the GPU at a time to sketch or quantize them


def upload_rows(n_features: int) -> int:
    """Rows of one upload chunk: about UPLOAD_BYTES of float32, a multiple of 32 rows (so a
    chunk's packed symbols end on a word boundary and chunks' words concatenate)."""
    return max(32, (UPLOAD_BYTES // max(1, 4 * n_features)) // 32 * 32)


def _uploads(backend) -> bool:
    return backend is not None and backend.caps.device_memory


def quantize_on_device(X: np.ndarray, cuts: Cuts, backend) -> Page:
    """The page of host rows X, quantized and packed on the GPU chunk by chunk: each chunk of
    ``upload_rows`` rows (a multiple of 32) packs into whole words, so the page's words are the
    chunks' words one after another: the same page as ``pack(quantize(X, cuts))``."""
    from ..kernels.pages import bits_for, n_words
    n, nf = X.shape
    bits = bits_for(cuts.max_bins)
    xp = backend.xp
    with backend.device:
        words = xp.zeros(n_words(n * nf, bits), dtype=xp.uint32)
        step = upload_rows(nf)
        for a in range(0, n, step):
            b = min(a + step, n)
            part = backend.quantize_pack(xp.asarray(X[a:b]), cuts, bits)   # one width
            at = a * nf * bits // 32
            used = ((b - a) * nf * bits + 31) // 32
            words[at:at + used] = part.words[:used]
    return Page(words=words, n_rows=int(n), n_features=int(nf), bits=bits)


def recoded_to_model(dtrain, categories):
    """The training rows of a continued training (``xgb_model=``) with their category codes
    re-coded by value to the model's ``categories`` (XGBoost's re-coding: a frame whose
    categories are ordered otherwise, or are a subset, trains on as the same frame). Returns
    ``dtrain`` itself when its codes already index the model's categories, else a copy of
    the Dataset (dense rows, host or device) with re-coded rows; the model's category columns
    must be the data's, and a value the model lacks is an error (recode)."""
    have = getattr(dtrain, "categories", None)
    if categories is None or have is None or have == categories:
        return dtrain
    if [c is None for c in have] != [c is None for c in categories]:
        raise ValueError("the model to continue (xgb_model) has other category columns "
                         "than this data: make the data from frames with the model's "
                         "category columns")
    if type(dtrain) is not Dataset or dtrain.sparse:
        raise NotImplementedError(
            "continuing a model (xgb_model) on sparse or external-memory rows whose "
            "categories are ordered otherwise than the model's is not implemented: make the "
            "data from frames with the model's categories (one pd.CategoricalDtype per "
            "column)")
    import copy
    from .categorical import mask_of, recode
    d = copy.copy(dtrain)
    d.data = recode(dtrain.data, mask_of(dtrain.feature_types), have, categories,
                    dtrain.feature_names)
    d.categories = [None if c is None else list(c) for c in categories]
    d._cuts, d._pages = {}, {}           # the copy's quantization: of its own codes
    return d
