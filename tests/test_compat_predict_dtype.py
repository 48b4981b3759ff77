"""dgbdt.compat.xgboost predicts float32, as XGBoost does (values, margins, leaf indices, SHAP
values; Booster.predict, inplace_predict, the estimators' predict / predict_proba / apply):
dgbdt's float64 result rounded to float32. dgbdt's own API stays float64."""
import numpy as np
import pytest

import dgbdt
import dgbdt.compat.xgboost as xgb
from dgbdt import sklearn as skl

rng = np.random.default_rng(0)
X = rng.normal(size=(60, 3))
Y2 = (X[:, 0] > 0).astype(np.int64)
Y3 = np.arange(60) % 3


@pytest.mark.parametrize("kw", [{}, {"output_margin": True}, {"pred_leaf": True},
                                {"pred_contribs": True}, {"pred_interactions": True},
                                {"pred_contribs": True, "approx_contribs": True}])
def test_booster_predict_float32(kw):
    b = xgb.train({"objective": "multi:softprob", "num_class": 3}, xgb.DMatrix(X, Y3), 2)
    out = b.predict(xgb.DMatrix(X), **kw)
    assert out.dtype == np.float32
    native = dgbdt.Booster.predict(b, dgbdt.Dataset(X), **kw)     # dgbdt's float64 values
    assert native.dtype != np.float32
    np.testing.assert_array_equal(out, native.astype(np.float32))
    for t in ("value", "margin"):
        assert b.inplace_predict(X, predict_type=t).dtype == np.float32


def test_estimators_float32_labels_kept():
    clf = xgb.XGBClassifier(n_estimators=2).fit(X, Y3)
    assert clf.predict_proba(X).dtype == clf.predict(X, output_margin=True).dtype == np.float32
    assert clf.apply(X).dtype == np.float32
    assert clf.predict(X).dtype.kind == "i"                     # labels, as XGBoost's
    assert xgb.XGBClassifier(n_estimators=2).fit(X, Y2).predict_proba(X).dtype == np.float32
    reg = xgb.XGBRegressor(n_estimators=2).fit(X, X[:, :2])     # multi-output
    assert reg.predict(X).dtype == np.float32 and reg.predict(X).shape == (60, 2)
    # dgbdt's own estimators and Booster: float64
    assert skl.GBDTRegressor(n_estimators=2).fit(X, X[:, 0]).predict(X).dtype == np.float64
    b = dgbdt.train({}, dgbdt.Dataset(X, label=X[:, 0]), 2)
    assert b.predict(X).dtype == np.float64


def test_same_dtypes_as_xgboost():
    real = pytest.importorskip("xgboost")
    d, dr = xgb.DMatrix(X, Y2), real.DMatrix(X, Y2)
    ours = xgb.train({"objective": "binary:logistic"}, d, 2)
    theirs = real.train({"objective": "binary:logistic"}, dr, 2)
    for kw in ({}, {"output_margin": True}, {"pred_leaf": True}, {"pred_contribs": True}):
        assert ours.predict(d, **kw).dtype == theirs.predict(dr, **kw).dtype, kw


def test_dask_predict_dtype_declared(client1):
    da = pytest.importorskip("dask.array")
    from dgbdt.compat import xgboost_dask as dxgb
    b = xgb.train({}, xgb.DMatrix(X, X[:, 0]), 2)
    out = dxgb.predict(client1, b, da.from_array(X, chunks=30))
    assert out.dtype == np.float32 and out.compute().dtype == np.float32
