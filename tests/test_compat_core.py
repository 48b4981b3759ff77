"""dgbdt.compat.xgboost's module-level API and Booster where XGBoost 3.2 behaves in a given
way: the global configuration, ``collective`` outside a distributed training, the plots at
the top level, graphviz dumps, model file extensions, save_config's metric sections and the
objective's training parameters, set_param of training parameters, and EarlyStopping's
history."""
import json
import threading
import warnings

import numpy as np
import pytest

import dgbdt.compat.xgboost as xgb


def _reg(n=64, f=3, seed=0, names=None, rounds=2, params=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, f))
    y = X[:, 0] + 0.1 * rng.standard_normal(n)
    d = xgb.DMatrix(X, y, feature_names=names)
    return xgb.train({"max_depth": 2, **(params or {})}, d, rounds), d


def test_config_is_per_thread_nests_and_checks():
    assert xgb.get_config() == {"nthread": 0, "use_cuda_async_pool": False, "use_rmm": False,
                                "verbosity": 1}
    with xgb.config_context(verbosity=3):
        assert xgb.config.get_config()["verbosity"] == 3
        with xgb.config_context(verbosity=None, use_rmm=True):
            assert xgb.get_config()["verbosity"] == 3 and xgb.get_config()["use_rmm"]
        seen = []
        t = threading.Thread(target=lambda: seen.append(xgb.get_config()["verbosity"]))
        t.start()
        t.join()
        assert seen == [1]                          # another thread: the defaults
    assert xgb.get_config()["verbosity"] == 1 and not xgb.get_config()["use_rmm"]
    with pytest.raises(xgb.XGBoostError, match="Unknown global parameters"):
        xgb.set_config(foo=1)
    with pytest.raises(ValueError, match="exceed bound"):
        xgb.set_config(verbosity=7)
    assert xgb.get_config()["verbosity"] == 1


def test_collective_is_one_worker():
    c = xgb.collective
    assert (c.get_world_size(), c.get_rank(), c.is_distributed()) == (1, 0, False)
    a = np.arange(3.0)
    out = c.allreduce(a, c.Op.SUM)
    assert out is not a and np.array_equal(out, a)
    assert c.broadcast("x", 0) == "x"
    with pytest.raises(NotImplementedError, match="dgbdt.compat.xgboost.dask"):
        c.init(dmlc_communicator="rabit")


def test_dot_dump_escapes_names_as_xgboost():
    pytest.importorskip("xgboost")
    import xgboost as real
    rng = np.random.RandomState(0)
    X, y = rng.randn(50, 3), rng.randn(50)
    names = ['"feature 0"', "\tfeature\n1", 'feature "2".']
    ours = xgb.train({"max_depth": 2}, xgb.DMatrix(X, y, feature_names=names), 1)
    theirs = real.train({"max_depth": 2}, real.DMatrix(X, y, feature_names=names), 1)
    for fmt in ("text", "dot"):
        a, b = ours.get_dump(dump_format=fmt)[0], theirs.get_dump(dump_format=fmt)[0]
        # the same layout and escapes; leaf values may differ in the last digits
        strip = (lambda s: [ln.split("leaf=")[0] for ln in s.splitlines()])
        assert strip(a) == strip(b), (a, b)
    assert r'[\"feature 0\"<' in ours.get_dump(dump_format="text")[0]


def test_dot_dump_options_and_stats():
    bst, _ = _reg()
    opts = {"graph_attrs": {"rankdir": "LR"}, "edge": {"yes_color": "#00FF00"},
            "leaf_node_params": {"shape": "box"}}
    dot = bst.get_dump(dump_format="dot:" + json.dumps(opts), with_stats=True)[0]
    assert dot.startswith("digraph {\n    graph [ rankdir=TB ]\n    graph [ rankdir=\"LR\" ]")
    assert '[label="yes" color="#00FF00"]' in dot and "no, missing" in dot
    assert 'shape="box" ]' in dot and "\ngain=" in dot and "\ncover=" in dot
    assert dot.endswith("}")


def test_plots_at_top_level():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    bst, _ = _reg(rounds=3)
    ax = xgb.plot_importance(bst)
    n = len(bst.get_fscore())
    assert ax.get_ylim() == (-1.0, float(n))
    assert ax.get_xlim() == (0.0, max(bst.get_fscore().values()) * 1.1)
    assert xgb.plotting.plot_tree is xgb.plot_tree


def test_to_graphviz_source():
    graphviz = pytest.importorskip("graphviz")
    bst, _ = _reg()
    g = xgb.to_graphviz(bst, tree_idx=1, rankdir="LR", no_color="#123456")
    assert isinstance(g, graphviz.Source)
    assert g.source == bst.get_dump(
        dump_format='dot:{"graph_attrs": {"rankdir": "LR"}, "edge": {"no_color": "#123456"}}'
    )[1]


def test_model_file_extensions(tmp_path):
    bst, d = _reg()
    want = bst.predict(d)
    ubj, js, other = tmp_path / "m.ubj", tmp_path / "m.json", tmp_path / "m.model"
    bst.save_model(ubj)
    bst.save_model(js)
    with pytest.warns(UserWarning, match="Saving model in the UBJSON format"):
        bst.save_model(other)
    assert other.read_bytes() == ubj.read_bytes()
    with pytest.warns(UserWarning, match="Using UBJSON"):      # (its intercept a float32)
        np.testing.assert_allclose(xgb.Booster(model_file=other).predict(d), want, rtol=1e-5,
                                   atol=1e-7)
    (tmp_path / "ubj.json").write_bytes(ubj.read_bytes())
    with pytest.raises(ValueError, match="ends in .json but holds UBJSON"):
        xgb.Booster(model_file=tmp_path / "ubj.json")
    (tmp_path / "json.ubj").write_bytes(js.read_bytes())
    with pytest.raises(ValueError, match="ends in .ubj but does not hold UBJSON"):
        xgb.Booster(model_file=tmp_path / "json.ubj")
    (tmp_path / "js").write_bytes(js.read_bytes())
    with pytest.warns(UserWarning, match="Using JSON"):
        xgb.Booster(model_file=tmp_path / "js")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(xgb.Booster(model_file=js).predict(d), want)
    with pytest.raises(ValueError, match="Unknown model format"):
        bst.save_raw("deprecated")


def test_save_config_metric_sections_and_objective_parameters():
    X = np.arange(1.0, 6.0).reshape(-1, 1)
    d = xgb.DMatrix(X)
    d.set_float_info("label_lower_bound", [1, 2, -np.inf, 4, 5.0])
    d.set_float_info("label_upper_bound", [1, 2, 3, 4, np.inf])
    bst = xgb.train({"objective": "survival:aft", "aft_loss_distribution": "extreme"}, d, 1)
    (metric,) = json.loads(bst.save_config())["learner"]["metrics"]
    assert metric["name"] == "aft-nloglik"
    assert metric["aft_loss_param"]["aft_loss_distribution"] == "extreme"
    rng = np.random.default_rng(0)
    Xr, yr, q = rng.random((60, 3)), rng.integers(0, 4, 60), np.repeat([0, 1, 2], 20)
    r = xgb.XGBRanker(ndcg_exp_gain=False, n_estimators=2, eval_metric=["ndcg@3", "map"])
    r.fit(Xr, yr, qid=q)
    b = r.get_booster()
    cfg = json.loads(b.save_config())["learner"]
    assert cfg["objective"]["lambdarank_param"]["ndcg_exp_gain"] == "0"
    assert [m["lambdarank_param"]["lambdarank_num_pair_per_sample"]
            for m in cfg["metrics"]] == ["3", "4294967295"]
    doc = json.loads(b.save_raw(raw_format="json"))
    assert doc["learner"]["objective"]["lambdarank_param"]["ndcg_exp_gain"] == "0"


def test_eval_uses_the_estimators_metric():
    rng = np.random.default_rng(0)
    X, y = rng.random((80, 2)), rng.gamma(5.0, 2.0, 80) + 1.0
    reg = xgb.XGBRegressor(objective="reg:gamma", n_estimators=3, eval_metric="gamma-nloglik")
    reg.fit(X, y)
    assert "eval-gamma-nloglik:" in reg.get_booster().eval(xgb.DMatrix(X, y))


def test_set_param_records_training_parameters():
    bst, d = _reg()
    bst.set_param({"tree_method": "approx", "max_depth": 3})
    cfg = json.loads(bst.save_config())["learner"]["gradient_booster"]
    assert cfg["gbtree_train_param"]["tree_method"] == "approx"
    assert cfg["tree_train_param"]["max_depth"] == "3"
    more = xgb.train({"tree_method": "hist"}, d, 2, xgb_model=bst)
    assert more.num_boosted_rounds() == 4
    with pytest.raises(ValueError, match="only the learning rate"):
        bst.set_param("no_such_parameter", 1)


def test_early_stopping_history():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 3))
    y = (X[:, 0] + rng.standard_normal(200) > 0).astype(float)
    dt, dv = xgb.DMatrix(X[:150], y[:150]), xgb.DMatrix(X[150:], y[150:])
    es = xgb.callback.EarlyStopping(rounds=3, metric_name="logloss", data_name="v")
    bst = xgb.train({"objective": "binary:logistic", "eval_metric": ["error", "logloss"]},
                    dt, 200, evals=[(dt, "t"), (dv, "v")], callbacks=[es], verbose_eval=False)
    assert list(es.stopping_history) == ["v"]
    assert len(es.stopping_history["v"]["logloss"]) == bst.num_boosted_rounds()


def test_aft_left_censored_lower_bound_below_zero_is_zero():
    X = np.arange(1.0, 6.0).reshape(-1, 1)

    def fit(lo):
        d = xgb.DMatrix(X)
        d.set_float_info("label_lower_bound", lo)
        d.set_float_info("label_upper_bound", [np.inf, np.inf, 20, 50, np.inf])
        return xgb.train({"objective": "survival:aft", "max_depth": 2}, d, 3).predict(d)

    want = fit([10, 15, 0, 30, 100])
    np.testing.assert_array_equal(fit([10, 15, -np.inf, 30, 100]), want)
    np.testing.assert_array_equal(fit([10, 15, -3, 30, 100]), want)


def test_aft_on_no_rows_has_its_intercept():
    d = xgb.DMatrix(np.zeros((0, 2)))
    d.set_info(label_lower_bound=np.array([]), label_upper_bound=np.array([]))
    with pytest.warns(UserWarning, match="Empty dataset"):
        bst = xgb.train({"objective": "survival:aft"}, d, 2)
    np.testing.assert_allclose(bst.predict(xgb.DMatrix(np.zeros((2, 2)))), [0.5, 0.5])


def test_cv_prints_the_last_round():
    import contextlib
    import io
    rng = np.random.default_rng(0)
    X = rng.standard_normal((90, 3))
    d = xgb.DMatrix(X, (X[:, 0] > 0).astype(float))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        xgb.cv({"objective": "binary:logistic"}, d, num_boost_round=5, nfold=3,
               verbose_eval=2)
    assert [ln.split("\t")[0] for ln in out.getvalue().strip().splitlines()] == \
        ["[0]", "[2]", "[4]"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        xgb.cv({"objective": "binary:logistic"}, d, num_boost_round=4, nfold=3,
               verbose_eval=2)
    assert [ln.split("\t")[0] for ln in out.getvalue().strip().splitlines()] == \
        ["[0]", "[2]", "[3]"]


def test_best_iteration_is_an_attribute_error_without_early_stopping(tmp_path):
    """XGBoost's Booster and estimators have no best_iteration / best_score unless early
    stopping ran (``hasattr`` is how scripts ask); the model still saves and slices."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    y = (X[:, 0] > 0).astype(float)
    clf = xgb.XGBClassifier(n_estimators=4).fit(X, y, eval_set=[(X, y)])
    b = clf.get_booster()
    for obj in (clf, b, b[1:3]):
        for name in ("best_iteration", "best_score"):
            with pytest.raises(AttributeError, match="only defined when early stopping"):
                getattr(obj, name)
    b.save_model(tmp_path / "m.json")
    assert not hasattr(xgb.Booster(model_file=tmp_path / "m.json"), "best_iteration")
    stopped = xgb.train({"objective": "binary:logistic", "eta": 1.0}, xgb.DMatrix(X, y), 50,
                        evals=[(xgb.DMatrix(X[:50], y[:50]), "v")],
                        early_stopping_rounds=2, verbose_eval=False)
    assert stopped.best_iteration < 49 and stopped.best_score is not None
    stopped.save_model(tmp_path / "s.json")
    assert xgb.Booster(model_file=tmp_path / "s.json").best_iteration == stopped.best_iteration


def test_estimators_fall_back_to_the_cpu_as_xgboost_does():
    """XGBRegressor(device="cuda") without a usable GPU trains on the CPU with a warning, as
    xgb.train does (XGBoost's behaviour; dgbdt's own estimators refuse)."""
    from dgbdt.backends.device import cuda_available
    if cuda_available():
        pytest.skip("a usable GPU: nothing falls back")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    y = X[:, 0] * 2.0
    with pytest.warns(UserWarning, match="no usable CUDA GPU"):
        gpu = xgb.XGBRegressor(device="cuda", n_estimators=3).fit(X, y)
    cpu = xgb.XGBRegressor(n_estimators=3).fit(X, y)
    np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))


def test_a_json_path_gets_xgboosts_json(tmp_path):
    """save_model("m.json") writes XGBoost's JSON (its learner_model_param, gradient_booster):
    real XGBoost loads it, and it loads back into the same predictions."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 4))
    y = (X[:, 0] > 0).astype(float)
    b = xgb.train({"objective": "binary:logistic"}, xgb.DMatrix(X, y), 4)
    b.save_model(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert {"learner_model_param", "gradient_booster"} <= set(doc["learner"])
    back = xgb.Booster(model_file=tmp_path / "m.json")
    np.testing.assert_array_equal(back.predict(xgb.DMatrix(X)), b.predict(xgb.DMatrix(X)))
    real = pytest.importorskip("xgboost")
    r = real.Booster(model_file=str(tmp_path / "m.json"))
    np.testing.assert_allclose(r.predict(real.DMatrix(X)), b.predict(xgb.DMatrix(X)),
                               atol=1e-6)


def test_fit_feature_weights_as_xgboost():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 4))
    y = X[:, 0] + X[:, 3]
    p = {"n_estimators": 4, "colsample_bynode": 0.25}
    with pytest.warns(UserWarning, match="deprecated"):
        reg = xgb.XGBRegressor(**p).fit(X, y, feature_weights=[0, 0, 0, 1.0])
    assert set(reg.get_booster().get_score("weight")) == {"f3"}
    assert reg.feature_weights is None          # the constructor's parameter is untouched
    with pytest.raises(ValueError, match="2 different `feature_weights`"):
        xgb.XGBRegressor(feature_weights=np.ones(4), **p).fit(X, y, feature_weights=np.ones(4))
