"""survival:cox's gradients over a seam (dgbdt.objectives.survival.Cox): the risk sets span every
shard and every holder of rows, so the seam's rows go to the host (GPU shards: margins each
round, labels and weights once), the CPU kernel computes all rows in dataset order, and each
holder keeps its own. Checked here on host shards against the kernel on the whole set in
order, bit for bit: one holder of several shards, and several holders whose rows arrive in
any order (the collective ranks' all-gather, graph mode's gather hop), the sorts kept from
round to round while the rows' order stays, the margins read anew. The GPU shards' copies
are tested on a GPU (tests/gpu/test_gpu_cox.py, test_gpu_dask_cox_quantile.py)."""
import numpy as np
import pytest

from dgbdt.backends.device import get_backend
from dgbdt.objectives.registry import get_objective


class _Shard:
    """What Cox reads of a shard: its rows' labels, weights, margins, dataset pieces."""

    def __init__(self, y, w, m, pieces):
        self.label, self.weight, self.margin = y, w, m
        self.n_rows = len(y)
        self.id_pieces = pieces
        self.be = get_backend("cpu")


class _Seam:
    def __init__(self, shards):
        self.shards = shards

    def margins(self):
        return np.concatenate([s.margin for s in self.shards])

    def set_gradients(self, g, h):
        self.g, self.h = g, h
        return np.abs(g).max(axis=0), h.max(axis=0)


def _rows(n=700, seed=0):
    rng = np.random.default_rng(seed)
    t = np.round(rng.exponential(size=n), 1) + 0.1          # ties
    y = np.where(rng.random(n) < 0.3, -t, t)
    return y, rng.uniform(0.5, 2.0, n), rng.normal(size=(n, 1))


@pytest.mark.parametrize("weighted", [False, True])
def test_one_holder_of_several_shards(weighted):
    y, w, m = _rows()
    w = w if weighted else None
    cox = get_objective("survival:cox", {})
    g, h = cox.gradients(m, y, w)
    cuts = [0, 250, 251, 700]
    seam = _Seam([_Shard(y[a:b], None if w is None else w[a:b], m[a:b], [(a, b - a)])
                  for a, b in zip(cuts, cuts[1:])])
    max_g, max_h = cox.seam_gradients(seam)
    np.testing.assert_array_equal(seam.g, g)
    np.testing.assert_array_equal(seam.h, h)
    assert max_g[0] == np.abs(g).max() and max_h[0] == h.max()
    for s in seam.shards:                   # the next round: new margins, the same labels
        s.margin = s.margin + 0.25 * np.sign(s.margin)
    g2, h2 = cox.gradients(seam.margins(), y, w)
    cox.seam_gradients(seam)
    np.testing.assert_array_equal(seam.g, g2)
    np.testing.assert_array_equal(seam.h, h2)
    assert not np.array_equal(g2, g)


@pytest.mark.parametrize("weighted", [False, True])
def test_holders_rows_in_any_order(weighted):
    """Two holders of interleaved dataset pieces: every holder's seam_rows gathered (in either
    order) give each holder its own rows' gradients of the whole set."""
    y, w, m = _rows(seed=1)
    w = w if weighted else None
    cox = get_objective("survival:cox", {})
    g, h = cox.gradients(m, y, w)
    pieces = [[(0, 100), (300, 200)], [(100, 200), (500, 200)]]
    seams = []
    for holder in pieces:
        ids = np.concatenate([np.arange(a, a + n) for a, n in holder])
        seams.append(_Seam([_Shard(y[ids], None if w is None else w[ids], m[ids], holder)]))
    rows = [cox.seam_rows(s) for s in seams]
    assert all(r.dtype == np.float64 and r.shape[1] == 4 for r in rows)
    # either order; then that order again with the next round's margins (the seam keeps
    # the sorts of the rows' order, and must read the new margins)
    m2 = m + 0.25 * np.sign(m)
    g2, h2 = cox.gradients(m2, y, w)
    again = np.concatenate(rows[::-1])
    again[:, 2] = m2[again[:, 0].astype(np.int64), 0]
    for gathered, want_g, want_h in ((np.concatenate(rows), g, h),
                                     (np.concatenate(rows[::-1]), g, h), (again, g2, h2)):
        for seam, holder in zip(seams, pieces):
            ids = np.concatenate([np.arange(a, a + n) for a, n in holder])
            cox.gathered_gradients(seam, gathered)
            np.testing.assert_array_equal(seam.g, want_g[ids])
            np.testing.assert_array_equal(seam.h, want_h[ids])
    assert not np.array_equal(g2, g)
