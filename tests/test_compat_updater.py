"""dgbdt.compat.xgboost: XGBoost's ``updater`` parameter where it names what a tree_method
does (that tree_method, XGBoost's warning), refused otherwise; process_type="update" refused
by name."""
import warnings

import numpy as np
import pytest

import dgbdt.compat.xgboost as xgb


@pytest.fixture(scope="module")
def d():
    rng = np.random.RandomState(0)
    X = rng.randn(200, 4)
    return xgb.DMatrix(X, X[:, 0] + 0.1 * rng.randn(200))


@pytest.mark.parametrize("updater,method", [("grow_colmaker,prune", "exact"),
                                            ("grow_histmaker", "approx"),
                                            ("grow_quantile_histmaker,prune", "hist")])
def test_growers_are_tree_methods(d, updater, method):
    with pytest.warns(UserWarning, match="`updater`"):
        got = xgb.train({"updater": updater, "tree_method": "hist"}, d, 2)
    want = xgb.train({"tree_method": method}, d, 2)
    assert got.save_raw("dgbdt") == want.save_raw("dgbdt")


@pytest.mark.parametrize("params", [{"updater": "refresh"}, {"updater": "prune"},
                                    {"updater": "grow_colmaker,prune,refresh"},
                                    {"updater": "grow_histmaker,prune", "gamma": 0.5}])
def test_other_updaters_refused(d, params):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NotImplementedError, match="updater="):
            xgb.train(params, d, 1)


def test_process_type_update_refused(d):
    b = xgb.train({}, d, 2)
    with pytest.raises(NotImplementedError, match="process_type='update'"):
        xgb.train({"updater": "prune", "process_type": "update"}, d, 2, xgb_model=b)
