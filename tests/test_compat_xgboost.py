"""dgbdt.compat.xgboost: scripts written for XGBoost (tests/compat_scripts, in the style of
XGBoost's own examples) run with one changed import; what dgbdt does not do is refused with an
error that names it."""
import pathlib
import runpy

import numpy as np
import pytest

import dgbdt

SCRIPTS = sorted((pathlib.Path(__file__).parent / "compat_scripts").glob("*.py"))


@pytest.mark.slow  # runs scripts in subprocesses
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_xgboost_style_script_runs(script, capsys):
    pytest.importorskip("sklearn")
    runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.strip()          # each prints its result line


def test_refusals_name_the_feature():
    import dgbdt.compat.xgboost as xgb
    X = np.random.default_rng(0).standard_normal((50, 3))
    y = (X[:, 0] > 0).astype(float)
    d = xgb.DMatrix(X, label=y)
    with pytest.raises(NotImplementedError, match="feval= .deprecated in XGBoost."):
        xgb.train({}, d, 2, feval=lambda p, d: ("m", 0.0))
    # a custom objective gets XGBoost's DMatrix (num_row() is a method there)
    seen = []

    def se(preds, dmat):
        seen.append(dmat.num_row())
        return preds - dmat.get_label(), np.ones_like(preds)
    assert xgb.train({}, d, 2, obj=se).num_boosted_rounds() == 2 and seen == [50, 50]
    res = xgb.cv({"objective": "binary:logistic", "tree_method": "hist"}, d, 3, nfold=2)
    assert list(res.columns)[-2:] == ["test-logloss-mean", "test-logloss-std"]
    with pytest.raises(NotImplementedError, match="missing=-1.0 with a DataIter"):
        xgb.DMatrix(xgb.DataIter(), missing=-1.0)
    d = xgb.DMatrix(X, label=y, group=[20, 30], weight=[1.0, 2.0]).__dgbdt_dataset__
    assert d.qid[-1] == 1 and d.weight[-1] == 2.0       # one weight per query, as XGBoost
    with pytest.raises(NotImplementedError, match="tree_method='gpu_exact'"):
        xgb.train({"tree_method": "gpu_exact"}, d, 2)
    # XGBoost's estimators: dgbdt's, with XGBoost's warnings (dgbdt.compat.xgboost_sklearn)
    assert issubclass(xgb.XGBRanker, dgbdt.GBDTRanker)
    assert issubclass(xgb.XGBRFClassifier, dgbdt.GBDTRFClassifier)
    sp = pytest.importorskip("scipy.sparse")
    assert xgb.DMatrix(sp.csr_matrix(X), label=y).num_row() == 50


def test_save_raw_and_ubj_files_cross_both_ways(tmp_path):
    """XGBoost's Booster.save_raw: "json" gives XGBoost's JSON, "ubj" (the default) its
    UBJSON, as bytearrays that Booster(model_file=...) reads back, and so does XGBoost; a
    ``.ubj`` path is written as UBJSON (XGBoost reads that name so); XGBoost's own .ubj
    files load (dgbdt.model.ubjson)."""
    import dgbdt.compat.xgboost as xgb
    real = pytest.importorskip("xgboost")
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(float)
    bst = xgb.train({"objective": "binary:logistic"}, xgb.DMatrix(X, label=y), 5)
    want = bst.predict(xgb.DMatrix(X))
    raw = bst.save_raw("json")
    assert isinstance(raw, bytearray) and b'"learner"' in raw
    ubj = bst.save_raw()
    assert ubj[:1] == b"{" and b'"learner"' not in ubj
    for r in (raw, ubj):
        np.testing.assert_allclose(xgb.Booster(model_file=r).predict(xgb.DMatrix(X)), want,
                                   rtol=1e-6)
        np.testing.assert_allclose(real.Booster(model_file=r).predict(real.DMatrix(X)), want,
                                   rtol=1e-6)
    path = str(tmp_path / "m.ubj")
    bst.save_model(path)
    np.testing.assert_allclose(real.Booster(model_file=path).predict(real.DMatrix(X)), want,
                               rtol=1e-6)
    theirs = real.train({"objective": "binary:logistic"}, real.DMatrix(X, label=y), 5)
    theirs.save_model(path)
    np.testing.assert_allclose(xgb.Booster(model_file=path).predict(xgb.DMatrix(X)),
                               theirs.predict(real.DMatrix(X)), rtol=1e-6)
    with pytest.raises(ValueError, match="Unknown model format"):
        bst.save_raw("deprecated")


def test_keyword_arguments_by_position_warn_as_xgboost_does():
    """xgb.train(params, dtrain, num_round, watchlist) raised TypeError (issue 45): XGBoost
    takes its keyword arguments by position too, with a FutureWarning; the same here, and
    the same model and history as by keyword."""
    import warnings

    import dgbdt.compat.xgboost as dxgb
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    y = (X[:, 0] > 0).astype(float)
    libs = [dxgb]
    try:
        import xgboost
        libs.append(xgboost)
    except ImportError:
        pass
    for xgb in libs:
        dtrain, dvalid = xgb.DMatrix(X, y), xgb.DMatrix(X[:50], y[:50])
        by_position, by_keyword = {}, {}
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            b1 = xgb.train({"objective": "binary:logistic"}, dtrain, 4, [(dvalid, "valid")],
                           evals_result=by_position, verbose_eval=False)
            d = xgb.DMatrix(X, y, np.ones(200))          # weight by position
        assert [(w.category, str(w.message)) for w in seen] == [
            (FutureWarning, "Pass `evals` as keyword args."),
            (FutureWarning, "Pass `weight` as keyword args.")], xgb.__name__
        b2 = xgb.train({"objective": "binary:logistic"}, dtrain, 4,
                       evals=[(dvalid, "valid")], evals_result=by_keyword, verbose_eval=False)
        assert by_position == by_keyword and bytes(b1.save_raw()) == bytes(b2.save_raw())
        assert list(d.get_weight()) == [1.0] * 200
    with pytest.raises(TypeError, match="multiple values for argument 'evals'"):
        dxgb.train({}, dxgb.DMatrix(X, y), 2, [], evals=[])


def test_booster_eval_fscore_and_dump_model_as_xgboost(tmp_path):
    """Booster.eval / eval_set / get_fscore / dump_model / set_param("eval_metric") were
    missing (issue 45): the same line format, keys and file layout as real xgboost's, on
    features whose cuts both libraries agree on (the models are then the same)."""
    import re
    import dgbdt.compat.xgboost as dxgb
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 20, (400, 4)).astype(float)
    y = (X[:, 0] + X[:, 1] > 19).astype(float)
    p = {"objective": "binary:logistic", "eval_metric": ["logloss", "auc"], "max_depth": 3}
    out = {}
    for xgb in (dxgb, xgboost):
        d = xgb.DMatrix(X, y)
        b = xgb.train(p, d, 5)
        b.set_param("eval_metric", "error")
        path = tmp_path / f"{xgb.__name__}.txt"
        b.dump_model(str(path))
        out[xgb.__name__] = (b.eval(d), b.eval_set([(d, "train")], 3), b.get_fscore(),
                             path.read_text(),
                             b.eval_set([(d, "t")], feval=lambda m, dm: ("m0", float(m[0]))))
    mine, theirs = out["dgbdt.compat.xgboost"], out["xgboost"]
    assert re.fullmatch(r"\[0\]\teval-logloss:0\.\d{17}\teval-auc:\d\.\d{17}\teval-error:"
                        r"0\.\d{17}", mine[0]), mine[0]
    num = re.compile(r"\d\.(?:\d{17}|\d{6}$)")
    for a, b in zip(mine[:2] + mine[4:], theirs[:2] + theirs[4:]):
        assert num.sub("#", a) == num.sub("#", b)                   # the same line layout
        assert np.allclose([float(v) for v in num.findall(a)],
                           [float(v) for v in num.findall(b)], rtol=1e-5, atol=1e-6)
    assert mine[2] == theirs[2]
    assert mine[3].count("booster[") == theirs[3].count("booster[") == 5


def test_binary_dmatrix_of_any_name_and_missing_model_file(tmp_path):
    """XGBoost's DMatrix(path) reads what save_binary wrote whatever the file's name (test_basic
    saves 'dtest.dmatrix'); a model path that is no file raises xgb.core.XGBoostError."""
    import dgbdt.compat.xgboost as xgb
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 3))
    d = xgb.DMatrix(X, label=(X[:, 0] > 0).astype(float))
    path = tmp_path / "dtest.dmatrix"
    d.save_binary(str(path))
    b = xgb.train({"objective": "binary:logistic"}, d, 3)
    again = xgb.DMatrix(str(path))
    assert again.num_row() == 100 and list(again.get_label()) == list(d.get_label())
    assert np.array_equal(b.predict(again), b.predict(d))
    with pytest.raises(xgb.core.XGBoostError, match="incorrect_path"):
        xgb.Booster(model_file="incorrect_path")
    with pytest.raises(ValueError, match="cannot tell the format"):   # not a saved Dataset
        xgb.DMatrix(str(tmp_path / "nothing.dmatrix"))


def test_num_class_without_objective_is_softmax_as_in_xgboost():
    import dgbdt.compat.xgboost as dxgb
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 10, (300, 3)).astype(float)
    y = (X[:, 0] > 4).astype(float)
    preds = [xgb.train({"num_class": 2, "max_depth": 2}, xgb.DMatrix(X, y), 3).predict(
        xgb.DMatrix(X)) for xgb in (dxgb, xgboost)]
    assert preds[0].shape == preds[1].shape == (300,)
    assert np.array_equal(preds[0], preds[1]) and set(np.unique(preds[0])) <= {0.0, 1.0}


def test_checkpoint_rounds_and_monitor_arguments_as_xgboost(tmp_path):
    """TrainingCheckPoint saves at XGBoost's rounds under XGBoost's names (its demo builds the
    paths from default_format); EvaluationMonitor takes rank, show_stdv and logger."""
    import dgbdt.compat.xgboost as dxgb
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    y = (X[:, 0] > 0).astype(float)
    saved, lines = {}, {}
    for xgb in (dxgb, xgboost):
        folder = tmp_path / xgb.__name__
        folder.mkdir()                      # XGBoost's does not make it
        got = []
        d = xgb.DMatrix(X, y)
        xgb.train({"objective": "binary:logistic"}, d, 7, evals=[(d, "train")],
                  verbose_eval=False, callbacks=[
                      xgb.callback.TrainingCheckPoint(folder, interval=2),
                      xgb.callback.EvaluationMonitor(period=3, rank=0, show_stdv=True,
                                                     logger=got.append)])
        ext = xgb.callback.TrainingCheckPoint.default_format
        saved[xgb.__name__] = sorted(p.name[:-len(ext) - 1] for p in folder.iterdir())
        lines[xgb.__name__] = [ln.split("\t")[0] for ln in got]
    assert saved["dgbdt.compat.xgboost"] == saved["xgboost"] == ["model_2", "model_4",
                                                                  "model_6"]
    assert lines["dgbdt.compat.xgboost"][:3] == lines["xgboost"][:3] == ["[0]", "[3]", "[6]"]


def test_params_as_xgboost_reads_them():
    """String values ("2" is 2) and a list of (name, value) pairs with several eval_metric
    entries (XGBoost's demo evals_result.py) give what real xgboost gives."""
    import dgbdt.compat.xgboost as dxgb
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 10, (300, 3)).astype(float)
    y = (X[:, 0] > 4).astype(float)
    params = [("max_depth", "2"), ("eta", "0.5"), ("objective", "binary:logistic"),
              ("eval_metric", "logloss"), ("eval_metric", "error")]
    logs = []
    for xgb in (dxgb, xgboost):
        d = xgb.DMatrix(X, y)
        log: dict = {}
        xgb.train(params, d, 3, evals=[(d, "train")], evals_result=log, verbose_eval=False)
        logs.append(log)
    assert list(logs[0]["train"]) == list(logs[1]["train"]) == ["logloss", "error"]
    np.testing.assert_allclose(logs[0]["train"]["logloss"], logs[1]["train"]["logloss"],
                               rtol=1e-5)


def test_xgbmodel_fits_and_estimators_take_callbacks():
    """XGBModel().fit (XGBoost's base estimator; every estimator an instance of it) and
    callbacks= on the estimators (copied for each fit, as XGBoost does) were refused."""
    import dgbdt.compat.xgboost as xgb
    from sklearn.base import clone
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    y = (X[:, 0] > 0).astype(int)
    m = xgb.XGBModel(n_estimators=5).fit(X, X[:, 0])
    assert m.predict(X).shape == (300,)
    assert isinstance(xgb.XGBClassifier(), xgb.XGBModel) and \
        issubclass(xgb.XGBRanker, xgb.XGBModel)
    stop = xgb.callback.EarlyStopping(rounds=3, save_best=True)
    clf = xgb.XGBClassifier(n_estimators=500, eval_metric="logloss", callbacks=[stop])
    clf.fit(X[:200], y[:200], eval_set=[(X[200:], y[200:])])
    first = clf.get_booster().num_boosted_rounds()
    assert first < 500 and clone(clf).callbacks is not None
    clf.fit(X[:200], y[:200], eval_set=[(X[200:], y[200:])])   # a fresh copy: same stop
    assert clf.get_booster().num_boosted_rounds() == first


def test_dump_with_a_feature_map_as_xgboost(tmp_path):
    """dump_model / get_dump read XGBoost's feature map (the basic walkthrough demo passes
    one): on quantitative features the dump is real xgboost's, text for text."""
    import dgbdt.compat.xgboost as dxgb
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 20, (400, 3)).astype(float)
    y = (X[:, 0] + X[:, 2] > 19).astype(float)
    fmap = tmp_path / "featmap.txt"
    fmap.write_text("0\tage\tq\n1\theight\tq\n2\tweight\tq\n")
    dumps = [xgb.train({"objective": "binary:logistic", "max_depth": 3}, xgb.DMatrix(X, y),
                       3).get_dump(str(fmap)) for xgb in (dxgb, xgboost)]
    import re
    leaf = re.compile(r"leaf=(-?[0-9.e+-]+)")
    assert "age<" in dumps[0][0]
    assert [leaf.sub("leaf", t) for t in dumps[0]] == [leaf.sub("leaf", t) for t in dumps[1]]
    # leaf values to float32's last digits (dgbdt sums gradients in fixed point)
    np.testing.assert_allclose([float(v) for t in dumps[0] for v in leaf.findall(t)],
                               [float(v) for t in dumps[1] for v in leaf.findall(t)], rtol=1e-6)


def test_a_gpu_device_without_a_gpu_falls_back_with_a_warning_as_xgboost():
    import dgbdt.compat.xgboost as xgb
    from dgbdt.backends.device import cuda_available
    if cuda_available():
        pytest.skip("a GPU is visible: nothing to fall back from")
    X = np.random.default_rng(0).standard_normal((100, 3))
    d = xgb.DMatrix(X, (X[:, 0] > 0).astype(float))
    with pytest.warns(UserWarning, match="no usable CUDA GPU .* training on the CPU"):
        b = xgb.train({"objective": "binary:logistic", "device": "cuda"}, d, 2)
    assert b.num_boosted_rounds() == 2
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):    # dgbdt's own API refuses
        import dgbdt
        dgbdt.train({"device": "cuda"}, dgbdt.Dataset(X, X[:, 0]), 2)


def test_early_stopping_on_a_custom_metric_and_the_monitor_s_last_line_as_xgboost():
    """EarlyStopping(metric_name=<a custom metric's name>) refused the name as an unknown
    metric; XGBoost decides maximize by the name's prefix. EvaluationMonitor prints the last
    round when its period skipped it, as XGBoost's does."""
    import dgbdt.compat.xgboost as dxgb
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 10, (400, 3)).astype(float)
    y = (X[:, 0] + rng.integers(0, 3, 400) > 5).astype(float)

    def custom_err(predt, d):
        return "CustomErr", float(np.mean((predt > 0.5) != d.get_label()))
    out = {}
    for xgb in (dxgb, xgboost):
        dtrain, dvalid = xgb.DMatrix(X[:300], y[:300]), xgb.DMatrix(X[300:], y[300:])
        got = []
        b = xgb.train({"objective": "binary:logistic", "max_depth": 2,
                       "disable_default_eval_metric": 1}, dtrain, 50,
                      evals=[(dvalid, "valid")], custom_metric=custom_err,
                      verbose_eval=False, callbacks=[
                          xgb.callback.EarlyStopping(rounds=3, metric_name="CustomErr"),
                          xgb.callback.EvaluationMonitor(period=4, logger=got.append)])
        out[xgb.__name__] = (b.best_iteration, [ln.split("\t")[0] for ln in got])
    assert out["dgbdt.compat.xgboost"] == out["xgboost"]


def test_xgboosts_checks_of_names_refs_and_signatures():
    """A model trained with feature names refuses a DMatrix without them; a QuantileDMatrix
    whose ref= has other features is refused; xgboost.dask.train takes XGBoost's arguments
    only (evals_result is a TypeError there, as in XGBoost)."""
    import inspect

    import dgbdt.compat.xgboost as xgb
    real = pytest.importorskip("xgboost")
    X = np.random.default_rng(0).random((30, 3))
    y = (X[:, 0] > 0.5).astype(float)
    for lib in (xgb, real):
        named = lib.train({}, lib.DMatrix(X, y, feature_names=["a", "b", "c"]), 2)
        with pytest.raises(ValueError, match="feature_names mismatch|did not contain feature"):
            named.predict(lib.DMatrix(X, y))
        lib.train({}, lib.DMatrix(X, y), 2).predict(lib.DMatrix(X, y))
        with pytest.raises(ValueError, match=r"features\."):
            lib.QuantileDMatrix(X[:, :2], y, ref=lib.QuantileDMatrix(X, y))
    real_dask = pytest.importorskip("xgboost.dask")
    ours = inspect.signature(xgb.dask.train).parameters
    theirs = inspect.signature(real_dask.train).parameters
    assert set(ours) - {"feval"} == set(theirs)


def test_learning_rate_schedule_may_pause_and_set_param_device():
    """XGBoost's LearningRateScheduler may set 0 (a round that adds nothing); set_param
    ("device") before predicting is taken (dgbdt predicts where the rows are)."""
    import dgbdt.compat.xgboost as xgb
    X = np.random.default_rng(1).random((200, 3))
    y = X[:, 0] * 2
    d = xgb.DMatrix(X, y)
    sched = xgb.callback.LearningRateScheduler(lambda r: 0.0 if r == 1 else 0.3)
    paused = xgb.train({"max_depth": 2}, d, 3, callbacks=[sched])
    two = xgb.train({"max_depth": 2}, d, 3, callbacks=[
        xgb.callback.LearningRateScheduler(lambda r: 0.3)])
    assert not np.allclose(paused.predict(d), two.predict(d))
    # XGBoost's scheduler sets lr(r) after round r: round 2 is the one that adds nothing
    np.testing.assert_allclose(paused.predict(d, output_margin=True),
                               paused[:2].predict(d, output_margin=True))
    paused.set_param({"device": "cpu"})
    assert paused.predict(d).shape == (200,)


def test_booster_params_with_a_model_file_and_xgboosts_value_errors(tmp_path):
    """Booster(params=..., model_file=...) keeps the settings (eval_metric, for eval);
    a missing feature map, and feature names of the wrong length, are ValueErrors."""
    import dgbdt.compat.xgboost as xgb
    X = np.random.default_rng(2).random((100, 2))
    y = (X[:, 0] > 0.5).astype(float)
    d = xgb.DMatrix(X, y, feature_names=["F0", "F1"])
    bst = xgb.train({"objective": "binary:logistic"}, d, 2)
    path = str(tmp_path / "m.json")
    bst.save_model(path)
    loaded = xgb.Booster(params={"eval_metric": "error"}, model_file=path)
    assert "error" in loaded.eval(d) and "logloss" not in loaded.eval(d)
    with pytest.raises(NotImplementedError, match="without model_file"):
        xgb.Booster(params={"eta": 0.1})
    with pytest.raises(ValueError):
        bst.get_dump(fmap=str(tmp_path / "none.fmap"))
    bst.feature_names = ["F0"]
    with pytest.raises(ValueError, match="1 names but the model has 2"):
        bst.get_fscore()


def test_slicing_follows_xgboosts_rules():
    import dgbdt.compat.xgboost as xgb
    real = pytest.importorskip("xgboost")
    X = np.random.default_rng(3).random((200, 3))
    y = X[:, 0] * 2
    for lib in (xgb, real):
        b = lib.train({"max_depth": 2}, lib.DMatrix(X, y), 8)
        assert len(b[3:7].get_dump()) == 4 and len(b[3:7:2].get_dump()) == 2
        assert len(b[...].get_dump()) == 8 and len(b[5:].get_dump()) == 3
        assert len(list(b)) == 8
        for bad, err in [(slice(-1, 0), ValueError), (slice(1, 1), ValueError),
                         (slice(3, 0), ValueError), (slice(0, 2, 0), ValueError),
                         ((1, 2), ValueError), ("x", TypeError), (slice(0, 9), IndexError)]:
            with pytest.raises(err):
                b[bad]


def test_a_matrix_without_rows_trains_and_predicts_as_in_xgboost():
    """XGBoost warns and trains one-leaf trees of value 0 on no rows (a metric of no rows is
    0), and predicts nothing for no rows; compat does the same (dgbdt's train refuses)."""
    import dgbdt.compat.xgboost as xgb
    real = pytest.importorskip("xgboost")
    rng = np.random.default_rng(4)
    Xv, yv = rng.random((20, 5)), rng.random(20)
    out = {}
    for lib in (xgb, real):
        empty = lib.DMatrix(np.zeros((0, 5)), label=np.zeros(0))
        res = {}
        with pytest.warns(UserWarning, match="Empty dataset"):
            b = lib.train({"max_depth": 2}, empty, 3, evals=[(empty, "train"),
                                                            (lib.DMatrix(Xv, yv), "v")],
                          evals_result=res, verbose_eval=False)
        assert res["train"]["rmse"] == [0.0, 0.0, 0.0]
        assert [d.strip() for d in b.get_dump()] == ["0:leaf=0"] * 3
        assert b.predict(empty).shape == (0,)
        out[lib.__name__] = (res["v"]["rmse"], b.predict(lib.DMatrix(Xv)))
    np.testing.assert_allclose(*[o[0] for o in out.values()], rtol=1e-6)
    np.testing.assert_allclose(*[o[1] for o in out.values()], atol=1e-7)
