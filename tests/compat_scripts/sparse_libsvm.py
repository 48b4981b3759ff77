"""Sparse data, written for XGBoost: a libsvm file and scipy CSR rows (XGBoost's examples read
agaricus.txt.train this way); only the import line differs. Absent entries are missing."""
import os
import tempfile

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

import dgbdt.compat.xgboost as xgb

rng = np.random.default_rng(0)
X = sp.random(4000, 300, density=0.03, format="csr", random_state=0, dtype=np.float64)
X.data = np.round(rng.standard_normal(X.nnz), 2)
X = X.tolil()
X[:, 0] = np.where(rng.random((4000, 1)) < 0.6, rng.standard_normal((4000, 1)), 0.0)
X = X.tocsr()
X.eliminate_zeros()                      # columns 0: present in 60 % of rows
y = ((X[:, 0].toarray().ravel() > 0.1) ^ (rng.random(4000) < 0.05)).astype(float)  # 5 % flipped

with tempfile.TemporaryDirectory() as tmp:
    train, test = os.path.join(tmp, "train.svm"), os.path.join(tmp, "test.svm")
    dump_svmlight_file(X[:3000], y[:3000], train)
    dump_svmlight_file(X[3000:], y[3000:], test)
    dtrain = xgb.DMatrix(train + "?format=libsvm")
    dtest = xgb.DMatrix(test + "?format=libsvm")
    param = {"max_depth": 4, "eta": 0.3, "objective": "binary:logistic",
             "eval_metric": "error", "tree_method": "hist"}
    bst = xgb.train(param, dtrain, 30, evals=[(dtest, "eval")], verbose_eval=False)
    preds = bst.predict(dtest)
    error = float(np.mean((preds > 0.5) != dtest.get_label()))
    assert error < 0.2, error
    assert sp.issparse(dtrain.get_data()) and dtrain.get_data().shape == (3000, 300)
    # the same rows as CSR in memory, and read back with scikit-learn: the same model
    Xs, ys = load_svmlight_file(train, n_features=300)
    same = xgb.train(param, xgb.DMatrix(Xs, label=ys), 30)
    assert same.save_raw("json") == bst.save_raw("json")
    dense = X[:3000].toarray()
    dense[dense == 0] = np.nan           # absent entries are missing values, not zeros
    assert np.array_equal(xgb.train(param, xgb.DMatrix(dense, label=y[:3000]), 30)
                          .predict(dtest), preds)
    sk = xgb.XGBClassifier(n_estimators=20, max_depth=3).fit(X[:3000], y[:3000])
    assert sk.predict_proba(X[3000:]).shape == (1000, 2)
print("sparse libsvm: test error", round(error, 4))
