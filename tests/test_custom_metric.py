"""custom_metric as a dgbdt.metrics.registry.Metric (a row loss, or a summary / merge / value): scored
like the built-in metrics in process and on Dask, exact for any partitioning and mode, early
stopping on it; XGBoost's function form stays in-process and is refused on Dask with an error
that says what to use."""
import numpy as np
import pytest

import dgbdt
from dgbdt.metrics.registry import MAE, Metric

pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
from dgbdt import dask as dgd  # noqa: E402


class MyMAE(Metric):
    """The built-in mae under another name: the same value bit for bit."""
    name = "my-mae"

    def _row_loss(self, xp, y, p):
        return xp.abs(y - p)


class Within(Metric):
    """The weighted share of rows predicted within 0.5 of the label (higher is better)."""
    name = "within-0.5"
    higher_is_better = True

    def _row_loss(self, xp, y, p):
        return (xp.abs(y - p) <= 0.5).astype(np.float64)


def _data(n=2400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5)).astype(np.float32)
    y = X[:, 0] * 2 + np.sin(3 * X[:, 1]) + 0.3 * rng.standard_normal(n)
    return X, y, rng.uniform(0.5, 2.0, n)


def test_in_process_equals_the_built_in_and_stops_early():
    X, y, w = _data()
    d, v = dgbdt.Dataset(X[:2000], label=y[:2000]), dgbdt.Dataset(X[2000:], label=y[2000:],
                                                                  weight=w[2000:])
    h = {}
    b = dgbdt.train({"eval_metric": "mae", "max_depth": 3}, d, 30, evals=[(v, "v")],
                    evals_result=h, custom_metric=[MyMAE(), Within()],
                    early_stopping_rounds=4, verbose_eval=False)
    assert list(h["v"]) == ["mae", "my-mae", "within-0.5"]
    assert h["v"]["my-mae"] == h["v"]["mae"]
    best = int(np.argmax(h["v"]["within-0.5"]))          # the last one, maximized
    assert b.best_iteration == best
    assert b.num_boosted_rounds() == min(30, best + 5)
    with pytest.raises(ValueError, match="higher_is_better"):
        dgbdt.train({}, d, 2, evals=[(v, "v")], custom_metric=Within(), maximize=False,
                    verbose_eval=False)


@pytest.mark.parametrize("mode", ["collective", "graph"])
def test_dask_is_exact_for_any_partitioning(client2, mode):
    X, y, w = _data()
    p = {"max_depth": 3, "eval_metric": ["rmse"]}
    d, v = dgbdt.Dataset(X[:2000], label=y[:2000]), dgbdt.Dataset(X[2000:], label=y[2000:],
                                                                  weight=w[2000:])
    ref = {}
    dgbdt.train(p, d, 6, evals=[(d, "t"), (v, "v")], evals_result=ref,
                custom_metric=[MyMAE(), Within()], verbose_eval=False)
    for chunks in (500, 333):
        dd = dgd.DaskDataset(client2, da.from_array(X[:2000], chunks=(chunks, 5)),
                             da.from_array(y[:2000], chunks=chunks))
        dv = dgd.DaskDataset(client2, da.from_array(X[2000:], chunks=(150, 5)),
                             da.from_array(y[2000:], chunks=150),
                             da.from_array(w[2000:], chunks=150))
        out = dgd.train(client2, p, dd, 6, evals=[(dd, "t"), (dv, "v")], mode=mode,
                        custom_metric=[MyMAE(), Within()], verbose_eval=False)
        assert out["history"] == ref


def test_functions_are_refused_on_dask(client2):
    X, y, _ = _data(600)
    dd = dgd.DaskDataset(client2, da.from_array(X, chunks=(300, 5)), da.from_array(y, chunks=300))
    with pytest.raises(NotImplementedError, match="takes dgbdt.metrics.registry.Metric instances"):
        dgd.train(client2, {}, dd, 2, evals=[(dd, "t")], verbose_eval=False,
                  custom_metric=lambda preds, d: ("m", 0.0))


def test_estimators_take_a_metric(client2):
    X, y, _ = _data(1200)
    est = dgbdt.GBDTRegressor(n_estimators=5, max_depth=3, eval_metric=MyMAE())
    est.fit(X, y, eval_set=[(X, y)])
    ref = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(X, label=y), 5, verbose_eval=False)
    assert est.get_booster().save_raw() == ref.save_raw()
    assert list(est.evals_result()["validation_0"]) == ["rmse", "my-mae"]
    dest = dgd.DaskGBDTRegressor(n_estimators=5, max_depth=3, eval_metric=MyMAE())
    dest.client = client2
    Xd, yd = da.from_array(X, chunks=(400, 5)), da.from_array(y, chunks=400)
    dest.fit(Xd, yd, eval_set=[(Xd, yd)])
    assert dest.evals_result() == est.evals_result()
    assert isinstance(MAE(), Metric)


def test_disable_default_eval_metric_leaves_the_function_alone():
    """XGBoost's rule: with disable_default_eval_metric and no eval_metric, a custom metric
    function is the only score (and the one early stopping watches)."""
    X = np.random.default_rng(0).random((300, 3))
    y = (X[:, 0] > 0.5).astype(float)
    d = dgbdt.Dataset(X, label=y)

    def err(p, d):
        return "mine", float(np.mean((p > 0.5) != d.get_label()))
    for disable, want in [(True, ["mine"]), (False, ["logloss", "mine"])]:
        res = {}
        b = dgbdt.train({"objective": "binary:logistic", "disable_default_eval_metric": disable},
                        d, 6, evals=[(d, "t")], evals_result=res, custom_metric=err,
                        early_stopping_rounds=2, verbose_eval=False)
        assert list(res["t"]) == want and b.best_iteration is not None
