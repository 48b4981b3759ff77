"""BatchDataset: training rows that arrive in batches and are never held together.

The rows of a BatchDataset come from a function that returns a fresh iterable of batches
(each a Dataset of some rows: features, labels, weights, base margins) every time it is
called, as XGBoost's DataIter does with ``reset`` and ``next``. To train, the batches are read
three times and then released:

1. the labels, weights and base margins are kept (n floats each) and the shapes checked;
2. the quantile cuts: each batch's sketch summary, merged in order (the sketch merges exactly,
   so these are the cuts of the rows held together: the model is the in-memory Dataset's);
3. the pages: each batch quantized and bit-packed into one page.

Only the pages stay, with one batch in memory at a time (and another ``max_bin`` reads the
batches again). Training on it works as on a Dataset whose pages are the batches. What needs
the raw rows reads the batches again, one at a time: predicting it (the output is the whole
[n, ...] array, built a batch at a time), evaluating it other than as the training set itself
(its margins, n x K floats, are kept; every round reads the batches to add the new trees),
and ``rows(a, b)`` (dense float32 rows: continued training's prior margins, and
``tree_method="approx"`` / dart / linear trees, which hold the training's raw rows as they do
for a Dataset). A ``device_memory_budget`` that would cut the pages differently is refused.
Host (numpy/scipy/pandas) batches; GPU batches are not supported yet. Categorical features
(dgbdt.data.categorical): every batch must have the same feature types and categories (one
pd.CategoricalDtype per column), so a code means the same category in every batch.
"""
from __future__ import annotations

import numpy as np

from .dataset import Dataset
from .quantize import Cuts, cuts_from_summaries
from .sketch import default_max_keys, weight_scale

__all__ = ["BatchDataset"]

_NO_ROWS = ("a BatchDataset keeps its rows as bit-packed pages only (they came in batches "
            "and were released)")


def _kinds_differ(i: int, first, kinds, names) -> str:
    """XGBoost's words for batch i's feature types or categories unlike batch 0's, naming
    the first feature that differs (``first``, ``kinds``: (feature_types, categories))."""
    from .categorical import mask_of
    (t0, c0), (t1, c1) = first, kinds
    n = len(next(v for v in (t0, c0, t1, c1) if v is not None))
    m0, m1 = mask_of(t0), mask_of(t1)
    fix = ("give every batch the same feature types, and each category column the same "
           "categories (one pd.CategoricalDtype per column)")
    for f in range(n):
        name = repr(names[f]) if names is not None else str(f)
        cat0 = bool(m0 is not None and m0[f])
        cat1 = bool(m1 is not None and m1[f])
        k0 = len(c0[f]) if cat0 and c0 is not None and c0[f] is not None else 0
        k1 = len(c1[f]) if cat1 and c1 is not None and c1[f] is not None else 0
        kind = {True: "categorical", False: "numerical"}
        if cat0 != cat1:
            return (f"Inconsistent feature types between batches: feature {name} is "
                    f"{kind[cat0]} in batch 0 and {kind[cat1]} in batch {i} (Inconsistent "
                    f"number of categories between batches: {k0} and {k1}); {fix}")
        if k0 != k1:
            return (f"Inconsistent number of categories between batches: feature {name} has "
                    f"{k0} in batch 0 and {k1} in batch {i}; {fix}")
        if cat0 and c0 is not None and c1 is not None and list(c0[f]) != list(c1[f]):
            return (f"Inconsistent categories between batches: feature {name} has other "
                    f"categories (or another order) in batch {i} than in batch 0; {fix}")
    return (f"Inconsistent feature types between batches: batch {i} has feature types "
            f"{t1} and batch 0 {t0}; {fix}")


class BatchDataset(Dataset):
    """Training rows from ``batches()``: a fresh iterable of Datasets on every call."""

    def __init__(self, batches, feature_names=None, max_bin: int | None = None):
        if not callable(batches):
            raise TypeError("batches must be a function that returns a fresh iterable of "
                            "batches (dgbdt.Dataset) each time it is called")
        self._batches = batches
        self.max_bin = None if max_bin is None else int(max_bin)
        labels, weights, margins, sizes = [], [], [], []
        names = feature_names
        n_features = first = None
        kinds = None
        for i, b in enumerate(self._each()):
            if b.on_device:
                raise ValueError(f"batch {i} is on a GPU: BatchDataset takes host (numpy/"
                                 "pandas) batches for now")
            if n_features is None:
                n_features = b.num_col
                names = names if names is not None else b.feature_names
            elif b.num_col != n_features:
                raise ValueError(f"batch {i} has {b.num_col} features; batch 0 has "
                                 f"{n_features}")
            if kinds is None:
                kinds = (b.feature_types, b.categories)
            elif (b.feature_types, b.categories) != kinds:
                raise ValueError(_kinds_differ(i, kinds, (b.feature_types, b.categories),
                                               names))
            if b.label is None:
                raise ValueError(f"batch {i} has no label: every batch of training rows needs "
                                 "one")
            has = (b.weight is not None, b.base_margin is not None)
            first = has if first is None else first
            for what, a, b0 in (("weight", has[0], first[0]), ("base_margin", has[1], first[1])):
                if a != b0:
                    raise ValueError(f"batch {i} {'has' if a else 'lacks'} {what}, unlike "
                                     "batch 0: give it for every batch or for none")
            if has[0]:
                weights.append(np.asarray(b.weight))
            if has[1]:
                margins.append(np.asarray(b.base_margin))
            labels.append(np.asarray(b.label))
            sizes.append(b.num_row)
        if n_features is None or not sum(sizes):
            raise ValueError("batches gave no rows")
        self.feature_names = names
        self.feature_types, self.categories = kinds
        self._n_features = n_features
        self.label = np.concatenate(labels)
        self.weight = np.concatenate(weights) if weights else None
        self.base_margin = np.concatenate(margins) if margins else None
        self._sizes = sizes
        self.page_rows = max(sizes)
        self._cuts: dict[int, Cuts] = {}
        self._pages: dict[tuple, list] = {}

    def _each(self):
        for b in self._batches():
            if not isinstance(b, Dataset):
                raise TypeError(f"a batch must be a dgbdt.Dataset; got {type(b).__name__}")
            yield b

    # -- what a Dataset answers from its rows ------------------------------------------------
    #: the rows as a whole are not kept (each batch's own page has its layout)
    sparse = False

    @property
    def data(self):
        raise ValueError(f"{_NO_ROWS}: they are read again a batch at a time (each_batch, "
                         "rows), never as one matrix")

    @property
    def on_device(self) -> bool:
        return False

    @property
    def num_row(self) -> int:
        return int(sum(self._sizes))

    @property
    def num_col(self) -> int:
        return int(self._n_features)

    def device_hint(self):
        """Where the rows live, for the training's device: the host."""
        return None

    def row_ranges(self) -> list[tuple[int, int]]:
        ends = np.cumsum(self._sizes).tolist()
        return list(zip([0] + ends[:-1], ends))

    def each_batch(self):
        """(start, stop, batch) for each batch, read again, one in memory at a time; checked
        against the first pass (the same rows and labels, in the same order)."""
        ranges = self.row_ranges()
        n = 0
        for n, b in enumerate(self._each(), 1):
            if n > len(ranges):
                break
            a, z = ranges[n - 1]
            if b.num_row != z - a or not np.array_equal(np.asarray(b.label), self.label[a:z]):
                raise ValueError("batches gave other rows on a later pass: the batches "
                                 "function must give the same batches, in the same "
                                 "order, every time it is called")
            yield a, z, b
        if n != len(ranges):
            raise ValueError(f"batches gave {'more' if n > len(ranges) else 'fewer'} batches "
                             f"on a later pass than the {len(ranges)} of the first: the "
                             "batches function must give the same batches every time")

    def rows(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows [start, stop) as a dense float32 matrix (absent values NaN; category codes as
        the batches give them), read from the batches that hold them."""
        stop = self.num_row if stop is None else int(stop)
        out = np.empty((max(stop - start, 0), self.num_col), np.float32)
        for a, z, b in self.each_batch():
            lo, hi = max(a, start), min(z, stop)
            if lo < hi:
                out[lo - start:hi - start] = b.rows(lo - a, hi - a)
            if z >= stop:
                break
        return out

    def stack(self, fn) -> np.ndarray:
        """fn(batch) of each batch (an array with a row per row of the batch), stacked in
        row order: a batch's result is copied into the whole output before the next batch is
        read."""
        out = None
        for a, z, b in self.each_batch():
            part = np.asarray(fn(b))
            if out is None:
                out = np.empty((self.num_row,) + part.shape[1:], part.dtype)
            out[a:z] = part
        return out

    def slice(self, rows):
        raise ValueError(f"{_NO_ROWS}: slice the source of the batches instead")

    def save_binary(self, path) -> None:
        raise ValueError(f"{_NO_ROWS}: save_binary needs them")

    # -- the passes over the batches ---------------------------------------------------------
    def cuts(self, max_bin: int, backend=None) -> Cuts:
        """Cuts from every batch's summary merged in order (module docstring, pass 2)."""
        if max_bin not in self._cuts:
            max_keys = default_max_keys(max_bin)
            scale = (None if self.weight is None
                     else weight_scale(float(self.weight.max()), self.num_row))
            merged = None
            for b in self._each():
                w = b.weight
                s = b._summarize(0, b.num_row, w, scale, max_keys, backend)
                merged = s if merged is None else merged.merge(s, max_keys)
            self._cuts[max_bin] = cuts_from_summaries(merged, max_bin, self.categorical)
        return self._cuts[max_bin]

    def pages(self, cuts: Cuts, max_bin: int, backend=None, dense: bool = False) -> list:
        """One page per batch (module docstring, pass 3), cached per max_bin and place;
        ``dense``: dense pages of sparse batches too (Dataset.pages)."""
        key = (max_bin, ("cpu" if backend is None or not backend.caps.device_memory
                         else f"cuda:{backend.ordinal}") + ("+dense" if dense else ""))
        if key not in self._pages:
            self._pages[key] = [b.build_page(0, b.num_row, cuts, backend, dense)
                                for _, _, b in self.each_batch()]
        return self._pages[key]

    def build_page(self, start: int, stop: int, cuts: Cuts, backend=None, dense: bool = False):
        raise ValueError(f"{_NO_ROWS}, one page per batch: a device_memory_budget that needs "
                         "smaller pages cannot cut them; give smaller batches instead")

