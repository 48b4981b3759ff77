"""A progress snapshot (what a stopped Dask rank hands back to resume from) keeps only the
trees the host has read: a GPU's last round may still be a PendingTree (engine.boosting reads
trees a round late when nothing else reads them), which holds device arrays and must not
travel or be resumed from."""
import numpy as np

import dgbdt
from dgbdt.engine.progress import Progress
from dgbdt.tree.device_grower import PendingTree


def test_frozen_progress_stops_at_the_first_pending_tree():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    y = X[:, 0] + 0.1 * rng.standard_normal(300)
    booster = dgbdt.train({"max_depth": 2}, dgbdt.Dataset(X, label=y), 3, verbose_eval=False)
    trees = list(booster.trees)
    booster.trees[2] = PendingTree(None, None, (1.0, 1.0), None)     # round 3, not yet read
    p = Progress()
    p.record(3, booster, {}, None, 0.3)
    snap = p.frozen(0)
    assert snap.rounds == 2
    assert snap.booster.trees == trees[:2]
    # without a pending tree the snapshot keeps every round
    booster.trees[2] = trees[2]
    assert p.frozen(0).rounds == 3
