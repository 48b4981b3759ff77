"""dgbdt.compat.xgboost: XGBoost's ``updater`` parameter where it names what a tree_method
does (that tree_method, XGBoost's warning; a prune, and a refresh without row sampling, after
growth change nothing), process_type="update" with refresh / prune (tests/test_tree_updates.py),
refused otherwise."""
import warnings

import numpy as np
import pytest

import dgbdt.compat.xgboost as xgb


@pytest.fixture(scope="module")
def d():
    rng = np.random.RandomState(0)
    X = rng.randn(200, 4)
    return xgb.DMatrix(X, X[:, 0] + 0.1 * rng.randn(200))


@pytest.mark.parametrize("updater,method,extra", [
    ("grow_colmaker,prune", "exact", {}), ("grow_histmaker", "approx", {}),
    ("grow_quantile_histmaker,prune", "hist", {}), ("grow_colmaker,prune,refresh", "exact", {}),
    ("grow_histmaker,prune", "approx", {"gamma": 0.5})])
def test_growers_are_tree_methods(d, updater, method, extra):
    with pytest.warns(UserWarning, match="`updater`"):
        got = xgb.train({"updater": updater, "tree_method": "hist", **extra}, d, 2)
    want = xgb.train({"tree_method": method, **extra}, d, 2)
    assert got.save_raw("dgbdt") == want.save_raw("dgbdt")


@pytest.mark.parametrize("params", [{"updater": "refresh"}, {"updater": "prune"},
                                    {"updater": "grow_colmaker,refresh,prune"},
                                    {"updater": "grow_colmaker,prune,refresh",
                                     "subsample": 0.5},
                                    {"updater": "grow_colmaker,refresh",
                                     "monotone_constraints": "(1,0,0,0)"}])
def test_other_updaters_refused(d, params):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NotImplementedError, match="updater="):
            xgb.train(params, d, 1)


def test_process_type_update_refreshes_and_prunes(d):
    """XGBoost's update process through the compat layer: dgbdt.engine.update_process, the
    updater named as XGBoost spells it (also as a list), with XGBoost's warning."""
    b = xgb.train({"max_depth": 3}, d, 3)
    with pytest.warns(UserWarning, match="`updater`"):
        got = xgb.train({"updater": ["refresh"], "process_type": "update", "max_depth": 3},
                        d, 2, xgb_model=b)
    assert got.num_boosted_rounds() == 2
    # refreshed on the rows it grew from: the same predictions
    np.testing.assert_array_equal(got.predict(d), b[:2].predict(d))
    with pytest.raises(NotImplementedError, match="process_type='update' with updater="):
        xgb.train({"updater": "grow_colmaker", "process_type": "update"}, d, 2, xgb_model=b)
