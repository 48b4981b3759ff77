"""SHAP values (``pred_contribs``): exact TreeSHAP that sums to the margin and equals XGBoost's
on the same trees (through the XGBoost export), in-process and through dgbdt.dask.predict."""
import numpy as np
import pytest

import dgbdt


def data(objective, n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    Z = np.nan_to_num(X)
    if objective.startswith("multi"):
        y = np.digitize(Z[:, 0] + Z[:, 3], [-0.5, 0.5]).astype(np.float64)
    elif objective.startswith("binary"):
        y = (Z[:, 0] + Z[:, 1] * Z[:, 2] > 0).astype(np.float64)
    else:
        y = Z[:, 0] * 2 + np.sin(Z[:, 2]) * Z[:, 0]
    return X, y


CASES = [("binary:logistic", {}), ("reg:squarederror", {"max_depth": 7}),
         ("multi:softprob", {"num_class": 3})]


@pytest.mark.parametrize("objective, extra", CASES, ids=[c[0] for c in CASES])
def test_contributions_sum_to_the_margin_and_equal_xgboost(objective, extra):
    xgb = pytest.importorskip("xgboost")
    X, y = data(objective)
    b = dgbdt.train({"objective": objective, "max_depth": 5, **extra}, dgbdt.Dataset(X, y), 15,
                    verbose_eval=False)
    c = b.predict(X, pred_contribs=True)
    K = b.n_outputs
    assert c.shape == ((len(X), 7) if K == 1 else (len(X), K, 7))
    np.testing.assert_allclose(c.sum(axis=-1), b.predict(X, output_margin=True),
                               rtol=0, atol=1e-9)
    xb = xgb.Booster()
    xb.load_model(bytearray(b.save_raw("xgboost").encode()))
    # XGBoost computes in float32: equal within its rounding
    np.testing.assert_allclose(c, xb.predict(xgb.DMatrix(X), pred_contribs=True),
                               rtol=0, atol=2e-5)


def test_shapley_axioms_on_a_small_tree():
    """A feature the trees never split on gets exactly 0; the bias is the cover-weighted mean
    prediction (the expectation of the margin over the training rows' cover)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((800, 3)).astype(np.float32)
    y = 3.0 * (X[:, 0] > 0) + (X[:, 1] > 0.5)              # feature 2 is noise-free unused
    b = dgbdt.train({"max_depth": 2, "eta": 1.0, "lambda": 0.0, "min_child_weight": 0},
                    dgbdt.Dataset(X, y), 1, verbose_eval=False)
    used = set(b.trees[0].feature[b.trees[0].left != -1].tolist())
    c = b.predict(X, pred_contribs=True)
    for f in set(range(3)) - used:
        assert np.all(c[:, f] == 0.0)
    # with squared error the cover is the row count: the bias is the mean margin
    np.testing.assert_allclose(c[:, -1], b.predict(X, output_margin=True).mean(), rtol=1e-9)


def test_iteration_range_and_base_margin():
    X, y = data("binary:logistic", seed=2)
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 4}, dgbdt.Dataset(X, y), 12,
                    verbose_eval=False)
    bm = np.random.default_rng(3).standard_normal(len(X))
    d = dgbdt.Dataset(X, base_margin=bm)
    c = b.predict(d, pred_contribs=True, iteration_range=(2, 7))
    np.testing.assert_allclose(c.sum(axis=1),
                               b.predict(d, output_margin=True, iteration_range=(2, 7)),
                               atol=1e-9)


def test_dask_contributions_match_in_process(client2):
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    import dgbdt.dask as dgd
    for objective, extra in CASES[::2]:
        X, y = data(objective, seed=4)
        b = dgbdt.train({"objective": objective, "max_depth": 4, **extra},
                        dgbdt.Dataset(X, y), 6, verbose_eval=False)
        ref = b.predict(X, pred_contribs=True)
        Xd = da.from_array(X, chunks=(400, 6))
        got = dgd.predict(client2, b, Xd, pred_contribs=True)
        assert got.shape == ref.shape
        np.testing.assert_array_equal(client2.compute(got).result(), ref)
        ds = dgd.DaskDataset(client2, Xd)
        np.testing.assert_array_equal(
            client2.compute(dgd.predict(client2, b, ds, pred_contribs=True)).result(), ref)
    df = dd.from_pandas(pd.DataFrame(X, columns=list("abcdef")), npartitions=3)
    with pytest.raises(ValueError, match="several outputs is 3-D"):
        dgd.predict(client2, b, df, pred_contribs=True)
    X, y = data("binary:logistic", seed=5)
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 4}, dgbdt.Dataset(X, y), 6,
                    verbose_eval=False)
    df = dd.from_pandas(pd.DataFrame(X, columns=list("abcdef")), npartitions=3)
    out = client2.compute(dgd.predict(client2, b, df, pred_contribs=True)).result()
    assert list(out.columns) == list("abcdef") + ["bias"]
    np.testing.assert_array_equal(out.to_numpy(), b.predict(X, pred_contribs=True))


@pytest.mark.parametrize("objective, extra", CASES[::2], ids=[c[0] for c in CASES[::2]])
def test_interaction_values_equal_xgboost_and_sum_to_the_contributions(objective, extra):
    xgb = pytest.importorskip("xgboost")
    X, y = data(objective, n=300, seed=6)
    b = dgbdt.train({"objective": objective, "max_depth": 4, **extra}, dgbdt.Dataset(X, y), 6,
                    verbose_eval=False)
    inter = b.predict(X, pred_interactions=True)
    np.testing.assert_allclose(inter.sum(axis=-1), b.predict(X, pred_contribs=True), atol=1e-9)
    np.testing.assert_allclose(inter, np.swapaxes(inter, -1, -2), atol=1e-9)   # symmetric
    xb = xgb.Booster()
    xb.load_model(bytearray(b.save_raw("xgboost").encode()))
    np.testing.assert_allclose(inter, xb.predict(xgb.DMatrix(X), pred_interactions=True),
                               atol=2e-5)
    assert b.predict(X, pred_interactions=True, strict_shape=True).shape == \
        (len(X), b.n_outputs, 7, 7)


def test_dask_interaction_values_match_in_process(client2):
    """pred_interactions through dgbdt.dask.predict: one [n, F+1, F+1] (or [n, K, F+1, F+1])
    block per partition, the in-process values; a DataFrame says to pass an array."""
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    import dgbdt.dask as dgd
    for objective, extra in CASES[::2]:
        X, y = data(objective, n=500, seed=7)
        b = dgbdt.train({"objective": objective, "max_depth": 3, **extra},
                        dgbdt.Dataset(X, y), 4, verbose_eval=False)
        ref = b.predict(X, pred_interactions=True)
        Xd = da.from_array(X, chunks=(200, 6))
        got = dgd.predict(client2, b, Xd, pred_interactions=True)
        assert got.shape == ref.shape and got.ndim == ref.ndim
        np.testing.assert_array_equal(client2.compute(got).result(), ref)
        ds = dgd.DaskDataset(client2, Xd)
        np.testing.assert_array_equal(
            client2.compute(dgd.predict(client2, b, ds, pred_interactions=True)).result(), ref)
    df = dd.from_pandas(pd.DataFrame(X, columns=list("abcdef")), npartitions=2)
    with pytest.raises(ValueError, match=r"pred_interactions are 3-D"):
        dgd.predict(client2, b, df, pred_interactions=True)
