"""A partition's rows on its worker: the checked ``Part``, and the tasks that run on it.

``make_part`` checks one partition where it lives (errors name the partition, and
``located`` turns a partition's "row N" into the dataset's row); ``part_stats`` and
``part_summary`` are what travels to the client (row counts, the largest weight, query ids,
category values) and into the sketch's tree-reduce (``merge_summaries``); Dask is told what a
Part and a Shard weigh. dgbdt.dask.data.DaskDataset builds these over a collection.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..backends.device import array_module, is_device_array
from ..data.device_input import is_cudf
from ..data.input import as_matrix, as_vector, mark_missing
from ..data.labels import label_targets
from ..data.quantize import Cuts, cuts_from_summaries
from ..data.sketch import Summaries, merge_many, summarize_weighted
from ..data.sketch_device import summarize_blocks_device, summarize_weighted_device
from ..data.sparse import as_csr, is_sparse, summarize_csr
from ..data.queries import group_pointers, query_ids
from .categories import categorical_block, part_categories
from .worker import data_task_threads, worker_address

__all__ = ["Part", "check_queries_within_partitions", "cuts_of_summaries", "located",
           "make_part", "merge_summaries", "part_stats", "part_summary", "parts_summary",
           "results_in_order"]

_ROW = re.compile(r"\brow (\d+)")


@dataclass
class Part:
    """One checked partition (lives on a worker)."""

    X: np.ndarray                   # float32 [n, F], or a CSR matrix (dgbdt.data.sparse)
    label: np.ndarray | None        # float64 [n]
    weight: np.ndarray | None       # float64 [n]
    base_margin: np.ndarray | None  # float64 [n, K]
    # (partition index, rows) of the partitions whose rows these are, in order: where the rows
    # sit in the dataset's order (row sampling draws by that global index)
    pieces: tuple = ()
    #: the dataset's category values per feature (None without category columns): X's codes
    #: index them (dgbdt.data.categorical)
    categories: list | None = None
    #: int64 [n] query ids (host) for ranking, or None; sorted within the partition, and no
    #: query has rows in two partitions (DaskDataset checks it)
    qid: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])


def _register_sizes() -> None:
    """Tell Dask what parts and shards weigh (its default, sys.getsizeof, sees a few hundred
    bytes), so its memory accounting, spilling and dashboard see the arrays."""
    from dask.sizeof import sizeof

    from ..engine.shard import Shard

    def nbytes(x) -> int:
        if is_sparse(x):        # CSR: its three arrays
            return sum(int(a.nbytes) for a in (x.data, x.indices, x.indptr))
        return int(getattr(x, "nbytes", 0))

    def arrays(*xs) -> int:
        return int(sum(nbytes(x) for x in xs if x is not None))

    sizeof.register(Part)(lambda p: arrays(p.X, p.label, p.weight, p.base_margin))
    sizeof.register(Shard)(lambda s: arrays(s.page.words, s.label, s.weight, s.margin, s.g,
                                            s.h, s.grad, s.rows, s.scratch_l, s.scratch_r))


_register_sizes()


def make_part(index: int, X, label, weight, base_margin, n_features: int, types=None,
              categories=None, qid=None, lower=None, upper=None, missing=np.nan) -> Part:
    """Check one partition (runs on a worker); errors name the partition. ``types``: the
    features' XGBoost types; ``categories``: the dataset's category values per feature, to
    which a category column's codes are re-coded by value (the same codes for every
    partitioning, whatever categories a partition's own dtype lists); a column whose
    dataset categories are gathered (None there) keeps the partition's own codes until
    dgbdt.dask.categories.recode_part (the Part's ``categories`` say what its codes mean)."""
    try:
        if types is None and is_sparse(X):      # kept as CSR (dgbdt.data.sparse)
            X = as_csr(X, allow_empty=True)
        elif types is None:
            X, _ = as_matrix(X, allow_empty=True)
        else:
            X, categories = categorical_block(X, types, categories)
        if X.shape[1] != n_features:
            raise ValueError(f"has {X.shape[1]} features, expected {n_features}")
        X = mark_missing(X, missing)
        n = X.shape[0]
        dev = is_device_array(X)
        xp = array_module(X)
        y = None if label is None else label_targets(label, "label", n, dev)   # [n] or [n, T]
        if lower is not None:       # survival:aft's label intervals [n, 2]
            from ..objectives.survival import interval_labels
            y = interval_labels(_bound(lower, xp), _bound(upper, xp), n)
        w = None if weight is None else as_vector(weight, "weight", n, dev)
        if w is not None and bool(xp.any(w < 0)):
            raise ValueError(f"weight must be >= 0; row {int(xp.flatnonzero(w < 0)[0])} "
                             "is negative")
        bm = None
        if base_margin is not None:
            if is_cudf(base_margin):
                base_margin = base_margin.values
            elif hasattr(base_margin, "to_numpy"):      # pandas (nullable dtypes too)
                base_margin = base_margin.to_numpy(dtype=np.float64, na_value=np.nan)
            bm = xp.asarray(base_margin, dtype=np.float64)
            bm = bm[:, None] if bm.ndim == 1 else bm
            if bm.shape[0] != n or not bool(xp.all(xp.isfinite(bm))):
                raise ValueError(f"base_margin must be finite with {n} rows")
        q = None if qid is None else query_ids(qid, None, n)
    except (ValueError, TypeError) as e:
        raise type(e)(f"partition {index}: {e}") from None
    return Part(X, y, w, bm, ((int(index), int(n)),), categories, q)


def _bound(v, xp):
    """A partition's label bound (numpy, cupy, pandas or cuDF) as a float64 array of xp
    (inf allowed: a right-censored upper bound; dgbdt.objectives.survival checks them)."""
    if is_cudf(v):
        v = v.values
    elif hasattr(v, "to_numpy"):
        v = v.to_numpy(dtype=np.float64, na_value=np.nan)
    return xp.asarray(v, dtype=np.float64)


def part_stats(part: Part, gather=()) -> tuple:
    """(rows, largest weight, its distinct query ids or None, the category values of the
    columns in ``gather`` or None, the address of the worker that ran this: "" outside one)
    of a part. The task runs where the part is, so the address tells the client where each
    part lives without asking the scheduler again (dgbdt.dask.data.DaskDataset.holders)."""
    wmax = float(part.weight.max()) if part.weight is not None and part.n_rows else 0.0
    qids = group_pointers(part.qid)[1] if part.qid is not None else None
    return part.n_rows, wmax, qids, part_categories(part, list(gather)), worker_address()


def located(e: Exception, index: int, first_row: int) -> Exception:
    """A partition's error (from its task) with its row named in the dataset: "row N" (of the
    partition) becomes "row first_row + N of the dataset (row N of partition index)"; the
    partition is named either way. The same exception type where it takes a message."""
    text = str(e)
    prefix = f"partition {index}: "
    if text.startswith(prefix):
        text = text[len(prefix):]
    def row(m):
        n = int(m.group(1))
        return f"row {first_row + n} of the dataset (row {n} of partition {index})"
    located_text, k = _ROW.subn(row, text, count=1)
    out = located_text if k else f"{prefix}{text}"
    try:
        return type(e)(out)
    except Exception:  # noqa: BLE001  (an exception type that wants other arguments)
        return ValueError(out)


def results_in_order(futures, rows_before) -> list:
    """The futures' results, in partition order, a failure raised ``located``: ``rows_before
    (i, results so far)`` is the dataset row of partition i's first row."""
    futures = list(futures)
    if futures:
        try:    # one gather: a result() a future is a round trip to its worker each
            return futures[0].client.gather(futures)
        except Exception:  # noqa: BLE001  (the first failure in partition order: below)
            pass
    out = []
    for i, f in enumerate(futures):
        try:
            out.append(f.result())
        except (ValueError, TypeError) as e:
            raise located(e, i, rows_before(i, out)) from None
    return out


def check_queries_within_partitions(ids: list) -> None:
    """Raise unless every query id (``ids``: each partition's distinct ids) lies in one
    partition only: a query's gradients and metrics need all its rows together."""
    sizes = [len(i) for i in ids]
    every = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
    values, counts = np.unique(every, return_counts=True)
    if (counts > 1).any():
        q = values[counts > 1][0]
        where = np.searchsorted(np.cumsum(sizes), np.flatnonzero(every == q), side="right")
        raise ValueError(
            f"query id {q} has rows in partitions {', '.join(str(int(p)) for p in where)}: a "
            "query group must lie within one partition (its gradients and ranking metrics "
            "need all its rows). Fix: sort and repartition by qid so that each query lies "
            "within one partition, e.g. ddf = ddf.set_index('qid', sorted=False) (or "
            "ddf.sort_values('qid')), then check that no qid spans a partition boundary, "
            "rows of a query contiguous and sorted within each partition")


def part_summary(part: Part, scale: float | None, max_keys: int) -> Summaries:
    """The part's sketch summaries (dgbdt.data.sketch.summarize_weighted)."""
    w = part.weight if scale is not None else None
    with data_task_threads():
        if is_sparse(part.X):       # the stored entries alone: the dense rows' summaries
            return summarize_csr(part.X, w, scale, max_keys)
        summarize = (summarize_weighted_device if is_device_array(part.X)
                     else summarize_weighted)
        return summarize(part.X, w, scale, max_keys)


def parts_summary(scale: float | None, max_keys: int, *parts: Part) -> Summaries:
    """The summaries of the rows of several parts (one worker's): dense GPU parts as one sort
    a feature over all their rows (dgbdt.data.sketch_device.summarize_blocks_device), others
    each part's summary merged. Merges are exact, so both give what part_summary of each part
    merged in any tree gives."""
    if all(not is_sparse(p.X) and is_device_array(p.X) for p in parts):
        with data_task_threads():
            return summarize_blocks_device(
                [p.X for p in parts], None if scale is None else [p.weight for p in parts],
                scale, max_keys)
    return merge_summaries(*[part_summary(p, scale, max_keys) for p in parts])


def merge_summaries(*parts: Summaries) -> Summaries:
    """The parts' summaries merged exactly, in one k-way merge (dgbdt.data.sketch.merge_many);
    one summary is its own merge."""
    if len(parts) == 1:
        return parts[0]
    with data_task_threads():
        return merge_many(parts, parts[0].max_keys)


def cuts_of_summaries(max_bin: int, categorical, *parts: Summaries) -> Cuts:
    """The sketch's root: the last summaries merged (``merge_summaries``) and the cuts made
    from them (dgbdt.data.quantize.cuts_from_summaries), in one task: one hop fewer
    between the partitions' sketches and their pages."""
    return cuts_from_summaries(merge_summaries(*parts), max_bin, categorical)
