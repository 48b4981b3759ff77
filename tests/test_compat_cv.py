"""dgbdt.compat.xgboost.cv as XGBoost's xgboost.cv: XGBoost's folds row for row (seeded
permutation, query groups, StratifiedKFold, a splitter, index pairs), DMatrix folds for
fpreproc / obj / custom_metric and callbacks, XGBoost's results, log lines and early stopping."""
import numpy as np
import pytest

import dgbdt.compat.xgboost as dx

xgb = pytest.importorskip("xgboost")


def _rows(lib, X, label, folds=None, **kw):
    """The test rows of each fold (labels are row numbers), seen by a callback in cv."""
    got = []

    class Rows(lib.callback.TrainingCallback):
        def before_training(self, model):
            got.extend(f.dtest.get_label().astype(int).tolist() for f in model.cvfolds)
            got.extend(f.dtrain.get_label().astype(int).tolist() for f in model.cvfolds)
            return model
    d = lib.DMatrix(X, label=label, **kw)
    lib.cv({"objective": "reg:squarederror", "max_depth": 1}, d, 1, folds=folds,
           callbacks=[Rows()], **({"nfold": 3} if folds is None else {}))
    return got


def test_folds_are_xgboosts_row_for_row():
    X = np.random.default_rng(0).standard_normal((50, 3))
    rows = np.arange(50, dtype=np.float64)
    assert _rows(dx, X, rows) == _rows(xgb, X, rows)
    given = [([1, 3, 9], [5, 8]), ([7, 9, 2], [23, 43, 11])]
    assert _rows(dx, X, rows, given) == _rows(xgb, X, rows, given)
    group = [10, 15, 5, 20]                    # ranking data: folds of whole groups
    assert _rows(dx, X, rows, group=group) == _rows(xgb, X, rows, group=group)
    sk = pytest.importorskip("sklearn.model_selection")
    assert _rows(dx, X, rows, sk.KFold(4, shuffle=True, random_state=2)) == \
        _rows(xgb, X, rows, sk.KFold(4, shuffle=True, random_state=2))


def test_stratified_is_sklearns_stratified_kfold():
    """stratified=True with a seed is StratifiedKFold(shuffle=True, random_state=seed): the
    same results as passing that splitter (XGBoost's test_sklearn_nfolds_cv)."""
    sk = pytest.importorskip("sklearn.model_selection")
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 4))
    y = (X[:, 0] + rng.standard_normal(300) > 0).astype(float) + (X[:, 1] > 1)
    d = dx.DMatrix(X, label=y)
    p = {"objective": "multi:softprob", "num_class": 3, "max_depth": 2}
    a = dx.cv(p, d, 4, nfold=5, stratified=True, seed=2016)
    b = dx.cv(p, d, 4, nfold=5, seed=2016,
              folds=sk.StratifiedKFold(5, shuffle=True, random_state=2016))
    assert a.equals(b)


def test_dmatrix_folds_for_fpreproc_obj_and_metric():
    """fpreproc, obj and custom_metric get the fold's DMatrix; the custom metric's columns
    follow the built-in ones, its values averaged at 6 decimals (XGBoost's eval line); the
    callbacks' model holds XGBoost's Boosters (eval with the fold's metrics)."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((240, 4))
    y = (X[:, 0] > 0).astype(float)
    d = dx.DMatrix(X, label=y)
    kinds = set()

    def prep(dtrain, dtest, param):
        kinds.add((type(dtrain), type(dtest)))
        param["scale_pos_weight"] = 2.0
        return dtrain, dtest, param

    def logregobj(preds, dtrain):
        kinds.add(type(dtrain))
        p = 1.0 / (1.0 + np.exp(-preds))
        return p - dtrain.get_label(), p * (1.0 - p)

    def err(preds, dm):
        kinds.add(type(dm))
        return [("err", float(np.mean((preds > 0) != dm.get_label()))),
                ("const", 0.1234567891)]

    lines = []

    class Eval(dx.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            lines.append(model.cvfolds[0].bst.eval(model.cvfolds[0].dtest))
            return False
    res = dx.cv({"max_depth": 2, "eval_metric": "logloss"}, d, 3, nfold=4, fpreproc=prep,
                obj=logregobj, custom_metric=err, callbacks=[Eval()], as_pandas=False)
    assert kinds == {(dx.DMatrix, dx.DMatrix), dx.DMatrix}
    names = ["train-logloss", "test-logloss", "train-err", "train-const", "test-err",
             "test-const"]
    assert list(res) == [f"{n}-{k}" for n in names for k in ("mean", "std")]
    assert res["test-const-mean"] == [0.123457] * 3      # each fold's value at 6 decimals
    assert len(lines) == 3 and lines[0].startswith("[0]\teval-logloss:")


def test_callbacks_early_stopping_and_log_as_xgboost(capsys):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 5))
    y = (X[:, 0] + 0.5 * rng.standard_normal(300) > 0).astype(float)
    d = dx.DMatrix(X, label=y)
    p = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.9, "eval_metric": "error"}
    full = dx.cv(p, d, 30, nfold=3, seed=5, as_pandas=False)
    mean = full["test-error-mean"]
    stopped = dx.cv(p, d, 30, nfold=3, seed=5, early_stopping_rounds=3, as_pandas=False,
                    verbose_eval=True, show_stdv=False)
    n = len(stopped["test-error-mean"])
    assert stopped["test-error-mean"] == mean[:n] and mean[n - 1] == min(mean[:n + 3])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"[0]\ttrain-error:{full['train-error-mean'][0]:.5f}\t" \
                     f"test-error:{mean[0]:.5f}"
    dx.cv(p, d, 2, nfold=3, seed=5, callbacks=[dx.callback.EvaluationMonitor(show_stdv=True)])
    assert capsys.readouterr().out.startswith(
        f"[0]\ttrain-error:{full['train-error-mean'][0]:.5f}+"
        f"{full['train-error-std'][0]:.5f}\ttest-error:")
    with pytest.raises(ValueError, match="`save_best`"):
        dx.cv(p, d, 5, callbacks=[dx.callback.EarlyStopping(rounds=3, save_best=True)])
    eta = []

    class Eta(dx.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            eta.append(model.best_iteration)
            return False
    dx.cv(p, d, 4, nfold=3, callbacks=[dx.callback.LearningRateScheduler([0.5, 0.4, 0.3, 0]),
                                       dx.callback.EarlyStopping(rounds=5), Eta()])
    assert eta[0] == 0 and all(isinstance(i, int) for i in eta)
    with pytest.raises(ValueError, match="QuantileDMatrix"):
        dx.cv(p, dx.QuantileDMatrix(X, label=y), 2)


def test_same_numbers_as_dgbdt_cv_on_the_same_folds():
    """The compat cv and dgbdt.cv given the same folds: the same results, number for
    number (one lockstep engine)."""
    import dgbdt
    rng = np.random.default_rng(4)
    X = rng.standard_normal((200, 4))
    y = X[:, 0] * 2 + rng.standard_normal(200)
    folds = [(np.setdiff1d(np.arange(200), t), t) for t in np.array_split(np.arange(200), 4)]
    p = {"max_depth": 3, "eval_metric": ["rmse", "mae"]}
    a = dx.cv(p, dx.DMatrix(X, label=y), 5, folds=folds, as_pandas=False)
    b = dgbdt.cv(p, dgbdt.Dataset(X, label=y), 5, folds=folds, as_pandas=False)
    assert a == b
