"""A partition's pages: what a persisted DaskDataset keeps of its rows once they are packed.

A training needs each row's quantized features (the bit-packed page), its label, weight and
base margin; nothing else of the raw float32 features. So the first training of a persisted
DaskDataset packs every checked partition (``Part``) into a ``PagedPart`` in a task of its own,
on the worker holding the part, and the dataset lets go of the raw part as soon as its pages
exist (dgbdt.dask.data): the raw rows and the pages of one partition coexist, never those of
all. The PagedParts stay in the workers' memory for later trainings with the same ``max_bin``,
device and ``device_memory_budget``; each training builds its shards (the training state:
gradients, margins, row order) around them (dgbdt.dask.shards). For linear trees a PagedPart
also keeps the partition's raw float32 features (``raw``; the page set's settings say so): the
linear leaves regress on values, so those rows stay on the worker beside their pages.

A page task depends on its partition's task, which depends on the source collection's tasks,
so a PagedPart lost with a worker is recomputed by Dask from that lineage (read again, checked,
packed) as any lost partition is.

``device_memory_budget`` holds per worker, as when a worker's joined partitions were cut into
pages: every page task of one training's page set on a worker places its pages through one
``PageStore`` of that worker (``_STORES``, by the page set's token), created with the budget for
the rows the client expects there; a partition is cut into pages of the size that budget asks
for, pages beyond it spill (CPU) or stream from host memory (GPU) as in-process.
"""
from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass

import numpy as np

from ..backends.device import device_scope, get_backend, is_device_array, to_host
from ..data.dataset import quantize_on_device
from ..data.page_store import (BudgetWarning, PageStore, budget_bytes, gpu_memory_errors,
                               hist_bytes, move_page, packed_bytes, page_rows_for)
from ..kernels.pages import Page, bits_for, pack
from ..data.quantize import quantize
from ..data.sparse import densify, is_sparse, planned_layout
from ..data.sparse import page_of as sparse_page
from .worker import data_task_threads, worker_address


@dataclass
class PagedPart:
    """One partition's rows as pages (lives on a worker): ``pages[i]`` holds rows
    ``ranges[i]`` (a partition is cut only under a budget), with the partition's labels,
    weights and base margins and its ``pieces`` (dgbdt.dask.parts.Part)."""

    ranges: tuple               # ((a, b), ...) row ranges of the pages
    pages: list                 # [Page], placed for training (in memory, spilled, or host)
    label: object
    weight: object
    base_margin: object
    pieces: tuple
    n_rows: int
    store: tuple                # (page set token, worker address): the PageStore that placed it
    qid: object = None          # the partition's query ids (ranking), or None
    #: the partition's raw float32 features (host), kept for linear trees (their leaves
    #: regress on values; pages keep bins), else None
    raw: object = None


@dataclass
class PagePlan:
    """What every page task of one page set needs to place its pages: the budget and where it
    applies (``rows_by_worker``: the rows the client expects each worker to pack, None when
    unknown), and what the automatic GPU budget leaves room for (outputs, tree size)."""

    token: str
    budget: object              # device_memory_budget: None, bytes, or a fraction
    n_outputs: int
    max_nodes: int
    rows_by_worker: dict | None = None
    raw: bool = False           # keep each partition's raw features beside its pages


def _register_size() -> None:
    from dask.sizeof import sizeof

    def nbytes(p: PagedPart) -> int:
        arrays = [pg.words for pg in p.pages] + [p.label, p.weight, p.base_margin, p.raw]
        return int(sum(getattr(a, "nbytes", 0) for a in arrays if a is not None))
    sizeof.register(PagedPart)(nbytes)


_register_size()

_STORES: dict[tuple, PageStore] = {}   # PageStores by (page set token, worker address)
_LOCK = threading.Lock()                # page tasks of one worker may run in several threads


def page_of(X, cuts, be, dense: bool = False) -> Page:
    """The rows X quantized by ``cuts`` and bit-packed, where ``be`` computes: on its GPU
    (host rows are copied there a chunk at a time) or on the host. Sparse rows: an ELLPACK
    page when smaller (dgbdt.data.sparse), dense with ``dense`` (linear trees)."""
    if is_sparse(X):
        return sparse_page(X, cuts, be, dense)
    if be.caps.device_memory and is_device_array(X):
        return be.quantize_pack(X, cuts)
    if be.caps.device_memory:
        return quantize_on_device(to_host(X), cuts, be)
    return pack(quantize(to_host(X), cuts))


def _worker_store(plan: PagePlan, be, n_rows: int, n_features: int, cuts,
                  bits: int | None = None):
    """This worker's PageStore of the page set, its key, and the rows of a page under its
    budget (None: a partition is one page); rows of ``n_features`` symbols of ``bits`` bits
    (default: a dense page's)."""
    bits = bits_for(cuts.max_bins) if bits is None else int(bits)
    key = (plan.token, worker_address())
    with _LOCK:
        store = _STORES.get(key)
        if store is None:
            rows = None if plan.rows_by_worker is None else plan.rows_by_worker.get(key[1])
            total = None if rows is None else packed_bytes(rows, n_features, bits)
            store = PageStore(budget_bytes(plan.budget, be, rows or n_rows, plan.n_outputs,
                                           hist_bytes(cuts, plan.max_nodes)), be, total=total)
            _STORES[key] = store
    whole = store.budget is None or (store.total is not None and store.total <= store.budget)
    step = None if whole else page_rows_for(store.budget, n_features, bits, store.streaming)
    return store, key, step


def make_paged(part, cuts, device: str, plan: PagePlan) -> PagedPart:
    """The part's pages on this worker (see the module docstring)."""
    be = get_backend(device)
    n = part.n_rows
    with device_scope(be), data_task_threads(), gpu_memory_errors({"device_memory_budget": plan.budget},
                                             "packing a partition's pages"):
        width, bits = int(part.X.shape[1]), None
        if is_sparse(part.X):       # planned at the ELLPACK size (dgbdt.data.sparse)
            _, width, bits = planned_layout(part.X, cuts, plan.raw)
        store, key, step = _worker_store(plan, be, n, width, cuts, bits)
        ranges = [(a, min(a + step, n)) for a in range(0, n, step)] if step and n else [(0, n)]
        pages = []
        for a, b in ranges:
            page = page_of(part.X[a:b], cuts, be, plan.raw)
            with _LOCK:
                page = store.place(page)
            pages.append(move_page(page, be))
    big = max(pg.nbytes for pg in pages)
    if any(pg.streamed for pg in pages) and store.budget is not None and big > store.budget:
        warnings.warn(
            f"a partition of {n} rows packs into a page of {big} bytes, more than "
            f"device_memory_budget={store.budget} bytes: it streams through the GPU whole, so "
            "the budget is exceeded while it is there.", BudgetWarning, stacklevel=2)
    raw = None
    if plan.raw:       # linear trees: the raw values stay (4 bytes a value beside the page)
        raw = raw_rows(part.X, 0, n)
    return PagedPart(tuple(ranges), pages, part.label, part.weight, part.base_margin,
                     part.pieces, n, key, part.qid, raw)


def raw_rows(X, a: int, b: int, be=None):
    """Rows [a, b) of a part's features as the linear kernels read them: float32, C order,
    on the host (a view when X is that already, as a checked Part's is), or with a CUDA
    backend ``be`` on its GPU (a view of device rows; host rows copied up)."""
    if is_sparse(X):
        X, a, b = densify(X, a, b), 0, b - a
    if be is not None and be.caps.device_memory:
        return be.xp.ascontiguousarray(be.xp.asarray(X[a:b]), dtype=be.xp.float32)
    return np.ascontiguousarray(to_host(X[a:b]), dtype=np.float32)


def stream_slots(units) -> int:
    """Device slots for the streamed pages of these PagedParts: as many of the largest page as
    their worker's budget holds (at least two; two when the store is not on this worker)."""
    keys = {u.store for u in units}
    store = _STORES.get(keys.pop()) if len(keys) == 1 else None
    return 2 if store is None else store.slots
