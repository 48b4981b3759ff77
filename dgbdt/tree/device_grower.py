"""Device-resident tree growth: the twin of ``Growth`` whose every step stays where the
histograms are, so a GPU runs a whole tree without the host waiting on it.

``Growth`` (dgbdt.tree.grower) learns each level's split decisions on the host: the shapes of
its next request (how many nodes split) depend on them, so the host must wait for the GPU at
every level. ``DeviceGrowth`` gives every level a *fixed shape* instead. Depth d has
W = 2^d histogram rows ("slots"), one per node the level could have; a slot whose node does
not exist holds the sentinel node ``cap - 1`` (``cap = 2^(max_depth + 1)`` node ids; real
nodes number at most ``cap - 1``, ids ``0 .. cap - 2``). Shards keep the sentinel's row
segment empty, so its histograms are zero, its partitions move no row and its leaf values
touch no margin; the kernels need no mask. Everything else is array arithmetic of fixed
shape (numpy or cupy: the same code), so on a GPU the host only enqueues work, and the tree
comes back with one copy when it is done.

The decisions are the host grower's, bit for bit:

* a slot's node splits iff it exists and ``splittable`` says so (the same float32
  comparisons);
* children are numbered left then right, in the order of the level's nodes in a
  breadth-first walk (XGBoost's order): every slot carries its node's *natural* position
  p in 0..2^d - 1 (its children's are 2p and 2p + 1); a node's children get
  ``n_nodes + 2 * rank``, where rank counts the splitting nodes at smaller positions;
* the level's smaller child (by hessian sum; the left one on a tie) is built from rows and
  its sibling is parent - smaller. Depth d + 1 has a pair per slot s of depth d: slot s's
  smaller child is slot s, its larger one slot W + s, and its parent's histogram is row s of
  the previous level (``parent_slot`` is the identity).

The price is work for absent nodes: levels are as wide as a full tree's (histogram memory
2^d x slots x 16 bytes per shard at depth d, which ``fits`` bounds), though the kernels skip
their empty segments. Trees whose levels would not fit grow on the host, with the same bytes.
"""
from __future__ import annotations

import time

import numpy as np

from ..backends.array_ops import arange, copy, flags, row_range_sums
from ..backends.device import to_host
from ..kernels.fixedpoint import scale_for
from .split import SplitBatch
from .grower import FinishRequest, LevelRequest, make_tree, node_weights
from .model import Tree
from .node_table import NodeTable
from .split import MIN_GAIN, SplitParams, splittable

#: at most this many bytes of histograms the shards of a training may hold at the deepest
#: level for device growth (its own and its kept parent level, on every shard); deeper trees
#: and many streamed pages grow on the host (the same model)
LEVEL_BYTES = 2 ** 30
#: the deepest trees grown on the device: their fixed-shape levels address nodes up to
#: 2^(max_depth + 1) - 1 (the sentinel), so shards keep that many node entries for them
MAX_DEPTH = 16


def fits(max_depth: int, n_slots: int, n_shards: int, slot_bytes: int = 16) -> bool:
    """Whether fixed-shape levels of a depth-``max_depth`` tree fit ``LEVEL_BYTES``: the
    deepest level with histograms has 2^(max_depth - 1) rows, its parent half as many;
    ``slot_bytes``: a histogram slot's (G, H int64; linear trees' 9 sums: 72)."""
    rows = 2 ** max(max_depth - 1, 0) + 2 ** max(max_depth - 2, 0)
    return max_depth <= MAX_DEPTH and rows * n_slots * slot_bytes * max(n_shards, 1) <= LEVEL_BYTES


class DeviceTables:
    """What every device-grown tree of a training reads: cut values and histogram layout as
    arrays of the training's array module (uploaded once)."""

    def __init__(self, cuts, hist_ptrs: np.ndarray, xp):
        self.xp = xp
        self.values = xp.asarray(cuts.values, dtype=np.float32)
        self.ptrs = xp.asarray(cuts.ptrs, dtype=np.int64)
        self.min_values = xp.asarray(cuts.min_values, dtype=np.float32)
        self.hist_ptrs = np.asarray(hist_ptrs, dtype=np.int64)


class DeviceGrowth:
    """One tree in growth on the device (see the module docstring); the interface of Growth:
    ``request``, ``advance(merged)``, ``done``, ``finish_request()``, ``tree()``.

    The node table (``left`` .. ``totals``, ``n_nodes``) lives in arrays of the backend's
    module. Between evaluation and the next request, a backend with ``caps.device_growth`` (CUDA:
    cuda/grow.cu) runs one kernel per level; otherwise (or with ``fused=False``) the same
    steps run as array operations (``_advance_arrays``), the kernels' specification.
    """

    def __init__(self, k: int, tables: DeviceTables, max_depth: int, p: SplitParams,
                 scale_g: float, scale_h: float, backend, fused: bool | None = None,
                 columns=None):
        xp = self.xp = tables.xp
        self.k, self.tables, self.max_depth, self.p = k, tables, max_depth, p
        self.scale_g, self.scale_h, self.be = scale_g, scale_h, backend
        self.fused = backend.caps.device_growth if fused is None else fused
        self.columns = columns              # dgbdt.tree.columns.ColumnMask, or None
        cap = self.cap = 2 ** (max_depth + 1)
        self.sentinel = cap - 1
        # left .. totals and n_nodes: views of one buffer, read by the host in one copy
        self.table = NodeTable(cap, xp)
        for name, _, _, _ in self.table.fields:
            setattr(self, name, getattr(self.table, name))
        # the identity parent_slot of every level (at most 2^(max_depth - 1) slots): made once,
        # where an arange a level was a launch a level
        self.identity = arange(cap // 4, np.int64, xp)
        self.reset_table()
        # the tree's constants on the device (dgbdt.backends.cuda.tree_consts) for the fused
        # kernels; a tree replayed as a CUDA graph (dgbdt.tree.tree_graph) gets new values here
        self.consts = (backend.upload(backend.tree_consts(scale_g, scale_h, p.eta))
                       if self.fused else None)
        self.depth = 0
        self.slots = xp.zeros(1, dtype=np.int64)         # node of each histogram row
        self.natural = xp.zeros(1, dtype=np.int64)       # its breadth-first position
        self.level_totals = xp.zeros((1, 2), dtype=np.int64)   # its sums (0: absent)
        self.pending: SplitBatch | None = None
        self.done = False
        empty = xp.zeros(0, dtype=np.int64)
        self.request = LevelRequest(None, self.slots, empty, empty, keep=max_depth > 1,
                                    start=(k, scale_g, scale_h, self.consts))
        self.eval_seconds = 0.0

    @property
    def graphable(self) -> bool:
        """Whether a CUDA graph can replay this tree (dgbdt.tree.tree_graph): the fused
        kernels read the tree's constants from device memory."""
        return self.fused

    def reset_table(self) -> None:
        """The empty node table: the root only (in place, so that a captured tree resets the
        same arrays on every replay)."""
        self.table.reset()

    def advance(self, merged) -> None:
        """Consume the level's merged histograms [2^depth, S, 2]; enqueue the next request."""
        t = time.perf_counter()
        hp = self.tables.hist_ptrs
        if self.depth == 0:   # the root's sums: all slots of feature 0 (any feature)
            row_range_sums(merged[0], int(hp[0]), int(hp[1]), self.totals[0])
            self.level_totals = copy(self.totals[:1])
        if self.columns is not None:        # features outside the sample: slots zeroed (a copy)
            merged = self.columns.apply(merged, self.depth, self.slots)
        batch, small, large = (self._advance_fused if self.fused else
                               self._advance_arrays)(merged)
        self.pending = batch
        self.depth += 1
        if self.depth == self.max_depth:       # children are leaves: no histograms needed
            self.done = True
        else:
            self.request = LevelRequest(
                splits=batch, small=small, large=large,
                parent_slot=self.identity[:small.shape[0]],
                keep=self.depth + 1 < self.max_depth)
            self.pending = None
        self.eval_seconds += time.perf_counter() - t

    def _advance_arrays(self, merged):
        """The level's decisions as array operations (the specification of cuda/grow.cu's
        advance_level); returns the split batch and the next level's smaller/larger slots."""
        totals = self.level_totals
        gain, feature, split_bin, dleft, left = self.be.evaluate_splits_device(
            merged, totals, self.tables.hist_ptrs, 1.0 / self.scale_g, 1.0 / self.scale_h,
            self.p)
        batch, small, large, _ = self._decide(gain, feature, split_bin, dleft, left,
                                              totals - left)
        return batch, small, large

    def _decide(self, gain, feature, split_bin, dleft, left, right):
        """The level's node table updates from its slots' best splits (gain, feature, bin,
        default left, and both sides' (G, H) sums [W, 2]): which nodes split, their children's
        ids, the split batch and the next level's slots. Returns (batch, small, large, ok),
        small and large None after the last level's splits."""
        xp, p, sentinel = self.xp, self.p, self.sentinel
        slots = self.slots
        valid = slots != sentinel
        ok = valid & splittable(gain, feature, left, right, p)
        # children numbered in breadth-first order: ranks of the splitting nodes by position
        width = 2 ** self.depth
        position = xp.where(valid, self.natural, width)          # absent: a spare position
        flags = xp.zeros(width + 1, dtype=np.int64)
        flags[position] = ok.astype(np.int64)
        before = xp.cumsum(flags) - flags
        lefts = xp.where(ok, self.n_nodes + 2 * before[position], sentinel)
        rights = xp.where(ok, lefts + 1, sentinel)
        self.n_nodes += 2 * flags[:width].sum()      # in place: a view of the table
        # the node table: absent or unsplit slots write to the sentinel's row, never read
        nodes = xp.where(ok, slots, sentinel)
        f = xp.where(ok, feature, 0).astype(np.int64)
        b = xp.where(ok, split_bin, 0).astype(np.int64)
        dl = dleft & ok
        tb = self.tables
        self.feature[nodes] = f
        self.default_left[nodes] = dl
        self.loss_change[nodes] = gain
        self.threshold[nodes] = xp.where(b >= 0, tb.values[tb.ptrs[f] + xp.maximum(b, 0)],
                                         tb.min_values[f])
        self.left[nodes], self.right[nodes] = lefts, rights
        self.parent[lefts], self.parent[rights] = nodes, nodes
        self.totals[lefts], self.totals[rights] = left, right
        batch = SplitBatch(node=nodes, feature=f, split_bin=b, default_left=dl, left=lefts,
                           right=rights)
        if self.depth + 1 == self.max_depth:
            return batch, None, None, ok
        smaller_left = left[:, 1] <= right[:, 1]
        small = xp.where(smaller_left, lefts, rights)
        large = xp.where(smaller_left, rights, lefts)
        at = xp.where(ok, 2 * self.natural, 2 * width)
        zero = xp.zeros_like(left)
        okc = ok[:, None]
        self.slots = xp.concatenate([small, large])
        self.natural = xp.concatenate([xp.where(smaller_left, at, at + 1),
                                       xp.where(smaller_left, at + 1, at)])
        self.level_totals = xp.concatenate([
            xp.where(okc, xp.where(smaller_left[:, None], left, right), zero),
            xp.where(okc, xp.where(smaller_left[:, None], right, left), zero)])
        return batch, small, large, ok

    def _advance_fused(self, merged):
        """The same in one kernel (cuda/grow.cu: advance_level) after the evaluation."""
        cand = self.be.evaluate_splits_raw(merged, self.level_totals, self.tables.hist_ptrs,
                                           1.0 / self.scale_g, 1.0 / self.scale_h, self.p,
                                           consts=self.consts)
        return self._fused_level(cand, self.level_totals)

    def _fused_level(self, cand, totals):
        """grow.cu's advance_level over the level's candidate rows [W, 6] and the slots' sums
        [W, 2]: the node table, the split batch and the next slots; returns (batch, small,
        large), small and large None after the last level."""
        xp, W = self.xp, int(self.slots.shape[0])
        if getattr(self, "_flags", None) is None:
            self._flags = xp.empty(2 ** self.max_depth + 1, dtype=np.int64)
        packed = xp.empty((6, W), dtype=np.int64)
        last = self.depth + 1 == self.max_depth
        nxt = None if last else (xp.empty(2 * W, dtype=np.int64),
                                 xp.empty(2 * W, dtype=np.int64),
                                 xp.empty((2 * W, 2), dtype=np.int64))
        self.be.advance_level(cand, totals, self.slots, self.natural, 2 ** self.depth,
                              self.sentinel, MIN_GAIN, self.p.gamma, self.tables, self,
                              self._flags, packed, nxt)
        batch = SplitBatch(node=packed[0], feature=packed[1], split_bin=packed[2],
                           default_left=flags(packed[3]), left=packed[4],
                           right=packed[5], packed=packed)
        if last:
            return batch, None, None
        self.slots, self.natural, self.level_totals = nxt
        return batch, self.slots[:W], self.slots[W:]

    def finish_request(self) -> FinishRequest:
        """The last splits and every leaf's value (non-leaves: the sentinel, value 0)."""
        xp = self.xp
        if self.fused:
            nodes = xp.empty(self.cap, dtype=np.int64)
            values = xp.empty(self.cap, dtype=np.float64)
            self.be.leaf_values(self, self.cap, self.sentinel, self.scale_g, self.scale_h,
                                self.p, nodes, values, consts=self.consts)
            return FinishRequest(self.k, self.pending, nodes, values)
        ids = xp.arange(self.cap, dtype=np.int64)
        leaf = (ids < self.n_nodes) & (self.left == -1)
        weight = node_weights(self.totals, self.scale_g, self.scale_h, self.p)
        return FinishRequest(self.k, self.pending, xp.where(leaf, ids, self.sentinel),
                             xp.where(leaf, weight.astype(np.float64), 0.0))

    def tree(self) -> Tree:
        """The grown tree on the host: one wait for the device and one copy."""
        return _made(self.table.read(to_host(self.table.buffer)),
                     host_scales(self.scale_g, self.scale_h), self.p)

    def pending_tree(self, settle=None) -> "PendingTree":
        """The tree without waiting for it: its node table (and a replayed tree's gradient
        maxima) on their way to the host behind the tree's work on the stream, so that a
        CUDA graph's next replay into the same table cannot overwrite it. ``settle``: called
        before the host reads it (the collective seam's watched wait for the tree's
        all-reduces)."""
        rs = self.scale_g if isinstance(self.scale_g, RoundScales) else None
        sent = self.table.send(() if rs is None else (rs.maxima,))
        return PendingTree(self.table, sent, rs or (self.scale_g, self.scale_h), self.p, settle)


def _made(fields: dict, scales: tuple, p) -> Tree:
    return make_tree(fields["left"], fields["right"], fields["parent"], fields["feature"],
                     fields["threshold"], fields["default_left"], fields["loss_change"],
                     fields["totals"], *scales, p)


class RoundScales:
    """A replayed tree's fixed-point scales while only the device knows them: class k's of
    the round's gradient maxima (a [2, K] array of their float64 bits, which nothing writes
    again) over ``n_rows`` rows. The device computed the tree's constants from the same
    maxima (cuda/tree.cu tree_scales); ``host()`` reads them with the tree, and raises
    scale_for's error for a non-finite maximum, a round later than a host read would."""

    def __init__(self, maxima, k: int, n_rows: int):
        self.maxima, self.k, self.n_rows = maxima, int(k), int(n_rows)

    def host(self, bits=None) -> tuple[float, float]:
        """(scale_g, scale_h); ``bits``: the maxima's bytes already on the host (else one
        copy now)."""
        mx = np.ascontiguousarray(to_host(self.maxima) if bits is None else bits)
        mx = mx.view(np.float64).reshape(2, -1)
        return (scale_for(float(mx[0, self.k]), self.n_rows),
                scale_for(float(mx[1, self.k]), self.n_rows))


def host_scales(scale_g, scale_h) -> tuple[float, float]:
    """A tree's (scale_g, scale_h): as given, or read from a RoundScales in scale_g."""
    return scale_g.host() if isinstance(scale_g, RoundScales) else (scale_g, scale_h)


class PendingTree:
    """A device-grown tree the host has not waited for: ``result()`` is the Tree (the wait
    for its one copy to the host happens then, once). The boosting loop keeps these in the
    model's tree list while it runs a round ahead (dgbdt.engine.boosting.boost) and replaces
    them before it uses them. ``scales``: (scale_g, scale_h), or the RoundScales whose
    maxima came with the table."""

    def __init__(self, table: NodeTable, sent, scales, p, settle=None):
        self._args = (table, sent, scales, p, settle)
        self._tree: Tree | None = None

    def result(self) -> Tree:
        """The tree: a wait for its own copy only (not for the work queued after it, such
        as the next tree's)."""
        if self._tree is None:
            table, sent, scales, p, settle = self._args
            if settle is not None:
                settle()
            got = sent.wait()
            scales = scales.host(got[1]) if isinstance(scales, RoundScales) else scales
            self._tree = _made(table.read(got[0]), scales, p)
            self._args = None
        return self._tree


__all__ = ["DeviceGrowth", "DeviceTables", "PendingTree", "RoundScales", "fits",
           "host_scales"]
