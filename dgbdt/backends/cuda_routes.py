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
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..kernels import gpu_arrays
from ..kernels.launch import BLOCK, _grid, _i32, _i64, kernel


@dataclasses.dataclass
class RowRoute:
    """One shard's row-order partition state (see the module doc)."""

    row_node: object    # int32 [n]: each row's node in the tree being grown
    dir: object         # uint8 [n]: the last routed level's direction of each routed row
    node_slot: object   # int32 [nodes]: a split node's column in its level's batch, else -1
    leaf_of: object     # int32 [nodes]: add_leaves' scratch: a leaf's index in its list, else -1


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
            return
        r.row_node.fill(0)
        gpu_arrays.fill(r.node_slot, -1)

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
        if cat is None:
            kernel("tree", "route_rows")(grid, (BLOCK,), head + (_i32(p.ell), shard.hist_ptrs))
        else:
            is_cat, cats, cat_bytes = cat
            kernel("tree", "route_rows_cat")(
                grid, (BLOCK,), head + (is_cat, cats, _i32(cat_bytes), _i32(p.ell),
                                        shard.hist_ptrs))

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
