"""dgbdt.compat.xgboost: a pandas DMatrix's feature types ("int", "float", ...) kept by the
trained Booster and by its saved model, as XGBoost keeps them."""
import numpy as np
import pytest

import dgbdt.compat.xgboost as xgb

pd = pytest.importorskip("pandas")


@pytest.mark.parametrize("ext", ["json", "ubj"])
def test_feature_types_kept(tmp_path, ext):
    rng = np.random.RandomState(1)
    X = pd.DataFrame(rng.randn(100, 4), columns=list("abcd"))
    X["c"] = X["c"].astype(np.int32)
    d = xgb.DMatrix(X, rng.randn(100))
    assert d.feature_types == ["float", "float", "int", "float"]
    b = xgb.train({}, d, 2)
    assert b.feature_types == d.feature_types
    path = tmp_path / f"model.{ext}"
    b.save_model(path)
    loaded = xgb.Booster(model_file=path)
    assert loaded.feature_types == d.feature_types and loaded.feature_names == list("abcd")
    np.testing.assert_array_equal(loaded.predict(d), b.predict(d))
    np.testing.assert_array_equal(loaded.predict(xgb.DMatrix(X.to_numpy()),
                                                 validate_features=False), b.predict(d))


def test_no_types_without_a_frame():
    rng = np.random.RandomState(1)
    b = xgb.train({}, xgb.DMatrix(rng.randn(50, 3), rng.randn(50)), 1)
    assert b.feature_types is None
    assert xgb.Booster(model_file=b.save_raw("json")).feature_types is None
