"""XGBoost's basic walkthrough, written for XGBoost; only the import line differs."""
import os
import tempfile

import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

import dgbdt.compat.xgboost as xgb

X, y = make_classification(n_samples=3000, n_features=12, n_informative=6, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
dtrain = xgb.DMatrix(X_train, label=y_train)
dtest = xgb.DMatrix(X_test, label=y_test)
param = {"max_depth": 3, "eta": 0.3, "objective": "binary:logistic",
         "eval_metric": ["logloss", "auc"], "tree_method": "hist", "verbosity": 0}
evals_result = {}
bst = xgb.train(param, dtrain, num_boost_round=200, evals=[(dtrain, "train"), (dtest, "eval")],
                early_stopping_rounds=10, evals_result=evals_result, verbose_eval=False)
preds = bst.predict(dtest, iteration_range=(0, bst.best_iteration + 1))
labels = dtest.get_label()
error = float(np.mean((preds > 0.5) != labels))
assert error < 0.15, error
assert len(evals_result["eval"]["auc"]) == bst.num_boosted_rounds()
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "model.json")
    bst.save_model(path)
    bst2 = xgb.Booster()
    bst2.load_model(path)
    assert np.array_equal(bst2.predict(dtest), bst.predict(dtest))
dump = bst.get_dump(with_stats=True)
assert len(dump) == bst.num_boosted_rounds() and "gain=" in dump[0]
assert bst.get_score(importance_type="gain")
assert dtrain.num_row() == len(y_train) and dtrain.num_col() == 12
print("basic walkthrough: test error", round(error, 4))
