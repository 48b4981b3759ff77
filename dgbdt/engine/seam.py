"""The seam between the boosting loop and where the data lives.

The grower and the boosting loop only ever call these methods. ``LocalSeam`` implements them over
shards in this process; the Dask seam implements the same methods over shards held by workers.
Partial results are integer (histograms) or exact reductions (max), so the sum over shards is the
same in any order and the model does not depend on how rows are partitioned.
"""
from __future__ import annotations

import os
import time
from typing import Protocol, Sequence

import numpy as np


from ..backends.device import array_module, beside, to_host
from ..data.page_stream import PageStream
from ..kernels.fixedpoint import scale_for
from .gradient_sampling import sample_rows
from .row_block import RowBlock
from .exchange import run
from . import approx
from .shard import Shard, merged_maxima
from . import sampled_rounds as compact
from ..tree import device_grower, linear_device, tree_graph
from ..tree.grower import grow_tree

GROWTH = ("auto", "host", "device")


def growth_setting() -> str:
    """DGBDT_GROWTH: where trees grow. "auto" (the default): on the device for GPU shards
    (dgbdt.tree.device_grower) when the tree's levels fit, else on the host; "host": always
    the host grower; "device": the fixed-shape grower also on the CPU (a check of it: the
    model is the same in every setting)."""
    value = os.environ.get("DGBDT_GROWTH", "auto") or "auto"
    if value not in GROWTH:
        raise ValueError(f"DGBDT_GROWTH must be one of {', '.join(GROWTH)}; got {value!r}")
    return value


def leaf_alpha_of(objective, k: int) -> float | None:
    """The quantile that output k's leaves are refreshed to (the quantile losses of
    dgbdt.objectives.regression: one alpha, or one per output), None for the Newton objectives."""
    alphas = getattr(objective, "leaf_alphas", None)
    if alphas is not None:
        return alphas[k]
    return getattr(objective, "leaf_alpha", None)


def device_growable_linear(spec) -> bool:
    """Whether dgbdt.tree.linear_device grows the piecewise-linear trees of ``spec``:
    depth-wise, numerical splits, no interaction constraints (monotone ones are refused for
    linear trees). Loss-guided linear trees grow on the host (linear_growth)."""
    return (getattr(spec, "linear", None) is not None and spec.policy == "depthwise"
            and getattr(spec.cuts, "categorical", None) is None
            and spec.p.monotone is None and spec.p.interactions is None)


def device_growable(spec) -> bool:
    """Whether dgbdt.tree.device_grower grows the trees of ``spec``: depth-wise, numerical
    splits, no monotone or interaction constraints, constant leaves, no leaf limit, not
    tree_method="exact" (whose thresholds read the node's histogram: dgbdt.tree.exact_split).
    The others (lossguide, categorical sets, constraints, linear leaves, max_leaves, exact) grow
    on the host
    (dgbdt.tree.grower, dgbdt.tree.lossguide, dgbdt.tree.linear_growth), whose requests GPU
    shards run as CPU ones do."""
    return (spec.policy == "depthwise" and getattr(spec.cuts, "categorical", None) is None
            and spec.p.monotone is None and spec.p.interactions is None
            and getattr(spec, "linear", None) is None and not spec.max_leaves
            and not spec.exact)


class TrainingSeam(Protocol):
    """What growing trees needs from the data, wherever it lives."""

    n_rows: int

    def compute_gradients(self, objective) -> tuple[np.ndarray, np.ndarray]:
        """Gradients on every shard; returns global (max |g|, max h) per output class."""

    def grow_round(self, objective, K: int, spec, timers: dict, epoch: int = 0) -> list:
        """One boosting round (``epoch``: its index from the model's first round, which the
        sampling draws use): gradients, then K trees (one per output class) grown from
        ``spec`` (dgbdt.tree.spec.GrowthSpec); returns the trees (a Dask seam: futures)."""

    def level(self, request) -> np.ndarray:
        """Every shard runs Shard.level_step(request); returns the merged histograms."""

    def finish(self, request) -> None:
        """Every shard applies the last splits and adds the tree's leaf values to its margins."""

    def drain(self) -> None:
        """Wait until the work queued so far (on a GPU) is done."""

    def settle(self) -> None:
        """Watch what the seam queued without waiting (collectives) before the host waits for
        the device: a dead peer then stops the training with an error instead of a hang."""

    def trees_now(self, trees: list) -> list:
        """The trees themselves, for callbacks (which see every round's model): device-grown
        PendingTrees waited for; a Dask seam's futures fetched under watch of their workers."""


class LocalSeam:
    """The seam over shards in this process (one per page of an in-process Dataset).

    Shards whose pages are streamed (dgbdt.data.page_store) are visited through one
    PageStream: each pass over the shards (a level, a tree's end) copies their pages in turn
    into ``slots`` device buffers while other pages' kernels run.
    """

    def __init__(self, shards: Sequence[Shard], hist_ptrs: np.ndarray, slots: int = 2):
        self.shards = list(shards)
        self.hist_ptrs = np.ascontiguousarray(hist_ptrs, dtype=np.int64)
        self.n_rows = sum(s.n_rows for s in self.shards)
        self.stream = (PageStream.for_backend(self.shards[0].be, slots)
                       if any(s.page.streamed for s in self.shards) else None)
        self._tables = None      # (spec, DeviceTables) of the training, for device growth
        self._graphs = None      # dgbdt.tree.tree_graph.TreeGraphs, made at the first round
        self._pending = []       # trees grown from compact pages, not yet in the margins
        self._guess = None       # the last sampled round's thresholds (dgbdt.engine.sampled_rounds)
        self.second_passes = 0   # sampled streamed rounds whose sample left the candidates
        self._compact_timers: dict = {}     # the compact shards' stage seconds, summed
        self._block = None       # the shards' rows joined for sampled streamed rounds

    def start_tree(self, spec, k: int, scale_g: float, scale_h: float, epoch: int = 0):
        """A new tree's growth state: on the device (no host wait inside the tree) for GPU
        shards, on the host otherwise (see growth_setting). Trees the device grower does not
        grow (device_growable) grow on the host over the shards' histograms, GPU ones too."""
        be, setting = self.shards[0].be, growth_setting()
        on_device = setting == "device" or (setting == "auto" and be.caps.device_memory)
        n_slots, n_shards = int(spec.hist_ptrs[-1]), len(self.shards)
        if on_device and device_growable_linear(spec) and \
                linear_device.fits(spec.max_depth, n_slots, n_shards):
            tables = self._device_tables(spec, be)
            if self._linear_tables is None or self._linear_tables.spec is not spec.linear:
                self._linear_tables = linear_device.LinearTables(spec.linear, be.xp)
            return linear_device.DeviceLinearGrowth(
                k, tables, self._linear_tables, spec.max_depth, spec.p, scale_g, scale_h, be,
                columns=spec.columns(k, epoch))
        device = on_device and device_growable(spec) and not self._refreshes_leaves
        if not (device and device_grower.fits(spec.max_depth, n_slots, n_shards)):
            return spec.start(k, scale_g, scale_h, epoch)
        return device_grower.DeviceGrowth(k, self._device_tables(spec, be), spec.max_depth,
                                          spec.p, scale_g, scale_h, be,
                                          columns=spec.columns(k, epoch))

    def _device_tables(self, spec, be):
        """The training's DeviceTables (cut values and layout on the backend), made once."""
        if self._tables is None or self._tables[0] is not spec.cuts:
            self._tables = (spec.cuts,
                            device_grower.DeviceTables(spec.cuts, spec.hist_ptrs, be.xp))
        return self._tables[1]

    #: the linear normalization on the backend (dgbdt.tree.linear_device), made once
    _linear_tables = None

    #: whether the round's objective refreshes its leaves to quantiles (leaf_alpha_of): its
    #: trees then grow on the host (the device grower and tree graphs take Newton leaves)
    _refreshes_leaves = False

    #: while set, device-grown trees come back as PendingTrees (the host does not wait for
    #: them); the boosting loop sets it when it defers a round's scores (``defers_scores``)
    lazy_trees = False

    @property
    def defers_scores(self) -> bool:
        """Whether the boosting loop should score round r after enqueueing round r + 1's
        tree: on a GPU the evaluation's host work (the new tree's traversal of the eval rows,
        the metrics' kernels) then overlaps that tree's device time instead of the device
        idling while the host works. Host shards compute on the host: nothing to overlap."""
        return self.shards[0].be.caps.device_memory

    def settle_later(self):
        """What ``settle`` would wait for now, as a callable to run before the host reads a
        PendingTree (None: nothing to watch in-process)."""
        return None

    #: how many rounds after its own a deferred round's scores are read (1: after the next
    #: round's trees are queued; dgbdt.dask's NCCL ranks read them a round later still)
    scores_lag = 1

    def scores_beside(self):
        """The context a deferred round's scores run in (dgbdt.backends.device.beside: on a GPU a
        side stream behind what is queued now, so their waits leave the next tree queued)."""
        return beside(self.shards[0].be)

    def _visit(self):
        return self.shards if self.stream is None else self.stream.visit(self.shards)

    def compute_gradients(self, objective):
        self.fold()
        custom = getattr(objective, "seam_gradients", None)   # dgbdt.objectives.custom: the user's obj
        if custom is not None:
            return custom(self)
        parts = [s.compute_gradients(objective, wait=False) for s in self.shards]
        return merged_maxima(parts, self.shards[0].be.xp)

    def device_maxima(self, objective):
        """The round's gradients with their maxima left on the device: a [2, K] uint64 array
        of the float64 bits of max |g| and max h, every shard's posted into it (merged without
        the host); None where the host computes them (CPU shards, a user's objective)."""
        be = self.shards[0].be
        if not be.caps.device_growth or getattr(objective, "seam_gradients", None) is not None:
            return None
        self.fold()
        mx = be.xp.zeros((2, self.shards[0].margin.shape[1]), dtype=np.uint64)
        for s in self.shards:
            s.compute_gradients(objective, wait=False, maxima=mx)
        return mx

    def _device_round(self, objective, K, spec, forest):
        """device_maxima when each of the round's K trees replays a CUDA graph that takes its
        scales from them (TreeGraphs.grow_scaled): the host then queues the whole round
        without waiting for the device (it waits a round later, for the trees). Else None:
        the maxima come to the host first (sampling, approx and vector-leaf trees use them
        there; the first trees of a training are grown eagerly and captured)."""
        if (forest is not None or spec.sampling is not None or spec.approx_bins
                or spec.targets or self._refreshes_leaves or not tree_graph.device_scales()):
            return None
        graphs = self._tree_graphs()
        if graphs is None or not all(graphs.replays(spec, k) for k in range(K)):
            return None
        return self.device_maxima(objective)

    def grow_round(self, objective, K, spec, timers, epoch: int = 0):
        """Gradients (those of rows outside round ``epoch``'s sample zeroed), one fixed-point
        scale per class from the global maxima and the row count (dgbdt.kernels.fixedpoint), then the
        class trees in turn: on these shards, or, for a sampled round over streamed pages, on
        one in-core shard of the sampled rows (dgbdt.engine.sampled_rounds).

        A forest (``spec.parallel`` = P > 1 trees a class) grows P sets of class trees from
        the round's gradients, each set with its own sample (spec.draw) and eta / P; the
        trees come back class by class (class 0's P trees first), XGBoost's order."""
        self.epoch = epoch      # the round, for objectives that draw from it (rank pairs)
        self._refreshes_leaves = leaf_alpha_of(objective, 0) is not None
        P = spec.parallel
        if P == 1:
            return self._grow_set(objective, K, spec, timers, epoch, None)
        spec = spec.forest_trees()
        sets = [self._grow_set(objective, K, spec, timers, spec.draw(epoch, j), (j, P))
                for j in range(P)]
        self._forest = None
        return [sets[j][k] for k in range(len(sets[0])) for j in range(P)]

    def forest_gradients(self, objective, forest):
        """The round's gradients for parallel tree j of P (``forest`` = (j, P), or None for
        a single tree): computed for j = 0 (and kept when P > 1), put back for the others
        (each then draws its own sample from them); returns the global maxima."""
        if forest is None:
            return self.compute_gradients(objective)
        j, P = forest
        if j == 0:
            maxima = self.compute_gradients(objective)
            self._forest = ([(s.g.copy(), s.h.copy()) for s in self.shards], maxima)
            return maxima
        kept, maxima = self._forest
        for s, (g, h) in zip(self.shards, kept):
            s.g[...] = g
            s.h[...] = h
        return maxima

    def _grow_set(self, objective, K, spec, timers, draw, forest):
        """One set of K class trees (see grow_round) from sampling draw ``draw``."""
        t = time.perf_counter()
        streamed_sample, picked, record = compact.applies(self, spec, objective), None, None
        on_device = None
        streamed_sample = streamed_sample and forest is None
        holders = self.shards
        if streamed_sample:     # the fold, the gradients and the sample's candidates: one pass
            holders = [self._row_block()]       # the rows' arrays as one: a step, a launch
            max_g, max_h, picked = compact.fold_and_pick(self, objective, spec.sampling,
                                                         draw, self._guess)
            record = []
        else:
            on_device = self._device_round(objective, K, spec, forest)
            if on_device is None:
                max_g, max_h = self.forest_gradients(objective, forest)   # folds compact trees
        if spec.sampling is not None:
            max_g, max_h = sample_rows(spec.sampling, holders, draw, self.n_rows,
                                       max_g, max_h, self.reduce_host, record)
            self._guess = record or None
        timers["gradients"] += time.perf_counter() - t
        if streamed_sample:
            seam, graphs = self._compact_round(timers, picked), None
        else:
            seam, graphs = self, (None if self._refreshes_leaves or spec.approx_bins
                                  else self._tree_graphs())
        trees, base = [], spec
        if on_device is not None:       # every class's graph takes its scales on the device
            return [graphs.grow_scaled(spec, k, on_device, self.n_rows, draw, timers,
                                       self.lazy_trees) for k in range(K)]
        if spec.targets:        # one vector-leaf tree of every target (multi_output_tree)
            sg = np.array([scale_for(max_g[k], self.n_rows) for k in range(K)])
            sh = np.array([scale_for(max_h[k], self.n_rows) for k in range(K)])
            return [grow_tree(seam, spec.start_vector(sg, sh, draw), timers)]
        for k in range(K):
            sg, sh = scale_for(max_g[k], self.n_rows), scale_for(max_h[k], self.n_rows)
            if base.approx_bins:     # every tree's own cuts (dgbdt.engine.approx)
                spec = approx.resketch(self, base, k, max_h[k], base.approx_bins)
            if graphs is not None:
                trees.append(graphs.grow(spec, k, sg, sh, draw, timers, self.lazy_trees))
            else:
                trees.append(grow_tree(seam, seam.start_tree(spec, k, sg, sh, draw), timers,
                                       leaf_alpha_of(objective, k),
                                       self.lazy_trees))
        if seam is not self:
            self._tables = seam._tables
            self._pending = seam.records
            for key, v in seam.shards[0].timers.items():
                self._compact_timers[key] = self._compact_timers.get(key, 0.0) + v
        return trees

    def _compact_round(self, timers, picked):
        """A sampled round over streamed pages (dgbdt.engine.sampled_rounds): the sampled rows in one
        in-core shard, taken from the candidates the fold's pass picked (``picked``) when they
        hold the whole sample, else by a second pass; returns the seam that grows and records
        the round's trees on it."""
        t = time.perf_counter()
        block = self._row_block()
        chosen = None if picked is None else compact.sampled_from(picked, block)
        del picked
        if chosen is None:
            self.second_passes += 1
            small = compact.gather(self._visit(), block)
        else:
            small = compact.assemble(block, *chosen)
        del chosen
        timers["compact"] = timers.get("compact", 0.0) + time.perf_counter() - t
        sub = self._compact_seam([small])
        sub.n_rows = self.n_rows      # the fixed-point scale of the whole data's trees
        sub._tables = self._tables
        return sub

    def _row_block(self) -> RowBlock:
        """The shards' per-row arrays joined (dgbdt.engine.row_block), made once."""
        if self._block is None or not self._block.holds(self.shards):
            self._block = RowBlock(self.shards)
        return self._block

    def _compact_seam(self, shards):
        """An in-core seam over compact shards that records its trees (dgbdt.engine.sampled_rounds)."""
        seam = compact.recording(LocalSeam)(shards, self.hist_ptrs)
        seam.records = []
        return seam

    def fold(self) -> None:
        """Add the trees grown from compact pages to every row's margins (one pass)."""
        if self._pending:
            pending, self._pending = self._pending, []
            for s in self._visit():
                for rec in pending:
                    rec.replay(s)

    #: whether trees may be replayed as CUDA graphs here (dgbdt.tree.tree_graph); seams whose
    #: levels do more than enqueue kernels (host-side collectives, recorded rounds) say no
    graph_trees = True

    def captures(self, growth) -> bool:
        """Whether this seam's levels of ``growth`` only enqueue device work (a CUDA graph
        records them); in-process they do."""
        return True

    def capture_start(self):
        """Before a tree's CUDA graph is captured: a mark to measure what the capture records
        beyond the shards' kernels (see capture_end); in-process nothing."""
        return None

    def capture_end(self, mark):
        """What the captured graph holds beyond the shards' kernels, for launch_graph (the
        collective seam: its all-reduces' count and bytes); in-process nothing."""
        return None

    def launch_graph(self, graph, held) -> None:
        """Launch a tree's graph on the current stream (the collective seam watches it as it
        watches its queued all-reduces: settle() waits for it)."""
        graph.launch(stream=self.shards[0].be.xp.cuda.get_current_stream())

    def release_graphs(self) -> None:
        """The training's tree graphs destroyed (dgbdt.tree.tree_graph.TreeGraphs.release)."""
        if self._graphs:
            self._graphs.release()
        self._graphs = None

    def _tree_graphs(self):
        """The training's TreeGraphs when its trees may be CUDA graphs: GPU shards, in core."""
        if self._graphs is None:
            ok = (self.graph_trees and self.shards[0].be.caps.graph_capture and self.stream is None
                  and tree_graph.enabled())
            self._graphs = tree_graph.TreeGraphs(self) if ok else False
        return self._graphs or None

    def add_trees(self, trees, classes, scales) -> None:
        """Every shard's margins += scale times each tree's leaf values, by traversal of its
        raw rows (booster="dart": its drops and weights, dgbdt.engine.dart)."""
        from ..model.margins import add_tree_margins, scaled_tree
        kept = [(scaled_tree(t, s), k) for t, k, s in zip(trees, classes, scales) if s != 0]
        if not kept:
            return
        for s in self.shards:
            add_tree_margins(s.raw, [t for t, _ in kept], [k for _, k in kept], s.margin)

    def merge_summaries(self, local, max_keys: int):
        """The sketch summaries of every holder of rows merged (tree_method="approx"):
        in-process the shards' merged summary is every row's."""
        return local

    def reduce_host(self, a: np.ndarray, op: str) -> np.ndarray:
        """A small host array merged over the seam's holders of rows: in-process they are all
        here, so the identity (the collective seam all-reduces)."""
        return a

    def level(self, request):
        total = None
        for s in self._visit():
            part = s.level_step(request, self.hist_ptrs)
            total = part if total is None else total + part
        return total

    def finish(self, request):
        for s in self._visit():
            s.finish(request)

    def leaf_sums(self, request) -> np.ndarray:
        """The last splits applied, every leaf's fixed-point ridge sums of a linear tree
        (dgbdt.tree.linear_growth.LeafSumRequest), summed over shards (exact)."""
        total = None
        for s in self._visit():
            part = s.linear_leaf_sums(request)
            total = part if total is None else total + part
        return total

    def leaf_quantiles(self, fin, alpha: float) -> np.ndarray:
        """The last splits applied, each leaf's ``alpha`` quantile of its sampled rows'
        residuals ``label - margin[:, k]`` over every shard (dgbdt.objectives.leaf_quantiles: exact, whatever
        the shards or, in the collective seam, the ranks)."""
        return self._quantiles(alpha, *self.leaf_residuals(fin))

    def leaf_residuals(self, fin):
        """The last splits applied (``fin.splits``), each leaf's sampled rows' residuals
        ``label - margin[:, k]`` (float64 [rows of the leaf] a leaf, in ``fin.leaves``' order)
        and their weights (None unweighted), from every shard. GPU shards copy the rows' leaf
        segments, labels, margins (and weights) to the host once a tree: the quantiles are
        the CPU's, the same code on the same float64 values."""
        res: dict = {int(n): [] for n in fin.leaves}
        wts: dict = {int(n): [] for n in fin.leaves}
        weighted = self.shards[0].weight is not None
        for s in self._visit():
            if fin.splits is not None:
                s.apply_splits(fin.splits)
            rows_all, begin, end = to_host(s.rows), to_host(s.begin), to_host(s.end)
            sampled = to_host(s.h[:, fin.k]) > 0     # rows outside the round's sample: h = 0
            label, margin = to_host(s.label), to_host(s.margin[:, fin.k])
            weight = to_host(s.weight) if weighted else None
            for n in res:
                rows = rows_all[begin[n]:end[n]]
                rows = rows[sampled[rows]]
                res[n].append(label[rows] - margin[rows])
                if weighted:
                    wts[n].append(weight[rows])
        return ([np.concatenate(res[n]) for n in res],
                [np.concatenate(wts[n]) for n in res] if weighted else None)

    def _quantiles(self, alpha, values, weights):
        """Each group's alpha quantile (dgbdt.objectives.leaf_quantiles' exchange); here all the
        values are local."""
        from ..objectives.leaf_quantiles import QuantileDescent
        return run(QuantileDescent(alpha, values, weights)).values

    def settle(self):
        """Before the host waits for a tree's device work: nothing to watch in-process (the
        collective seam watches its queued all-reduces here)."""

    def drain(self):
        be = self.shards[0].be
        if be.caps.device_memory:
            be.xp.cuda.get_current_stream().synchronize()

    def trees_now(self, trees: list) -> list:
        return [t.result() if isinstance(t, device_grower.PendingTree) else t for t in trees]

    def stage_times(self) -> dict[str, float]:
        """Seconds the shards spent per stage (summed over shards)."""
        out: dict[str, float] = dict(self._compact_timers)
        for s in self.shards:
            for k, v in s.timers.items():
                out[k] = out.get(k, 0.0) + v
        return out

    def stream_stats(self) -> dict:
        """Pages, streamed pages, and what streaming cost (PageStream.stats)."""
        out = {"pages": len(self.shards),
               "pages_streamed": sum(bool(s.page.streamed) for s in self.shards)}
        if self.stream is None:
            return out
        return {**out, **self.stream.stats(), "compact_second_passes": self.second_passes}

    def set_gradients(self, g, h):
        """Every row's gradients [n, K] (in the dataset's row order, as ``margins``) into the
        shards, in place where a shard has arrays of that shape (a tree captured as a CUDA
        graph reads those); returns the (max |g|, max h) per output that set the fixed-point
        scale. For objectives that compute all rows at once (dgbdt.objectives.custom, survival:cox)."""
        xp = array_module(g)
        n, K = g.shape
        a = 0
        for s in self.shards:
            b = a + s.n_rows
            if s.g is not None and s.g.shape == (b - a, K) and s.g.dtype == g.dtype:
                s.g[...] = g[a:b]
                s.h[...] = h[a:b]
            else:
                s.g, s.h = xp.ascontiguousarray(g[a:b]), xp.ascontiguousarray(h[a:b])
            a = b
        if n == 0:
            return np.zeros(K), np.zeros(K)
        return to_host(xp.abs(g).max(axis=0)), to_host(h.max(axis=0))

    def margins(self) -> np.ndarray:
        """Current margins of all rows, in the dataset's row order (pages are row ranges)."""
        self.fold()
        return array_module(self.shards[0].margin).concatenate(
            [s.margin for s in self.shards], axis=0)
