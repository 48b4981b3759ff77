"""dgbdt.compat.xgboost's scikit-learn estimators: XGBoost's public behaviour, compared with
real XGBoost where it is installed."""
import json
import pickle
import warnings

import numpy as np
import pytest

import dgbdt.compat.xgboost as xgb
from dgbdt import GBDTRegressor, ParameterError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


def test_get_xgb_params_and_rounds_match_xgboost():
    real = pytest.importorskip("xgboost")
    for kw in ({"random_state": 402, "n_jobs": 2}, {"max_depth": 3, "eval_metric": "auc"}):
        ours, theirs = xgb.XGBClassifier(**kw), real.XGBClassifier(**kw)
        mine, ref = ours.get_xgb_params(), theirs.get_xgb_params()
        assert {k: mine.get(k) for k in ref if k != "objective"} == \
            {k: v for k, v in ref.items() if k != "objective"}
        assert ours.get_num_boosting_rounds() == theirs.get_num_boosting_rounds() == 100
    assert isinstance(xgb.XGBClassifier(random_state=np.random.RandomState(3))
                      .get_xgb_params()["random_state"], int)
    assert xgb.XGBRFRegressor(n_estimators=7).get_num_boosting_rounds() == 1
    assert xgb.XGBRFRegressor(n_estimators=7).get_xgb_params()["num_parallel_tree"] == 7
    assert xgb.XGBRegressor().get_params()["objective"] == "reg:squarederror"
    assert xgb.XGBRFRegressor(objective="reg:tweedie").get_params()["colsample_bynode"] == 0.8


def test_unknown_parameter_warns_in_compat_raises_in_dgbdt(data):
    X, y = data
    with pytest.warns(UserWarning, match="foo"):
        xgb.XGBRegressor(n_estimators=2, foo="bar").fit(X, y)
    with pytest.raises(ParameterError, match="max_depth"):
        GBDTRegressor(n_estimators=2, max_dpeth=3).fit(X, y)
    with pytest.warns(UserWarning, match="Did you mean 'max_depth'"):
        xgb.XGBRegressor(n_estimators=2, max_dpeth=3).fit(X, y)
    with pytest.raises(ValueError, match="booster"):     # dgbdt.ParameterError
        xgb.XGBRegressor(n_estimators=2, booster="gbforest").fit(X, y)
    xgb.XGBRegressor(n_estimators=2, booster="gbtree").fit(X, y)   # accepted
    assert "kwargs" not in vars(xgb.XGBRegressor())     # scikit-learn's init rule


def test_positional_arguments_warn(data):
    X, y = data
    with pytest.warns(FutureWarning):
        assert xgb.XGBRanker("rank:pairwise").objective == "rank:pairwise"
    with pytest.warns(FutureWarning):
        assert GBDTRegressor(3).n_estimators == 3
    w = np.ones(len(y))
    with pytest.warns(FutureWarning):
        xgb.XGBClassifier(n_estimators=1).fit(X, y, w)
    with pytest.warns(FutureWarning):
        xgb.XGBRFRegressor(1, learning_rate=0.1)


def test_save_config_reads_as_xgboosts(data):
    real = pytest.importorskip("xgboost")
    X, y = data
    kw = dict(n_estimators=2, nthread=4, interaction_constraints="[[0, 1], [2, 3, 4]]")
    ours = xgb.XGBClassifier(**kw).fit(X, y)
    theirs = real.XGBClassifier(**kw).fit(X, y)
    a = json.loads(ours.get_booster().save_config())["learner"]
    b = json.loads(theirs.get_booster().save_config())["learner"]
    for section, key in [("generic_param", "nthread"), ("learner_train_param", "objective"),
                         ("learner_model_param", "num_feature")]:
        assert a[section][key] == b[section][key]
    gb_a, gb_b = a["gradient_booster"], b["gradient_booster"]
    assert gb_a["tree_train_param"]["interaction_constraints"] == \
        gb_b["tree_train_param"]["interaction_constraints"]
    assert gb_a["gbtree_train_param"]["tree_method"] == "auto"
    np.testing.assert_allclose(json.loads(a["learner_model_param"]["base_score"]),
                               json.loads(b["learner_model_param"]["base_score"]), rtol=1e-5)
    ours.set_params(nthread=16)           # recorded on the fitted Booster, as XGBoost does
    assert json.loads(ours.get_booster().save_config())["learner"]["generic_param"][
        "nthread"] == "16"
    again = pickle.loads(pickle.dumps(ours))
    assert json.loads(again.get_booster().save_config())["learner"]["generic_param"][
        "nthread"] == "16"
    rf = xgb.XGBRFRegressor(n_estimators=4).fit(X, y)
    assert json.loads(rf.get_booster().save_config())["learner"]["gradient_booster"][
        "gbtree_model_param"]["num_parallel_tree"] == "4"
    bst = rf.get_booster()
    cfg = bst.save_config().replace('"max_depth": "6"', '"max_depth": "3"')
    bst.load_config(cfg)
    assert json.loads(bst.save_config())["learner"]["gradient_booster"]["tree_train_param"][
        "max_depth"] == "3"


def test_split_value_histogram_matches_xgboost_on_its_model(data, tmp_path):
    real = pytest.importorskip("xgboost")
    X, y = data
    theirs = real.train({"max_depth": 4}, real.DMatrix(X, label=y), 5)
    path = str(tmp_path / "m.json")
    theirs.save_model(path)
    ours = xgb.Booster(model_file=path)
    for bins in (None, 1, 2, 5):
        np.testing.assert_allclose(
            ours.get_split_value_histogram("f0", bins=bins, as_pandas=False),
            theirs.get_split_value_histogram("f0", bins=bins, as_pandas=False), rtol=1e-6)
    assert ours.get_split_value_histogram("nope", as_pandas=False).shape[0] == 0


def test_intercept_coef_apply_type(data, tmp_path):
    real = pytest.importorskip("xgboost")
    X, y = data
    ours = xgb.XGBClassifier(n_estimators=3).fit(X, y)
    theirs = real.XGBClassifier(n_estimators=3).fit(X, y)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-5)
    assert ours.intercept_.dtype == np.float32
    with pytest.raises(AttributeError):
        ours.coef_
    leaves = ours.apply(X)
    assert leaves.shape == theirs.apply(X).shape
    assert xgb.XGBRanker()._get_type() == "ranker"
    assert xgb.XGBRFClassifier()._get_type() == "classifier"
    path = str(tmp_path / "c.json")
    ours.save_model(path)
    with pytest.raises(TypeError):
        xgb.XGBRegressor().load_model(path)
    xgb.XGBClassifier().load_model(path)


def test_predict_base_margin_and_feature_names(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    m0 = xgb.XGBClassifier(n_estimators=4).fit(X, y)
    margin = m0.predict(X, output_margin=True)
    m1 = xgb.XGBClassifier(n_estimators=4).fit(X, y, base_margin=margin)
    m2 = xgb.XGBClassifier(n_estimators=8).fit(X, y)
    np.testing.assert_allclose(m1.predict(X, base_margin=margin, output_margin=True),
                               m2.predict(X, output_margin=True), rtol=1e-5, atol=1e-5)
    df = pd.DataFrame(X, columns=list("abcde"))
    clf = xgb.XGBClassifier(n_estimators=2).fit(df, y)
    with pytest.raises(ValueError, match="feature_names mismatch"):
        clf.predict(df[list("edcba")])
    s = xgb.XGBClassifier(n_estimators=2).fit(df["a"], y, eval_set=[(df["a"], y)])
    assert s.n_features_in_ == 1
    with pytest.raises(TypeError, match="NoneType"):
        xgb.XGBClassifier().fit(None, [0, 1])
    with pytest.raises(ValueError, match="Invalid classes"):
        xgb.XGBClassifier().fit(X, None)


def test_mixed_and_weighted_custom_metrics(data):
    real = pytest.importorskip("xgboost")
    from sklearn.metrics import hinge_loss, log_loss
    X, y = data
    w = np.where(y > 0, 2.0, 1.0)
    clf = xgb.XGBClassifier(eval_metric=["logloss", hinge_loss], n_estimators=2)
    clf.fit(X, y, eval_set=[(X, y)], verbose=False)
    assert {"logloss", "hinge_loss"} <= set(clf.evals_result()["validation_0"])
    with pytest.raises(NotImplementedError, match="multiple custom metrics"):
        xgb.XGBClassifier(eval_metric=[log_loss, hinge_loss]).fit(X, y, eval_set=[(X, y)])
    with pytest.raises(TypeError, match="Invalid type for the `eval_metric`"):
        xgb.XGBClassifier(eval_metric=[123]).fit(X, y, eval_set=[(X, y)])
    kw = dict(eval_metric=log_loss, n_estimators=3)
    ours = xgb.XGBClassifier(**kw).fit(X, y, eval_set=[(X, y)], sample_weight_eval_set=[w],
                                       verbose=False)
    theirs = real.XGBClassifier(**kw).fit(X, y, eval_set=[(X, y)],
                                          sample_weight_eval_set=[w], verbose=False)
    np.testing.assert_allclose(ours.evals_result()["validation_0"]["log_loss"],
                               theirs.evals_result()["validation_0"]["log_loss"], rtol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xgb.XGBRegressor(n_estimators=2, missing=3, importance_type="gain").fit(X, y)
