"""Row and column sampling: draws by (seed, round, the row's index in the data) and (seed, round,
class, level, node, feature), so the model is the same bytes for any pages, worker count and
mode, host or device growth, and continued training; and the samples do what they say."""
import numpy as np
import pytest

import dgbdt
from dgbdt.sampling import Sampling, uniform

SAMPLED = {"objective": "binary:logistic", "max_depth": 4, "subsample": 0.6,
           "colsample_bytree": 0.8, "colsample_bylevel": 0.75, "colsample_bynode": 0.7,
           "seed": 7}


def data(n=2400, f=9, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, f)).astype(np.float32)
    X[rng.random(X.shape) < 0.08] = np.nan
    Z = np.nan_to_num(X)
    y = (Z[:, 0] + Z[:, 1] * Z[:, 2] - Z[:, 5] + 0.5 * rng.standard_normal(n) > 0)
    return X, y.astype(np.float64)


def test_the_draws_are_uniform_and_counter_based():
    u = uniform(np, 3, 0, 5, np.arange(200_000))
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.005
    # the same draw for a row whatever else is drawn with it
    np.testing.assert_array_equal(uniform(np, 3, 0, 5, np.arange(100, 200)), u[100:200])
    assert not np.array_equal(uniform(np, 3, 0, 6, np.arange(100)), u[:100])   # per round
    assert not np.array_equal(uniform(np, 4, 0, 5, np.arange(100)), u[:100])   # per seed


def test_sampled_models_do_not_depend_on_pages_or_growth(monkeypatch):
    X, y = data()
    ref = dgbdt.train(SAMPLED, dgbdt.Dataset(X, y), 8, verbose_eval=False).save_raw()
    assert ref != dgbdt.train({**SAMPLED, "seed": 8}, dgbdt.Dataset(X, y), 8,
                              verbose_eval=False).save_raw()          # the seed matters
    for rows in (700, 1001):
        assert dgbdt.train(SAMPLED, dgbdt.Dataset(X, y, page_rows=rows), 8,
                           verbose_eval=False).save_raw() == ref
    monkeypatch.setenv("DGBDT_GROWTH", "device")      # the fixed-shape grower, on numpy
    assert dgbdt.train(SAMPLED, dgbdt.Dataset(X, y, page_rows=900), 8,
                       verbose_eval=False).save_raw() == ref
    monkeypatch.setenv("DGBDT_GROWTH", "host")
    first = dgbdt.train(SAMPLED, dgbdt.Dataset(X, y), 3, verbose_eval=False)
    cont = dgbdt.train({k: v for k, v in SAMPLED.items() if k != "objective"},
                       dgbdt.Dataset(X, y), 5, verbose_eval=False, xgb_model=first)
    assert cont.save_raw() == ref                     # draws count rounds from the first


def test_the_samples_do_what_they_say():
    X, y = data(seed=1)
    # colsample_bytree=1/9: every tree splits on exactly one feature
    b = dgbdt.train({"max_depth": 3, "colsample_bytree": 1 / 9}, dgbdt.Dataset(X, y), 10,
                    verbose_eval=False)
    used = [set(t.feature[t.left != -1].tolist()) for t in b.trees]
    assert all(len(u) == 1 for u in used) and len(set().union(*used)) > 1
    # bynode: each node draws its own features from the level's
    s = Sampling(seed=1, bynode=0.5)
    masks = s.node_features(np.ones(9, dtype=bool), 0, 0, np.arange(6), np)
    assert (masks.sum(axis=1) == 4).all() and len({m.tobytes() for m in masks}) > 1
    # subsample: about that fraction of rows carries gradient, the rest none
    from dgbdt.kernels.cpu import CPU
    from dgbdt.shard import Shard
    d = dgbdt.Dataset(X, y)
    cuts = d.cuts(64)
    shard = Shard(d.pages(cuts, 64)[0], cuts.n_bins(), y, None, np.zeros((len(y), 1)), 16, CPU)
    shard.g, shard.h = np.ones((len(y), 1)), np.ones((len(y), 1))
    Sampling(seed=2, subsample=0.3).apply_rows(shard, 4)
    kept = shard.h[:, 0] > 0
    assert abs(kept.mean() - 0.3) < 0.03 and np.all(shard.g[~kept] == 0)


def test_subsample_fit_is_close_to_xgboosts():
    xgb = pytest.importorskip("xgboost")
    X, y = data(n=6000, seed=2)
    Xv, yv = data(n=2000, seed=3)
    p = {"objective": "binary:logistic", "max_depth": 5, "eta": 0.1, "subsample": 0.5,
         "colsample_bytree": 0.7}
    ours = dgbdt.train(p, dgbdt.Dataset(X, y), 100, verbose_eval=False).predict(Xv)
    theirs = xgb.train({**p, "tree_method": "hist"}, xgb.DMatrix(X, y), 100).predict(
        xgb.DMatrix(Xv))
    from sklearn.metrics import roc_auc_score
    assert abs(roc_auc_score(yv, ours) - roc_auc_score(yv, theirs)) < 0.01


@pytest.mark.parametrize("mode, workers", [("task", 1), ("collective", 2), ("graph", 2),
                                           ("graph", 4)])
def test_every_dask_mode_gives_the_in_process_sample(request, mode, workers):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    client = request.getfixturevalue(f"client{workers}")
    X, y = data(seed=4)
    ref = dgbdt.train(SAMPLED, dgbdt.Dataset(X, y), 6, verbose_eval=False).save_raw()
    for chunk in (600, 457):
        d = dgd.DaskDataset(client, da.from_array(X, chunks=(chunk, 9)),
                            da.from_array(y, chunks=chunk))
        out = dgd.train(client, SAMPLED, d, 6, mode=mode, verbose_eval=False)
        assert out["booster"].save_raw() == ref, (mode, workers, chunk)
    d = dgd.DaskDataset(client, da.from_array(X, chunks=(600, 9)),
                        da.from_array(y, chunks=600), persist=False)     # streamed shards
    assert dgd.train(client, SAMPLED, d, 6, mode=mode,
                     verbose_eval=False)["booster"].save_raw() == ref


def test_gradient_based_sampling_is_refused_clearly():
    X, y = data(n=200)
    with pytest.raises(dgbdt.ParameterError, match="gradient_based' is not supported yet"):
        dgbdt.train({"subsample": 0.5, "sampling_method": "gradient_based"},
                    dgbdt.Dataset(X, y), 1, verbose_eval=False)
