"""The per-row arrays of a seam's shards as one allocation (dgbdt.engine.sampled_rounds's sampled rounds).

A streamed seam holds one shard a page (20M rows in 16 pages on a GPU: 1.25M rows each), each
with its own labels, weights, margins and float gradients. The steps of a sampled round that
treat every row alike — the gradient-based sample's threshold over all rows, finding the
sampled rows, gathering their labels, margins and gradients into the compact shard — then
cost a dozen launches a shard, a few hundred a round, and the host's time to launch them
(with the one-kernel draws and fewer host waits, this made bench_ooc's streamed training
faster: docs/benchmarks-archive.md#figures-behind-code-choices). ``RowBlock`` keeps those
arrays in one allocation instead, each shard's arrays being views of its rows' range, so each
step is a few launches over all the rows. The values, and so every result, are the same; only
where they live changes. A shard's page is untouched: it still streams on its own.
"""
from __future__ import annotations

import numpy as np

#: the shards' per-row arrays the block holds (``weight`` may be None)
FIELDS = ("label", "weight", "margin", "g", "h")


class RowBlock:
    """``shards``' per-row arrays joined in their order; each shard's now views into them.

    ``offset(shard)`` is the shard's first row in the block; ``id_pieces`` the rows' global
    indices (the shards', adjacent runs merged: an in-process Dataset's are one run, so the
    backends' one-kernel draws apply: dgbdt.data.row_ids.first_id)."""

    def __init__(self, shards):
        self.first = shards[0]
        self.be = be = shards[0].be
        xp = be.xp
        sizes = [s.n_rows for s in shards]
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.n_rows = int(starts[-1])
        self._offsets = {id(s): int(a) for s, a in zip(shards, starts[:-1])}
        pieces: list[tuple[int, int]] = []
        for s in shards:
            for a, n in getattr(s, "id_pieces", None) or [(0, s.n_rows)]:
                if pieces and pieces[-1][0] + pieces[-1][1] == a:
                    pieces[-1] = (pieces[-1][0], pieces[-1][1] + n)
                elif n:
                    pieces.append((int(a), int(n)))
        self.id_pieces = pieces
        K = shards[0].margin.shape[1]
        for name in FIELDS:
            parts = [getattr(s, name) for s in shards]
            if name in ("g", "h") and any(p is None for p in parts):
                joined = xp.zeros((self.n_rows, K), dtype=np.float64)
            elif parts[0] is None:
                joined = None
            else:
                joined = xp.concatenate(parts)
            setattr(self, name, joined)
            for s, a, b in zip(shards, starts[:-1], starts[1:]):
                setattr(s, name, None if joined is None else joined[a:b])

    def offset(self, shard) -> int:
        return self._offsets[id(shard)]

    def holds(self, shards) -> bool:
        """Whether the block still backs ``shards``' arrays (none was replaced since)."""
        return len(shards) == len(self._offsets) and all(
            id(s) in self._offsets and all(
                getattr(s, name) is None if getattr(self, name) is None
                else getattr(getattr(s, name), "base", None) is getattr(self, name)
                for name in FIELDS) for s in shards)

    def sampled_rows(self):
        """Block positions of the rows in the round's sample: any class's g or h nonzero
        (rows outside the sample have both zeroed)."""
        xp = self.be.xp
        return xp.flatnonzero(xp.any((self.g != 0) | (self.h != 0), axis=1))
