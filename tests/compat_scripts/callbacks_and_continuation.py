"""Callbacks, continued training, SHAP values and slicing, written for XGBoost."""
import numpy as np
from sklearn.datasets import make_classification

import dgbdt.compat.xgboost as xgb

X, y = make_classification(n_samples=2500, n_features=8, random_state=3)
dtrain = xgb.DMatrix(X[:2000], label=y[:2000])
dvalid = xgb.DMatrix(X[2000:], label=y[2000:])
params = {"objective": "binary:logistic", "max_depth": 4, "eval_metric": "logloss"}
es = xgb.callback.EarlyStopping(rounds=5, save_best=True)
sched = xgb.callback.LearningRateScheduler(lambda epoch: 0.3 * 0.95 ** epoch)
bst = xgb.train(params, dtrain, 300, evals=[(dvalid, "valid")], callbacks=[es, sched],
                verbose_eval=False)
assert bst.num_boosted_rounds() == bst.best_iteration + 1
first = xgb.train(params, dtrain, 10, verbose_eval=False)
more = xgb.train(params, dtrain, 10, xgb_model=first, verbose_eval=False)
assert more.num_boosted_rounds() == 20
assert np.array_equal(more[:10].predict(dvalid), first.predict(dvalid))
contribs = more.predict(dvalid, pred_contribs=True)
margin = more.predict(dvalid, output_margin=True)
assert np.allclose(contribs.sum(axis=1), margin)
print("callbacks and continuation: best iteration", bst.best_iteration)
