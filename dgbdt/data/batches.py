"""BatchDataset: training rows that arrive in batches and are never held together.

The rows of a BatchDataset come from a function that returns a fresh iterable of batches
(each a Dataset of some rows: features, labels, weights, base margins) every time it is
called, as XGBoost's DataIter does with ``reset`` and ``next``. The batches are read three
times and then released:

1. the labels, weights and base margins are kept (n floats each) and the shapes checked;
2. the quantile cuts: each batch's sketch summary, merged in order (the sketch merges exactly,
   so these are the cuts of the rows held together: the model is the in-memory Dataset's);
3. the pages: each batch quantized and bit-packed into one page.

Only the pages stay, with one batch in memory at a time (and another ``max_bin`` reads the
batches again). Training on it works as on a Dataset whose pages are the batches. What needs
the raw rows says so: predicting it, evaluating it other than as the training set itself,
continued training (whose margins start from the prior model's predictions), and a
``device_memory_budget`` that would cut the pages differently. Host (numpy/pandas) batches;
GPU batches are not supported yet. Categorical features (dgbdt.data.categorical): every batch
must have the same feature types and categories (one pd.CategoricalDtype per column), so a
code means the same category in every batch.
"""
from __future__ import annotations

import numpy as np

from .dataset import Dataset
from .quantize import Cuts, cuts_from_summaries
from .sketch import default_max_keys, weight_scale

__all__ = ["BatchDataset"]

_NO_ROWS = ("a BatchDataset keeps its rows as bit-packed pages only (they came in batches "
            "and were released)")


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
                raise ValueError(f"batch {i} has other feature types or categories than batch "
                                 "0: give every batch the same feature_types and category "
                                 "columns the same categories (one pd.CategoricalDtype each)")
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
        raise ValueError(f"{_NO_ROWS}: predict or evaluate on a Dataset of the rows, and "
                         "continue training on a Dataset too")

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
            pages = []
            for (a, z), b in zip(self.row_ranges(), self._each()):
                if b.num_row != z - a or not np.array_equal(np.asarray(b.label),
                                                            self.label[a:z]):
                    raise ValueError("batches gave other rows on a later pass: the batches "
                                     "function must give the same batches, in the same "
                                     "order, every time it is called")
                pages.append(b.build_page(0, b.num_row, cuts, backend, dense))
            if len(pages) != len(self._sizes):
                raise ValueError("batches gave fewer batches on a later pass: the batches "
                                 "function must give the same batches every time")
            self._pages[key] = pages
        return self._pages[key]

    def build_page(self, start: int, stop: int, cuts: Cuts, backend=None, dense: bool = False):
        raise ValueError(f"{_NO_ROWS}, one page per batch: a device_memory_budget that needs "
                         "smaller pages cannot cut them; give smaller batches instead")

