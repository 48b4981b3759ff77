"""The CPU backend's fused last level (split_add_leaves) against a partition then add_leaves."""
import numpy as np
import pytest

from dgbdt.backends.cpu import CPU
from dgbdt.engine.shard import Shard
from dgbdt.kernels.pages import pack
from dgbdt.tree.split import SplitBatch


@pytest.mark.parametrize("categorical", [False, True])
def test_split_add_leaves_equals_partition_then_add(categorical):
    rng = np.random.default_rng(11)
    n, nf, nb = 600, 3, 12
    S = rng.integers(0, nb + 1, size=(n, nf)).astype(np.uint32)     # nb: missing
    n_bins = np.full(nf, nb, np.int64)
    shards = []
    for _ in range(2):
        s = Shard(pack(S, bits=4), n_bins, np.zeros(n), None, rng.normal(size=(n, 2)), 16, CPU)
        shards.append(s)
    shards[1].margin[:] = shards[0].margin
    # node 0 split earlier into 1 (a leaf now) and 2, which splits into 3, 4 at the last level
    for s in shards:
        s.rows[:] = rng.permutation(n).astype(np.int32) if s is shards[0] else shards[0].rows
        s.begin[1], s.end[1], s.begin[2], s.end[2] = 0, 250, 250, n
    cats = None
    if categorical:         # categories 1, 4, 9 go right
        cats = np.packbits(np.isin(np.arange(16), [1, 4, 9]), bitorder="little")[None, :]
    split = SplitBatch(node=np.array([2]), feature=np.array([1]), split_bin=np.array([5]),
                       default_left=np.array([True]), left=np.array([3]), right=np.array([4]),
                       is_cat=np.array([categorical]) if categorical else None, cats=cats)
    leaves, values = np.array([1, 3, 4]), np.array([0.25, -1.5, 3.0])
    before = shards[0].margin.copy()
    CPU.split_add_leaves(shards[0], 1, split, leaves, values)
    CPU.apply_splits(shards[1], split)
    CPU.add_leaves(shards[1], 1, leaves, values)
    np.testing.assert_array_equal(shards[0].margin, shards[1].margin)
    np.testing.assert_array_equal(shards[0].margin[:, 0], before[:, 0])
    assert set(np.round(shards[0].margin[:, 1] - before[:, 1], 6)) == {0.25, -1.5, 3.0}
