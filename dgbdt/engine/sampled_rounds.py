"""Sampled trees from streamed pages in one pass a round, not one pass a level (issue 14).

Streamed pages (dgbdt.data.page_stream) cross the bus once per tree level in the per-level
schedule: a depth-8 tree reads every page 9 times, and out-of-core training is bound by the
copies. With row sampling (``subsample`` < 1, uniform or gradient-based) a tree only needs its
sampled rows, so a round here is (after Ou, "Out-of-Core GPU Gradient Boosting", 2020, and
XGBoost's external-memory sampling, which read the pages twice a tree):

1. **one pass over the pages** (fold_and_pick), each page resident once:
   a. **fold**: the previous round's trees reach the page's rows' margins: a shard walks each
      row down each tree's recorded split decisions (fold_tree: numba on the CPU, one CUDA
      thread a row on the GPU) or, for trees with categorical splits, replays them level by
      level with the partition kernels the tree was grown with, then adds the leaf values;
   b. the page's rows' gradients;
   c. **candidates**: the rows that may be in the round's sample, their symbols gathered
      (unpacked) while the page is there. The sample is decided later (gradient-based
      sampling's threshold needs every row's gradients), but each row's draw depends only on
      (seed, round, row): uniform sampling keeps exactly the rows whose draw < subsample, so
      those are the candidates; gradient-based sampling keeps a row iff its draw < min(1,
      v / u), and the candidates are the rows that pass with the last round's threshold u
      widened by REACH (candidate_rows);
2. the round's sample (dgbdt.engine.sampling, dgbdt.engine.gradient_sampling: no page needed), exact,
   over the shards' rows joined in one dgbdt.engine.row_block.RowBlock (a launch a step, not one a
   page);
3. **compact**: the sampled rows' symbols are taken from the candidates' (sampled_from) into
   one small in-core page with their labels and gradients (from the block). Where a sampled
   row is not among the candidates (the threshold moved more than REACH, or the first
   gradient-based round, which has no threshold to guess from) a second pass gathers them
   (gather) instead: the same rows, the same page;
4. the round's trees grow in core on that compact shard, any growth (device or host), and
   their split decisions and leaf values are recorded for step 1a of the next round.

One pass a tree, whatever the depth (two where the guess misses: ``compact_second_passes``
in the training's memory stats). The compact page (the sample's rows) lives on the device
beside the budget's pages. The trees are the per-level schedule's bit for bit: rows
outside the sample carry zero gradients there and add nothing to any histogram, and the
compact seam uses the whole data's row count for the fixed-point scale; so the model is the
same as in-core training with the same sampling (tests/test_compact.py).

Anything that reads the margins between rounds (evaluation of the training rows, custom
objectives) first folds the pending trees (``LocalSeam.margins``); after the last round the
pending trees are folded only if something asks.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..kernels.arrays import to_host
from .shard import Shard, merged_maxima
from ..tree.split import SplitBatch


def applies(seam, spec, objective) -> bool:
    """Whether ``seam`` grows ``spec``'s rounds from compact pages: streamed pages, row
    sampling, constant leaves, and an objective that needs nothing but the rows' gradients
    (the quantile losses read every sampled row's residual at the leaves, linear leaves the
    rows' raw values; they keep the per-level schedule)."""
    s = spec.sampling
    return (seam.stream is not None and s is not None and s.subsample < 1.0
            and getattr(objective, "leaf_alpha", None) is None
            and getattr(objective, "seam_gradients", None) is None
            and getattr(spec, "linear", None) is None)      # linear leaves read raw rows


def _copy(a):
    return a.copy() if hasattr(a, "copy") and not np.isscalar(a) else a


def copy_batch(b: SplitBatch | None) -> SplitBatch | None:
    """A SplitBatch whose arrays are the caller's own (a device grower reuses its buffers)."""
    if b is None:
        return None
    if b.packed is not None and b.is_cat is None:     # a fused device level: its six rows
        p = b.packed.copy()                           # in one array (one copy, not seven)
        return dataclasses.replace(b, node=p[0], feature=p[1], split_bin=p[2],
                                   default_left=p[3].astype(np.bool_), left=p[4], right=p[5],
                                   packed=p)
    return dataclasses.replace(b, **{f.name: _copy(getattr(b, f.name))
                                     for f in dataclasses.fields(b)})


class Recorded:
    """One tree's split decisions, level by level, and its leaf values (FinishRequest)."""

    def __init__(self):
        self.levels: list[SplitBatch] = []
        self.finish = None
        self._walk = None        # (table, values) for a backend's fold_tree, made once

    def _batches(self):
        fin = self.finish
        return self.levels + ([fin.splits] if fin.splits is not None else [])

    def walkable(self, be) -> bool:
        """Whether ``be`` can fold this tree by walking it (no categorical splits)."""
        return all(b.is_cat is None for b in self._batches())

    def walk_table(self, xp, n_nodes: int):
        """[n_nodes, 5] int64 (feature, split bin, default left, left, right; left -1 for a
        leaf) and [n_nodes] float64 leaf values, built on the device without a host wait."""
        if self._walk is None:
            table = xp.full((n_nodes, 5), -1, dtype=np.int64)
            for b in self._batches():
                six = b.packed if b.packed is not None else xp.asarray(np.stack(
                    [b.node, b.feature, b.split_bin, np.asarray(b.default_left, np.int64),
                     b.left, b.right]).astype(np.int64))
                six = xp.asarray(six)
                table[six[0]] = six[1:].T      # a device level's sentinel rows: unreachable
            values = xp.zeros(n_nodes, dtype=np.float64)
            values[xp.asarray(self.finish.leaves)] = xp.asarray(self.finish.values,
                                                                 dtype=np.float64)
            self._walk = (table, values)
        return self._walk

    def replay(self, shard: Shard) -> None:
        """The tree's leaf values added to every row of ``shard`` (its page resident): by a
        walk of the tree per row (fold_tree; not for categorical splits), else by replaying the
        partitions level by level (the same leaves, the same float64 additions)."""
        be, xp = shard.be, shard.be.xp
        if self.walkable(be):
            table, values = self.walk_table(xp, int(shard.begin.shape[0]))
            be.fold_tree(shard, table, values, self.finish.k, len(self._batches()) + 1)
            return
        be.root_rows(shard)
        for b in self._batches():
            be.apply_splits(shard, b)
        be.add_leaves(shard, self.finish.k, self.finish.leaves, self.finish.values)


def recording(seam_class):
    """``seam_class`` whose levels and finishes are also recorded (``seam.records``)."""

    class RecordingSeam(seam_class):
        graph_trees = False         # a replayed CUDA graph would not pass through level()

        def start_tree(self, spec, k, scale_g, scale_h, epoch=0):
            self.records.append(Recorded())
            return super().start_tree(spec, k, scale_g, scale_h, epoch)

        def level(self, request):
            if request.splits is not None:
                self.records[-1].levels.append(copy_batch(request.splits))
            return super().level(request)

        def finish(self, request):
            self.records[-1].finish = dataclasses.replace(
                request, splits=copy_batch(request.splits), leaves=_copy(request.leaves),
                values=_copy(request.values))
            super().finish(request)

    RecordingSeam.__name__ = "Recording" + seam_class.__name__
    return RecordingSeam


def gather(shards, block) -> Shard:
    """One in-core shard of the block's sampled rows, their symbols read from ``shards`` (each
    visited with its page resident: a PageStream pass; the block holds their other arrays).
    The symbols go through an unpacked array (2 bytes each up to 16 bits) and are packed once,
    so the compact rows are one page whatever the number of pages they came from."""
    rows = block.sampled_rows()
    on_host = to_host(rows)          # each shard's run of them, found on the host once
    parts = []
    for s in shards:
        a = block.offset(s)
        lo, hi = np.searchsorted(on_host, [a, a + s.n_rows])
        parts.append((a, s, s.be.row_symbols(s.page, rows[int(lo):int(hi)] - a)))
    parts.sort(key=lambda p: p[0])
    return assemble(block, rows, [(s, sym) for _, s, sym in parts])


def assemble(block, rows, parts) -> Shard:
    """The compact shard of the block's rows ``rows`` (ascending positions): their labels,
    weights, margins and gradients from the block, and their symbols from ``parts``,
    (shard, the shard's sampled rows' unpacked symbols) in the block's order."""
    first, be, xp = block.first, block.be, block.be.xp
    syms = [sym for _, sym in parts]
    ell = any(s.page.ell for s, _ in parts)
    if ell:         # ELLPACK rows of one stride (dgbdt.data.sparse.as_ellpack_symbols)
        from ..data.sparse import as_ellpack_symbols
        hp = to_host(first.hist_ptrs)
        syms = [as_ellpack_symbols(a, s.page.ell, hp, xp) for a, (s, _) in zip(syms, parts)]
        width = max(int(a.shape[1]) for a in syms)
        null = int(hp[-1])
        syms = [a if a.shape[1] == width else xp.concatenate(
            [a, xp.full((a.shape[0], width - a.shape[1]), null, a.dtype)], axis=1)
            for a in syms]
    symbols = syms[0] if len(syms) == 1 else xp.concatenate(syms)
    del syms
    if ell:
        from ..kernels.pages import bits_for
        page = be.pack_symbols(symbols, bits_for(int(to_host(first.hist_ptrs)[-1])))
        page.ell = True
    else:
        # the widest page's width: pages pack at the width their largest symbol needs (a
        # page without missing values can be a bit narrower than one with them)
        page = be.pack_symbols(symbols, max(s.page.bits for s, _ in parts))
    del symbols

    def take(a):
        return None if a is None else a[rows]
    out = Shard(page, first.n_bins, take(block.label), take(block.weight), take(block.margin),
                int(first.begin.shape[0]), be, hist_ptrs=first.hist_ptrs)
    out.g, out.h = take(block.g), take(block.h)
    out.route_columns = False       # a round's shard: its columns would be made every round
    return out


# -- one pass a round: the fold, the gradients and a superset of the sample together ---------

#: how far a gradient-based round's candidates reach past the last round's threshold (a
#: guess: a round whose sample leaves the candidates pays a second pass, never a wrong model)
REACH = 1.5


def candidate_rows(shard: Shard, sampling, epoch: int, guess):
    """Sorted indices of the shard's rows that may be in round ``epoch``'s sample, from what
    is known before the round's threshold (its gradients must be computed): uniform sampling
    keeps a row iff its draw < subsample, so those rows are a superset of the sample, exactly.
    Gradient-based sampling keeps a row of class k iff draw_k < p = min(1, q (T - C) / V)
    (dgbdt.engine.gradient_sampling) with q <= v 2**24 / vmax + 1: ``guess[k] = (c, step, v_t)``
    from the last round (``c`` = 2**24 (T - C) / (vmax V), ``step`` = vmax / 2**24, ``v_t``
    the v above which rows were kept for sure) widened by REACH, so a row is a candidate iff
    draw_k < c REACH (v + step) or v >= v_t / REACH for some k. A superset if this round's
    threshold is within REACH of the last; the caller checks (sampled_from)."""
    from .sampling import draw_key, uniform
    from ..data.row_ids import first_id, global_ids
    from .gradient_sampling import _DRAW, LAMBDA
    be, xp = shard.be, shard.be.xp
    id0 = first_id(shard)
    if id0 is not None and be.caps.row_candidates_kernel:     # one kernel (a GPU)
        seed = sampling.seed
        if not sampling.by_gradient:
            keep = be.row_candidates(shard.g, shard.h, id0, [], [], [], [], 0.0,
                                     draw_key(seed, 0, epoch), sampling.subsample)
        else:
            keep = be.row_candidates(
                shard.g, shard.h, id0, [draw_key(seed, _DRAW + k, epoch) for k in
                                        range(len(guess))],
                [c * REACH for c, _, _ in guess], [st for _, st, _ in guess],
                [v_t / REACH for _, _, v_t in guess], LAMBDA, 0, 0.0)
        return xp.flatnonzero(keep)
    ids = global_ids(shard, xp)
    if not sampling.by_gradient:
        return xp.flatnonzero(uniform(xp, sampling.seed, 0, epoch, ids) < sampling.subsample)
    keep = None
    for k, (c, step, v_t) in enumerate(guess):
        g, h = shard.g[:, k], shard.h[:, k]
        v = xp.sqrt(g * g + LAMBDA * (h * h))
        draw = uniform(xp, sampling.seed, _DRAW + k, epoch, ids)
        hit = (draw < (v + step) * (c * REACH)) | (v >= v_t / REACH)
        keep = hit if keep is None else keep | hit
    return xp.flatnonzero(keep)


def fold_and_pick(seam, objective, sampling, epoch: int, guess):
    """One pass over the seam's shards (each page resident once): the pending trees folded
    into the margins, the gradients, and each shard's candidate rows with their symbols
    (``guess`` None for gradient-based sampling without a last round: no candidates).
    Returns (max |g|, max h) per class and [(shard, candidates, symbols)] or None."""
    pending, seam._pending = seam._pending, []
    maxima, picked = [], ([] if guess is not None or not sampling.by_gradient else None)
    for s in seam._visit():
        for rec in pending:
            rec.replay(s)
        maxima.append(s.compute_gradients(objective, wait=False))   # no host wait a page
        if picked is not None:
            rows = candidate_rows(s, sampling, epoch, guess)
            picked.append((s, rows, s.be.row_symbols(s.page, rows)))
    mg, mh = merged_maxima(maxima, seam.shards[0].be.xp)
    k = len(mg)
    both = seam.reduce_host(np.concatenate([mg, mh]).astype(np.float64),
                            "max")      # over the ranks: collective
    return both[:k], both[k:], picked


def sampled_from(picked, block):
    """The round's sampled rows (block positions, ascending) and, for each picked shard in the
    block's order, its sampled rows' symbols taken from its candidates' (``picked``: (shard,
    candidate rows, their symbols) from fold_and_pick); None when a sampled row is not a
    candidate. One host wait. (Growing from all the candidates instead, those outside the
    sample with zero gradients, gives the same trees with no search, but more rows to pack
    and grow; one trial measured it slower, on a cold machine, so not conclusively:
    docs/benchmarks.md.)"""
    be, xp = block.be, block.be.xp
    picked = sorted(picked, key=lambda p: block.offset(p[0]))
    rows = block.sampled_rows()
    sizes = [int(c.shape[0]) for _, c, _ in picked]
    total = sum(sizes)
    if total == 0:
        return None if rows.shape[0] else (rows, [(s, sym) for s, _, sym in picked])
    # the candidates as block positions: ascending, as the shards are in the block's order
    cand = xp.concatenate([c + block.offset(s) for s, c, _ in picked])
    pos = xp.minimum(xp.searchsorted(cand, rows), total - 1)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    cuts = xp.searchsorted(pos, be.upload(starts))     # each shard's run of pos
    check = to_host(xp.concatenate([cuts, xp.any(cand[pos] != rows).astype(np.int64)[None]]))
    if check[-1]:
        return None
    return rows, [(s, sym[pos[check[i]:check[i + 1]] - int(starts[i])])
                  for i, (s, _, sym) in enumerate(picked)]
