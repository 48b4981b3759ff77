"""dgbdt.compat.xgboost predicts dgbdt's float64 (XGBoost: float32), so predictions chained
tree by tree (one tree's margins as the next one's ``base_margin``: XGBoost's
individual_trees demo and its boost-from-prediction tests) add up to the whole model's.

Rounding the float64 result to float32 at the end was tried: the chain then drifted from the
whole model by float32 rounding at every step (XGBoost sums in float32 in one order, so its
chains are exact), and four of XGBoost's own tests failed where one dtype check passed."""
import numpy as np

import dgbdt.compat.xgboost as xgb

rng = np.random.default_rng(0)
X = rng.normal(size=(300, 4))
y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(np.float64)


def test_predictions_are_float64():
    b = xgb.train({"objective": "binary:logistic"}, xgb.DMatrix(X, y), 3)
    for kw in ({}, {"output_margin": True}, {"pred_contribs": True}):
        assert b.predict(xgb.DMatrix(X), **kw).dtype == np.float64
    assert xgb.XGBRegressor(n_estimators=2).fit(X, y * 300).predict(X).dtype == np.float64


def test_tree_by_tree_chain_is_the_whole_model():
    n = 6
    b = xgb.train({"objective": "reg:logistic", "max_depth": 2, "eta": 1.0, "base_score": 0.5},
                  xgb.DMatrix(X, y), n)
    scores = np.zeros(len(X))                       # logit(0.5)
    for i in range(n):
        d = xgb.DMatrix(X, base_margin=scores)
        scores = b.predict(d, iteration_range=(i, i + 1), output_margin=i < n - 1)
    np.testing.assert_allclose(scores, b.predict(xgb.DMatrix(X)), rtol=1e-12)


def test_boosting_from_a_prediction_is_the_longer_model():
    """XGBoost's run_boost_from_prediction: 4 rounds, then 4 more from those margins, against
    8 rounds in one model (large margins: float32 rounding would show)."""
    yr = X[:, 0] * 300 + X[:, 2] * 100
    m0 = xgb.XGBRegressor(learning_rate=0.3, n_estimators=4, random_state=0).fit(X, yr)
    margin = m0.predict(X, output_margin=True)
    m1 = xgb.XGBRegressor(learning_rate=0.3, n_estimators=4, random_state=0)
    m1.fit(X, yr, base_margin=margin)
    p1 = m1.get_booster().predict(xgb.DMatrix(X, base_margin=margin), output_margin=True)
    m2 = xgb.XGBRegressor(learning_rate=0.3, n_estimators=8, random_state=0).fit(X, yr)
    p2 = m2.get_booster().inplace_predict(X, predict_type="margin")
    np.testing.assert_allclose(p1, p2, rtol=0, atol=1e-6)
