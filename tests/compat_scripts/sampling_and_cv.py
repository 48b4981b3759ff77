"""Cross-validation with row and column sampling, written for XGBoost; only the import differs."""
import numpy as np
from sklearn.datasets import make_classification

import dgbdt.compat.xgboost as xgb

X, y = make_classification(n_samples=2000, n_features=15, n_informative=6, random_state=5)
dtrain = xgb.DMatrix(X, label=y)
params = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.2, "subsample": 0.8,
          "colsample_bytree": 0.8, "colsample_bynode": 0.8, "eval_metric": "auc",
          "seed": 42, "tree_method": "hist"}
res = xgb.cv(params, dtrain, num_boost_round=200, nfold=4, stratified=True,
             early_stopping_rounds=10, seed=42)
best_rounds = len(res)
assert res["test-auc-mean"].iloc[-1] > 0.9, res.tail()
assert best_rounds < 200
bst = xgb.train(params, dtrain, num_boost_round=best_rounds)
again = xgb.train(params, dtrain, num_boost_round=best_rounds)
assert np.array_equal(bst.predict(dtrain), again.predict(dtrain))     # seeded: reproducible
print("sampling and cv: best rounds", best_rounds, "test auc",
      round(float(res["test-auc-mean"].iloc[-1]), 4))
