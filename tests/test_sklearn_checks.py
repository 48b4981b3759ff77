"""scikit-learn's estimator checks (sklearn.utils.estimator_checks) on every estimator: dgbdt's
and their XGBoost names. Each check passes or is an expected failure whose reason the
estimators give (dgbdt.estimator_extras.expected_failed_checks). A few trees per fit keep
the ~600 checks at about a minute."""
import pytest

pytest.importorskip("sklearn", minversion="1.6")   # expected_failed_checks= is 1.6's
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import dgbdt.compat.xgboost as xgb  # noqa: E402
from dgbdt import sklearn as skl  # noqa: E402
from dgbdt.estimator_extras import expected_failed_checks  # noqa: E402

ESTIMATORS = [cls(n_estimators=5) for cls in (
    skl.GBDTRegressor, skl.GBDTClassifier, skl.GBDTRanker, skl.GBDTRFRegressor,
    skl.GBDTRFClassifier, xgb.XGBModel, xgb.XGBRegressor, xgb.XGBClassifier, xgb.XGBRanker,
    xgb.XGBRFRegressor, xgb.XGBRFClassifier)]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_expected_failures_have_reasons():
    """Only the rankers (no queries in the checks' fits) and row-sampling estimators
    (subsample < 1, the forests) are excused from any check."""
    assert expected_failed_checks(skl.GBDTRegressor()) == {}
    assert expected_failed_checks(xgb.XGBClassifier()) == {}
    forest = expected_failed_checks(xgb.XGBRFClassifier())
    assert set(forest) == {"check_sample_weight_equivalence_on_dense_data",
                           "check_sample_weight_equivalence_on_sparse_data"}
    assert all("subsample=0.8" in why for why in forest.values())
    assert expected_failed_checks(xgb.XGBRegressor()) == {}
    assert "check_fit_idempotent" in expected_failed_checks(skl.GBDTRanker())
