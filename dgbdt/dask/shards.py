"""A worker's training shards: its partitions' rows quantized and packed into pages.

A shard is a page and the training state of its rows (dgbdt.engine.shard). Every mode builds a
worker's shards inside its own task on that worker (``local_shards``) from one of:

* a persisted dataset's PagedParts (dgbdt.dask.pages), kept across trainings: one shard per
  page, the margins starting from the intercept (or the rows' base margins), or, for a model
  to continue from, from margins computed on the raw rows (``start_margins``);
* a streamed dataset's shards, packed by ``make_shard`` for this training;
* Parts (the collective ranks of tests/test_collective.py): joined and cut into the pages that
  fit ``device_memory_budget``, as in-process training does.

For piecewise-linear trees (``linear_tree``) every shard also keeps its rows' raw float32
features (``Shard.raw``: linear leaves regress on values, pages keep bins): a view of the part's
or the PagedPart's matrix, on the worker that holds it (on a GPU worker in its GPU's memory: a
persisted dataset's host rows are copied up for each training); nothing of them reaches the
client.
"""
from __future__ import annotations

import warnings

import numpy as np


from ..backends.array_ops import concatenate
from ..backends.device import array_module, device_scope, get_backend
from ..model.margins import MarginStart, initial_margins
from ..data.page_store import (BudgetWarning, PageStore, bound_route_columns, budget_bytes,
                               free_memory, move_page, plan_pages)
from ..engine.approx import needs_raw_rows
from ..engine.shard import Shard
from .parts import Part
from .pages import page_of, raw_rows, stream_slots


def make_shard(part, cuts, max_nodes: int, base, device: str = "cpu",
                budget=None, raw: bool = False) -> Shard:
    """The part's page and training state, on this worker's GPU for device "cuda"; the page
    is placed within ``budget`` (device_memory_budget, dgbdt.data.page_store) on its own.
    ``base``: where the margins start (a MarginStart, or a new model's intercept [K]);
    ``raw``: keep the rows' raw features beside the page (linear trees)."""
    be = get_backend(device)
    with device_scope(be):
        store = PageStore(budget_bytes(budget, be, part.n_rows, len(base)), be)
        shard = shard_of(part, 0, part.n_rows, cuts, max_nodes, base, be, store, raw)
    if shard.page.streamed and shard.page.nbytes > store.budget:
        warnings.warn(
            f"a partition of {part.n_rows} rows packs into {shard.page.nbytes} bytes, more "
            f"than device_memory_budget={store.budget} bytes: its page streams through the GPU "
            "whole, so the budget is exceeded while it is there. Use smaller partitions "
            "(e.g. ddf.repartition(partition_size=...)) to keep within it.", BudgetWarning,
            stacklevel=2)
    return shard


def shard_of(part, a: int, b: int, cuts, max_nodes: int, base, be, store,
             raw: bool = False) -> Shard:
    """The shard of the part's rows [a, b), its page placed by ``store``; with ``raw`` its
    raw features too (a view: ``raw_rows``)."""
    X = part.X[a:b]
    page = move_page(store.place(page_of(X, cuts, be, raw)), be)
    start = start_of(base)
    margin = start.of(X, None if part.base_margin is None else part.base_margin[a:b], be.xp)
    shard = Shard(page, cuts.n_bins(), part.label[a:b],
                  None if part.weight is None else part.weight[a:b], margin, max_nodes, be)
    shard.id_pieces = row_pieces(part.pieces, start.row_offsets, a, b)
    if part.qid is not None:
        shard.qid = part.qid[a:b]
    if raw:
        shard.raw = raw_rows(part.X, a, b, be)
    return shard


def row_pieces(pieces, offsets, a: int, b: int) -> list[tuple[int, int]]:
    """(global start, rows) runs of rows [a, b) of a part made of ``pieces`` (partition index,
    rows), with ``offsets`` the global index of each partition's first row."""
    out, pos = [], 0
    for index, n in pieces:
        lo, hi = max(a, pos), min(b, pos + n)
        if lo < hi:
            base = offsets[index] if offsets is not None else pos
            out.append((int(base + lo - pos), int(hi - lo)))
        pos += n
    return out or [(0, b - a)]


def start_of(base) -> MarginStart:
    """``base``: a MarginStart, or the intercept [K] of a new model."""
    return base if isinstance(base, MarginStart) else MarginStart(base)


def shards_of(part, cuts, max_nodes: int, base, device: str, budget, raw: bool = False):
    """The part's rows as shards whose pages fit ``budget`` together: one shard when they fit
    whole, else pages cut to the budget, kept, spilled or streamed (as in-process); and the
    device slots for streamed pages. ``raw``: with the rows' raw features (linear trees)."""
    be = get_backend(device)
    with device_scope(be):
        n = part.n_rows
        store, ranges = plan_pages(budget, be, n, part.X.shape[1], cuts, max_nodes, len(base))
        return [shard_of(part, a, b, cuts, max_nodes, base, be, store, raw)
                for a, b in ranges or [(0, n)]], store.slots


def concat_parts(parts) -> Part:
    """All rows of the parts as one part (a copy), on the device where they live."""
    nonempty = [p for p in parts if p.n_rows] or parts[:1]
    if len(nonempty) == 1:
        return nonempty[0]
    xp = array_module(nonempty[0].X)
    cat = (lambda xs: None if xs[0] is None else xp.concatenate(xs))
    return Part(xp.concatenate([p.X for p in nonempty]), cat([p.label for p in nonempty]),
                cat([p.weight for p in nonempty]), cat([p.base_margin for p in nonempty]),
                tuple(piece for p in nonempty for piece in p.pieces), nonempty[0].categories,
                None if nonempty[0].qid is None else np.concatenate([p.qid for p in nonempty]))


def start_margins(part, base):
    """[n, K] float64 starting margins of the part's rows when they need its raw features
    (``base`` continues a model with trees: dgbdt.model.margins.MarginStart)."""
    return start_of(base).of(part.X, part.base_margin)


def needs_rows(base) -> bool:
    """Whether the margins ``base`` starts from depend on the rows' features (a prior model
    with trees), not only on the intercept and the base margins."""
    return isinstance(base, MarginStart) and base.prior is not None and bool(base.prior.trees)


#: join a worker's in-memory pages into one shard (``paged_shards``); tests turn it off to
#: compare the models of one shard and of a shard a page
JOIN_PAGES = True


def paged_shards(units, cuts, max_nodes: int, base, be) -> list[Shard]:
    """The shards of the (PagedPart, starting margins or None) pairs: one shard of all their
    rows when their pages can be joined (``joined_shard``), else one shard per page, whose
    pages and labels are the PagedPart's own (no copy); the training state is new."""
    start, xp = start_of(base), be.xp
    if JOIN_PAGES and joinable(units, be):
        return [joined_shard(units, cuts, max_nodes, start, be)]
    out = []
    for paged, margin in units:
        for (a, b), page in zip(paged.ranges, paged.pages):
            if margin is not None:     # this attempt's own array (start_margins): a view
                m = margin[a:b]
            else:
                bm = None if paged.base_margin is None else paged.base_margin[a:b]
                m = initial_margins(start.intercept, b - a, bm, array_module(paged.label))
            shard = Shard(page, cuts.n_bins(), paged.label[a:b],
                          None if paged.weight is None else paged.weight[a:b], xp.asarray(m),
                          max_nodes, be)
            shard.id_pieces = row_pieces(paged.pieces, start.row_offsets, a, b)
            if paged.qid is not None:
                shard.qid = paged.qid[a:b]
            if paged.raw is not None:      # host rows; a GPU shard's kernels read a copy
                shard.raw = raw_rows(paged.raw, a, b, be)
            out.append(shard)
    return out


def joinable(units, be) -> bool:
    """Whether the pages of these (PagedPart, margins) pairs become one shard: more than
    one page, all dense (of any widths: the join widens the narrower) and in memory (none
    streamed from host memory or spilled to disk: their budget said the rows do not fit),
    without raw rows (linear trees and approx keep a shard a page), and room for the
    joined page's copy (``_room``).

    Why: each shard costs its own launches (GPU) or passes (CPU) per level, and a level's
    work is shared best over one shard's rows: on one H200, 32M x 28 in 16 partitions
    trained 200 rounds in 4.30 s, in one partition 3.47 s (docs/benchmarks.md). The
    model is the same (integer histograms; rows keep their order), and the pages stay the
    dataset's for its next training, so the copy lasts one training."""
    pages = [pg for paged, _ in units for pg in paged.pages]
    if len(pages) < 2 or any(pg.ell or pg.streamed or isinstance(pg.words, np.memmap)
                             for pg in pages):
        return False
    if any(paged.raw is not None for paged, _ in units):
        return False
    if len({pg.n_features for pg in pages}) != 1:
        return False
    if len({paged.weight is None for paged, _ in units}) != 1 or \
            len({paged.qid is None for paged, _ in units}) != 1:
        return False
    need = sum(pg.nbytes for pg in pages)
    return _room(be) > 2 * need + JOIN_RESERVE_BYTES


def _room(be) -> int:
    """Bytes a join may take here: free device memory on a GPU; on the host the available
    memory, and inside a Dask worker with a ``memory_limit`` no more than leaves its process
    below the pause fraction of it (the nanny kills a worker over its limit; the limit, not
    the machine, bounds a worker)."""
    room = free_memory(be)
    if be.caps.device_memory:
        return room
    try:
        import dask
        import psutil
        from distributed import get_worker
        limit = get_worker().memory_manager.memory_limit
    except (ImportError, ValueError, AttributeError):    # not in a worker
        return room
    if not limit:
        return room
    pause = dask.config.get("distributed.worker.memory.pause") or 0.8
    return min(room, int(pause * limit) - psutil.Process().memory_info().rss)


#: memory a join leaves free beyond twice the joined page (its copy, and the widened copies
#: of narrower pages or the host join's word temporaries)
JOIN_RESERVE_BYTES = 256 << 20


def joined_shard(units, cuts, max_nodes: int, start, be) -> Shard:
    """One shard of every row of the (PagedPart, margins) pairs, in their order: the pages
    joined into one (the backend's join_pages), the labels, weights, query ids and margins
    concatenated, and the rows' global ids the parts' pieces in turn."""
    xp = be.xp
    pages, labels, weights, margins, pieces, qids = [], [], [], [], [], []
    for paged, margin in units:
        for (a, b), page in zip(paged.ranges, paged.pages):
            pages.append(move_page(page, be))
            labels.append(paged.label[a:b])
            if paged.weight is not None:
                weights.append(paged.weight[a:b])
            if margin is not None:
                margins.append(xp.asarray(margin[a:b]))
            else:
                bm = None if paged.base_margin is None else paged.base_margin[a:b]
                margins.append(xp.asarray(initial_margins(start.intercept, b - a, bm,
                                                          array_module(paged.label))))
            for first, n in row_pieces(paged.pieces, start.row_offsets, a, b):
                if pieces and pieces[-1][0] + pieces[-1][1] == first:
                    pieces[-1] = (pieces[-1][0], pieces[-1][1] + n)
                else:
                    pieces.append((first, n))
            if paged.qid is not None:
                qids.append(paged.qid[a:b])
    # array_ops: CuPy's concatenate compiles a kernel at a fresh worker's first fit
    shard = Shard(be.join_pages(pages), cuts.n_bins(), concatenate(labels),
                  concatenate(weights) if weights else None, concatenate(margins),
                  max_nodes, be)
    shard.id_pieces = pieces
    if qids:
        shard.qid = np.concatenate(qids)
    return shard


def local_shards(units, cuts, max_nodes: int, base, p):
    """This worker's training shards and the device slots for its streamed pages: the shards
    of (PagedPart, margins) pairs (a persisted dataset), the given Shards (a streamed dataset;
    two slots), or the Shards of all the given Parts' rows (one, or pages cut to
    device_memory_budget)."""
    be = get_backend(p["device"])
    if units and isinstance(units[0], tuple):
        with device_scope(be):
            shards, slots = (paged_shards(units, cuts, max_nodes, base, be),
                             stream_slots([u for u, _ in units]))
    elif units and isinstance(units[0], Shard):
        shards, slots = list(units), 2
    else:
        shards, slots = shards_of(concat_parts(units), cuts, max_nodes, base, p["device"],
                                  p["device_memory_budget"], needs_raw_rows(p))
    with device_scope(be):
        bound_route_columns(shards, p["device_memory_budget"], be,
                            None if be.caps.device_memory else _room(be))
    return shards, slots
