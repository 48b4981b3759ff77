"""Where a shard's rows stand in the dataset: their global, dataset-order ids (from the
shard's ``id_pieces``, (first id, count) runs). Sampling draws and survival:cox's risk sets
are functions of these ids, never of how rows are laid out over partitions or workers."""
from __future__ import annotations

import numpy as np


def first_id(shard):
    """The global index of the shard's first row when its rows' indices are one run (then a
    backend's one-kernel draws apply: dgbdt.backends.cuda_sampling), else None."""
    pieces = getattr(shard, "id_pieces", None) or [(0, shard.n_rows)]
    return int(pieces[0][0]) if len(pieces) == 1 else None


def global_ids(shard, xp):
    """The dataset-order index of each of the shard's rows (from its ``id_pieces``)."""
    pieces = getattr(shard, "id_pieces", None) or [(0, shard.n_rows)]
    return xp.concatenate([xp.arange(start, start + n, dtype=np.int64) for start, n in pieces])
