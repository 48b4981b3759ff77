"""XGBoost's classifiers after fit: ``objective`` is the objective trained with (binary:logistic,
multi:softprob, binary:logistic for a multi-label y), as XGBClassifier sets it; get_params and
the next fit keep the objective as given; dgbdt's own classifiers are unchanged."""
import numpy as np
import pytest
from sklearn.base import clone

import dgbdt.compat.xgboost as xgb
from dgbdt import sklearn as skl

rng = np.random.default_rng(0)
X = rng.normal(size=(90, 3))
Y3 = np.arange(90) % 3                       # three classes
Y2 = (X[:, 0] > 0).astype(np.int64)
YM = np.stack([Y2, (X[:, 1] > 0).astype(np.int64)], axis=1)     # multi-label


@pytest.mark.parametrize("cls", [xgb.XGBClassifier, xgb.XGBRFClassifier])
def test_objective_is_the_trained_one(cls):
    for y, want in ((Y2, "binary:logistic"), (Y3, "multi:softprob"), (YM, "binary:logistic")):
        clf = cls(n_estimators=2, max_depth=2).fit(X, y)
        assert clf.objective == want
        assert clf.get_params()["objective"] is None        # as given
        assert clone(clf).objective is None
    clf = cls(n_estimators=2, objective="multi:softmax").fit(X, Y3)
    assert clf.objective == "multi:softmax"


def test_refit_starts_from_the_given_objective():
    clf = xgb.XGBClassifier(n_estimators=2, max_depth=2).fit(X, Y3)
    assert clf.objective == "multi:softprob"
    clf.fit(X, Y2)                            # two classes now: binary:logistic, no num_class
    assert clf.objective == "binary:logistic"
    assert clf.predict_proba(X).shape == (90, 2)
    clf.set_params(objective="multi:softmax").fit(X, Y3)
    assert clf.objective == clf.get_params()["objective"] == "multi:softmax"


def test_callable_objective_stays():
    def logistic(y, p):
        s = 1 / (1 + np.exp(-p))
        return s - y, s * (1 - s)
    clf = xgb.XGBClassifier(n_estimators=2, objective=logistic).fit(X, Y2)
    assert clf.objective is logistic


def test_dgbdt_classifier_keeps_its_objective():
    clf = skl.GBDTClassifier(n_estimators=2).fit(X, Y3)
    assert clf.objective is None
    assert clf.get_booster().objective.name == "multi:softprob"


@pytest.mark.parametrize("cls", [xgb.XGBClassifier, xgb.XGBRFClassifier])
def test_load_model_sets_the_model_objective(cls, tmp_path):
    path = str(tmp_path / "m.json")
    xgb.XGBClassifier(n_estimators=2, max_depth=2).fit(X, Y3).save_model(path)
    clf = cls()
    clf.load_model(path)
    assert clf.objective == "multi:softprob"          # XGBoost's load_model sets it
    assert clf.get_params()["objective"] is None
    clf.objective = "multi:softmax"                   # setting it again: the given one
    assert clf.objective == clf.get_params()["objective"] == "multi:softmax"


def test_dask_load_model_sets_the_model_objective(tmp_path):
    from dgbdt.compat import xgboost_dask as dxgb
    path = str(tmp_path / "m.json")
    xgb.XGBClassifier(n_estimators=2, max_depth=2).fit(X, Y2).save_model(path)
    clf = dxgb.DaskXGBClassifier()
    clf.load_model(path)
    assert clf.objective == "binary:logistic"


def test_dask_classifier_objective(client1):
    dd = pytest.importorskip("dask.dataframe")
    from dgbdt.compat import xgboost_dask as dxgb
    clf = dxgb.DaskXGBClassifier(n_estimators=2, max_depth=2)
    clf.client = client1
    clf.fit(dd.from_array(X, chunksize=45), dd.from_array(Y3.astype(np.float64), chunksize=45))
    assert clf.objective == "multi:softprob"
    assert clf.get_params()["objective"] is None
