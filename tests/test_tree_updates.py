"""process_type="update" (dgbdt.engine.update_process, dgbdt.tree.tree_updates): an existing
model's trees refreshed from new rows' gradients or pruned, as XGBoost's refresh and prune
updaters do; XGBoost is the oracle."""
import json

import numpy as np
import pytest

import dgbdt

xgb = pytest.importorskip("xgboost")


def rows(n, shift, seed, missing=0.05, f=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    X[rng.random(X.shape) < missing] = np.nan
    z = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) * np.nan_to_num(X[:, 2])
    return X, z + shift + rng.normal(size=n).astype(np.float32) * 0.5


def xgb_trees(bst):
    return json.loads(bytes(bst.save_raw("json")))["learner"]["gradient_booster"]["model"][
        "trees"]


def reachable(t) -> int:
    """XGBoost keeps a pruned tree's cut nodes as unused slots: the nodes still in it."""
    todo, n = [0], 0
    while todo:
        node = todo.pop()
        n += 1
        if t["left_children"][node] != -1:
            todo += [t["left_children"][node], t["right_children"][node]]
    return n


CASES = [("refresh", {}), ("refresh", {"refresh_leaf": 0}), ("prune", {"gamma": 3.0}),
         ("prune", {"max_depth": 2}), ("refresh,prune", {"gamma": 2.0}),
         ("prune,refresh", {"gamma": 2.0, "alpha": 0.5})]


@pytest.mark.parametrize("objective", ["binary:logistic", "reg:squarederror",
                                       "multi:softprob"])
@pytest.mark.filterwarnings("ignore::UserWarning")   # XGBoost's on updater=
@pytest.mark.parametrize("updater,extra", CASES)
def test_updated_trees_are_xgboosts(objective, updater, extra):
    """XGBoost's model, updated on other rows by XGBoost and by dgbdt: the same nodes kept,
    hessian sums, gains and base weights, and margins within float32 noise."""
    X, z = rows(3000, 0.0, 1)
    X2, z2 = rows(2000, 0.7, 2)
    label = {"binary:logistic": lambda v: (v > 0).astype(np.float32),
             "reg:squarederror": lambda v: v,
             "multi:softprob": lambda v: np.digitize(v, [-0.5, 0.5]).astype(np.float32)}[objective]
    p = {"objective": objective, "max_depth": 3, "eta": 0.3,
         **({"num_class": 3} if objective.startswith("multi") else {})}
    start = bytes(xgb.train({**p, "tree_method": "hist"}, xgb.DMatrix(X, label(z)),
                            4).save_raw("json"))
    q = {**p, "process_type": "update", "updater": updater, **extra}
    ours = dgbdt.train(q, dgbdt.Dataset(X2, label(z2)), 3, xgb_model=start, verbose_eval=False)
    theirs = xgb.train(q, xgb.DMatrix(X2, label(z2)), 3,
                       xgb_model=xgb.Booster(model_file=bytearray(start)))
    assert ours.num_boosted_rounds() == theirs.num_boosted_rounds() == 3
    for i, (a, b) in enumerate(zip(ours.trees, xgb_trees(theirs))):
        assert a.n_nodes == reachable(b), f"tree {i}"
        if a.n_nodes == len(b["left_children"]):      # nothing cut: node for node
            np.testing.assert_allclose(a.sum_hessian, b["sum_hessian"], rtol=1e-5, atol=1e-4)
            np.testing.assert_allclose(a.loss_change, b["loss_changes"], rtol=1e-4, atol=1e-3)
            np.testing.assert_allclose(a.base_weight, b["base_weights"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.predict(X2, output_margin=True),
                               theirs.predict(xgb.DMatrix(X2), output_margin=True),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("updater", ["refresh", "prune", "refresh,prune", "prune,refresh"])
def test_forest_updates_are_xgboosts(updater):
    """A forest's round (num_parallel_tree P): XGBoost's updaters see eta / P, refresh's
    leaves and prune's new leaves alike."""
    X, z = rows(3000, 0.0, 12)
    X2, z2 = rows(2000, 0.5, 13)
    p = {"max_depth": 3, "eta": 0.3, "num_parallel_tree": 3, "subsample": 0.7,
         "colsample_bynode": 0.6, "seed": 3}
    start = bytes(xgb.train({**p, "tree_method": "hist"}, xgb.DMatrix(X, z), 3).save_raw("json"))
    q = {**p, "process_type": "update", "updater": updater, "gamma": 1.0}
    ours = dgbdt.train(q, dgbdt.Dataset(X2, z2), 3, xgb_model=start, verbose_eval=False)
    theirs = xgb.train(q, xgb.DMatrix(X2, z2), 3, xgb_model=xgb.Booster(model_file=bytearray(start)))
    assert [t.n_nodes for t in ours.trees] == [reachable(t) for t in xgb_trees(theirs)]
    np.testing.assert_allclose(ours.predict(X2, output_margin=True),
                               theirs.predict(xgb.DMatrix(X2), output_margin=True),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["hist", "approx", "exact"])
@pytest.mark.parametrize("params", [{"objective": "binary:logistic"},
                                    {"objective": "multi:softprob", "num_class": 3,
                                     "num_parallel_tree": 2, "colsample_bynode": 0.6}])
def test_refresh_on_the_growth_rows_gives_the_trees_back(method, params):
    """Fixed-point sums, as growth's: refreshed on the rows and gradients they grew from
    (no row sampling), the trees keep their leaf values, hessian sums and gains bit for bit;
    and a prune after growth cuts nothing (the growth split no node gaining less than
    min_split_loss). That is why dgbdt.compat.xgboost takes 'grow_colmaker,prune,refresh'."""
    X, z = rows(3000, 0.0, 3)
    y = np.digitize(z, [-0.5, 0.5]).astype(np.float32) if "num_class" in params else \
        (z > 0).astype(np.float32)
    p = {**params, "max_depth": 4, "tree_method": method, "gamma": 0.5, "seed": 1}
    d = dgbdt.Dataset(X, y)
    grown = dgbdt.train(p, d, 4, verbose_eval=False)
    for updater in ("refresh", "prune"):
        again = dgbdt.train({**p, "process_type": "update", "updater": updater}, d, 4,
                            xgb_model=grown, verbose_eval=False)
        for a, b in zip(grown.trees, again.trees):
            assert a.n_nodes == b.n_nodes
            np.testing.assert_array_equal(a.threshold, b.threshold)
            np.testing.assert_array_equal(a.sum_hessian, b.sum_hessian)
            np.testing.assert_array_equal(a.loss_change, b.loss_change)


def test_the_same_model_for_any_row_order():
    X, z = rows(2500, 0.0, 4)
    X2, z2 = rows(1500, 0.5, 5)
    p = {"objective": "binary:logistic", "max_depth": 4}
    start = dgbdt.train(p, dgbdt.Dataset(X, (z > 0).astype(np.float32)), 3, verbose_eval=False)
    perm = np.random.default_rng(0).permutation(len(X2))
    q = {**p, "process_type": "update", "updater": "refresh,prune", "gamma": 1.0}
    a = dgbdt.train(q, dgbdt.Dataset(X2, (z2 > 0).astype(np.float32)), 3, xgb_model=start,
                    verbose_eval=False)
    b = dgbdt.train(q, dgbdt.Dataset(X2[perm], (z2[perm] > 0).astype(np.float32)), 3,
                    xgb_model=start, verbose_eval=False)
    assert a.save_raw() == b.save_raw()


def test_evals_are_scored_on_the_updated_model():
    X, z = rows(2000, 0.0, 6)
    X2, z2 = rows(1500, 0.8, 7)
    p = {"objective": "binary:logistic", "max_depth": 3, "eval_metric": ["logloss", "auc"]}
    start = dgbdt.train(p, dgbdt.Dataset(X, (z > 0).astype(np.float32)), 4, verbose_eval=False)
    d2 = dgbdt.Dataset(X2, (z2 > 0).astype(np.float32))
    hist = {}
    out = dgbdt.train({**p, "process_type": "update", "updater": "refresh"}, d2, 4,
                      xgb_model=start, evals=[(d2, "new")], evals_result=hist,
                      verbose_eval=False)
    from sklearn.metrics import log_loss, roc_auc_score
    y2 = (z2 > 0).astype(np.float32)
    for r in range(4):
        pred = out.predict(X2, iteration_range=(0, r + 1))
        assert hist["new"]["logloss"][r] == pytest.approx(log_loss(y2, pred), rel=1e-6)
        assert hist["new"]["auc"][r] == pytest.approx(roc_auc_score(y2, pred), rel=1e-9)
    # refreshed on the new rows, the leaves fit them better than the old ones did
    assert hist["new"]["logloss"][-1] < log_loss(y2, start.predict(X2))


def test_what_the_update_process_refuses():
    X, z = rows(500, 0.0, 8)
    d = dgbdt.Dataset(X, z)
    model = dgbdt.train({"max_depth": 2}, d, 2, verbose_eval=False)
    up = {"process_type": "update", "updater": "refresh"}
    with pytest.raises(ValueError, match="updates the trees of xgb_model"):
        dgbdt.train(up, d, 2)
    with pytest.raises(ValueError, match="can not exceed"):
        dgbdt.train(up, d, 3, xgb_model=model)
    with pytest.raises(ValueError, match="process_type='update'"):
        dgbdt.train({"updater": "refresh"}, d, 2, xgb_model=model)
    with pytest.raises(ValueError, match="updater='refresh', 'prune'"):
        dgbdt.train({"process_type": "update"}, d, 2, xgb_model=model)
    with pytest.raises(NotImplementedError, match="early_stopping_rounds"):
        dgbdt.train(up, d, 2, xgb_model=model, evals=[(d, "d")], early_stopping_rounds=1)
    dart = dgbdt.train({"booster": "dart", "max_depth": 2}, d, 2, verbose_eval=False)
    with pytest.raises(NotImplementedError, match="dart"):
        dgbdt.train({**up, "booster": "gbtree"}, d, 2, xgb_model=dart)


@pytest.mark.dask
@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softprob"])
def test_dask_update_is_the_in_process_one(client2, objective):
    """On Dask a holder a partition, the sums and maxima reduced over them: the in-process
    model byte for byte, and the same eval history, for any partitioning."""
    import dask.array as da

    from dgbdt import dask as dgd
    X, z = rows(3000, 0.0, 9)
    X2, z2 = rows(2400, 0.6, 10)
    lab = (lambda v: (v > 0).astype(np.float32)) if objective == "binary:logistic" else \
        (lambda v: np.digitize(v, [-0.5, 0.5]).astype(np.float32))
    p = {"objective": objective, "max_depth": 4,
         "eval_metric": ["logloss" if objective == "binary:logistic" else "mlogloss"],
         **({"num_class": 3} if objective.startswith("multi") else {})}
    start = dgbdt.train(p, dgbdt.Dataset(X, lab(z)), 3, verbose_eval=False)
    w = np.random.default_rng(0).uniform(0.5, 2, len(X2)).astype(np.float32)
    q = {**p, "process_type": "update", "updater": "refresh,prune", "gamma": 1.0}
    d2 = dgbdt.Dataset(X2, lab(z2), weight=w)
    hist = {}
    local = dgbdt.train(q, d2, 3, xgb_model=start, evals=[(d2, "v")], evals_result=hist,
                        verbose_eval=False)
    for chunks in (600, 1100):
        dd = dgd.DaskDataset(client2, da.from_array(X2, chunks=(chunks, 5)),
                             da.from_array(lab(z2), chunks=chunks),
                             weight=da.from_array(w, chunks=chunks))
        out = dgd.train(client2, q, dd, 3, xgb_model=start, evals=[(dd, "v")],
                        verbose_eval=False)
        assert out["booster"].save_raw() == local.save_raw()
        assert out["history"] == hist


def test_ranking_and_grouped_objectives_are_refused():
    X, z = rows(300, 0.0, 11)
    qid = np.repeat(np.arange(30), 10)
    d = dgbdt.Dataset(X, (z > 0).astype(np.float32), qid=qid)
    model = dgbdt.train({"objective": "rank:ndcg", "max_depth": 2}, d, 2, verbose_eval=False)
    with pytest.raises(NotImplementedError, match="rank:ndcg"):
        dgbdt.train({"process_type": "update", "updater": "refresh"}, d, 2, xgb_model=model)
