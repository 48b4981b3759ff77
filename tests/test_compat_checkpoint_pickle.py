"""dgbdt.compat.xgboost: XGBoost's TrainingCheckPoint(as_pickle=True), the compat Booster's
pickle (its JSON model and training parameters), and XGBoost's Booster handed to callbacks
and kept by the estimators."""
import os
import pickle

import numpy as np
import pytest

import dgbdt
import dgbdt.compat.xgboost as xgb


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(200, 5)
    return X, (X[:, 0] + 0.3 * rng.randn(200) > 0).astype(float)


def test_checkpoint_as_pickle_writes_the_boosters(tmp_path, data):
    X, y = data
    d = xgb.DMatrix(X, y)
    cp = xgb.callback.TrainingCheckPoint(tmp_path, name="m", interval=2, as_pickle=True)
    b = xgb.train({"objective": "binary:logistic"}, d, 5, callbacks=[cp], verbose_eval=False)
    assert sorted(os.listdir(tmp_path)) == ["m_2.pkl", "m_4.pkl"]
    with open(tmp_path / "m_4.pkl", "rb") as f:
        last = pickle.load(f)
    assert isinstance(last, xgb.Booster) and last.num_boosted_rounds() == 5
    np.testing.assert_array_equal(last.predict(d), b.predict(d))


def test_dgbdt_checkpoint_still_refuses_pickle(tmp_path):
    with pytest.raises(ValueError, match="does not pickle"):
        dgbdt.callback.TrainingCheckPoint(tmp_path, as_pickle=True)


def test_booster_pickles_as_its_json(data):
    X, y = data
    d = xgb.DMatrix(X, y)
    b = xgb.train({"objective": "binary:logistic", "subsample": 0.5, "eval_metric": "auc"},
                  d, 3)
    state = b.__getstate__()
    assert isinstance(state["model"], str) and state["model"] == b.save_raw("dgbdt")
    back = pickle.loads(pickle.dumps(b))
    assert type(back) is xgb.Booster
    assert back.save_raw("dgbdt") == b.save_raw("dgbdt")
    assert back.save_config() == b.save_config()
    assert back.eval(d) == b.eval(d)
    np.testing.assert_array_equal(back.predict(d), b.predict(d))


def test_callbacks_and_estimators_get_xgboosts_booster(data):
    X, y = data
    seen = []

    class Look(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            seen.append(type(model))
            return False

        def after_training(self, model):
            seen.append(model.save_config()[:1])
            return model

    xgb.train({"objective": "binary:logistic"}, xgb.DMatrix(X, y), 2, callbacks=[Look()])
    clf = xgb.XGBClassifier(n_estimators=2, callbacks=[Look()]).fit(X, y)
    assert seen == [xgb.Booster, xgb.Booster, "{"] * 2
    assert isinstance(clf._Booster, xgb.Booster)
