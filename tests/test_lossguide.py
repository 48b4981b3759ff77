"""grow_policy="lossguide" (dgbdt/tree/lossguide.py): the trees keep their limits and differ
from depth-wise ones, the parameters' rules give specific errors, and on Dask the collective
mode (what auto picks), graph mode (a task hop per split) and the one-task mode give the
in-process model byte for byte. Parity with XGBoost's trees is in tests/test_compare_xgboost.py."""
import numpy as np
import pytest

import dgbdt
from dgbdt.params.normalize import ParameterError

pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
from dgbdt import dask as dgd  # noqa: E402


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    y = Z[:, 0] * Z[:, 1] + np.sin(2 * Z[:, 2]) + 0.5 * Z[:, 3] ** 2 + 0.2 * rng.standard_normal(n)
    return X, y


def _depths(tree):
    depth = np.zeros(tree.n_nodes, int)
    for n in range(tree.n_nodes):
        if tree.left[n] != -1:
            depth[tree.left[n]] = depth[tree.right[n]] = depth[n] + 1
    return depth


@pytest.mark.parametrize("max_leaves,max_depth", [(7, 0), (20, 4), (0, 3)])
def test_limits_hold(max_leaves, max_depth):
    X, y = _data()
    p = {"grow_policy": "lossguide", "max_leaves": max_leaves, "max_depth": max_depth}
    b = dgbdt.train(p, dgbdt.Dataset(X, label=y), 5, verbose_eval=False)
    for t in b.trees:
        leaves = int(t.is_leaf().sum())
        assert leaves <= (max_leaves or 2 ** max_depth)
        if max_depth:
            assert _depths(t).max() <= max_depth
    if max_leaves == 7:     # an unbalanced tree a depth-wise one of 7 leaves could not be
        assert any(_depths(t).max() > 3 for t in b.trees)
        assert all(int(t.is_leaf().sum()) == 7 for t in b.trees)


def test_lossguide_is_not_depthwise_and_learns():
    X, y = _data()
    lg = dgbdt.train({"grow_policy": "lossguide", "max_leaves": 8, "max_depth": 0},
                     dgbdt.Dataset(X, label=y), 20, verbose_eval=False)
    dw = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(X, label=y), 20, verbose_eval=False)
    assert lg.save_raw() != dw.save_raw()
    rmse = float(np.sqrt(np.mean((lg.predict(X) - y) ** 2)))
    assert rmse < 0.6 * float(np.std(y))


@pytest.mark.parametrize("params,match", [
    ({"max_depth": 0}, r'max_depth=0 means unlimited depth, which needs grow_policy="lossguide" '
                       r"and a leaf limit"),
    ({"grow_policy": "lossguide", "max_depth": 0}, r"and a leaf limit \(got grow_policy="
                                                   r"'lossguide', max_leaves=0\)"),
    ({"max_leaves": 8, "linear_tree": True},
     r"max_leaves=8 with grow_policy='depthwise' and linear_tree"),
    ({"grow_policy": "leafwise"}, r"grow_policy"),
    ({"grow_policy": "lossguide", "max_leaves": -1}, r"max_leaves"),
])
def test_parameter_errors(params, match):
    X, y = _data(200)
    with pytest.raises(ParameterError, match=match):
        dgbdt.train(params, dgbdt.Dataset(X, label=y), 2, verbose_eval=False)


@pytest.mark.parametrize("mode", ["collective", "auto"])
def test_dask_modes_give_the_in_process_model(client2, mode):
    X, y = _data()
    p = {"grow_policy": "lossguide", "max_leaves": 10, "max_depth": 0, "subsample": 0.8,
         "seed": 2, "eval_metric": "rmse"}
    ref_hist = {}
    d = dgbdt.Dataset(X, label=y)
    ref = dgbdt.train(p, d, 6, evals=[(d, "train")], evals_result=ref_hist,
                      verbose_eval=False)
    dd = dgd.DaskDataset(client2, da.from_array(X, chunks=(700, 6)), da.from_array(y, chunks=700))
    out = dgd.train(client2, p, dd, 6, evals=[(dd, "train")], mode=mode, verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
    assert out["history"] == ref_hist


def test_estimator_takes_the_parameters():
    X, y = _data(1500)
    est = dgbdt.GBDTRegressor(n_estimators=5, grow_policy="lossguide", max_leaves=6,
                              max_depth=0).fit(X, y)
    assert all(int(t.is_leaf().sum()) <= 6 for t in est.get_booster().trees)
    ref = dgbdt.train({"grow_policy": "lossguide", "max_leaves": 6, "max_depth": 0},
                      dgbdt.Dataset(X, label=y), 5, verbose_eval=False)
    assert est.get_booster().save_raw() == ref.save_raw()


def test_one_task_mode(client1):
    X, y = _data(2000)
    p = {"grow_policy": "lossguide", "max_leaves": 9, "max_depth": 4}
    ref = dgbdt.train(p, dgbdt.Dataset(X, label=y), 4, verbose_eval=False)
    dd = dgd.DaskDataset(client1, da.from_array(X, chunks=(500, 6)), da.from_array(y, chunks=500))
    out = dgd.train(client1, p, dd, 4, mode="task", verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()


def test_graph_mode_grows_them_a_hop_a_split(client2):
    """Graph mode submits spec.max_requests() hops a tree (no-ops once a tree ends): the
    in-process model, byte for byte."""
    from dgbdt.tree.lossguide import max_requests
    assert [max_requests(0, L) for L in (1, 2, 8)] == [1, 1, 7]
    assert [max_requests(d, 0) for d in (1, 3)] == [1, 4]
    assert max_requests(3, 100) == 4 and max_requests(10, 6) == 5
    X, y = _data(2000)
    p = {"grow_policy": "lossguide", "max_leaves": 6, "max_depth": 0}
    ref = dgbdt.train(p, dgbdt.Dataset(X, label=y), 4, verbose_eval=False)
    dd = dgd.DaskDataset(client2, da.from_array(X, chunks=(500, 6)), da.from_array(y, chunks=500))
    out = dgd.train(client2, p, dd, 4, mode="graph", verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()


@pytest.mark.parametrize("max_leaves", [1, 2, 5, 9, 20])
def test_depthwise_trees_capped_by_max_leaves_as_xgboost(max_leaves):
    """XGBoost caps depth-wise trees too: a level's nodes split in id order while the tree
    has fewer than max_leaves leaves."""
    xgb = pytest.importorskip("xgboost")
    X, y = _data(3000)
    X = np.round(X, 1)      # every value a cut in both libraries: the same trees
    p = {"max_depth": 4, "max_leaves": max_leaves}
    ours = dgbdt.train(p, dgbdt.Dataset(X, label=y), 3, verbose_eval=False)
    theirs = xgb.train(dict(p, tree_method="hist"), xgb.DMatrix(X, label=y), 3)
    assert [t.n_nodes for t in ours.trees] == \
        [len(d.strip().split("\n")) for d in theirs.get_dump()]
    np.testing.assert_allclose(ours.predict(X), theirs.predict(xgb.DMatrix(X)), atol=1e-5)
    assert all(np.sum(t.left < 0) <= max_leaves for t in ours.trees)


@pytest.mark.parametrize("mode", ["collective", "graph"])
def test_depthwise_max_leaves_on_dask(client2, mode):
    X, y = _data()
    p = {"max_depth": 5, "max_leaves": 7, "subsample": 0.8}
    ref = dgbdt.train(p, dgbdt.Dataset(X, label=y), 4, verbose_eval=False).save_raw()
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=(700, X.shape[1])),
                        da.from_array(y, chunks=700))
    got = dgd.train(client2, p, d, 4, mode=mode, verbose_eval=False)["booster"]
    assert got.save_raw() == ref
