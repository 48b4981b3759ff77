"""Continued training (``xgb_model=``): 10 rounds then 10 more is the 20-round model, byte for
byte, in-process and in every Dask mode; from a file of either format; errors that say why."""
import numpy as np
import pytest

import dgbdt
from dgbdt.tree.model import ModelFormatError

CASES = [
    {"objective": "binary:logistic", "max_depth": 4, "eval_metric": ["logloss", "auc"]},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 3},
    {"objective": "reg:squarederror", "max_depth": 5, "lambda": 2.0},
]


def data(objective, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    Z = np.nan_to_num(X)
    if objective.startswith("multi"):
        return X, np.digitize(Z[:, 0] + 0.4 * Z[:, 4], [-0.5, 0.5]).astype(np.float64)
    if objective.startswith("binary"):
        return X, (Z[:, 0] + Z[:, 1] * Z[:, 2] + 0.3 * rng.standard_normal(n) > 0).astype(float)
    return X, 2 * Z[:, 0] + np.sin(Z[:, 2])


@pytest.mark.parametrize("params", CASES, ids=lambda p: p["objective"])
def test_ten_and_ten_is_twenty(params, tmp_path):
    X, y = data(params["objective"])
    Xv, yv = X[:600] * 1.1, y[:600]
    full_hist, cont_hist = {}, {}
    full = dgbdt.train(params, dgbdt.Dataset(X, y), 20, evals=[(dgbdt.Dataset(Xv, yv), "v")],
                       evals_result=full_hist, verbose_eval=False)
    first = dgbdt.train(params, dgbdt.Dataset(X, y), 10, verbose_eval=False)
    rest = {k: v for k, v in params.items() if k not in ("objective", "num_class")}
    cont = dgbdt.train(rest, dgbdt.Dataset(X, y, page_rows=1100), 10,
                       evals=[(dgbdt.Dataset(Xv, yv), "v")], evals_result=cont_hist,
                       verbose_eval=False, xgb_model=first)
    assert cont.save_raw() == full.save_raw()
    assert first.num_boosted_rounds() == 10                    # the prior is not changed
    # the eval set starts from the prior's margins: the history is the last 10 rounds'
    assert cont_hist["v"] == {m: v[10:] for m, v in full_hist["v"].items()}
    # from a model file (dgbdt's format) too
    path = tmp_path / "first.json"
    first.save_model(path)
    assert dgbdt.train(params, dgbdt.Dataset(X, y), 10, verbose_eval=False,
                       xgb_model=str(path)).save_raw() == full.save_raw()


def test_from_an_xgboost_model():
    xgb = pytest.importorskip("xgboost")
    X, y = data("binary:logistic", seed=1)
    xb = xgb.train({"objective": "binary:logistic", "max_depth": 3, "tree_method": "hist"},
                   xgb.DMatrix(X, y), 10)
    cont = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(X, y), 10, verbose_eval=False,
                       xgb_model=xb.save_raw("json").decode())
    assert cont.num_boosted_rounds() == 20
    # the first 10 trees are XGBoost's: their margins are XGBoost's (float32 sums aside)
    np.testing.assert_allclose(cont.predict(X, output_margin=True, iteration_range=(0, 10)),
                               xb.predict(xgb.DMatrix(X), output_margin=True), atol=1e-5)
    # the continued rounds lower the training loss further
    def logloss(p):
        p = np.clip(p, 1e-7, 1 - 1e-7)
        return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert logloss(cont.predict(X)) < logloss(xb.predict(xgb.DMatrix(X)))


def test_early_stopping_counts_from_the_first_round():
    X, y = data("binary:logistic", seed=2)
    Xv, yv = data("binary:logistic", n=500, seed=3)
    p = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.5}
    first = dgbdt.train(p, dgbdt.Dataset(X, y), 3, verbose_eval=False)
    cont = dgbdt.train(p, dgbdt.Dataset(X, y), 50, evals=[(dgbdt.Dataset(Xv, yv), "v")],
                       early_stopping_rounds=2, verbose_eval=False, xgb_model=first)
    full = dgbdt.train(p, dgbdt.Dataset(X, y), 53, evals=[(dgbdt.Dataset(Xv, yv), "v")],
                       early_stopping_rounds=2, verbose_eval=False)
    # the one long run's best round comes after the first 3, so both runs see it alike:
    # best_iteration is counted from the prior's first round (as XGBoost counts it)
    assert 3 <= full.best_iteration and cont.num_boosted_rounds() < 53
    assert cont.best_iteration == full.best_iteration
    assert cont.save_raw() == full.save_raw()


def test_continued_training_errors():
    X, y = data("binary:logistic", n=400)
    first = dgbdt.train({"objective": "binary:logistic", "max_depth": 2}, dgbdt.Dataset(X, y),
                        2, verbose_eval=False)
    with pytest.raises(ValueError, match="params objective 'reg:squarederror' differs from "
                                         "xgb_model's 'binary:logistic'"):
        dgbdt.train({"objective": "reg:squarederror"}, dgbdt.Dataset(X, y), 2,
                    xgb_model=first, verbose_eval=False)
    with pytest.raises(ValueError, match="xgb_model has 6 features; dtrain has 5"):
        dgbdt.train({}, dgbdt.Dataset(X[:, :5], y), 2, xgb_model=first, verbose_eval=False)
    with pytest.raises(ModelFormatError, match="not valid JSON"):
        dgbdt.train({}, dgbdt.Dataset(X, y), 2, xgb_model="{not json", verbose_eval=False)


@pytest.mark.parametrize("mode, workers", [("task", 1), ("collective", 2), ("graph", 2)])
def test_dask_continued_training_in_every_mode(request, mode, workers):
    client2 = request.getfixturevalue(f"client{workers}")
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    params = {"objective": "binary:logistic", "max_depth": 4, "eval_metric": ["auc"]}
    X, y = data("binary:logistic", seed=4)
    Xv, yv = X[:800] * 1.1, y[:800]
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=(700, 6)), da.from_array(y, chunks=700))
    dv = dgd.DaskDataset(client2, da.from_array(Xv, chunks=(400, 6)),
                         da.from_array(yv, chunks=400))
    hist = {}
    full = dgbdt.train(params, dgbdt.Dataset(X, y), 12, evals=[(dgbdt.Dataset(Xv, yv), "v")],
                       evals_result=hist, verbose_eval=False)
    first = dgd.train(client2, params, d, 5, mode=mode, verbose_eval=False)["booster"]
    out = dgd.train(client2, {"max_depth": 4, "eval_metric": ["auc"]}, d, 7,
                    evals=[(dv, "v")], mode=mode, verbose_eval=False, xgb_model=first)
    assert out["booster"].save_raw() == full.save_raw()
    assert out["history"]["v"]["auc"] == hist["v"]["auc"][5:]


def test_estimators_continue_a_fitted_estimator(client2):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    from dgbdt.dask import DaskGBDTClassifier
    from dgbdt.sklearn import GBDTClassifier
    X, y = data("binary:logistic", seed=5)
    labels = np.where(y > 0, "yes", "no")
    full = GBDTClassifier(n_estimators=12, max_depth=3).fit(X, labels)
    first = GBDTClassifier(n_estimators=5, max_depth=3).fit(X, labels)
    cont = GBDTClassifier(n_estimators=7, max_depth=3).fit(X, labels, xgb_model=first)
    assert cont.get_booster().save_raw() == full.get_booster().save_raw()
    df = dd.from_pandas(pd.DataFrame(X, columns=[f"f{i}" for i in range(6)]), npartitions=4)
    ys = dd.from_pandas(pd.Series(labels), npartitions=4)
    def est(n):
        e = DaskGBDTClassifier(n_estimators=n, max_depth=3)
        e.client = client2
        return e
    dfirst = est(5).fit(df, ys)
    dcont = est(7).fit(df, ys, xgb_model=dfirst)
    dfull = est(12).fit(df, ys)
    assert dcont.get_booster().save_raw() == dfull.get_booster().save_raw()
