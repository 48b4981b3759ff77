"""GBDTRegressor / GBDTClassifier: scikit-learn conventions and xgboost.sklearn habits."""
import numpy as np
import pandas as pd
import pytest

import dgbdt
from dgbdt import GBDTClassifier, GBDTRegressor, ParameterError

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.metrics import accuracy_score, r2_score  # noqa: E402


@pytest.fixture(scope="module")
def reg_data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4)).astype(np.float32)
    y = X[:, 0] * 2 + np.sin(X[:, 1]) + rng.normal(scale=0.2, size=300)
    return X, y


@pytest.fixture(scope="module")
def clf_data():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=300) > 0).astype(int)
    y3 = np.digitize(X[:, 0] + rng.normal(scale=0.3, size=300), [-0.5, 0.5])
    return X, y, y3


# -- parameters ----------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [GBDTRegressor, GBDTClassifier])
def test_get_set_params_round_trip(cls):
    est = cls(n_estimators=7, max_depth=3, learning_rate=0.2, reg_lambda=2.0, subsample_x=None)
    params = est.get_params()
    assert params["n_estimators"] == 7 and params["max_depth"] == 3
    assert params["learning_rate"] == 0.2 and params["reg_lambda"] == 2.0
    assert params["importance_type"] == "gain"
    assert "subsample_x" in params and "kwargs" not in params
    again = cls(**params)
    assert again.get_params() == params
    assert est.set_params(max_depth=5, n_estimators=3) is est
    assert est.get_params()["max_depth"] == 5 and est.n_estimators == 3
    assert est.get_params(deep=False) == est.get_params()


def test_set_params_tree_method_hist(reg_data):
    X, y = reg_data
    est = GBDTRegressor(n_estimators=3).set_params(tree_method="hist")
    assert est.get_params()["tree_method"] == "hist"
    assert est.fit(X, y) is est
    assert est.predict(X).shape == (len(y),)


def test_renamed_parameters_reach_training(reg_data):
    X, y = reg_data
    est = GBDTRegressor(n_estimators=3, learning_rate=0.1, reg_lambda=2.0, reg_alpha=0.1,
                        random_state=0, n_jobs=1, max_depth=3, device="cpu").fit(X, y)
    ref = dgbdt.train({"eta": 0.1, "lambda": 2.0, "alpha": 0.1, "max_depth": 3},
                      dgbdt.Dataset(X, label=y), 3, verbose_eval=False)
    assert est.get_booster().save_raw() == ref.save_raw()


def test_unknown_kwargs_pass_through_and_validate_at_fit(reg_data):
    X, y = reg_data
    est = GBDTRegressor(n_estimators=2, max_delta_step=None, min_split_loss=0.5)
    assert est.get_params()["min_split_loss"] == 0.5
    est.fit(X, y)  # an alias XGBoost knows: accepted
    typo = GBDTRegressor(n_estimators=2, max_dpeth=3)  # constructing never validates
    assert typo.get_params()["max_dpeth"] == 3
    with pytest.raises(ParameterError, match="max_depth"):
        typo.fit(X, y)
    est = GBDTRegressor(n_estimators=2).set_params(colsample_bytreee=0.5)
    with pytest.raises(ParameterError):
        est.fit(X, y)
    with pytest.raises(ParameterError, match="tree_method"):
        GBDTRegressor(n_estimators=2, tree_method="exakt").fit(X, y)


def test_clone(reg_data):
    X, y = reg_data
    est = GBDTRegressor(n_estimators=4, max_depth=2, min_split_loss=0.1)
    est.fit(X, y)
    c = clone(est)
    assert type(c) is GBDTRegressor
    assert c.get_params() == est.get_params()
    assert not hasattr(c, "_Booster")
    c.fit(X, y)
    np.testing.assert_array_equal(c.predict(X), est.predict(X))
    # the clone's extra parameters are its own
    c.set_params(other=1)
    assert "other" not in est.get_params()


def test_cross_val_score(reg_data):
    from sklearn.base import is_classifier, is_regressor
    from sklearn.model_selection import cross_val_score
    X, y = reg_data
    scores = cross_val_score(GBDTRegressor(n_estimators=5), X, y, cv=3)
    assert scores.shape == (3,) and np.all(np.isfinite(scores)) and scores.mean() > 0
    assert is_regressor(GBDTRegressor()) and is_classifier(GBDTClassifier())


# -- regressor -----------------------------------------------------------------------------
def test_regressor_fit_predict_score(reg_data):
    X, y = reg_data
    est = GBDTRegressor(n_estimators=10, max_depth=3)
    assert est.fit(X, y) is est
    pred = est.predict(X)
    assert pred.shape == (len(y),)
    np.testing.assert_array_equal(pred, est.get_booster().predict(X))
    np.testing.assert_array_equal(est.predict(X, output_margin=True), pred)
    assert est.n_features_in_ == 4
    assert not hasattr(est, "feature_names_in_")
    assert est.score(X, y) == pytest.approx(r2_score(y, pred), rel=1e-12)
    w = np.random.default_rng(3).uniform(0.1, 2, len(y))
    assert est.score(X, y, sample_weight=w) == pytest.approx(
        r2_score(y, pred, sample_weight=w), rel=1e-12)
    assert est.score(X, y) > 0.8


def test_not_fitted():
    """scikit-learn's NotFittedError (a ValueError and an AttributeError), as sklearn's own
    estimators and XGBoost's raise it (issue 44, item 5: it was a RuntimeError)."""
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError, match="not fitted"):
        GBDTRegressor().predict(np.zeros((2, 2)))
    with pytest.raises(NotFittedError, match="not fitted"):
        GBDTClassifier().evals_result()


def test_sample_weight_and_base_margin(reg_data):
    X, y = reg_data
    w = np.random.default_rng(4).uniform(0.1, 3, len(y))
    bm = np.linspace(-1, 1, len(y))
    est = GBDTRegressor(n_estimators=3).fit(X, y, sample_weight=w, base_margin=bm)
    ref = dgbdt.train({}, dgbdt.Dataset(X, label=y, weight=w, base_margin=bm), 3,
                      verbose_eval=False)
    assert est.get_booster().save_raw() == ref.save_raw()


def test_eval_set_and_evals_result(reg_data):
    X, y = reg_data
    est = GBDTRegressor(n_estimators=5, eval_metric=["rmse", "mae"])
    est.fit(X[:200], y[:200], eval_set=[(X[:200], y[:200]), (X[200:], y[200:])],
            sample_weight_eval_set=[None, np.ones(100)])
    res = est.evals_result()
    assert list(res) == ["validation_0", "validation_1"]
    assert list(res["validation_1"]) == ["rmse", "mae"]
    assert all(len(v) == 5 for d in res.values() for v in d.values())
    rmse = np.sqrt(np.mean((est.predict(X[200:]) - y[200:]) ** 2))
    assert res["validation_1"]["rmse"][-1] == pytest.approx(rmse, rel=1e-9)
    assert est.best_iteration is None


def test_fit_verbose(reg_data, capsys):
    X, y = reg_data
    GBDTRegressor(n_estimators=3).fit(X, y, eval_set=[(X, y)])
    assert capsys.readouterr().out == ""
    GBDTRegressor(n_estimators=3).fit(X, y, eval_set=[(X, y)], verbose=True)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0].startswith("[0]\tvalidation_0-rmse:")


def test_early_stopping_in_constructor(reg_data):
    X, y = reg_data
    rng = np.random.default_rng(5)
    noisy = y + rng.normal(scale=3.0, size=len(y))
    est = GBDTRegressor(n_estimators=200, learning_rate=0.8, max_depth=6,
                        early_stopping_rounds=3)
    est.fit(X[:150], noisy[:150], eval_set=[(X[150:], y[150:])])
    b = est.get_booster()
    best = est.best_iteration
    assert best is not None and b.num_boosted_rounds() == best + 4 < 200
    hist = est.evals_result()["validation_0"]["rmse"]
    assert best == int(np.argmin(hist)) and est.best_score == min(hist)
    np.testing.assert_array_equal(est.predict(X), b.predict(X, iteration_range=(0, best + 1)))
    assert not np.array_equal(est.predict(X), b.predict(X))
    # an explicit iteration_range wins
    np.testing.assert_array_equal(est.predict(X, iteration_range=(0, 2)),
                                  b.predict(X, iteration_range=(0, 2)))
    with pytest.raises(ValueError, match="early_stopping_rounds needs"):
        GBDTRegressor(n_estimators=3, early_stopping_rounds=2).fit(X, y)


def test_feature_importances(reg_data):
    X, y = reg_data
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    for kind in ["gain", "weight", "total_cover"]:
        est = GBDTRegressor(n_estimators=5, max_depth=3, importance_type=kind).fit(df, y)
        fi = est.feature_importances_
        assert fi.shape == (est.n_features_in_,) == (4,)
        assert fi.sum() == pytest.approx(1.0)
        assert np.all(fi >= 0)
        score = est.get_booster().get_score(importance_type=kind)
        raw = np.array([score.get(n, 0.0) for n in "abcd"])
        np.testing.assert_allclose(fi, raw / raw.sum(), rtol=1e-12)
    assert fi[0] == fi.max()  # the strongest feature


def test_feature_names_in(reg_data):
    X, y = reg_data
    df = pd.DataFrame(X, columns=["w", "x", "y", "z"])
    est = GBDTRegressor(n_estimators=2).fit(df, y)
    assert list(est.feature_names_in_) == ["w", "x", "y", "z"]
    assert est.get_booster().feature_names == ["w", "x", "y", "z"]
    np.testing.assert_array_equal(est.predict(df), est.predict(X))
    est.fit(X, y)  # refit on an array: no stale names
    assert not hasattr(est, "feature_names_in_")


def test_regressor_save_load(reg_data, tmp_path):
    X, y = reg_data
    est = GBDTRegressor(n_estimators=4).fit(X, y)
    path = tmp_path / "reg.json"
    est.save_model(path)
    other = GBDTRegressor()
    other.load_model(path)
    assert other.n_features_in_ == 4
    np.testing.assert_array_equal(other.predict(X), est.predict(X))
    assert other.get_booster().save_raw() == est.get_booster().save_raw()


# -- classifier ----------------------------------------------------------------------------
def test_binary_classifier(clf_data):
    X, y, _ = clf_data
    est = GBDTClassifier(n_estimators=8, max_depth=3)
    assert est.fit(X, y) is est
    np.testing.assert_array_equal(est.classes_, [0, 1])
    assert est.n_classes_ == 2
    proba = est.predict_proba(X)
    assert proba.shape == (len(y), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(proba[:, 1], est.get_booster().predict(X), rtol=1e-12)
    pred = est.predict(X)
    assert pred.shape == (len(y),)
    np.testing.assert_array_equal(pred, (proba[:, 1] > 0.5).astype(int))
    assert est.predict(X, output_margin=True).shape == (len(y),)
    assert est.score(X, y) == pytest.approx(accuracy_score(y, pred))
    w = np.random.default_rng(0).uniform(0.1, 2, len(y))
    assert est.score(X, y, sample_weight=w) == pytest.approx(
        accuracy_score(y, pred, sample_weight=w))
    assert est.score(X, y) > 0.8
    assert est.get_booster().objective.name == "binary:logistic"


def test_string_labels(clf_data):
    X, y, y3 = clf_data
    names = np.array(["no", "yes"])[y]
    est = GBDTClassifier(n_estimators=5).fit(X, names, eval_set=[(X, names)])
    np.testing.assert_array_equal(est.classes_, ["no", "yes"])
    pred = est.predict(X)
    assert set(pred) <= {"no", "yes"}
    num = GBDTClassifier(n_estimators=5).fit(X, y)
    np.testing.assert_array_equal(pred, np.array(["no", "yes"])[num.predict(X)])
    np.testing.assert_array_equal(est.predict_proba(X), num.predict_proba(X))
    colors = np.array(["red", "green", "blue"])[y3]
    est3 = GBDTClassifier(n_estimators=5).fit(X, colors)
    np.testing.assert_array_equal(est3.classes_, ["blue", "green", "red"])
    assert set(est3.predict(X)) <= set(colors)
    assert est3.score(X, colors) > 0.7


def test_multiclass(clf_data):
    X, _, y3 = clf_data
    est = GBDTClassifier(n_estimators=6, max_depth=3).fit(X, y3 + 10)
    np.testing.assert_array_equal(est.classes_, [10, 11, 12])
    assert est.get_booster().objective.name == "multi:softprob"
    assert est.get_booster().num_class == 3
    proba = est.predict_proba(X)
    assert proba.shape == (len(y3), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(est.predict(X), 10 + np.argmax(proba, axis=1))
    assert est.predict(X, output_margin=True).shape == (len(y3), 3)
    # multi:softmax: predict maps the class index back to labels; no probabilities
    sm = GBDTClassifier(n_estimators=6, max_depth=3, objective="multi:softmax").fit(X, y3 + 10)
    np.testing.assert_array_equal(sm.predict(X), est.predict(X))
    with pytest.raises(ValueError, match="multi:softprob"):
        sm.predict_proba(X)


def test_classifier_early_stopping_predict_proba(clf_data):
    X, y, _ = clf_data
    flipped = np.where(np.random.default_rng(2).random(len(y)) < 0.3, 1 - y, y)
    est = GBDTClassifier(n_estimators=100, learning_rate=1.0, max_depth=6,
                         early_stopping_rounds=2)
    est.fit(X[:200], flipped[:200], eval_set=[(X[200:], y[200:])])
    best = est.best_iteration
    assert best is not None and est.get_booster().num_boosted_rounds() == best + 3
    np.testing.assert_array_equal(
        est.predict_proba(X)[:, 1],
        est.get_booster().predict(X, iteration_range=(0, best + 1)))


def test_unseen_eval_labels(clf_data):
    X, y, _ = clf_data
    with pytest.raises(ValueError, match=r"labels \[7\] were not seen in fit"):
        GBDTClassifier(n_estimators=2).fit(X, y, eval_set=[(X, np.where(y == 1, 7, 0))])
    names = np.array(["a", "b"])[y]
    with pytest.raises(ValueError, match="not seen in fit"):
        GBDTClassifier(n_estimators=2).fit(X, names, eval_set=[(X, np.full(len(y), "c"))])


def test_single_class_errors(clf_data):
    X, y, _ = clf_data
    with pytest.raises(ValueError, match="single class"):
        GBDTClassifier().fit(X, np.zeros(len(y)))
    # a 2-D y is multi-label (0/1 columns): all zeros is one class too
    with pytest.raises(ValueError, match="single class"):
        GBDTClassifier().fit(X, np.zeros((len(y), 2)))
    with pytest.raises(ValueError, match="multi-label"):
        GBDTClassifier().fit(X, np.full((len(y), 2), 2.0))


@pytest.mark.parametrize("three", [False, True])
def test_classifier_save_load(clf_data, tmp_path, three):
    X, y, y3 = clf_data
    labels = y3 if three else y
    est = GBDTClassifier(n_estimators=4).fit(X, labels)
    path = tmp_path / "clf.json"
    est.save_model(path)
    other = GBDTClassifier()
    other.load_model(path)
    assert other.n_classes_ == est.n_classes_
    np.testing.assert_array_equal(other.classes_, np.arange(est.n_classes_))
    np.testing.assert_array_equal(other.predict_proba(X), est.predict_proba(X))
    np.testing.assert_array_equal(other.predict(X), est.predict(X))


def test_continuous_labels_are_refused_with_the_regressor_named():
    """Random floats as y trained a 300-class softmax before (issue 44); scikit-learn's rule
    and words now, integral floats still classes."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    with pytest.raises(ValueError, match=r"Unknown label type: continuous .* use GBDTRegressor"):
        dgbdt.GBDTClassifier(n_estimators=2).fit(X, rng.random(300))
    m = dgbdt.GBDTClassifier(n_estimators=2).fit(X, (X[:, 0] > 0).astype(np.float32) * 2.0)
    np.testing.assert_array_equal(m.classes_, [0.0, 2.0])


def test_an_empty_y_says_so():
    pd = pytest.importorskip("pandas")
    with pytest.raises(ValueError, match="y is empty"):
        dgbdt.GBDTClassifier(n_estimators=2).fit(pd.DataFrame({"a": []}), pd.Series([], dtype=float))
