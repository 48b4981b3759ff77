"""dgbdt.compat.xgboost's input rules against real XGBoost's: what DMatrix, QuantileDMatrix
and inplace_predict take and refuse (dtypes, pandas columns and their feature types, meta
info from pandas dtypes, infinite values, category codes, ref= and evaluation sets), and
prediction shapes (one-tree leaves, approximate contributions)."""
import warnings

import numpy as np
import pytest

import dgbdt.compat.xgboost as dx

pd = pytest.importorskip("pandas")


def _real():
    return pytest.importorskip("xgboost")


def _both():
    return [dx, _real()]


def _reg(n=64, f=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, f))
    return X, X[:, 0] * 2 + rng.standard_normal(n) * 0.1


def test_inf_refused_with_xgboost_words():
    X, y = _reg()
    X[5, 2] = np.inf
    for xgb in _both():
        for M in (xgb.DMatrix, xgb.QuantileDMatrix):
            with pytest.raises(ValueError, match="Input data contains `inf`"):
                M(X, y)


def test_invalid_category_code_refused_at_training_not_construction():
    X, y = _reg()
    X = np.abs(np.round(X))
    X[13, 1] = 2.0 ** 31
    for xgb in _both():
        d = xgb.DMatrix(X, y, feature_types=["c"] * 4)     # as XGBoost: made
        assert d.num_row() == 64 and d.num_col() == 4
        with pytest.raises(ValueError):
            xgb.train({"tree_method": "hist"}, d, 1)


def test_exact_refuses_colsample_bynode():
    X, y = _reg()
    for xgb in _both():
        with pytest.raises(ValueError, match="column sample by node"):
            xgb.train({"tree_method": "exact", "colsample_bynode": 0.5}, xgb.DMatrix(X, y), 1)
    dx.train({"tree_method": "exact", "colsample_bynode": 1.0}, dx.DMatrix(X, y), 1)


def test_frame_feature_types_as_xgboost():
    df = pd.DataFrame({"a": np.arange(4, dtype=np.float32), "b": np.arange(4),
                       "c": [True, False, True, True],
                       "d": pd.Series([1, 2, 3, None], dtype="Int64"),
                       "e": pd.Series([1.0, 2, 3, None], dtype="Float32"),
                       "g": pd.Series(["x", "y", "x", "y"], dtype="category"),
                       "h": pd.Series([True, None, False, True], dtype="boolean")})
    want = ["float", "int", "i", "int", "float", "c", "i"]
    for xgb in _both():
        for M in (xgb.DMatrix, xgb.QuantileDMatrix):
            assert M(df, enable_categorical=True).feature_types == want, xgb
        assert xgb.DMatrix(df["a"]).feature_types == ["float"]
        assert xgb.DMatrix(np.ones((3, 2))).feature_types is None
        given = xgb.DMatrix(df[["a", "b"]], feature_types=["q", "c"], enable_categorical=True)
        assert given.feature_types == ["q", "c"]


def test_pandas_sparse_columns_warn():
    X = pd.DataFrame({"A": pd.arrays.SparseArray(np.arange(20) % 3),
                      "B": pd.arrays.SparseArray(np.linspace(0, 1, 20))})
    for xgb in _both():
        with pytest.warns(UserWarning, match="Sparse arrays from pandas"):
            d = xgb.DMatrix(X, np.arange(20.0))
        assert d.feature_types == ["int", "float"]


def test_category_label_read_by_value():
    X, _ = _reg(4, 2)
    y = pd.Series([1, 2, 3, 1], dtype="category")
    for xgb in _both():
        np.testing.assert_array_equal(xgb.DMatrix(X, y).get_label(), [1, 2, 3, 1])
        with pytest.raises(ValueError, match="Label contains NaN"):
            xgb.DMatrix(X, pd.Series([1, None, 3, 1], dtype="category"))


def test_quantile_dmatrix_rules():
    X, y = _reg(128)
    for xgb in _both():
        with pytest.raises(ValueError, match="sample weight"):
            xgb.QuantileDMatrix(X, y, weight=np.ones(96))
        train = xgb.QuantileDMatrix(X[:96], y[:96])
        valid = xgb.QuantileDMatrix(X[96:], y[96:], ref=train)
        np.testing.assert_array_equal(train.get_quantile_cut()[1], valid.get_quantile_cut()[1])
        np.testing.assert_array_equal(train.get_quantile_cut()[0], valid.get_quantile_cut()[0])
        xgb.train({}, train, 1, evals=[(valid, "v"), (train, "t")], verbose_eval=False)
        alone = xgb.QuantileDMatrix(X[96:], y[96:])
        for tr in (train, xgb.DMatrix(X, y)):
            with pytest.raises(ValueError, match="should be used as a reference"):
                xgb.train({}, tr, 1, evals=[(alone, "v")], verbose_eval=False)


class _It(dx.DataIter):
    def __init__(self, X, y):
        super().__init__()
        self.X, self.y, self.i = X, y, 0

    def next(self, input_data):
        if self.i == 1:
            return False
        input_data(data=self.X, label=self.y)
        self.i += 1
        return True

    def reset(self):
        self.i = 0


def test_quantile_dmatrix_iterator_meta_is_per_batch():
    X, y = _reg(32)
    with pytest.raises(ValueError, match="specified as batch argument"):
        dx.QuantileDMatrix(_It(X, y), feature_types=["q"] * 4)


def test_inplace_predict_input_kinds():
    X, y = _reg(50)
    for xgb in _both():
        b = xgb.train({}, xgb.DMatrix(X, y), 3)
        want = b.inplace_predict(X)
        np.testing.assert_allclose(b.inplace_predict(X.astype(object)), want, rtol=1e-6)
        np.testing.assert_allclose(b.inplace_predict(X.tolist()), want, rtol=1e-6)
        for dtype in (np.bytes_, np.complex128):
            with pytest.raises(ValueError):
                b.inplace_predict(np.round(X).astype(dtype))
        s = pd.Series([1.0, None, 3.0], dtype="Float32", name="f0")
        one = xgb.train({}, xgb.DMatrix(s.to_frame(), np.arange(3.0)), 1)
        np.testing.assert_allclose(one.inplace_predict(s),
                                   one.inplace_predict(s.astype(np.float32)))


def test_one_tree_leaves_are_1d():
    X, y = _reg()
    for xgb in _both():
        m = xgb.DMatrix(X, y)
        assert xgb.train({}, m, 1).predict(m, pred_leaf=True).shape == (64,)
        assert xgb.train({}, m, 2).predict(m, pred_leaf=True).shape == (64, 2)
        b = xgb.train({}, m, 1)
        assert b.predict(m, pred_leaf=True, strict_shape=True).shape == (64, 1, 1, 1)


@pytest.mark.parametrize("objective,k", [("reg:squarederror", 1), ("multi:softprob", 3)])
def test_approx_contribs_match_xgboost(tmp_path, objective, k):
    xgb = _real()
    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 4))
    y = X[:, 0] * 2 + X[:, 1] ** 2
    X[rng.random(X.shape) < 0.1] = np.nan
    if k > 1:
        y = (y > 0).astype(int) + (y > 1)
    params = {"objective": objective, "max_depth": 3, **({"num_class": k} if k > 1 else {})}
    real = xgb.train(params, xgb.DMatrix(X, y), 4)
    real.save_model(tmp_path / "m.json")
    ours = dx.Booster(model_file=str(tmp_path / "m.json"))
    for kw in ({"pred_contribs": True}, {"pred_interactions": True},
               {"pred_contribs": True, "strict_shape": True}):
        want = real.predict(xgb.DMatrix(X), approx_contribs=True, **kw)
        got = ours.predict(dx.DMatrix(X), approx_contribs=True, **kw)
        assert got.shape == want.shape, kw
        np.testing.assert_allclose(got, want, atol=1e-5)
    # a row's contributions sum to its margin, as SHAP values do
    got = ours.predict(dx.DMatrix(X), pred_contribs=True, approx_contribs=True)
    margin = ours.predict(dx.DMatrix(X), output_margin=True)
    np.testing.assert_allclose(got.sum(axis=-1), margin, atol=1e-5)


def test_missing_number_no_warning():
    X, y = _reg()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dx.DMatrix(X, y, missing=4)
