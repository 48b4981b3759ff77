"""dgbdt.cv: per-round means and deviations over folds, equal to training each fold alone;
early stopping on the test folds' mean ends the result at the best round (as xgboost.cv)."""
import numpy as np
import pytest

import dgbdt
from dgbdt.cv import _folds


def data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.8 * rng.standard_normal(n) > 0).astype(np.float64)
    return X, y


def test_cv_is_the_folds_trained_alone():
    pd = pytest.importorskip("pandas")
    X, y = data()
    p = {"objective": "binary:logistic", "max_depth": 3, "eval_metric": ["logloss", "auc"]}
    res = dgbdt.cv(p, dgbdt.Dataset(X, y), 8, nfold=4, seed=3)
    assert isinstance(res, pd.DataFrame) and len(res) == 8
    assert list(res.columns) == ["train-logloss-mean", "train-logloss-std", "train-auc-mean",
                                 "train-auc-std", "test-logloss-mean", "test-logloss-std",
                                 "test-auc-mean", "test-auc-std"]
    tests = _folds(len(y), 4, None, False, True, 3)
    aucs = []
    for t in tests:
        tr = np.setdiff1d(np.arange(len(y)), t)
        hist = {}
        dgbdt.train(p, dgbdt.Dataset(X[tr], y[tr]), 8,
                    evals=[(dgbdt.Dataset(X[t], y[t]), "test")], evals_result=hist,
                    verbose_eval=False)
        aucs.append(hist["test"]["auc"])
    np.testing.assert_allclose(res["test-auc-mean"], np.mean(aucs, axis=0), rtol=0, atol=1e-15)
    np.testing.assert_allclose(res["test-auc-std"], np.std(aucs, axis=0), rtol=0, atol=1e-15)
    assert sorted(np.concatenate(tests).tolist()) == list(range(len(y)))   # a partition


def test_early_stopping_ends_at_the_best_round():
    X, y = data(seed=1)
    p = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.8}
    long = dgbdt.cv(p, dgbdt.Dataset(X, y), 60, nfold=3, as_pandas=False)
    stopped = dgbdt.cv(p, dgbdt.Dataset(X, y), 60, nfold=3, early_stopping_rounds=4,
                       as_pandas=False)
    mean = long["test-logloss-mean"]
    best = next(r for r in range(len(mean)) if all(mean[r] <= m for m in mean[:r + 5])
                and (r + 4 >= len(mean) or all(mean[r] < m for m in mean[r + 1:r + 5])))
    assert len(stopped["test-logloss-mean"]) == best + 1 < 60
    assert stopped["test-logloss-mean"] == mean[:best + 1]     # the same rounds, same values


def test_stratified_and_given_folds(capsys):
    X, y = data(n=900, seed=2)
    y[:90] = 2
    folds = _folds(len(y), 3, y, True, True, 0)
    for f in folds:                    # every fold holds its share of every class
        assert abs(np.sum(y[f] == 2) - 30) <= 1
    sk = pytest.importorskip("sklearn.model_selection")
    res = dgbdt.cv({"objective": "multi:softprob", "num_class": 3, "max_depth": 3},
                   dgbdt.Dataset(X, y), 3, folds=sk.StratifiedKFold(3), verbose_eval=True,
                   as_pandas=False)
    assert len(res["test-mlogloss-mean"]) == 3
    assert capsys.readouterr().out.startswith("[0]\ttrain-mlogloss:")
    with pytest.raises(ValueError, match="nfold must be an integer"):
        dgbdt.cv({}, dgbdt.Dataset(X, y), 2, nfold=1)


def test_early_stopping_that_does_not_stop_keeps_every_round():
    """XGBoost's cv truncates to the best round only when early stopping ended the training:
    10 rounds with early_stopping_rounds=10 keep all 10 (in both libraries); a stop keeps
    the rounds up to the best."""
    xgb = pytest.importorskip("xgboost")
    from sklearn.datasets import load_digits
    X, y = load_digits(n_class=2, return_X_y=True)
    params = {"max_depth": 2, "eta": 1, "objective": "binary:logistic", "eval_metric": "error"}
    ours = dgbdt.cv(params, dgbdt.Dataset(X, label=y), 10, nfold=10, early_stopping_rounds=10,
                    as_pandas=False)
    theirs = xgb.cv(params, xgb.DMatrix(X, label=y), 10, nfold=10, early_stopping_rounds=10,
                    as_pandas=False)
    assert len(ours["test-error-mean"]) == len(theirs["test-error-mean"]) == 10
    full = dgbdt.cv(params, dgbdt.Dataset(X, label=y), 30, nfold=10, as_pandas=False)
    mean = full["test-error-mean"]
    stopped = dgbdt.cv(params, dgbdt.Dataset(X, label=y), 30, nfold=10,
                       early_stopping_rounds=2, as_pandas=False)["test-error-mean"]
    assert len(stopped) < 30 and stopped == mean[:len(stopped)]
    assert stopped[-1] == min(mean[:len(stopped) + 2])


def test_folds_train_once_in_lockstep_with_callbacks():
    """Each fold is one training, a round at a time (the custom objective runs folds x rounds
    times, no round twice); callbacks see the folds' means as (mean, std), the model of all
    folds (cvfolds, set_param), and may stop: the result then ends at early stopping's best
    round. Every number equals the fold trained alone with the same schedule."""
    X, y = data(n=600, seed=4)
    calls = []

    def logistic(preds, d):
        calls.append(d.num_row)
        p = 1.0 / (1.0 + np.exp(-preds))
        return p - d.label, p * (1.0 - p)

    seen = []

    class Watch(dgbdt.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            seen.append((epoch, [f.bst.num_boosted_rounds() for f in model.cvfolds],
                         evals_log["test"]["logloss"][-1]))
            return False

    rates = [0.5, 0.3, 0.2, 0.1, 0.05, 0.05]
    p = {"objective": "binary:logistic", "max_depth": 3, "eval_metric": "logloss"}
    res = dgbdt.cv(p, dgbdt.Dataset(X, y), 6, nfold=3, seed=1, obj=logistic, as_pandas=False,
                   callbacks=[Watch(), dgbdt.callback.LearningRateScheduler(rates)])
    assert len(calls) == 3 * 6 and len(res["test-logloss-mean"]) == 6
    assert [s[1] for s in seen] == [[r + 1] * 3 for r in range(6)]
    assert [s[2][0] for s in seen] == res["test-logloss-mean"]
    assert [s[2][1] for s in seen] == res["test-logloss-std"]
    alone = []
    for t in _folds(len(y), 3, None, False, True, 1):
        tr = np.setdiff1d(np.arange(len(y)), t)
        hist = {}
        dgbdt.train(p, dgbdt.Dataset(X[tr], y[tr]), 6,
                    evals=[(dgbdt.Dataset(X[t], y[t]), "test")], evals_result=hist,
                    verbose_eval=False, obj=logistic,
                    callbacks=[dgbdt.callback.LearningRateScheduler(rates)])
        alone.append(hist["test"]["logloss"])
    np.testing.assert_array_equal(res["test-logloss-mean"], [np.mean(r) for r in zip(*alone)])

    class StopAt2(dgbdt.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            return epoch == 2
    calls.clear()
    res = dgbdt.cv(p, dgbdt.Dataset(X, y), 6, nfold=3, seed=1, obj=logistic, as_pandas=False,
                   callbacks=[StopAt2()])
    assert len(res["test-logloss-mean"]) == 3 and len(calls) == 3 * 3   # no best round: all
    with pytest.raises(ValueError, match="`save_best` is not applicable"):
        dgbdt.cv(p, dgbdt.Dataset(X, y), 3, callbacks=[
            dgbdt.callback.EarlyStopping(2, save_best=True)])


def test_custom_metric_fpreproc_and_a_failing_fold():
    """custom_metric's columns follow the built-in ones (XGBoost's order); fpreproc gets each
    fold's sets and parameters; an error in a fold's training is raised, and no fold's thread
    is left behind."""
    import threading
    X, y = data(n=400, seed=5)

    def mae(preds, d):
        return "mae", float(np.mean(np.abs(preds - d.label)))
    seen = []

    def prep(dtrain, dtest, params):
        seen.append((dtrain.num_row, dtest.num_row, params["max_depth"]))
        return dtrain, dtest, dict(params, max_depth=1)
    res = dgbdt.cv({"objective": "binary:logistic", "max_depth": 4}, dgbdt.Dataset(X, y), 2,
                   nfold=4, custom_metric=mae, fpreproc=prep, as_pandas=False)
    assert list(res) == [f"{s}-{m}-{k}" for m in ("logloss", "mae") for s in ("train", "test")
                         for k in ("mean", "std")]
    assert seen == [(300, 100, 4)] * 4
    plain = dgbdt.cv({"objective": "binary:logistic", "max_depth": 1}, dgbdt.Dataset(X, y), 2,
                     nfold=4, as_pandas=False)
    assert plain["test-logloss-mean"] == res["test-logloss-mean"]      # fpreproc's max_depth
    before = threading.active_count()

    def broken(preds, d):
        if len(broken.calls) == 5:
            raise RuntimeError("objective failed")
        broken.calls.append(1)
        return preds - d.label, np.ones_like(preds)
    broken.calls = []
    with pytest.raises(RuntimeError, match="objective failed"):
        dgbdt.cv({"max_depth": 2}, dgbdt.Dataset(X, y), 4, nfold=3, obj=broken)
    assert threading.active_count() == before
    with pytest.raises(NotImplementedError, match="custom_metric="):
        dgbdt.cv({}, dgbdt.Dataset(X, y), 2, feval=mae)
