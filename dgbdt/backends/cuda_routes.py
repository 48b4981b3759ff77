"""The CUDA backend's row-order partition (a mixin of dgbdt.backends.cuda.CudaBackend;
cuda/tree.cu's ``route_rows``, ``partition_scatter_routed`` and ``add_leaf_rows``).

A level's partition sends every row of a split node to one of its children. Read through the
node's segment (``partition_scatter``), the rows come in no order, and each row's symbol costs a
memory sector of its own. So a shard also keeps each row's node (``RowRoute.row_node``), and the
decisions are made in row order, where a warp's rows lie side by side in the page:
``route_rows`` writes one byte a row (``dir``: 1 left, 0 right) and moves the row's node to
that child; the scatter into the children's segments then reads that byte, not the page. At a
tree's end the leaf values are added in row order too (``add_leaf_rows``: each row's margin gets
the value of its node's leaf), where ``add_leaf_values`` updated a segment's margins at random.
The same rows reach the same children and every margin gets the same single float64 addition,
so the model bytes do not change (tests/gpu). docs/benchmarks.md has the kernels' times.

State (``Shard.route``): made at a shard's first tree and reset at each tree's start
(``start_tree``, ``root_rows``): every row in node 0, no node split. ``node_slot[node]`` is the
node's column in the level's split batch, -1 for a node not split at any level so far; a tree's
node ids are unique and each node splits once, so the table is reset per tree, not per level.

**The page's columns.** A row's symbol of the split feature is one byte of its line of the page,
but the memory system moves whole sectors, so routing a level read the whole page (a row of 28
8-bit features is 28 bytes): the kernel ran at memory bandwidth on bytes it did not use. A
resident dense page therefore also gets a feature-major copy at the shard's first tree
(``page_columns``: each feature's symbols packed at the page's width), and ``route_rows`` reads
32 adjacent symbols a warp from the split feature's column. The copy costs the page's size
again, so it is made only where that takes at most ``COLUMNS_SHARE`` of the GPU's free memory
and leaves ``COLUMNS_RESERVE`` (``columns_fit``; within a device_memory_budget the user gave,
dgbdt.data.page_store.bound_route_columns), never for streamed pages (their budget holds the
page slots) or sparse (ELLPACK) ones, and not at all with ``DGBDT_ROUTE_COLUMNS=0``; a shard
whose page is replaced (approx's new cuts) routes from the page from then on. Routing reads
the same symbols either way: the same model. docs/benchmarks.md has the kernels' times.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..kernels import gpu_arrays
from ..kernels.launch import BLOCK, _grid, _i32, _i64, kernel
from ..kernels.pages import COLUMNS_SHARE, n_words

#: what they must leave free (the levels' histograms and temporaries; several shards of a
#: process each take their share of what the last left)
COLUMNS_RESERVE = 1 << 30


def columns_fit(nbytes: int, free: int) -> bool:
    """Whether a page's columns of ``nbytes`` may be made where ``free`` bytes of device
    memory are free: at most COLUMNS_SHARE of them, leaving COLUMNS_RESERVE."""
    return nbytes <= COLUMNS_SHARE * free and free - nbytes >= COLUMNS_RESERVE


@dataclasses.dataclass
class RowRoute:
    """One shard's row-order partition state (see the module doc)."""

    row_node: object    # int32 [n]: each row's node in the tree being grown
    dir: object         # uint8 [n]: the last routed level's direction of each routed row
    node_slot: object   # int32 [nodes]: a split node's column in its level's batch, else -1
    leaf_of: object     # int32 [nodes]: add_leaves' scratch: a leaf's index in its list, else -1
    columns: object = None   # uint32 [F * col_words]: the page's columns (module doc), or None
    col_words: int = 0       # words a column
    page: object = None      # the Page the columns were made from


class CudaRoutes:
    """Row-order partitioning on one GPU (see module doc); uses the backend's ``xp``,
    ``n_sm``."""

    def route_reset(self, shard) -> None:
        """Every row of ``shard`` in the root (node 0), no node split yet."""
        cp = self.xp
        r = shard.route
        if r is None:
            n, nodes = max(shard.n_rows, 1), int(shard.begin.shape[0])
            shard.route = RowRoute(cp.zeros(n, dtype=cp.int32), cp.zeros(n, dtype=cp.uint8),
                                   gpu_arrays.full(nodes, -1, cp.int32),
                                   gpu_arrays.full(nodes, -1, cp.int32))
            self._make_columns(shard)
            return
        if r.columns is not None and r.page is not shard.page:
            r.columns, r.col_words, r.page = None, 0, None    # a new page: route from it
        r.row_node.fill(0)
        gpu_arrays.fill(r.node_slot, -1)

    def _make_columns(self, shard) -> None:
        """The page's columns (module doc) into ``shard.route`` where they are worth their
        memory."""
        p = shard.page
        if not shard.columns_wanted():
            return
        if not columns_fit(4 * n_words(p.n_rows, p.bits) * p.n_features, self.free_bytes()):
            return
        r = shard.route
        r.columns, r.col_words = self.page_columns(p)
        r.page = p

    def page_columns(self, page):
        """(uint32 [F * col_words], col_words): a dense device page's symbols feature-major,
        each feature's packed at the page's width as ``kernels.pages.pack`` packs a page of
        one feature (``page_columns`` in cuda/tree.cu)."""
        col_words = n_words(page.n_rows, page.bits)
        out = self.xp.empty(col_words * page.n_features, dtype=self.xp.uint32)
        kernel("tree", "page_columns")(
            (_grid(col_words, cap=self.n_sm * 16),), (BLOCK,),
            (page.words, _i32(page.bits), np.uint32(page.mask), _i32(page.n_features),
             _i64(page.n_rows), _i64(col_words), out))
        return out, col_words

    def route_splits(self, shard, split, m: int, cat) -> None:
        """Route the rows of the split batch ``split`` (int64 [6, m] on the device: node,
        feature, split bin, default left, left, right) to their children, in row order; ``cat``:
        (is_cat, cats, cat_bytes) on the device for a batch with categorical splits, else None."""
        r = shard.route
        kernel("tree", "index_nodes")((_grid(m),), (BLOCK,), (split, _i32(m), r.node_slot))
        p = shard.page
        grid = (_grid(shard.n_rows, cap=self.n_sm * 16),)
        head = (p.words, _i32(p.bits), np.uint32(p.mask), _i32(p.n_features), shard.n_bins,
                _i64(shard.n_rows), r.row_node, r.node_slot, split, _i32(m), r.dir)
        # no columns (or a page since replaced): a null pointer, and the kernel reads the page
        cols = r.columns if r.columns is not None and r.page is shard.page else np.uint64(0)
        tail = (_i32(p.ell), shard.hist_ptrs, cols, _i64(r.col_words))
        if cat is None:
            kernel("tree", "route_rows")(grid, (BLOCK,), head + tail)
        else:
            is_cat, cats, cat_bytes = cat
            kernel("tree", "route_rows_cat")(
                grid, (BLOCK,), head + (is_cat, cats, _i32(cat_bytes)) + tail)

    def scatter_routed(self, shard, split, m: int, tile_ptr, counts) -> None:
        """Pass 1 of a routed level: each split node's rows into its children's halves of
        scratch, by the directions ``route_splits`` left."""
        kernel("tree", "partition_scatter_routed")(
            (self.n_sm * 8,), (BLOCK,),
            (shard.route.dir, shard.rows, shard.scratch_l, shard.begin, shard.end, split,
             _i32(m), tile_ptr, counts))

    def add_leaf_rows(self, shard, k: int, nodes_d, values_d, m: int) -> None:
        """margin[r, k] += values[j] for every row r in leaf nodes[j], in row order."""
        r = shard.route
        gpu_arrays.fill(r.leaf_of, -1)
        kernel("tree", "index_nodes")((_grid(m),), (BLOCK,), (nodes_d, _i32(m), r.leaf_of))
        n = shard.n_rows
        kernel("tree", "add_leaf_rows")(
            (_grid(n, cap=self.n_sm * 16),), (BLOCK,),
            (shard.margin, _i32(shard.margin.shape[1]), _i32(k), r.row_node, r.leaf_of,
             values_d, _i64(n)))
