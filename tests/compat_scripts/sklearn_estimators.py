"""XGBoost's scikit-learn examples; only the import line differs."""
import numpy as np
from sklearn.datasets import make_classification, make_regression
from sklearn.model_selection import train_test_split

import dgbdt.compat.xgboost as xgb

X, y = make_classification(n_samples=2000, n_features=10, n_classes=3, n_informative=5,
                           random_state=1)
Xtr, Xte, ytr, yte = train_test_split(X, y, random_state=1)
clf = xgb.XGBClassifier(n_estimators=100, max_depth=4, learning_rate=0.2,
                        early_stopping_rounds=5)
clf.fit(Xtr, ytr, eval_set=[(Xte, yte)], verbose=False)
proba = clf.predict_proba(Xte)
assert proba.shape == (len(yte), 3) and np.allclose(proba.sum(axis=1), 1.0)
acc = float(np.mean(clf.predict(Xte) == yte))
assert acc > 0.7, acc
Xr, yr = make_regression(n_samples=2000, n_features=8, noise=0.1, random_state=2)
reg = xgb.XGBRegressor(n_estimators=150, max_depth=4).fit(Xr[:1500], yr[:1500])
r2 = reg.score(Xr[1500:], yr[1500:])
assert r2 > 0.8, r2
print("sklearn estimators: accuracy", round(acc, 3), "R^2", round(r2, 3))
