"""Continued training on frames whose categories are coded otherwise than the model's (the
same values, another order): the rows re-coded to the model's codes by value, as XGBoost
does; Booster.get_categories / DMatrix.get_categories (XGBoost's Categories)."""
import numpy as np
import pytest

import dgbdt
import dgbdt.compat.xgboost as xgb

pd = pytest.importorskip("pandas")


def _frames(n=300, seed=3):
    rng = np.random.RandomState(seed)
    codes = rng.randint(0, 4, n)
    enc = pd.DataFrame({"x": rng.rand(n),
                        "c": pd.Categorical.from_codes(codes, categories=list("abcd"))})
    reenc = enc.assign(c=enc["c"].cat.reorder_categories(list("badc")))
    y = rng.randn(n) + np.array([0.0, 1.0, -1.0, 2.0])[codes]
    return enc, reenc, y


def test_continuation_recodes_by_value():
    enc, reenc, y = _frames()
    params = {"max_depth": 3}
    first = xgb.train(params, xgb.DMatrix(enc, y, enable_categorical=True), 2)
    a = xgb.train(params, xgb.DMatrix(reenc, y, enable_categorical=True), 2, xgb_model=first)
    b = xgb.train(params, xgb.DMatrix(enc, y, enable_categorical=True), 2, xgb_model=first)
    assert a.save_raw("dgbdt") == b.save_raw("dgbdt")
    np.testing.assert_array_equal(a.predict(xgb.DMatrix(reenc, enable_categorical=True)),
                                  b.predict(xgb.DMatrix(enc, enable_categorical=True)))


def test_continuation_refuses_unknown_categories():
    enc, _, y = _frames()
    first = dgbdt.train({"max_depth": 2}, dgbdt.Dataset(enc, label=y, enable_categorical=True),
                        1, verbose_eval=False)
    other = enc.assign(c=enc["c"].cat.rename_categories(list("abcz")))
    with pytest.raises(ValueError, match="'z' is not among"):
        dgbdt.train({"max_depth": 2}, dgbdt.Dataset(other, label=y, enable_categorical=True),
                    1, xgb_model=first, verbose_eval=False)


def test_get_categories():
    enc, _, y = _frames()
    d = xgb.DMatrix(enc, y, enable_categorical=True)
    b = xgb.train({}, d, 1)
    assert not b.get_categories().empty() and not d.get_categories().empty()
    arrow = b.get_categories(export_to_arrow=True).to_arrow()
    assert [n for n, _ in arrow] == ["x", "c"] and arrow[0][1] is None
    assert arrow[1][1].to_pylist() == list("abcd")
    with pytest.raises(ValueError, match="export_to_arrow"):
        b.get_categories().to_arrow()
    assert xgb.train({}, xgb.DMatrix(np.ones((4, 2)), np.ones(4)), 1).get_categories().empty()
