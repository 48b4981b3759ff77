"""tree_method="approx" (dgbdt.engine.approx): a hessian-weighted sketch for every tree, as
XGBoost's approximate method; the same bytes for any partitioning and in every Dask mode that
builds it."""
import numpy as np
import pytest

import dgbdt
import dgbdt.dask as dgd


def data(n=4000, seed=0):
    from sklearn.datasets import make_classification
    X, y = make_classification(n, 10, random_state=seed)
    return X.astype(np.float32), y.astype(np.float64)


BINARY = {"objective": "binary:logistic", "tree_method": "approx", "max_bin": 16}


def losses(params, X, y, rounds=20, lib=dgbdt):
    res = {}
    d = lib.DMatrix(X, label=y) if lib is not dgbdt else dgbdt.Dataset(X, label=y)
    lib.train(params, d, rounds, evals=[(d, "train")], evals_result=res, verbose_eval=False)
    return np.array(res["train"]["logloss"])


def test_first_tree_is_hists_then_each_tree_has_its_own_cuts():
    X, y = data()
    hist = dgbdt.train(dict(BINARY, tree_method="hist"), dgbdt.Dataset(X, label=y), 6)
    approx = dgbdt.train(BINARY, dgbdt.Dataset(X, label=y), 6)
    # round 0: every row has the same hessian, so the weighted sketch is the row count's
    assert approx.get_dump()[0] == hist.get_dump()[0]
    later = [a != h for a, h in zip(approx.get_dump()[1:], hist.get_dump()[1:])]
    assert any(later)
    # thresholds no longer all come from the training's one set of cuts
    hist_thresholds = {round(float(v), 6) for t in hist.trees for v in t.threshold}
    approx_thresholds = {round(float(v), 6) for t in approx.trees for v in t.threshold}
    assert approx_thresholds - hist_thresholds


def test_loss_falls_and_tracks_xgboosts_approx():
    xgb = pytest.importorskip("xgboost")
    X, y = data()
    ours = losses(BINARY, X, y)
    assert np.all(np.diff(ours) <= 1e-12)
    theirs = losses(BINARY, X, y, lib=xgb)
    hist = losses(dict(BINARY, tree_method="hist"), X, y)
    # coarse bins placed by the hessians fit the training rows better than by the rows
    assert ours[-1] < hist[-1]
    assert abs(ours[-1] / theirs[-1] - 1) < 0.05


@pytest.mark.parametrize("params", [
    BINARY,
    dict(BINARY, subsample=0.7, colsample_bynode=0.8, num_parallel_tree=2),
    dict(BINARY, objective="multi:softprob", num_class=3),
    dict(BINARY, grow_policy="lossguide", max_leaves=8),
], ids=["binary", "sampled-forest", "multiclass", "lossguide"])
def test_same_bytes_for_any_pages(params):
    X, y = data()
    if params["objective"].startswith("multi"):
        y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.float64)
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y), 4).save_raw()
    assert dgbdt.train(params, dgbdt.Dataset(X, label=y, page_rows=900), 4).save_raw() == ref


def test_categorical_features():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame({"a": rng.standard_normal(n),
                       "c": pd.Categorical(rng.choice(list("pqrst"), n))})
    y = (df["a"] + (df["c"] == "q") * 2 + rng.standard_normal(n) * 0.1 > 0.5).astype(float)
    d = dgbdt.Dataset(df, label=y, enable_categorical=True)
    b = dgbdt.train(BINARY, d, 5)
    hist = dgbdt.train(dict(BINARY, tree_method="hist"), d, 5)
    acc = lambda m: np.mean((m.predict(d) > 0.5) == y)   # noqa: E731
    assert acc(b) > 0.95 and abs(acc(b) - acc(hist)) < 0.02


def test_linear_trees_are_refused_with_a_way_out():
    X, y = data(500)
    with pytest.raises(NotImplementedError, match='approx" with linear_tree'):
        dgbdt.train(dict(BINARY, linear_tree=True), dgbdt.Dataset(X, label=y), 1)


@pytest.mark.slow
def test_dask_modes_give_the_in_process_bytes(client1, client2):
    import dask.array as da
    X, y = data()
    params = dict(BINARY, subsample=0.8)
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y), 4).save_raw()

    def dask_data(client):
        return dgd.DaskDataset(client, da.from_array(X, chunks=(1000, 10)),
                               da.from_array(y, chunks=1000))

    for client, mode in [(client1, "task"), (client1, "graph"), (client2, "collective"),
                         (client2, "auto")]:
        got = dgd.train(client, params, dask_data(client), 4, mode=mode, verbose_eval=False)
        assert got["booster"].save_raw() == ref, mode
    with pytest.raises(NotImplementedError, match='Fix: mode="collective"'):
        dgd.train(client2, params, dask_data(client2), 2, mode="graph")
    exact = {"objective": "binary:logistic", "tree_method": "exact", "max_depth": 4}
    ref = dgbdt.train(exact, dgbdt.Dataset(X, label=y), 3).save_raw()
    for client, mode in [(client1, "task"), (client2, "collective"), (client2, "graph")]:
        got = dgd.train(client, exact, dask_data(client), 3, mode=mode, verbose_eval=False)
        assert got["booster"].save_raw() == ref, mode


def test_exact_is_xgboosts_exact_on_the_training_rows():
    """tree_method="exact": a bin a distinct value, so every split between two consecutive
    values is evaluated, as XGBoost's exact greedy method does; its predictions on the
    training rows are XGBoost's (its thresholds too: tests/test_exact_thresholds.py)."""
    xgb = pytest.importorskip("xgboost")
    X, y = data(2000)
    for extra in ({"max_depth": 3}, {"max_depth": 5, "lambda": 2.0, "gamma": 0.1}):
        p = {"objective": "binary:logistic", "tree_method": "exact", **extra}
        ours = dgbdt.train(p, dgbdt.Dataset(X, label=y), 5)
        theirs = xgb.train(p, xgb.DMatrix(X, label=y), 5)
        np.testing.assert_allclose(ours.predict(dgbdt.Dataset(X), output_margin=True),
                                   theirs.predict(xgb.DMatrix(X), output_margin=True),
                                   atol=1e-5)
    wide = np.arange(70000, dtype=np.float32)[:, None]
    with pytest.raises(NotImplementedError, match="65535 or more distinct values"):
        dgbdt.train({"tree_method": "exact"}, dgbdt.Dataset(wide, label=wide[:, 0]), 1)
